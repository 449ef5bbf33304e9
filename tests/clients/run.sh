#!/usr/bin/env bash
# Existing client libraries against a running botlist's classic surface (docs/API.md, "The
# classic surface"). ci.sh starts a server, fills it and runs this; to run it by hand:
#   ./target/release/botlist serve --bind 127.0.0.1:18181 &
#   BASE=http://127.0.0.1:18181/api BOT_ID=<platform id> TOKEN=<bot token> VOTER=<recent voter> \
#     OWNER=<owner's platform id> OWNER_NAME=<owner's username> BOT_USERNAME=<bot's username> \
#     tests/clients/run.sh
#
# BASE          base URL of the classic surface (`--classic-base-path`, default /api; must be
#               loopback, plain http)
# BOT_ID        the bot's platform (snowflake) id -- what the libraries put in paths,
#               as they take it from the chat client's user id
# TOKEN         that bot's API token
# VOTER         a platform user id that voted for the bot within 12 h (check must say 1)
# OWNER         the platform id of a profile that owns the bot (getUser reads it, getBot's
#               owners must hold it); OWNER_NAME its username
# BOT_USERNAME  the bot's username (getBot), also in its name: getBots searches
#               `username: BOT_USERNAME`, which botlist reads as its `q` (name or short
#               description)
# Optional: OTHER_USER (a user that did not vote; default 123456789012345678),
#           SERVER_COUNT (default 4242), KEEP_TMP=1 to keep the temp dir,
#           TOPGGPY / TOPPY / TOPGG_SDK / DBLAPI to override the package specs,
#           WEEKEND_MULTIPLIER (the server's --weekend-multiplier, default 1): with more
#           than 1, GET /weekend must say true from Friday to Sunday (UTC).
#
# Installs into a fresh temp dir: a Python venv (topggpy, top.py) and an npm dir
# (@top-gg/sdk 3.x, dblapi.js). The scripts change nothing in the libraries but
# their base URL (see each file's header; the npm libraries hard-code
# https://top.gg/api, so _redirect.js rewrites that origin to BASE in-process).
# Every method of each library that calls the API is called and its value checked: about
# 50 requests on the bot's token in all, which the 60-a-minute limit holds (topggpy paces
# itself at 59 a minute too).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${BASE:?set BASE}" "${BOT_ID:?set BOT_ID}" "${TOKEN:?set TOKEN}" "${VOTER:?set VOTER}"
: "${OWNER:?set OWNER}" "${OWNER_NAME:?set OWNER_NAME}" "${BOT_USERNAME:?set BOT_USERNAME}"
export BASE BOT_ID TOKEN VOTER OWNER OWNER_NAME BOT_USERNAME
# What GET /weekend must answer today: true only with a multiplier, Friday to Sunday UTC.
EXPECT_WEEKEND=false
if [ "${WEEKEND_MULTIPLIER:-1}" -gt 1 ] && [ "$(date -u +%u)" -ge 5 ]; then EXPECT_WEEKEND=true; fi
export EXPECT_WEEKEND
case "$BASE" in
  http://127.0.0.1[:/]*|http://localhost[:/]*|http://\[::1\][:/]*) ;;
  *) echo "refusing non-loopback BASE=$BASE" >&2; exit 2 ;;
esac

TOPGGPY="${TOPGGPY:-topggpy==1.4.0}"
TOPPY="${TOPPY:-top.py==1.4.3}"
TOPGG_SDK="${TOPGG_SDK:-@top-gg/sdk@3.1.6}"
DBLAPI="${DBLAPI:-dblapi.js@2.4.1}"

tmp="$(mktemp -d /tmp/botlist-clients.XXXXXX)"
if [ "${KEEP_TMP:-0}" != 1 ]; then trap 'rm -rf "$tmp"' EXIT; else echo "temp dir: $tmp"; fi

echo "== installing into $tmp"
python3 -m venv "$tmp/venv" || exit 2
"$tmp/venv/bin/pip" install -q --disable-pip-version-check "$TOPGGPY" "$TOPPY" || exit 2
mkdir -p "$tmp/npm"
(cd "$tmp/npm" && npm init -y >/dev/null 2>&1 &&
  npm install --no-audit --no-fund --loglevel=error "$TOPGG_SDK" "$DBLAPI" >/dev/null) || exit 2
"$tmp/venv/bin/pip" list --disable-pip-version-check 2>/dev/null | grep -Ei '^(topggpy|top\.py|aiohttp|discord\.py) '
(cd "$tmp/npm" && npm ls --depth=0 2>/dev/null | tail -n +2)

status=0
summary=()
run() { # name, command...
  local name="$1"; shift
  echo; echo "== $name"
  local out rc
  out="$("$@" 2>&1)"; rc=$?
  printf '%s\n' "$out"
  if [ $rc -eq 0 ] && grep -q "^PASS " <<<"$out"; then summary+=("PASS $name")
  else summary+=("FAIL $name"); status=1; fi
}
cd "$here"
run topggpy     "$tmp/venv/bin/python" -W ignore topggpy_client.py
run top.py      "$tmp/venv/bin/python" -W ignore toppy_client.py
run @top-gg/sdk env NODE_PATH="$tmp/npm/node_modules" node topgg_sdk_client.js
run dblapi.js   env NODE_PATH="$tmp/npm/node_modules" node dblapi_client.js

echo; echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
