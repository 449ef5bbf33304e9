#!/usr/bin/env python3
"""Latency probe: GET a URL in a loop from a few threads; report the worst latency per window.

Usage: probe.py URL SECONDS THREADS [AUTHORIZATION] -> prints one JSON line with the request
count, the worst and the 99th-percentile latency, the three worst samples (start, ms), and every
sample as [start in Unix ms, latency in ms] (so that a caller can cut out a window of it).
"""
import http.client
import json
import sys
import threading
import time
from urllib.parse import urlparse

url, seconds, threads = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
headers = {"Authorization": sys.argv[4]} if len(sys.argv) > 4 else {}
parts = urlparse(url)
start = time.monotonic()
unix_start_ms = time.time() * 1000
lock = threading.Lock()
samples = []


def run():
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    while time.monotonic() - start < seconds:
        t0 = time.monotonic()
        conn.request("GET", parts.path + ("?" + parts.query if parts.query else ""), headers=headers)
        conn.getresponse().read()
        t1 = time.monotonic()
        with lock:
            samples.append((t0 - start, (t1 - t0) * 1000))


workers = [threading.Thread(target=run) for _ in range(threads)]
for w in workers:
    w.start()
for w in workers:
    w.join()
samples.sort()
print(json.dumps({"requests": len(samples), "max_ms": max(s[1] for s in samples),
                  "p99_ms": sorted(s[1] for s in samples)[int(len(samples) * 0.99)],
                  "worst": sorted(samples, key=lambda s: -s[1])[:3],
                  "samples": [[round(unix_start_ms + t * 1000, 3), round(ms, 3)] for t, ms in samples]}))
