"""top.py (PyPI, `import toppy`) against botlist's classic surface.

Only change: the base URL. top.py keeps it in `TopGG._base_` (class attribute,
default "https://top.gg/api"); set on the instance here. Every method that
talks to the API is called, and what it returns is checked against the values
run.sh was given. top.py puts the bot's id ({id} below) in every bot path.
"""
import asyncio
import sys

import discord
import toppy

from _stub import Results, StubBot, env


async def main():
    e = env()
    r = Results("top.py")
    bot = StubBot(e["BOT_ID"], guilds=e["SERVERS"])
    client = toppy.TopGG(bot, token=e["TOKEN"], autopost=False)
    client._base_ = e["BASE"]  # the one change: base URL
    bot_id, owner = int(e["BOT_ID"]), int(e["OWNER"])
    try:
        # POST /bots/{id}/stats  {"server_count": N}
        await r.call("post_stats", lambda: client.post_stats(),
                     lambda v: (v == e["SERVERS"], f"returned {v!r}"))
        # sharded bot: {"server_count": N, "shards": [...], "shard_count": 2}
        sharded = StubBot(e["BOT_ID"], guilds=e["SERVERS"] + 1, shard_count=2)
        client.bot = sharded
        await r.call("post_stats(sharded)", lambda: client.post_stats(),
                     lambda v: (v == e["SERVERS"] + 1, f"returned {v!r}"))
        client.bot = bot
        # GET /bots/{id}/stats
        await r.call("get_stats", lambda: client.get_stats(discord.Object(id=bot_id)),
                     lambda v: (v.server_count == e["SERVERS"] + 1 and v.reliable,
                                f"server_count={v.server_count!r} shards={v.shards!r}"))
        # GET /bots/{id}/check?userId=
        await r.call("upvote_check(voter)", lambda: client.upvote_check(discord.Object(id=int(e["VOTER"]))),
                     lambda v: (v is True, f"{v!r} (want True)"))
        await r.call("upvote_check(other)", lambda: client.upvote_check(discord.Object(id=int(e["OTHER"]))),
                     lambda v: (v is False, f"{v!r} (want False)"))
        # GET /bots/{id}/votes
        await r.call("fetch_votes", lambda: client.fetch_votes(),
                     lambda v: (isinstance(v, list) and any(u.id == int(e["VOTER"]) for u in v),
                                f"{len(v)} voters, first id={v[0].id if v else None} "
                                f"username={v[0].username if v else None!r}"))
        # GET /weekend
        await r.call("is_weekend", lambda: client.is_weekend(),
                     lambda v: (v is e["WEEKEND"], f"{v!r} (want {e['WEEKEND']!r})"))
        # GET /bots/{id}: top.py does int(id) and int() of every owner
        await r.call("fetch_bot", lambda: client.fetch_bot(discord.Object(id=bot_id)),
                     lambda v: (v.id == bot_id and v.username == e["BOT_USERNAME"]
                                and owner in v.owners and v.all_time_votes >= 1
                                and isinstance(v.certified, bool),
                                f"id={v.id!r} username={v.username!r} owners={v.owners!r} "
                                f"votes={v.all_time_votes!r}"))
        # GET /bots (top.py sends no parameters; the classic default page)
        await r.call("fetch_bots", lambda: client.fetch_bots(),
                     lambda v: (len(v.results) >= 1 and all(isinstance(b.id, int) for b in v.results)
                                and any(b.id == bot_id for b in v.results),
                                f"{len(v.results)} bots, first id={v.results[0].id if v.results else None}"))
        # bulk_fetch_bots is fetch_bots in a loop, then `{x.id: x for x in results}`, which
        # raises TypeError in top.py 1.4.3 itself (BotSearchResults.__iter__ returns a
        # tuple), whatever the server answers: its one request is fetch_bots' above.
        # GET /users/{id}
        await r.call("fetch_user", lambda: client.fetch_user(discord.Object(id=owner)),
                     lambda v: (v.id == owner and v.name == e["OWNER_NAME"]
                                and v.discriminator == "0" and v.socials is not None,
                                f"id={v.id!r} name={v.name!r} discriminator={v.discriminator!r} "
                                f"colour={v.colour!r}"))
    finally:
        if client.session:
            await client.session.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
