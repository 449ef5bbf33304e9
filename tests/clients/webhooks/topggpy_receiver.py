"""PyPI topggpy 1.4.0 `topgg.WebhookManager` as a vote receiver, its handler used unchanged.

Env: SECRET (the Authorization value the manager expects). Prints "LISTENING <port>", then one
"VOTE {route, vote}" line per vote the manager hands to user code (the `on_dbl_vote` event of a
discord.Client that never logs in: `async with` only sets up its loop, no network).

What the helper checks (topgg/webhook.py `_bot_vote_handler`): `request.headers.get("Authorization",
"") == auth_key`, else 401 "Unauthorized"; then `await request.json()` (aiohttp: Content-Type must
be application/json, else 400) and `BotVoteData(**data)` (topgg/types.py `parse_vote_dict`:
`int(data["bot"])`, `query` optional, camelCase keys to snake_case: isWeekend -> is_weekend); a
failure there is an unhandled exception, i.e. 500. It answers 200 "OK" and dispatches "dbl_vote".

One deviation, in how the server is started, not in what it checks: `WebhookManager.run(port)`
binds 0.0.0.0 and a fixed port. This does what its `_run` does -- add each configured route with the
manager's own handler to the manager's own app -- but binds 127.0.0.1 on a free port.
"""
import asyncio
import json
import os
import signal
import sys

import discord
import topgg
from aiohttp import web

ROUTE = "/dbl"


async def main():
    secret = os.environ.get("SECRET")
    if not secret:
        print("set SECRET", file=sys.stderr)
        return 2
    async with discord.Client(intents=discord.Intents.none()) as bot:

        @bot.event
        async def on_dbl_vote(data):
            # data is topgg.types.BotVoteData (a dict subclass with attribute access)
            print("VOTE " + json.dumps({
                "route": ROUTE, "class": type(data).__name__, "vote": dict(data),
                "attrs": {"bot": data.bot, "user": data.user, "type": data.type,
                          "is_weekend": data.is_weekend},
            }), flush=True)

        manager = topgg.WebhookManager(bot).dbl_webhook(ROUTE, secret)
        # == WebhookManager._run, but on loopback and a free port
        for webhook in manager._webhooks.values():
            manager.webserver.router.add_post(webhook["route"], webhook["func"])
        runner = web.AppRunner(manager.webserver)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        print(f"LISTENING {runner.addresses[0][1]}", flush=True)

        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await stop.wait()
        await runner.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
