#!/usr/bin/env bash
# Read-path throughput against `serve --demo` (5,000 bots), as ratios to /healthz measured in
# the same run: a benchmark that prints figures, not a test.
#
#   benches/load.sh [SECONDS] [CONNECTIONS]      (default 10 s, 32 connections)
#
# Needs wrk (apt-get install wrk). Limits are off (--rate-limit 0) so the handlers are measured,
# not the 429 path. Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNECTIONS=${2:-32}
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
cargo build --release --quiet
WORK=$(mktemp -d /tmp/botlist-load.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
target/release/botlist serve --demo --bind 127.0.0.1:18500 --data-dir "$WORK" --rate-limit 0 \
  > "$WORK/out" 2> "$WORK/err" &
until grep -q "listening on" "$WORK/out" 2>/dev/null; do sleep 0.1; done
BOT=$(awk '/demo bot id:/ {print $4}' "$WORK/out")
TOKEN=$(awk '/demo bot token:/ {print $4}' "$WORK/out")
VOTER=$(awk '/a recent voter:/ {print $4}' "$WORK/out")
B=http://127.0.0.1:18500

rate() { # name url [header]
  local rps
  if [ $# -ge 3 ]; then
    rps=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -H "$3" "$2" | awk '/Requests\/sec/ {print $2}')
  else
    rps=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" "$2" | awk '/Requests\/sec/ {print $2}')
  fi
  echo "$1 $rps"
}

{
  rate healthz "$B/healthz"
  rate "GET /bots/:id" "$B/api/v1/bots/$BOT"
  rate "GET /bots/:id/stats" "$B/api/v1/bots/$BOT/stats"
  rate "GET /bots/:id/check" "$B/api/v1/bots/$BOT/check?userId=$VOTER" "Authorization: $TOKEN"
  rate "GET /bots/:id/votes (1000 voters)" "$B/api/v1/bots/$BOT/votes" "Authorization: $TOKEN"
  rate "GET /bots?limit=24 (5000 bots)" "$B/api/v1/bots?limit=24"
  rate "GET /bots?q=wizard&sort=newest" "$B/api/v1/bots?q=wizard&sort=newest"
} > "$WORK/rates"
base=$(awk 'NR==1 {print $2}' "$WORK/rates")
awk -v base="$base" '{ rps=$NF; $NF=""; printf "%-40s %10.0f req/s  %5.2f of healthz\n", $0, rps, rps/base }' "$WORK/rates"
