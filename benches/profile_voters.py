"""Makes the voters of benches/profile_votes.lua through the admin API (stdlib only): BOTS bots
and PROFILES profiles, each profile with a `vote` token; writes the tokens and the bot ids, one
a line, to PREFIX.tokens and PREFIX.bots, and each bot's own API token (in the order of
PREFIX.bots) to PREFIX.bot_tokens, for benches/stats_post_many.lua.

    python3 benches/profile_voters.py API ADMIN PROFILES BOTS PREFIX [SALT]

SALT (a number, default 0) sets the platform ids and usernames apart, so that a directory kept
between runs (`ceiling.sh --data`) takes a new set each run.
"""
import http.client
import json
import sys
from urllib.parse import urlsplit

api, admin, profiles, bots, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
salt = int(sys.argv[6]) if len(sys.argv) > 6 else 0
url = urlsplit(api)
conn = http.client.HTTPConnection(url.hostname, url.port)


def post(path, body):
    conn.request("POST", url.path + path, json.dumps(body),
                 {"Authorization": admin, "Content-Type": "application/json"})
    answer = conn.getresponse()
    data = answer.read()
    if answer.status != 201:
        raise SystemExit(f"POST {path}: {answer.status} {data[:200]!r}")
    return json.loads(data)


with open(prefix + ".bots", "w") as out, open(prefix + ".bot_tokens", "w") as tokens:
    for n in range(bots):
        made = post("/admin/bots", {"platform_id": str(880000000000000000 + salt * 10_000_000 + n),
                                    "name": f"Voted {n}", "username": f"voted{n}_{salt}", "short_description": "A bot profiles vote for."})
        out.write(made["bot"]["id"] + "\n")
        tokens.write(made["token"] + "\n")
with open(prefix + ".tokens", "w") as out:
    for n in range(profiles):
        profile = post("/admin/users", {"username": f"voter{n}_{salt}",
                                       "platform_id": str(770000000000000000 + salt * 10_000_000 + n)})
        token = post(f"/admin/users/{profile['id']}/tokens", {"scopes": ["vote"], "label": "bench"})
        out.write(token["token"] + "\n")
