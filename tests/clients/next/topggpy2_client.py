"""Every method of topggpy 2.0.0's `Client` against botlist's project API, values checked.

The library hard-codes `BASE_URL`; setting the module's constant is its base-URL change."""
import asyncio
import json
import os
import sys
import urllib.request
from datetime import datetime, timedelta, timezone

import topgg
import topgg.client

BASE, TOKEN, BOT_ID = os.environ["BASE"], os.environ["TOKEN"], os.environ["BOT_ID"]
VOTER, OTHER, BOT_NAME = os.environ["VOTER"], os.environ["OTHER"], os.environ["BOT_NAME"]
topgg.client.BASE_URL = BASE
failed = 0


def raw(path):
    req = urllib.request.Request(BASE + path, headers={"Authorization": f"Bearer {TOKEN}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


async def step(name, coro):
    global failed
    try:
        await coro
        print(f"  ok   {name}")
    except Exception as err:  # report every failure, then go on
        failed += 1
        print(f"  FAIL {name}: {type(err).__name__}: {err}")


async def get_self(client):
    p = await client.get_self()
    assert p.id == int(BOT_ID), p.id
    assert p.name == BOT_NAME, p.name
    assert p.platform == topgg.Platform.DISCORD and p.type == topgg.ProjectType.BOT
    assert "utility" in p.tags, p.tags
    assert p.current_votes >= 1 and p.total_votes >= p.current_votes
    assert (p.review_score, p.review_count) == (4, 1), (p.review_score, p.review_count)


async def edit_self(client):
    await client.edit_self(
        headline={topgg.Locale.ENGLISH: "Edited by topggpy 2.0.0"},
        content={topgg.Locale.ENGLISH: "A page written by the 2026 Python library."},
    )
    assert (await client.get_self()).headline == "Edited by topggpy 2.0.0"


async def post_commands(client):
    commands = [{"name": "stats", "description": "Shows stats", "type": 1}]
    await client.post_commands(commands)
    assert raw("/projects/@me/commands") == commands


async def post_announcement(client):
    # topggpy 2.0.0 sends title[100:] and content[2000:] (empty): botlist answers 400 naming
    # the limits (docs/API.md), which the library raises as RequestError with `detail`.
    try:
        await client.post_announcement("Version 3", "Now with slash commands.")
    except topgg.RequestError as err:
        assert err.status == 400, err.status
        assert "title" in str(err), str(err)
    else:
        raise AssertionError("an empty title was accepted")


async def post_metrics(client):
    await client.post_metrics(topgg.Metrics.discord_bot(server_count=5120, shard_count=4))
    assert raw(f"/bots/{BOT_ID}/stats")["server_count"] == 5120
    now = datetime.now(timezone.utc)
    await client.post_metrics({
        now - timedelta(hours=3): topgg.Metrics.discord_bot(server_count=5000),
        # newer than the post just made, so it becomes the count
        now + timedelta(seconds=2): topgg.Metrics.discord_bot(server_count=5150),
    })
    assert raw(f"/bots/{BOT_ID}/stats")["server_count"] == 5150


async def get_vote(client):
    v = await client.get_vote(topgg.UserSource.DISCORD, int(VOTER))
    assert v is not None
    assert v.expires_at - v.voted_at == timedelta(hours=12)
    assert abs((datetime.now(timezone.utc) - v.voted_at).total_seconds()) < 600
    assert v.weight == 1
    assert await client.get_vote(topgg.UserSource.TOPGG, int(OTHER)) is None


async def get_votes(client):
    page = await client.get_votes(datetime.now(timezone.utc) - timedelta(days=1))
    mine = [v for v in page if v.voter_id == int(VOTER)]
    assert mine, list(page)
    assert mine[0].platform_id == int(VOTER) and mine[0].weight == 1
    assert len(await page.next()) == 0


async def wrong_token():
    async with topgg.Client("blt_wrong") as other:
        try:
            await other.get_self()
        except topgg.RequestError as err:
            assert err.status == 401, err.status
        else:
            raise AssertionError("a wrong token was accepted")


async def main():
    async with topgg.Client(TOKEN) as client:
        await step("get_self", get_self(client))
        await step("edit_self", edit_self(client))
        await step("post_commands (POST)", post_commands(client))
        await step("post_announcement (400: the library empties the title)", post_announcement(client))
        await step("post_metrics (single and batch)", post_metrics(client))
        await step("get_vote (discord; topgg, not a voter: None)", get_vote(client))
        await step("get_votes and next", get_votes(client))
    await step("a wrong token: RequestError 401", wrong_token())
    print("FAIL topggpy 2.0.0" if failed else "PASS topggpy 2.0.0")
    sys.exit(1 if failed else 0)


asyncio.run(main())
