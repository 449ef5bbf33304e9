"""Votes at a fixed rate through BASE for SECONDS (8 connections), for load in the background
of a read benchmark (benches/cluster.sh's read ratio). Prints how many were acknowledged.

    python3 benches/write_rate.py BASE BOT ADMIN [RATE] [SECONDS] [FIRST_USER]
"""
import http.client
import json
import sys
import threading
import time
import urllib.parse

base, bot, admin = sys.argv[1:4]
rate = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
seconds = float(sys.argv[5]) if len(sys.argv) > 5 else 10
first = int(sys.argv[6]) if len(sys.argv) > 6 else 800_000_000_000_000_000
u = urllib.parse.urlparse(base)
THREADS = 8
stop = time.monotonic() + seconds
acked = [0] * THREADS


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
            acked[index] += 1
        next_at += period
        time.sleep(max(0, next_at - time.monotonic()))


threads = [threading.Thread(target=writes, args=(i,)) for i in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"background writes acknowledged: {sum(acked)} in {seconds:.0f} s")
