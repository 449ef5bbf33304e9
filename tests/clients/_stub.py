"""Shared helpers for the Python client checks (not a test module of cargo).

The Python libraries take a discord.py client and read only a few attributes
from it (loop, user.id, guilds, is_ready, wait_until_ready, dispatch, ...).
This stub provides those without touching the network.
"""
import asyncio
import os
import sys
import traceback
from urllib.parse import urlsplit


def env():
    base = os.environ["BASE"].rstrip("/")
    u = urlsplit(base)
    if u.hostname not in ("127.0.0.1", "localhost", "::1"):
        sys.exit(f"refusing non-local BASE {base!r}")
    return {
        "BASE": base,
        "BOT_ID": os.environ["BOT_ID"],
        "TOKEN": os.environ["TOKEN"],
        "VOTER": os.environ["VOTER"],
        "OTHER": os.environ.get("OTHER_USER", "123456789012345678"),
        # What the classic reads must show (run.sh documents them).
        "BOT_USERNAME": os.environ["BOT_USERNAME"],
        "OWNER": os.environ["OWNER"],
        "OWNER_NAME": os.environ["OWNER_NAME"],
        "SERVERS": int(os.environ.get("SERVER_COUNT", "4242")),
        # What GET /weekend should answer now (run.sh works it out from the day and
        # WEEKEND_MULTIPLIER, the server's --weekend-multiplier).
        "WEEKEND": os.environ.get("EXPECT_WEEKEND", "false") == "true",
    }


class _Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class StubBot:
    """Duck-typed stand-in for discord.Client / AutoShardedClient."""

    def __init__(self, bot_id, guilds, shard_count=None):
        self.loop = asyncio.get_running_loop()
        self.user = _Obj(id=int(bot_id) if str(bot_id).isdigit() else bot_id)
        if shard_count:
            self.guilds = [_Obj(id=i, shard_id=i % shard_count) for i in range(guilds)]
            self.shards = {i: _Obj(id=i) for i in range(shard_count)}
            self.shard_count = shard_count
        else:
            self.guilds = [_Obj(id=i) for i in range(guilds)]
            self.shard_count = None
        self.events = []

    def is_ready(self):
        return True

    def is_closed(self):
        return False

    async def wait_until_ready(self):
        return None

    def dispatch(self, name, *a, **kw):
        self.events.append(name)

    def get_user(self, user_id):
        return None  # top.py's models look the user up in the client's cache


class Results:
    def __init__(self, lib):
        self.lib = lib
        self.failed = []

    async def call(self, name, coro_fn, check):
        try:
            value = await coro_fn()
        except Exception as e:  # record everything the library raised
            self.failed.append(name)
            print(f"[{self.lib}] {name}: EXCEPTION {type(e).__name__}: {e}")
            resp = getattr(e, "response", None)
            if resp is not None:
                print(f"[{self.lib}]   response status={getattr(resp, 'status', '?')} "
                      f"headers={dict(getattr(resp, 'headers', {}) or {})}")
            for attr in ("text", "body"):
                if getattr(e, attr, None):
                    print(f"[{self.lib}]   {attr}: {getattr(e, attr)!r}")
            traceback.print_exc(file=sys.stdout)
            return None
        ok, why = check(value)
        if ok:
            print(f"[{self.lib}] {name}: ok -> {why}")
        else:
            self.failed.append(name)
            print(f"[{self.lib}] {name}: WRONG -> {why}")
        return value

    def finish(self):
        if self.failed:
            print(f"FAIL {self.lib} (failed: {', '.join(self.failed)})")
            return 1
        print(f"PASS {self.lib}")
        return 0
