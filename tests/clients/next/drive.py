"""Webhook deliveries from a running botlist into the receivers (stdlib only; run.sh runs it).

For each receiver route (format v1 or standard): lists a bot whose webhook points at it, records
a vote through the admin API and sends a test event, then waits until the receiver's log shows
what the library handed to user code: a `vote.create` for the voter and the bot, and a
`webhook.test`. Prints PASS/FAIL per receiver; exit status 0 when all pass."""
import json
import os
import random
import sys
import time
import urllib.request

BASE, ADMIN, VOTER = os.environ["BASE"], os.environ["ADMIN"], os.environ["VOTER"]
V1_SECRET, STANDARD_SECRET = os.environ["V1_SECRET"], os.environ["STANDARD_SECRET"]


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data=data, method=method,
                                 headers={"Authorization": ADMIN, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")


def check(name, url, fmt, log):
    platform_id = str(random.randint(10**17, 10**18 - 1))
    secret = V1_SECRET if fmt == "v1" else STANDARD_SECRET
    bot = call("POST", "/admin/bots", {
        "platform_id": platform_id, "name": f"Hook {fmt}", "username": "hook",
        "short_description": f"Checks {fmt} deliveries", "webhook_url": url,
        "webhook_secret": secret, "webhook_format": fmt})["bot"]["id"]
    call("POST", f"/admin/bots/{bot}/votes", {"user_id": VOTER, "username": "hookvoter", "avatar": None})
    call("POST", f"/admin/bots/{bot}/webhook/test")
    seen, deadline = [], time.time() + 20
    while time.time() < deadline:
        with open(log) as f:
            seen = [json.loads(line) for line in f if line.startswith("{")]
        mine = [s for s in seen if s["lib"] == name and s["project"] == platform_id]
        types = {s["type"] for s in mine}
        if {"vote.create", "webhook.test"} <= types:
            vote = next(s for s in mine if s["type"] == "vote.create")
            assert vote["user"] == VOTER, vote
            assert vote.get("weight", 1) in (1, None), vote
            deliveries = call("GET", f"/admin/bots/{bot}/webhook/deliveries")
            print(f"PASS {name} ({fmt}): {sorted(types)}; deliveries "
                  f"{[(d['event'], d['state'], d['attempts']) for d in deliveries]}")
            return True
        time.sleep(0.2)
    deliveries = call("GET", f"/admin/bots/{bot}/webhook/deliveries")
    print(f"FAIL {name} ({fmt}): the receiver saw {seen}; botlist's log: {deliveries}")
    return False


ok = True
for spec in sys.argv[1:]:  # name|url|format|log file
    name, url, fmt, log = spec.split("|")
    ok = check(name, url, fmt, log) and ok
sys.exit(0 if ok else 1)
