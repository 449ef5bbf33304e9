#!/usr/bin/env bash
# History page latency over HTTP at 5 million votes (issue 12): one bot holding every vote of a
# generated directory, pages read with wrk beside /healthz in the same run (the ratio is what
# carries from this shared machine to another). Prints, per request: rate, median and p99.
#
#   cargo build --release && benches/history_http.sh            # 5000000 votes
#   VOTES=1000000 DURATION=5 BIN=/path/to/botlist benches/history_http.sh
#
# Needs wrk (apt-get install wrk), curl and python3. Uses loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/botlist}
VOTES=${VOTES:-5000000}
DURATION=${DURATION:-5}
CONNECTIONS=${CONNECTIONS:-16}
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }

dir=$(mktemp -d /tmp/botlist-history.XXXXXX)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT

t0=$(date +%s%N)
"$BIN" generate --bots 1 --votes "$VOTES" --out "$dir/data" >"$dir/generate"
BOT=$(awk '/a bot id:/ {print $4}' "$dir/generate")
TOKEN=$(awk '/its token:/ {print $3}' "$dir/generate")
echo "generated one bot with $VOTES votes in $(( ($(date +%s%N) - t0) / 1000000 )) ms"

"$BIN" serve --bind 127.0.0.1:0 --data-dir "$dir/data" --snapshot-interval 0 --rate-limit 0 \
  >"$dir/out" 2>"$dir/err" &
server=$!
for _ in $(seq 600); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on //p' "$dir/out")
echo "resident memory after start: $(awk '/VmRSS/ {print $2 / 1024 " MiB"}' /proc/$server/status)"

HISTORY="$BASE/bots/$BOT/votes/history"
total=$(curl -sf "$BASE/bots/$BOT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["vote_count"])')
# The middle of the 45 days the generated votes cover.
middle=$(python3 -c 'import datetime as d; print((d.datetime.now(d.timezone.utc) - d.timedelta(days=22, hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ"))')
# A cursor from the middle: the page that ends there gives the `next` to resume from.
cursor=$(curl -sf -H "Authorization: $TOKEN" "$HISTORY?limit=100&until=$middle" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["next"])')
echo "bot $BOT: vote_count $total; wrk -t2 -c$CONNECTIONS -d${DURATION}s per row; load $(cut -d' ' -f1-3 /proc/loadavg)"

printf '%-52s %10s %9s %9s %7s\n' request "req/s" "p50 ms" "p99 ms" "bytes"
# wrk shows a latency as 283.00us, 2.07ms or 1.02s: in milliseconds.
ms() { awk -v k="$1" '$1 == k { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
  printf "%.2f", v * (u == "us" ? 0.001 : u == "s" ? 1000 : 1) }'; }
row() { # label url
  local label=$1 url=$2 out
  out=$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -H "Authorization: $TOKEN" "$url" 2>&1)
  local bytes; bytes=$(curl -sf -H "Authorization: $TOKEN" "$url" | wc -c)
  printf '%-52s %10s %9s %9s %7s\n' "$label" \
    "$(echo "$out" | awk '/Requests\/sec/ {print $2}')" \
    "$(echo "$out" | ms 50%)" "$(echo "$out" | ms 99%)" "$bytes"
  if echo "$out" | grep -q "Non-2xx"; then echo "  (non-2xx answers: $(echo "$out" | grep Non-2xx))"; fi
}
row "GET /healthz" "${BASE%/api/v1}/healthz"
row "history, newest 100" "$HISTORY"
row "history, newest 1000" "$HISTORY?limit=1000"
row "history, 100 through a cursor at the middle" "$HISTORY?cursor=$cursor"
row "history, 100 until the middle" "$HISTORY?until=$middle"
row "GET /bots/:id/votes (1,000 recent voters)" "$BASE/bots/$BOT/votes"
