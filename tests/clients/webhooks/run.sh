#!/usr/bin/env bash
# Legacy-format vote webhooks from a running botlist into receivers built on existing SDK webhook
# helpers, used unchanged: npm @top-gg/sdk 3.x `Webhook` (express) and PyPI topggpy 1.4.0
# `WebhookManager` (aiohttp).
#
# Starts the receivers, not botlist. Start botlist yourself WITH --allow-private-webhooks (the
# receivers listen on 127.0.0.1, which the SSRF guard refuses otherwise), e.g.
#   ./target/release/botlist serve --bind 127.0.0.1:18282 --data-dir /tmp/wh-data \
#     --admin-token webhooks-admin-token --allow-private-webhooks &
#   BASE=http://127.0.0.1:18282/api/v1 ADMIN=webhooks-admin-token tests/clients/webhooks/run.sh
#
# BASE   botlist's v1 API base URL (loopback, plain http; a bare http://host:port gets /api/v1)
# ADMIN  the admin token (sent raw as Authorization)
# Optional: VOTER (user snowflake that votes, default 77), KEEP_TMP=1 to keep the temp dir,
#           TOPGGPY / TOPGG_SDK / EXPRESS to override the package specs.
#
# Installs into a fresh temp dir (needs PyPI and npm): a venv with topggpy, an npm dir with
# @top-gg/sdk and express. Per library: starts its receiver on 127.0.0.1 (free port), lists bots
# through the admin API with webhook_format "legacy" pointing at it, records a vote and a test
# event, checks botlist's delivery log and what the helper handed to user code, then checks a
# wrong secret is refused by the helper and not retried. Prints PASS/FAIL per library; exits
# non-zero on any failure. Each run lists 5 new bots (random platform ids).
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${BASE:?set BASE}" "${ADMIN:?set ADMIN}"
case "$BASE" in
  http://127.0.0.1[:/]*|http://localhost[:/]*|http://\[::1\][:/]*) ;;
  *) echo "refusing non-loopback BASE=$BASE" >&2; exit 2 ;;
esac
VOTER="${VOTER:-77}"
TOPGGPY="${TOPGGPY:-topggpy==1.4.0}"
TOPGG_SDK="${TOPGG_SDK:-@top-gg/sdk@3}"
EXPRESS="${EXPRESS:-express}"

tmp="$(mktemp -d /tmp/botlist-webhooks.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
  if [ "${KEEP_TMP:-0}" != 1 ]; then rm -rf "$tmp"; else echo "temp dir: $tmp"; fi
}
trap cleanup EXIT

echo "== installing into $tmp"
python3 -m venv "$tmp/venv" || exit 2
"$tmp/venv/bin/pip" install -q --disable-pip-version-check "$TOPGGPY" || exit 2
mkdir -p "$tmp/npm"
(cd "$tmp/npm" && npm init -y >/dev/null 2>&1 &&
  npm install --no-audit --no-fund --loglevel=error "$TOPGG_SDK" "$EXPRESS" >/dev/null) || exit 2
"$tmp/venv/bin/pip" list --disable-pip-version-check 2>/dev/null | grep -Ei '^(topggpy|aiohttp|discord\.py) '
(cd "$tmp/npm" && npm ls --depth=0 2>/dev/null | tail -n +2)

status=0
summary=()
# name, refused status, isWeekend key as the library hands it, routes, receiver command...
check() {
  local name="$1" refused="$2" wkey="$3" routes="$4"; shift 4
  local log="$tmp/${name//[^A-Za-z0-9.]/_}.log" secret="wh-$RANDOM$RANDOM-secret" port="" i
  echo; echo "== $name"
  SECRET="$secret" "$@" >"$log" 2>&1 &
  local pid=$!; pids+=("$pid")
  for i in $(seq 100); do
    port="$(sed -n 's/^LISTENING \([0-9][0-9]*\)$/\1/p' "$log" | head -n1)"
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$port" ]; then
    echo "receiver did not start:"; cat "$log"
    summary+=("FAIL $name"); status=1; return
  fi
  echo "receiver pid $pid on 127.0.0.1:$port"
  local out rc
  out="$("$tmp/venv/bin/python" "$here/_drive.py" --name "$name" --base "$BASE" --admin "$ADMIN" \
    --port "$port" --log "$log" --routes "$routes" --secret "$secret" --refused "$refused" \
    --weekend-key "$wkey" --voter "$VOTER" 2>&1)"; rc=$?
  printf '%s\n' "$out"
  kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  if [ $rc -eq 0 ] && grep -q "^PASS " <<<"$out"; then summary+=("PASS $name")
  else summary+=("FAIL $name"); status=1; echo "-- receiver output:"; cat "$log"; fi
}

check @top-gg/sdk 403 isWeekend /listener,/middleware,/json \
  env NODE_PATH="$tmp/npm/node_modules" node "$here/topgg_sdk_receiver.js"
check topggpy 401 is_weekend /dbl \
  "$tmp/venv/bin/python" -W ignore "$here/topggpy_receiver.py"

echo; echo "== summary"
printf '%s\n' "${summary[@]}"
exit $status
