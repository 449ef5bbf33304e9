"""topggpy (PyPI, `import topgg`) against botlist's classic surface.

Only change: the HTTP client's base URL. topggpy keeps it in the instance
attribute `DBLClient.http.BASE` (default "https://top.gg/api"); endpoints are
appended to it. Every method that talks to the API is called, and what it
returns is checked against the values run.sh was given.
"""
import asyncio
import datetime
import sys

import topgg

from _stub import Results, StubBot, env


async def main():
    e = env()
    r = Results("topggpy")
    bot = StubBot(e["BOT_ID"], guilds=e["SERVERS"])
    client = topgg.DBLClient(bot, e["TOKEN"])
    client.http.BASE = e["BASE"]  # the one change: base URL
    bot_id, owner = int(e["BOT_ID"]), int(e["OWNER"])
    try:
        # POST /bots/stats  {"server_count": N}
        await r.call("post_guild_count", lambda: client.post_guild_count(),
                     lambda v: (v is None, f"returned {v!r}"))
        # POST /bots/stats  {"server_count": N, "shard_count": 2}
        await r.call("post_guild_count(shard_count=2)",
                     lambda: client.post_guild_count(e["SERVERS"] + 1, shard_count=2),
                     lambda v: (v is None, f"returned {v!r}"))
        # GET /bots/{id}/stats
        await r.call("get_guild_count", lambda: client.get_guild_count(),
                     lambda v: (v.server_count == e["SERVERS"] + 1 and v.shards == []
                                and v.shard_count is None, f"{dict(v)!r}"))
        # GET /bots/{id}/check?userId=
        await r.call("get_user_vote(voter)", lambda: client.get_user_vote(int(e["VOTER"])),
                     lambda v: (v is True, f"{v!r} (want True)"))
        await r.call("get_user_vote(other)", lambda: client.get_user_vote(int(e["OTHER"])),
                     lambda v: (v is False, f"{v!r} (want False)"))
        # GET /bots/{id}/votes
        await r.call("get_bot_votes", lambda: client.get_bot_votes(),
                     lambda v: (isinstance(v, list) and any(u.id == int(e["VOTER"]) for u in v),
                                f"{len(v)} voters, first={dict(v[0]) if v else None!r}"))
        # GET /weekend
        await r.call("get_weekend_status", lambda: client.get_weekend_status(),
                     lambda v: (v is e["WEEKEND"], f"{v!r} (want {e['WEEKEND']!r})"))
        # GET /bots/{id}: the parsed BotData (ids as int, date as datetime)
        def bot_ok(v):
            return (v.id == bot_id and v.username == e["BOT_USERNAME"] and owner in v.owners
                    and isinstance(v.date, datetime.datetime) and v.points >= 1
                    and isinstance(v.certified_bot, bool) and isinstance(v.tags, list),
                    f"id={v.id!r} username={v.username!r} owners={v.owners!r} date={v.date!r} "
                    f"points={v.points!r}")
        await r.call("get_bot_info()", lambda: client.get_bot_info(), bot_ok)
        await r.call("get_bot_info(id)", lambda: client.get_bot_info(bot_id), bot_ok)
        # GET /bots?limit=&offset=&sort=&search=&fields=
        await r.call("get_bots(search, fields, sort)",
                     lambda: client.get_bots(limit=5, offset=0, sort="-points",
                                             search={"username": e["BOT_USERNAME"]},
                                             fields=["id", "username", "date"]),
                     lambda v: (v.limit == 5 and v.offset == 0 and v.count >= 1
                                and any(b.id == bot_id and set(b) == {"id", "username", "date"}
                                        and isinstance(b.date, datetime.datetime)
                                        for b in v.results),
                                f"count={v.count} total={v.total} first={dict(v.results[0]) if v.results else None!r}"))
        await r.call("get_bots()", lambda: client.get_bots(),
                     lambda v: (v.limit == 50 and v.count == len(v.results) >= 1
                                and all(isinstance(b.id, int) for b in v.results),
                                f"count={v.count} total={v.total}"))
        # GET /users/{id}
        await r.call("get_user_info", lambda: client.get_user_info(owner),
                     lambda v: (v.id == owner and v.username == e["OWNER_NAME"]
                                and v.discriminator == "0" and isinstance(v.social, dict)
                                and v.mod is False,
                                f"{dict(v)!r}"))
    finally:
        await client.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
