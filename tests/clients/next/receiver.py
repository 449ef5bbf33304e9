"""Webhook receivers built on the Python libraries' verifiers, used unchanged, on 127.0.0.1:
   POST /v1        topggpy 2.0.0's `Webhooks` (its own aiohttp handler), secret V1_SECRET
   POST /standard  PyPI `standardwebhooks`' `Webhook.verify`, secret STANDARD_SECRET
Each payload handed to user code is printed as one JSON line; prints `port N` to stderr."""
import asyncio
import json
import os
import sys

import topgg
from aiohttp import web
from standardwebhooks.webhooks import Webhook as StandardWebhook


def emit(**fields):
    print(json.dumps(fields), flush=True)


async def standard(request):
    body = await request.text()
    try:
        headers = {k.lower(): v for k, v in request.headers.items()}
        payload = StandardWebhook(os.environ["STANDARD_SECRET"]).verify(body, headers)
    except Exception as err:  # the verifier's refusal
        return web.Response(status=400, text=str(err))
    data = payload.get("data", {})
    emit(lib="standardwebhooks (PyPI)", type=payload["type"],
         user=data.get("user", {}).get("id"), project=data.get("bot", {}).get("platform_id"))
    return web.Response(status=204)


async def main():
    app = web.Application()
    app.router.add_post("/standard", standard)
    port = int(os.environ["PORT"])
    hooks = topgg.Webhooks("/v1", os.environ["V1_SECRET"], host="127.0.0.1", port=port, app=app)

    @hooks.on(topgg.PayloadType.VOTE_CREATE)
    async def voted(payload, trace):
        emit(lib="topggpy", type="vote.create", user=str(payload.user.platform_id),
             project=str(payload.project.platform_id), weight=payload.weight, trace=trace)

    @hooks.on(topgg.PayloadType.TEST)
    async def tested(payload, trace):
        emit(lib="topggpy", type="webhook.test", user=str(payload.user.platform_id),
             project=str(payload.project.platform_id), weight=None, trace=trace)

    await hooks.start()
    print(f"port {port}", file=sys.stderr, flush=True)
    await asyncio.Event().wait()


asyncio.run(main())
