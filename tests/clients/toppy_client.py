"""top.py (PyPI, `import toppy`) against botlist.

Only change: the base URL. top.py keeps it in `TopGG._base_` (class attribute,
default "https://top.gg/api"); set on the instance here. Endpoints used:
POST /bots/{id}/stats, GET /bots/{id}/check?userId=, GET /bots/{id}/votes,
where {id} is bot.user.id.
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
    try:
        # POST {BASE}/bots/{BOT_ID}/stats  {"server_count": N}
        await r.call("post_stats", lambda: client.post_stats(),
                     lambda v: (v == e["SERVERS"], f"returned {v!r}"))
        # sharded bot: {"server_count": N, "shards": [...], "shard_count": 2}
        sharded = StubBot(e["BOT_ID"], guilds=e["SERVERS"] + 1, shard_count=2)
        client.bot = sharded
        await r.call("post_stats(sharded)", lambda: client.post_stats(),
                     lambda v: (v == e["SERVERS"] + 1, f"returned {v!r}"))
        client.bot = bot
        await r.call("get_stats", lambda: client.get_stats(discord.Object(id=int(e["BOT_ID"])) if e["BOT_ID"].isdigit() else bot.user),
                     lambda v: (v.server_count == e["SERVERS"] + 1, f"server_count={v.server_count!r}"))
        # GET {BASE}/bots/{BOT_ID}/check?userId=...
        await r.call("upvote_check(voter)", lambda: client.upvote_check(discord.Object(id=int(e["VOTER"]))),
                     lambda v: (v is True, f"{v!r} (want True)"))
        await r.call("upvote_check(other)", lambda: client.upvote_check(discord.Object(id=int(e["OTHER"]))),
                     lambda v: (v is False, f"{v!r} (want False)"))
        # GET {BASE}/bots/{BOT_ID}/votes
        await r.call("fetch_votes", lambda: client.fetch_votes(),
                     lambda v: (isinstance(v, list) and len(v) > 0
                                and any(str(u.id) == e["VOTER"] for u in v),
                                f"{len(v)} voters, first id={v[0].id if v else None} "
                                f"username={v[0].username if v else None!r} avatar={v[0].avatar if v else None!r}"))
    finally:
        if client.session:
            await client.session.close()
    return r.finish()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
