"""topggpy (PyPI, `import topgg`) against botlist.

Only change: the HTTP client's base URL. topggpy keeps it in the instance
attribute `DBLClient.http.BASE` (default "https://top.gg/api"); endpoints are
appended to it ("/bots/stats", "/bots/{id}/check?userId=", "/bots/{id}/votes").
"""
import asyncio
import sys

import topgg

from _stub import Results, StubBot, env


async def main():
    e = env()
    r = Results("topggpy")
    bot = StubBot(e["BOT_ID"], guilds=e["SERVERS"])
    client = topgg.DBLClient(bot, e["TOKEN"])
    client.http.BASE = e["BASE"]  # the one change: base URL
    try:
        # POST {BASE}/bots/stats  {"server_count": N}
        await r.call("post_guild_count", lambda: client.post_guild_count(),
                     lambda v: (v is None, f"returned {v!r}"))
        # POST {BASE}/bots/stats  {"server_count": N, "shard_count": 2}
        await r.call("post_guild_count(shard_count=2)",
                     lambda: client.post_guild_count(e["SERVERS"] + 1, shard_count=2),
                     lambda v: (v is None, f"returned {v!r}"))
        # GET {BASE}/bots/{BOT_ID}/stats (public) to see the post landed
        await r.call("get_guild_count", lambda: client.get_guild_count(),
                     lambda v: (v.get("server_count") == e["SERVERS"] + 1, f"{dict(v)!r}"))
        # GET {BASE}/bots/{BOT_ID}/check?userId=VOTER
        await r.call("get_user_vote(voter)", lambda: client.get_user_vote(int(e["VOTER"])),
                     lambda v: (v is True, f"{v!r} (want True)"))
        await r.call("get_user_vote(other)", lambda: client.get_user_vote(int(e["OTHER"])),
                     lambda v: (v is False, f"{v!r} (want False)"))
        # GET {BASE}/bots/{BOT_ID}/votes
        await r.call("get_bot_votes", lambda: client.get_bot_votes(),
                     lambda v: (isinstance(v, list) and len(v) > 0
                                and any(str(u["id"]) == e["VOTER"] for u in v),
                                f"{len(v)} voters, first={dict(v[0]) if v else None!r}"))
        # GET {BASE}/weekend (public; topggpy sends its token anyway)
        await r.call("get_weekend_status", lambda: client.get_weekend_status(),
                     lambda v: (v is e["WEEKEND"], f"{v!r} (want {e['WEEKEND']!r})"))
    finally:
        await client.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
