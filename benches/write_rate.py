"""Votes at a fixed rate through BASE for SECONDS (WRITE_THREADS connections, default 8): load in the background of a
read benchmark (benches/cluster.sh's read ratio), and the writes of benches/cluster_lag.py.
Prints how many were acknowledged.

    python3 benches/write_rate.py BASE BOT ADMIN [RATE] [SECONDS] [FIRST_USER]
"""
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse

# Connections: 8 keep up with 1,000 votes/s on a single node; through a cluster's writer
# (about 8 to 16 ms a vote under load) it takes more (WRITE_THREADS=32 in benches/cluster.sh).
THREADS = int(os.environ.get("WRITE_THREADS", "8"))


def write_votes(base, bot, admin, rate, seconds, first, on_ack):
    """Votes from THREADS connections at `rate` in all for `seconds`; `on_ack(response)` for
    each 2xx, from the writing threads."""
    u = urllib.parse.urlparse(base)
    stop = time.monotonic() + seconds

    def writes(index):
        conn = http.client.HTTPConnection(u.hostname, u.port)
        user = first + index * 10_000_000
        period = THREADS / rate
        next_at = time.monotonic()
        while time.monotonic() < stop:
            user += 1
            body = json.dumps({"user_id": str(user), "username": "u", "avatar": None})
            conn.request("POST", f"{u.path}/admin/bots/{bot}/votes", body,
                         {"Authorization": admin, "Content-Type": "application/json"})
            response = conn.getresponse()
            response.read()
            if response.status // 100 == 2:
                on_ack(response)
            next_at += period
            time.sleep(max(0, next_at - time.monotonic()))

    threads = [threading.Thread(target=writes, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    return threads


if __name__ == "__main__":
    base, bot, admin = sys.argv[1:4]
    rate = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
    seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 10
    first = int(sys.argv[6]) if len(sys.argv) > 6 else 800_000_000_000_000_000
    acked = []
    for t in write_votes(base, bot, admin, rate, seconds, first, lambda r: acked.append(1)):
        t.join()
    print(f"background writes acknowledged: {len(acked)} in {seconds:.0f} s")
