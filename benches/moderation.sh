#!/usr/bin/env bash
# The moderation reads of issue 37 as ratios to the ceiling, as benches/ceiling.sh measures
# every other route: a bare actix-web handler with no middleware (examples/bare.rs, in its own
# process) answering a body of the same size, round by round. A benchmark that prints figures,
# not a test.
#
#   benches/moderation.sh [--bots N] [--entries M] [--seconds S] [--rounds R]
#                         [--connections C] [--data DIR] [--only REGEX]
#
# The data directory (default a temporary one; DIR is kept and not filled again) is written by
# `examples/moderation_fill.rs`: N bots (default 100,000), every one `pending`, and an audit log
# of M entries (default 10,000,000), as one snapshot. botlist (target/release/botlist) serves it
# with --rate-limit 0 and --snapshot-interval 0. Then each route, R rounds (default 3) of S
# seconds (default 5), wrk -t2 -c C (default 64) --latency, the bare handler and botlist in
# turn. Needs wrk, curl, jq and a release build:
#   cargo build --release --bin botlist --example bare --example moderation_fill
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in wrk curl jq; do
  command -v "$tool" >/dev/null || { echo "needs $tool: apt-get install $tool" >&2; exit 1; }
done

BOTS=100000 ENTRIES=10000000 SECS=5 ROUNDS=3 CONNS=64 DATA="" ONLY=""
BIN=target/release/botlist BARE=target/release/examples/bare FILL=target/release/examples/moderation_fill
ADMIN=bench-admin-token
while [ $# -gt 0 ]; do
  case $1 in
    --bots) BOTS=$2; shift 2 ;;
    --entries) ENTRIES=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --connections) CONNS=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for b in "$BIN" "$BARE" "$FILL"; do
  [ -x "$b" ] || { echo "no binary at $b (cargo build --release --bin botlist --example bare --example moderation_fill)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/botlist-moderation.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
[ -n "$DATA" ] || DATA=$WORK/data
if [ ! -e "$DATA/fill.out" ]; then
  mkdir -p "$DATA"
  echo "-- filling $DATA: $BOTS pending bots, $ENTRIES audit entries"
  "$FILL" "$DATA" "$BOTS" "$ENTRIES" > "$WORK/fill.out"
  mv "$WORK/fill.out" "$DATA/fill.out"
fi
cat "$DATA/fill.out"
field() { sed -n "s/^$1: //p" "$DATA/fill.out"; }
STAFF=$(field "moderator token") OWNER=$(field "owner token") OWNED=$(field "owned bot") ACTOR=$(field "acting profile")

PORT=18730 BARE_PORT=18731
API=http://127.0.0.1:$PORT/api/v1
BARE_URL=http://127.0.0.1:$BARE_PORT/bytes
"$BARE" 127.0.0.1:$BARE_PORT > "$WORK/bare.out" 2>&1 &
t0=$(date +%s.%N)
"$BIN" serve --bind 127.0.0.1:$PORT --data-dir "$DATA" --rate-limit 0 --admin-token "$ADMIN" \
  --snapshot-interval 0 > "$WORK/botlist.out" 2> "$WORK/botlist.log" &
PID=$!
until grep -q "listening on" "$WORK/botlist.out" 2>/dev/null; do
  kill -0 $PID 2>/dev/null || { echo "botlist did not start:" >&2; cat "$WORK/botlist.log" >&2; exit 1; }
  sleep 0.2
done
until grep -q "listening on" "$WORK/bare.out" 2>/dev/null; do sleep 0.1; done
rss() { awk '/VmRSS/ {printf "%.0f\n", $2 * 1024}' /proc/$PID/status; }
printf -- '-- botlist started on it in %.1f s; resident %d MiB\n' "$(echo "$(date +%s.%N) - $t0" | bc -l)" $(( $(rss) / 1048576 ))
echo "== wrk -t2 -c$CONNS, $ROUNDS rounds of $SECS s; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

# name | path (after /api/v1) | token
ROUTES=(
  "GET /staff/queue (first page, oldest pending)|/staff/queue|$STAFF"
  "GET /staff/audit (newest page of 50)|/staff/audit|$STAFF"
  "GET /staff/audit?actor= (a profile's, actor index)|/staff/audit?actor=$ACTOR|$STAFF"
  "GET /staff/audit?action=bot.owners (a common action, action index)|/staff/audit?action=bot.owners|$STAFF"
  "GET /staff/audit?action=profile.delete (an action no entry has, action index)|/staff/audit?action=profile.delete|$STAFF"
  "GET /bots/:id/audit (owner, target index)|/bots/$OWNED/audit|$OWNER"
)

run_wrk() { # out url auth-header-or-empty
  local out=$1 url=$2 auth=$3
  local -a extra=()
  [ -n "$auth" ] && extra+=(-H "Authorization: $auth")
  wrk -t2 -c"$CONNS" -d"${SECS}s" --timeout 30s --latency "${extra[@]}" "$url" > "$out" 2>&1 || true
  awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
       /Requests\/sec/ {r = $2} $1 == "50%" {p50 = ms($2)} $1 == "99%" {p99 = ms($2)}
       END {printf "%.0f %.3f %.3f\n", r, p50, p99}' "$out"
}

ROWS=$WORK/rows; : > "$ROWS"
k=0
for route in "${ROUTES[@]}"; do
  IFS='|' read -r name path header <<< "$route"
  [[ -z $ONLY || $name =~ $ONLY ]] || continue
  url=$API$path
  status=$(curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: $header" "$url")
  [ "$status" = 200 ] || { echo "$name answered $status: $(head -c 300 "$WORK/body")" >&2; exit 1; }
  bytes=$(wc -c < "$WORK/body")
  shown=$(jq '.results | length' "$WORK/body")
  for r in $(seq 1 "$ROUNDS"); do
    k=$((k + 1))
    load=$(cut -d' ' -f1 /proc/loadavg)
    bare=$(run_wrk "$WORK/$k.bare" "$BARE_URL/$bytes" "")
    ours=$(run_wrk "$WORK/$k.ours" "$url" "$header")
    if grep -qE "Non-2xx|Socket errors" "$WORK/$k.ours"; then
      echo "   note: $name round $r: $(grep -E 'Non-2xx|Socket errors' "$WORK/$k.ours" | tr -s ' ' | paste -sd';')" >&2
    fi
    echo "$name ($shown shown)|$bytes|$load|$bare|$ours" >> "$ROWS"
  done
  printf '   %-70s %7s bytes, load %s\n' "$name" "$bytes" "$(cut -d' ' -f1 /proc/loadavg)"
done

echo
echo "| route | bytes | botlist req/s | bare req/s | ratio (median, range) | botlist p50 / p99 ms | bare p50 / p99 ms | load (1 min) at each round |"
echo "|---|---:|---:|---:|---|---|---|---|"
awk -F'|' -v digits=3 -v loads=each -f benches/rounds_table.awk "$ROWS"
echo
echo "resident after the runs: $(( $(rss) / 1048576 )) MiB; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
kill $PID; wait $PID 2>/dev/null || true
