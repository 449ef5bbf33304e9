"""Drives a running botlist against one receiver (stdlib only); used by run.sh.

For each route: lists a bot (admin API) whose legacy-format webhook points at the receiver with the
right secret, records a vote and sends a test event, waits for both deliveries to finish, and checks
they were delivered in one attempt and that the library handed the right bot/user/type to user
code. Then, once, a bot with a wrong secret: the helper must refuse it with REFUSED status, botlist
must show the delivery failed after one attempt (a 4xx is not retried), and user code saw nothing.
Prints "PASS <name>" or "FAIL <name>"; exit status 0 on pass.
"""
import argparse
import json
import random
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit


def snowflake():
    return str(random.randint(10**17, 10**19 - 1))


class Botlist:
    def __init__(self, base, admin):
        self.base, self.admin = base.rstrip("/"), admin

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Authorization", self.admin)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def ok(self, method, path, body=None):
        status, out = self.call(method, path, body)
        if not 200 <= status < 300:
            raise RuntimeError(f"{method} {path} -> {status} {out}")
        return out

    def bot(self, url, secret):
        pid = snowflake()
        out = self.ok("POST", "/admin/bots", {
            "platform_id": pid, "name": "Webhook check", "username": "whcheck",
            "short_description": "legacy webhook check", "webhook_url": url,
            "webhook_secret": secret, "webhook_format": "legacy"})
        return out["bot"]["id"], pid

    def settle(self, bot_id, want, timeout=20.0):
        """Deliveries once `want` of them exist and none is pending/retrying."""
        end = time.monotonic() + timeout
        while True:
            ds = self.ok("GET", f"/admin/bots/{bot_id}/webhook/deliveries")
            if len(ds) >= want and all(d["state"] not in ("pending", "retrying") for d in ds):
                return ds
            if time.monotonic() > end:
                return ds
            time.sleep(0.2)


def votes_seen(log):
    seen = []
    with open(log) as f:
        for line in f:
            if line.startswith("VOTE "):
                seen.append(json.loads(line[5:]))
    return seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--base", required=True)
    ap.add_argument("--admin", required=True)
    ap.add_argument("--port", required=True, type=int)
    ap.add_argument("--log", required=True)
    ap.add_argument("--routes", required=True, help="comma-separated receiver paths")
    ap.add_argument("--secret", required=True)
    ap.add_argument("--refused", required=True, type=int, help="status the helper refuses with")
    ap.add_argument("--weekend-key", required=True, help="key the library gives isWeekend under")
    ap.add_argument("--voter", default="77")
    a = ap.parse_args()

    base = a.base.rstrip("/")
    if not urlsplit(base).path:
        base += "/api/v1"
    bl = Botlist(base, a.admin)
    failures = []

    def check(cond, what):
        print(("  ok   " if cond else "  FAIL ") + what)
        if not cond:
            failures.append(what)

    def handed(pid, typ, user):
        """Votes user code got for this bot with this type (compared as text: libraries differ)."""
        return [s for s in votes_seen(a.log)
                if str(s["vote"].get("bot")) == pid and s["vote"].get("type") == typ
                and str(s["vote"].get("user")) == user]

    for route in a.routes.split(","):
        url = f"http://127.0.0.1:{a.port}{route}"
        print(f"- {route}: legacy delivery, right secret")
        bot_id, pid = bl.bot(url, a.secret)
        bl.ok("POST", f"/admin/bots/{bot_id}/votes",
              {"user_id": a.voter, "username": "ada", "avatar": None})
        bl.ok("POST", f"/admin/bots/{bot_id}/webhook/test")
        ds = bl.settle(bot_id, 2)
        by_event = {d["event"]: d for d in ds}
        for event in ("vote.create", "webhook.test"):
            d = by_event.get(event)
            check(d is not None and d["state"] == "delivered" and d["attempts"] == 1,
                  f"{event} delivered in one attempt: " + (
                      json.dumps({k: d[k] for k in ("state", "attempts", "last_status", "last_error")})
                      if d else "missing"))
        time.sleep(0.3)  # topggpy runs user code in a task after answering
        for typ, user, event in (("upvote", a.voter, "vote.create"), ("test", "0", "webhook.test")):
            got = [s for s in handed(pid, typ, user) if s["route"] == route]
            check(len(got) == 1, f"user code got one {typ} for bot {pid} from user {user}: "
                  + (json.dumps(got[0]["vote"]) if got else f"{len(got)} seen"))
            if got:
                check(got[0]["vote"].get(a.weekend_key) is False,
                      f"{a.weekend_key} is false: {got[0]['vote'].get(a.weekend_key)!r}")
                hdr = got[0].get("headers", {}).get("x-botlist-delivery")
                if hdr is not None and event in by_event:
                    check(hdr == by_event[event]["id"], f"X-Botlist-Delivery matches ({hdr})")

    route = a.routes.split(",")[0]
    print(f"- {route}: wrong secret")
    bot_id, pid = bl.bot(f"http://127.0.0.1:{a.port}{route}", "wrong-" + a.secret)
    bl.ok("POST", f"/admin/bots/{bot_id}/votes",
          {"user_id": a.voter, "username": "ada", "avatar": None})
    bl.settle(bot_id, 1)
    time.sleep(3)  # a retry would come after 1 s, then 2 s
    ds = bl.ok("GET", f"/admin/bots/{bot_id}/webhook/deliveries")
    d = ds[0] if ds else None
    check(d is not None and d["state"] == "failed" and d["attempts"] == 1
          and d["last_status"] == a.refused,
          f"refused with {a.refused}, failed, not retried: " + (
              json.dumps({k: d[k] for k in ("state", "attempts", "last_status", "last_error")})
              if d else "no delivery"))
    check(not [s for s in votes_seen(a.log) if str(s["vote"].get("bot")) == pid],
          "user code got nothing for the wrong secret")

    print(("PASS " if not failures else "FAIL ") + a.name)
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
