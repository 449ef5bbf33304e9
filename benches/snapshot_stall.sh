#!/usr/bin/env bash
# The longest check during a snapshot, round after round against one generated directory, with
# where in the snapshot each worst check fell: a benchmark that prints figures, not a test.
# benches/persistence.sh gives the issue-10 table; this is for finding what stalls checks.
#
#   benches/snapshot_stall.sh BIN [BIN...]        (each round runs every BIN in turn)
#   ROUNDS=3 BOTS=100000 VOTES=5000000 benches/snapshot_stall.sh target/release/botlist
#   TRACE=sched  ...   also `perf sched record -a` over the snapshot (then perf sched timehist)
#   TRACE=record ...   also `perf record --call-graph dwarf -a` (large; for the stall's stack)
#
# Each round copies the directory, starts the server, probes GET /bots/:id/check from two
# processes (benches/probe.py) for 9 s, and takes one POST /admin/snapshot 2 s in. It prints the
# snapshot's time, the worst check inside it and outside it (outside: more than 0.5 s away),
# and the six worst inside as (ms after the snapshot started, latency ms). Traces are left in
# the round's directory, named in the output. Needs python3, curl, and perf for TRACE.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: benches/snapshot_stall.sh BIN [BIN...]" >&2; exit 1; }
ROUNDS=${ROUNDS:-3}
BOTS=${BOTS:-100000}
VOTES=${VOTES:-5000000}
TRACE=${TRACE:-}
WORK=$(mktemp -d /tmp/botlist-stall.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true' EXIT
"$1" generate --bots "$BOTS" --votes "$VOTES" --out "$WORK/big" > "$WORK/generate.out"
BOT=$(awk '/a bot id:/ {print $4}' "$WORK/generate.out")
TOKEN=$(awk '/its token:/ {print $3}' "$WORK/generate.out")

round() { # bin n
  local bin=$1 dir="$WORK/round-$2-$(basename "$1")" server probe trace=""
  mkdir -p "$dir"; cp -a "$WORK/big" "$dir/data"
  "$bin" serve --bind 127.0.0.1:18320 --data-dir "$dir/data" --admin-token stall-admin-token-01 \
    --snapshot-interval 0 > "$dir/out" 2> "$dir/err" &
  server=$!
  until grep -q "listening on" "$dir/out" 2>/dev/null; do
    kill -0 "$server" 2>/dev/null || { cat "$dir/err" >&2; exit 1; }
    sleep 0.05
  done
  sleep 1
  python3 benches/probe.py "http://127.0.0.1:18320/api/v1/bots/$BOT/check?userId=1" 9 2 "$TOKEN" \
    > "$dir/probe.json" &
  probe=$!
  sleep 2
  case "$TRACE" in
    sched) perf sched record -a -o "$dir/sched.data" -- sleep 6 > /dev/null 2>&1 & trace=$! ;;
    record) perf record -F 2999 --call-graph dwarf,16384 -a -o "$dir/record.data" -- sleep 6 \
      > /dev/null 2>&1 & trace=$! ;;
  esac
  [ -n "$trace" ] && sleep 0.5
  local t0 t1
  t0=$(date +%s%3N)
  curl -sf -X POST -H "Authorization: stall-admin-token-01" http://127.0.0.1:18320/api/v1/admin/snapshot > /dev/null
  t1=$(date +%s%3N)
  wait "$probe"
  [ -n "$trace" ] && wait "$trace"
  kill "$server"; wait "$server" 2>/dev/null || true
  python3 - "$dir/probe.json" "$t0" "$t1" "$(basename "$bin")" <<'PY'
import json, sys
probe, t0, t1, name = json.load(open(sys.argv[1])), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
inside = [s for s in probe["samples"] if t0 <= s[0] <= t1]
outside = [s for s in probe["samples"] if not (t0 - 500 <= s[0] <= t1 + 500)]
worst = sorted(inside, key=lambda s: -s[1])[:6]
print(f"{name}: snapshot {t1 - t0:.0f} ms | check max {max(s[1] for s in inside):.1f} ms during "
      f"({len(inside)} checks), {max(s[1] for s in outside):.1f} ms outside ({len(outside)}) | "
      f"worst during: {[(round(s[0] - t0), s[1]) for s in worst]}")
PY
  [ -n "$trace" ] && echo "  trace: $(ls "$dir"/*.data) (perf clock; the snapshot started at $t0 Unix ms)"
  [ -z "$trace" ] && rm -rf "$dir"
  return 0
}

for n in $(seq 1 "$ROUNDS"); do
  for bin in "$@"; do round "$bin" "$n"; done
done
[ -z "$TRACE" ] && rm -rf "$WORK"
