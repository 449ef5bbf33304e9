#!/usr/bin/env bash
# Persistence figures (issue 3): a benchmark that prints numbers, not a test.
#
#   benches/persistence.sh [BOTS] [VOTES]      (default 100000 bots, 5000000 votes)
#
# Prints: generate time and snapshot size; startup time (load and replay) and resident memory;
# snapshot write time on the running server and the longest request stall meanwhile, beside
# the longest without a snapshot; vote-ingest throughput with --fsync always and never, in the
# same run. Needs wrk (apt-get install wrk) and python3. Uses loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
BOTS=${1:-100000}
VOTES=${2:-5000000}
ADMIN=bench-admin
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
cargo build --release --quiet
BIN=target/release/botlist
WORK=$(mktemp -d /tmp/botlist-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

ms() { date +%s%3N; }
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/"$1"/status; }

start_server() { # dir port extra...
  local dir=$1 port=$2; shift 2
  "$BIN" serve --bind 127.0.0.1:"$port" --data-dir "$dir" --admin-token "$ADMIN" \
    --snapshot-interval 0 "$@" > "$WORK/out-$port" 2> "$WORK/err-$port" &
  SERVER=$!
  local t0; t0=$(ms)
  until grep -q "listening on" "$WORK/out-$port" 2>/dev/null; do
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/err-$port" >&2; exit 1; }
    sleep 0.05
  done
  STARTUP_MS=$(( $(ms) - t0 ))
}

echo "== generate $BOTS bots, $VOTES votes"
t0=$(ms)
"$BIN" generate --bots "$BOTS" --votes "$VOTES" --out "$WORK/big" | tee "$WORK/generate.out"
echo "generate: $(( $(ms) - t0 )) ms, snapshot $(du -m "$WORK"/big/snapshot-*.msgpack | cut -f1) MB"
BOT=$(awk '/a bot id:/ {print $4}' "$WORK/generate.out")
TOKEN=$(awk '/its token:/ {print $3}' "$WORK/generate.out")

echo "== startup on the large directory"
start_server "$WORK/big" 18300
echo "startup (load, replay, bind): $STARTUP_MS ms; resident memory $(rss_mb "$SERVER") MB"

echo "== the longest request stall while a snapshot is written"
# The vote check goes through the bot's actor, which the snapshot also asks for its state.
URL="http://127.0.0.1:18300/api/v1/bots/$BOT/check?userId=1"
python3 benches/probe.py "$URL" 3 2 "$TOKEN" > "$WORK/baseline.json"
echo "without a snapshot: $(cat "$WORK/baseline.json")"
python3 benches/probe.py "$URL" 12 2 "$TOKEN" > "$WORK/during.json" &
PROBE=$!
sleep 1
t0=$(ms)
curl -s -X POST -H "Authorization: $ADMIN" "http://127.0.0.1:18300/api/v1/admin/snapshot"; echo
echo "snapshot on the running server: $(( $(ms) - t0 )) ms"
wait $PROBE
echo "during a snapshot:  $(cat "$WORK/during.json")"
echo "resident memory after the snapshot: $(rss_mb "$SERVER") MB"
kill "$SERVER"; wait "$SERVER" 2>/dev/null || true

echo "== vote ingest: --fsync always against never (same run, fresh directories)"
for mode in always never; do
  mkdir -p "$WORK/votes-$mode"
  start_server "$WORK/votes-$mode" 18310 --fsync "$mode"
  bot=$(curl -s -X POST -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
    -d '{"platform_id":"42","name":"Bench","username":"bench","short_description":"bench"}' \
    http://127.0.0.1:18310/api/v1/admin/bots | python3 -c 'import sys,json; print(json.load(sys.stdin)["bot"]["id"])')
  wrk -t2 -c32 -d10s -s benches/votes.lua http://127.0.0.1:18310 -- "$bot" "$ADMIN" 2>&1 \
    | grep -E "Requests/sec|Latency|requests in" | sed "s/^/fsync $mode: /"
  kill "$SERVER"; wait "$SERVER" 2>/dev/null || true
done
