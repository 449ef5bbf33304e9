#!/usr/bin/env python3
"""Latency probe: GET a URL in a loop from a few processes; report the worst latency per window.

Usage: probe.py URL SECONDS CLIENTS [AUTHORIZATION] -> prints one JSON line with the request
count, the worst and the 99th-percentile latency, the three worst samples (start, ms), and every
sample as [start in Unix ms, latency in ms] (so that a caller can cut out a window of it).

Each client is a process of its own with one connection. Clients used to be threads of one
process: two threads handing Python's interpreter lock back and forth kept a core busy in short
bursts, and a scheduler trace (`perf sched timehist`) showed the server's threads waiting up to
18 ms for a core while that happened, which the probe then counted as the server's latency.
"""
import http.client
import json
import multiprocessing
import sys
import time
from urllib.parse import urlparse

# Seconds between one client's requests.
PAUSE = 0.0005


def run(url, seconds, headers, start_unix, out):
    parts = urlparse(url)
    target = parts.path + ("?" + parts.query if parts.query else "")
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    samples = []
    # Every client measures from the same wall-clock start, so their samples line up.
    offset = time.time() - time.monotonic()
    while time.monotonic() + offset - start_unix < seconds:
        t0 = time.monotonic()
        conn.request("GET", target, headers=headers)
        conn.getresponse().read()
        t1 = time.monotonic()
        samples.append(((t0 + offset - start_unix), (t1 - t0) * 1000))
        # Paced, about as fast as the threads of one process went: a probe that kept both cores
        # busy would measure itself and starve everything else on the machine.
        time.sleep(PAUSE)
    out.put(samples)


def main():
    url, seconds, clients = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    headers = {"Authorization": sys.argv[4]} if len(sys.argv) > 4 else {}
    start_unix = time.time()
    out = multiprocessing.Queue()
    workers = [
        multiprocessing.Process(target=run, args=(url, seconds, headers, start_unix, out))
        for _ in range(clients)
    ]
    for w in workers:
        w.start()
    samples = []
    for _ in workers:
        samples.extend(out.get())
    for w in workers:
        w.join()
    samples.sort()
    print(json.dumps({"requests": len(samples), "max_ms": max(s[1] for s in samples),
                      "p99_ms": sorted(s[1] for s in samples)[int(len(samples) * 0.99)],
                      "worst": sorted(samples, key=lambda s: -s[1])[:3],
                      "samples": [[round(start_unix * 1000 + t * 1000, 3), round(ms, 3)]
                                  for t, ms in samples]}))


if __name__ == "__main__":
    main()
