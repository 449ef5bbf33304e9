#!/usr/bin/env bash
# Load figures of the badge and growth-history routes at 100,000 bots, as ratios to a bare
# actix-web handler (examples/bare_handler.rs: no middleware) measured in the same run, with
# GET /bots/:id/stats beside them for reference.
#
#   benches/features_load.sh [SECONDS] [CONNECTIONS] [BOTS]
#
# Builds botlist and the example in release, writes a directory of BOTS bots with
# `botlist generate`, serves it with --rate-limit 0 and RUST_LOG=warn, and runs wrk against
# each route in turn. Needs wrk. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNECTIONS=${2:-32}
BOTS=${3:-100000}
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
cargo build --release --quiet --bin botlist --example bare_handler
WORK=$(mktemp -d /tmp/botlist-features-load.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
WORKERS=${WORKERS:-2}

target/release/botlist generate --bots "$BOTS" --votes $((BOTS * 10)) --out "$WORK/data" > "$WORK/generate.out"
RUST_LOG=warn target/release/botlist serve --bind 127.0.0.1:18702 --data-dir "$WORK/data" \
  --rate-limit 0 --workers "$WORKERS" --snapshot-interval 0 > "$WORK/serve.out" 2> "$WORK/serve.log" &
target/release/examples/bare_handler 127.0.0.1:18701 "$WORKERS" > /dev/null 2>&1 &
until grep -q "listening on" "$WORK/serve.out" 2>/dev/null; do sleep 0.2; done
until curl -fs http://127.0.0.1:18701/ > /dev/null; do sleep 0.1; done
BASE=http://127.0.0.1:18702/api/v1
# A bot of the generated directory: the first of a search.
BOT=$(curl -fs "$BASE/bots?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["id"])')

rps() { # url
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" "$1" | awk '/Requests\/sec/ {print $2}'
}
bare=$(rps http://127.0.0.1:18701/)
printf '%-40s %12s %8s\n' route req/s ratio
printf '%-40s %12.0f %8.2f\n' "bare actix-web handler" "$bare" 1
for route in \
  "/bots/$BOT/stats" \
  "/bots/$BOT/badge/servers.svg" \
  "/bots/$BOT/badge/votes.svg?color=green&style=flat-square" \
  "/bots/$BOT/stats/history" \
  "/bots/$BOT/stats/history?interval=hour" \
  "/bots/suggest?q=wi" \
  "/weekend"; do
  r=$(rps "$BASE$route")
  name=${route//$BOT/:id}
  printf '%-40s %12.0f %8.2f\n' "$name" "$r" "$(python3 -c "print($r / $bare)")"
done
