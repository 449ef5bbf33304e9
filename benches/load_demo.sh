#!/usr/bin/env bash
# Read-path and hot-path throughput against `serve --demo` (5,000 bots), as ratios to /healthz
# measured in the same run: a benchmark that prints figures, not a test. `benches/load.sh` with
# no `--directory` runs this.
#
#   benches/load.sh [SECONDS] [CONNECTIONS]      (default 10 s, 32 connections)
#   BIN=/path/to/botlist benches/load.sh         (another build, e.g. the previous commit's)
#   INGEST=ROUNDS benches/load.sh [SECONDS]      (vote ingest only: plain bot and dead receiver
#                                                 alternated ROUNDS times, journal bytes per vote)
#
# Needs wrk (apt-get install wrk). Limits are off (--rate-limit 0) so the handlers are measured,
# not the 429 path. Loopback only. The hot paths (check, stats, bot by id, stats post and vote
# ingest for a plain bot and for one whose webhook receiver is down) are measured in `hot_paths`.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNECTIONS=${2:-32}
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
if [ -z "${BIN:-}" ]; then cargo build --release --quiet; BIN=target/release/botlist; fi
WORK=$(mktemp -d /tmp/botlist-load.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
# Webhooks to loopback are allowed so that a bot can point at a closed local port (a dead receiver).
"$BIN" serve --demo --bind 127.0.0.1:18500 --data-dir "$WORK/data" --rate-limit 0 \
  --allow-private-webhooks > "$WORK/out" 2> "$WORK/err" &
until grep -q "listening on" "$WORK/out" 2>/dev/null; do sleep 0.1; done
BOT=$(awk '/demo bot id:/ {print $4}' "$WORK/out")
TOKEN=$(awk '/demo bot token:/ {print $4}' "$WORK/out")
VOTER=$(awk '/a recent voter:/ {print $4}' "$WORK/out")
ADMIN=$(awk '/admin token:/ {print $3}' "$WORK/out")
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

script_rate() { # name script args...
  local name=$1 script=$2; shift 2
  echo "$name $(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s "$script" "$B" -- "$@" \
    | awk '/Requests\/sec/ {print $2}')"
}

new_bot() { # platform_id [extra JSON fields]
  curl -s -X POST -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
    -d "{\"platform_id\":\"$1\",\"name\":\"Bench $1\",\"username\":\"bench$1\",\"short_description\":\"bench\"${2:-}}" \
    "$B/api/v1/admin/bots" | python3 -c 'import sys,json; print(json.load(sys.stdin)["bot"]["id"])'
}

# The paths bots call all day. Vote ingest posts a fresh user per request; the dead receiver
# is a closed loopback port, so its outbox passes the open-delivery limit during the run.
hot_paths() {
  rate "GET /bots/:id/check" "$B/api/v1/bots/$BOT/check?userId=$VOTER" "Authorization: $TOKEN"
  rate "GET /bots/:id/stats" "$B/api/v1/bots/$BOT/stats"
  rate "GET /bots/:id" "$B/api/v1/bots/$BOT"
  script_rate "POST /bots/:id/stats" benches/stats.lua "$BOT" "$TOKEN"
  local plain dead
  plain=$(new_bot 900000000000000001)
  dead=$(new_bot 900000000000000002 ',"webhook_url":"http://127.0.0.1:9/hook"')
  script_rate "POST votes (plain bot)" benches/votes.lua "$plain" "$ADMIN"
  local before; before=$(du -sk "$WORK/data" | cut -f1)
  script_rate "POST votes (dead receiver)" benches/votes.lua "$dead" "$ADMIN"
  echo "journal growth during the dead-receiver run: $(( $(du -sk "$WORK/data" | cut -f1) - before )) kB" >&2
}

# Vote ingest alone, the plain bot and the dead receiver in turn, several rounds (the machine is
# shared: alternating spreads the noise over both), with the journal bytes each run wrote per vote.
ingest_rounds() {
  local plain dead round kind bot before rps
  plain=$(new_bot 900000000000000001)
  dead=$(new_bot 900000000000000002 ',"webhook_url":"http://127.0.0.1:9/hook"')
  for round in $(seq 1 "$INGEST"); do
    for kind in plain dead; do
      if [ $kind = plain ]; then bot=$plain; else bot=$dead; fi
      before=$(du -sb "$WORK/data" | cut -f1)
      rps=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s benches/votes.lua "$B" -- "$bot" "$ADMIN" "${round}000000000" 2>&1 \
        | awk '/Requests\/sec/ {print $2}')
      awk -v k="$kind" -v r="$round" -v rps="$rps" -v grew="$(( $(du -sb "$WORK/data" | cut -f1) - before ))" -v s="$DURATION" \
        'BEGIN { printf "round %d %-6s %8.0f votes/s  %6.0f journal bytes per vote\n", r, k, rps, grew / (rps * s) }'
    done
  done
}
if [ -n "${INGEST:-}" ]; then ingest_rounds; exit 0; fi

{
  rate healthz "$B/healthz"
  hot_paths
  rate "GET /bots/:id/votes (1000 voters)" "$B/api/v1/bots/$BOT/votes" "Authorization: $TOKEN"
  rate "GET /bots?limit=24 (5000 bots)" "$B/api/v1/bots?limit=24"
  rate "GET /bots?q=wizard&sort=newest" "$B/api/v1/bots?q=wizard&sort=newest"
} > "$WORK/rates"
base=$(awk 'NR==1 {print $2}' "$WORK/rates")
awk -v base="$base" '{ rps=$NF; $NF=""; printf "%-40s %10.0f req/s  %5.2f of healthz\n", $0, rps, rps/base }' "$WORK/rates"
