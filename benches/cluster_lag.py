"""Follower lag for benches/cluster.sh: votes at a fixed rate through the writer; for each, the
time from its 2xx (carrying X-Botlist-Seq) until a node that does not write reports an
applied_seq at least that high on GET /cluster (polled every millisecond).

    python3 benches/cluster_lag.py WRITER_BASE STANDBY_ROOT BOT ADMIN [RATE] [SECONDS]
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse

from write_rate import write_votes

writer, standby, bot, admin = sys.argv[1:5]
rate = int(sys.argv[5]) if len(sys.argv) > 5 else 1000
seconds = float(sys.argv[6]) if len(sys.argv) > 6 else 10
s = urllib.parse.urlparse(standby)
acked = []  # (seq, time of the 2xx)
lock = threading.Lock()
stop = time.monotonic() + seconds


def acknowledged(response):
    with lock:
        acked.append((int(response.getheader("X-Botlist-Seq")), time.monotonic()))


seen = []  # (applied_seq, time first seen)


def watch():
    conn = http.client.HTTPConnection(s.hostname, s.port)
    last = -1
    while time.monotonic() < stop + 2:
        conn.request("GET", "/cluster")
        applied = json.loads(conn.getresponse().read())["applied_seq"]
        if applied > last:
            seen.append((applied, time.monotonic()))
            last = applied
        time.sleep(0.001)


watcher = threading.Thread(target=watch)
watcher.start()
threads = write_votes(writer, bot, admin, rate, seconds, 700_000_000_000_000_000, acknowledged)
for t in threads:
    t.join()
watcher.join()
lags = []
j = 0
for seq, at in sorted(acked):
    while j < len(seen) and seen[j][0] < seq:
        j += 1
    if j < len(seen):
        lags.append(max(0.0, seen[j][1] - at))
lags.sort()
if not lags:
    print("follower lag: no samples")
    sys.exit(1)
pct = lambda p: lags[min(len(lags) - 1, int(len(lags) * p))] * 1000
print(f"follower lag at {len(acked) / seconds:.0f} writes/s ({len(lags)} writes): "
      f"p50 {pct(0.5):.1f} ms, p99 {pct(0.99):.1f} ms, max {lags[-1] * 1000:.1f} ms")
