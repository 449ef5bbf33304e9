#!/usr/bin/env bash
# Vote ingest with 0, 1 and 100 live readers of the bot's vote stream, each as a ratio of the
# rate with no reader, measured in one run against one server. Readers are `curl -N` processes
# that read every event; the script checks that each got the votes.
#
#   cargo build --release && benches/vote_stream.sh
#   DURATION=10 FSYNC=always CONNECTIONS=32 READERS="0 1 100 0" benches/vote_stream.sh
#
# Needs wrk (apt-get install -y wrk) and curl.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/botlist}
DURATION=${DURATION:-10}
FSYNC=${FSYNC:-always}
CONNECTIONS=${CONNECTIONS:-32}
READERS=${READERS:-0 1 100 0}
ADMIN=bench-admin

dir=$(mktemp -d)
"$BIN" serve --bind 127.0.0.1:0 --data-dir "$dir/data" --admin-token "$ADMIN" --rate-limit 0 \
  --max-streams-per-bot 200 --fsync "$FSYNC" --snapshot-interval 0 >"$dir/out" 2>"$dir/err" &
server=$!
readers=()
cleanup() {
  for r in "${readers[@]:-}"; do [ -n "$r" ] && kill "$r" 2>/dev/null || true; done
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on //p' "$dir/out")
ROOT=${BASE%/api/v1}
created=$(curl -sf -X POST "$BASE/admin/bots" -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
  -d '{"platform_id":"4242","name":"Bench","username":"bench","short_description":"streams"}')
BOT=$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bot"]["id"])')
TOKEN=$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')

echo "fsync=$FSYNC, wrk -t2 -c$CONNECTIONS -d${DURATION}s, load average: $(cut -d' ' -f1-3 /proc/loadavg)"
run=0
base_rate=""
for n in $READERS; do
  run=$((run + 1))
  readers=()
  for i in $(seq "$n"); do
    curl -sN "$BASE/bots/$BOT/votes/stream" -H "Authorization: $TOKEN" >"$dir/reader.$run.$i" &
    readers+=($!)
  done
  sleep 1
  rate=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s benches/votes.lua "$ROOT" -- "$BOT" "$ADMIN" "${run}000000000000" 2>&1 \
    | awk '/Requests\/sec/ {print $2}')
  sleep 1
  for r in "${readers[@]:-}"; do [ -n "$r" ] && kill "$r" 2>/dev/null || true; done
  for r in "${readers[@]:-}"; do [ -n "$r" ] && wait "$r" 2>/dev/null || true; done
  got=""
  if [ "$n" -gt 0 ]; then
    got=$(grep -c '^event: vote' "$dir/reader.$run.1" || true)
    overflowed=$(cat "$dir"/reader."$run".* | grep -c '^event: overflow' || true)
    got=" (reader 1 got $got vote events; $overflowed of $n readers cut off for overflow)"
  fi
  [ -z "$base_rate" ] && base_rate=$rate
  ratio=$(python3 -c "print(f'{$rate / $base_rate:.2f}')")
  printf 'readers %3d: %10s votes/s  ratio %s%s\n' "$n" "$rate" "$ratio" "$got"
done
