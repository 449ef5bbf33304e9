#!/usr/bin/env bash
# Whether compression gives its memory back: the server's resident memory before, at the
# peak of, and after rounds of 1,000 concurrent `Accept-Encoding: br` requests (wrk, 1,000
# connections) of the largest documents: the Swagger bundle (1.45 MB), the OpenAPI document,
# and the largest dynamic answer (`/bots?limit=100`). Fails unless the memory after is within
# 10% of the memory before. Also the stall check: three requests on one keep-alive connection
# with gzip, then br (curl), each time in milliseconds.
#
#   [ENCODING=br] benches/compression_memory.sh [BINARY] [SECONDS_PER_ROUND] [ROUNDS]
#
# ENCODING=identity asks the same without compression: what the 1,000 connections alone leave.
#
# BINARY defaults to target/release/botlist (built if missing). Needs wrk and curl. Loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/botlist}
SECONDS_PER_ROUND=${2:-5}
ROUNDS=${3:-2}
ENCODING=${ENCODING:-br}
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
[ -x "$BIN" ] || cargo build --release --quiet
ulimit -n 20000 2>/dev/null || true
WORK=$(mktemp -d /tmp/botlist-compression.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
PORT=18651
RUST_LOG=warn "$BIN" serve --demo --bind "127.0.0.1:$PORT" --data-dir "$WORK/data" \
  --rate-limit 0 --workers 2 > "$WORK/out" 2> "$WORK/log" &
PID=$!
until grep -q "listening on" "$WORK/out" 2>/dev/null; do sleep 0.1; done
ROOT="http://127.0.0.1:$PORT"
rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$PID/status"; }

echo "stall check: three answers on one connection (ms)"
for enc in gzip br identity; do
  printf '  %-8s' "$enc"
  curl -s -o /dev/null -o /dev/null -o /dev/null -H "Accept-Encoding: $enc" \
    -w '%{time_total} ' "$ROOT/api/v1/bots?limit=24" "$ROOT/api/v1/bots?limit=20" \
    "$ROOT/api/v1/bots?limit=10" | awk '{for (i = 1; i <= NF; i++) printf "%.1f ", $i * 1000; print ""}'
done

# Every document asked for once compressed first: a static one is compressed once, on a
# thread of its own, and served from memory once it is made.
for path in /docs/swagger-ui-bundle.js /api/v1/openapi.json; do
  curl -s -o /dev/null -H 'Accept-Encoding: br' "$ROOT$path"
done
sleep 5
BEFORE=$(rss)
echo "resident memory before: $BEFORE MB"
for path in /docs/swagger-ui-bundle.js /api/v1/openapi.json "/api/v1/bots?limit=100"; do
  for round in $(seq "$ROUNDS"); do
    PEAK=0
    wrk -t 2 -c 1000 -d "${SECONDS_PER_ROUND}s" -H "Accept-Encoding: $ENCODING" "$ROOT$path" \
      > "$WORK/wrk" 2>&1 &
    WRK=$!
    while kill -0 "$WRK" 2>/dev/null; do
      NOW=$(rss); PEAK=$(awk -v a="$PEAK" -v b="$NOW" 'BEGIN {print (b > a) ? b : a}')
      sleep 0.2
    done
    wait "$WRK" || true
    RPS=$(awk '/Requests\/sec/ {print $2}' "$WORK/wrk")
    sleep 2
    echo "  $path round $round: $RPS req/s, peak $PEAK MB, after $(rss) MB"
  done
done
AFTER=$(rss)
echo "resident memory after: $AFTER MB (before: $BEFORE MB)"
awk -v a="$AFTER" -v b="$BEFORE" 'BEGIN { if (a > b * 1.10) { print "FAIL: more than 10% above"; exit 1 } else print "ok: within 10%" }'
