#!/usr/bin/env bash
# Persistence and memory figures (issues 3 and 10): a benchmark that prints numbers, not a test.
#
#   benches/persistence.sh [BOTS] [VOTES]      (default 100000 bots, 5000000 votes)
#   BEFORE=/path/to/botlist benches/persistence.sh    (also measures that build, side by side)
#   AFTER=/path/to/botlist ...                         (measures that build instead of building this tree)
#
# Prints, for this build (and BEFORE's): startup to `listening on`; resident memory after start;
# peak resident memory (VmHWM, reset just before) across one POST /admin/snapshot; the snapshot's
# time; the longest and p99 check latency while the snapshot ran, beside the median of the
# longest in stretches as long without one (10 s of probing before it, and the probe after); bytes
# per bot and per stored voter (recent-voters entry) from resident memory with and without the
# votes. Then vote-ingest throughput with --fsync always and never (SKIP_INGEST=1 skips it).
# Needs wrk (apt-get install wrk) and python3. Uses loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
BOTS=${1:-100000}
VOTES=${2:-5000000}
ADMIN=bench-admin-token-0001
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
if [ -n "${AFTER:-}" ]; then
  BIN=$AFTER
else
  cargo build --release --quiet
  BIN=target/release/botlist
fi
WORK=$(mktemp -d /tmp/botlist-bench.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

ms() { date +%s%3N; }
kb() { awk -v k="$2" '$1 == k":" {print $2}' /proc/"$1"/status; }

start_server() { # bin dir port extra...
  local bin=$1 dir=$2 port=$3; shift 3
  "$bin" serve --bind 127.0.0.1:"$port" --data-dir "$dir" --admin-token "$ADMIN" \
    --snapshot-interval 0 "$@" > "$WORK/out-$port" 2> "$WORK/err-$port" &
  SERVER=$!
  local t0; t0=$(ms)
  until grep -q "listening on" "$WORK/out-$port" 2>/dev/null; do
    kill -0 "$SERVER" 2>/dev/null || { cat "$WORK/err-$port" >&2; exit 1; }
    sleep 0.02
  done
  STARTUP_MS=$(( $(ms) - t0 ))
}
stop_server() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; }

# Each build generates its own directories (the same seed gives the same data), so each reads
# files of its own format; this build's generate also counts the recent-voters entries.
generate() { # name bin
  local name=$1 bin=$2 t0
  echo "== $name: generate $BOTS bots, $VOTES votes (and the same bots without votes)"
  t0=$(ms)
  "$bin" generate --bots "$BOTS" --votes "$VOTES" --out "$WORK/big-$name" | tee "$WORK/generate-$name.out"
  echo "generate: $(( $(ms) - t0 )) ms, snapshot $(du -m "$WORK"/big-"$name"/snapshot-*.msgpack | cut -f1) MB"
  "$bin" generate --bots "$BOTS" --votes 0 --out "$WORK/bots-$name" > /dev/null
}
generate after "$BIN"
STORED=$(awk '/recent voters stored:/ {print $4}' "$WORK/generate-after.out")

measure() { # name bin
  local name=$1 bin=$2 dir
  [ -d "$WORK/big-$name" ] || generate "$name" "$bin"
  local bot token
  bot=$(awk '/a bot id:/ {print $4}' "$WORK/generate-$name.out")
  token=$(awk '/its token:/ {print $3}' "$WORK/generate-$name.out")
  echo "== $name ($bin)"
  mkdir -p "$WORK/empty-$name"
  start_server "$bin" "$WORK/empty-$name" 18300
  local empty; empty=$(kb "$SERVER" VmRSS); stop_server
  start_server "$bin" "$WORK/bots-$name" 18300
  local bots; bots=$(kb "$SERVER" VmRSS); stop_server
  start_server "$bin" "$WORK/big-$name" 18300
  local startup=$STARTUP_MS full; full=$(kb "$SERVER" VmRSS)
  local start_hwm; start_hwm=$(kb "$SERVER" VmHWM)
  local url="http://127.0.0.1:18300/api/v1/bots/$bot/check?userId=1"
  python3 benches/probe.py "$url" 10 2 "$token" > "$WORK/baseline-$name.json"
  python3 benches/probe.py "$url" 12 2 "$token" > "$WORK/during-$name.json" &
  local probe=$!
  sleep 1
  echo 5 > /proc/"$SERVER"/clear_refs   # resets VmHWM: the peak below is the snapshot's
  local t0; t0=$(ms)
  curl -s -X POST -H "Authorization: $ADMIN" "http://127.0.0.1:18300/api/v1/admin/snapshot" > /dev/null
  local t1; t1=$(ms)
  local snap=$(( t1 - t0 ))
  local snap_hwm; snap_hwm=$(kb "$SERVER" VmHWM)
  wait $probe
  local after; after=$(kb "$SERVER" VmRSS)
  stop_server
  python3 - "$name" "$startup" "$start_hwm" "$full" "$snap_hwm" "$after" "$snap" "$empty" "$bots" \
    "$BOTS" "$STORED" "$WORK/baseline-$name.json" "$WORK/during-$name.json" "$t0" "$t1" <<'PY' | tee -a "$WORK/table"
import json, sys
(name, startup, start_hwm, full, snap_hwm, after, snap, empty, bots, nbots, stored,
 base, during, t0, t1) = sys.argv[1:]
base, probe = json.load(open(base)), json.load(open(during))
t0, t1 = float(t0), float(t1)
# The worst check while the snapshot ran, against the worst in each stretch of the same length
# without one (the baseline probe's and the rest of this probe's), so that both maxima are
# taken over equal windows: a longer window has a longer worst case, snapshot or not.
def worst(samples):
    return max((ms for _, ms in samples), default=0.0)
def p99(samples):
    ordered = sorted(ms for _, ms in samples)
    return ordered[int(len(ordered) * 0.99)] if ordered else 0.0
inside = [s for s in probe["samples"] if t0 <= s[0] <= t1]
quiet = base["samples"] + [s for s in probe["samples"] if s[0] > t1 + 500 or s[0] < t0 - 500]
span = max(t1 - t0, 1.0)
stretches = {}
for at, ms in quiet:
    stretches.setdefault(int(at // span), []).append((at, ms))
maxima = sorted(worst(s) for s in stretches.values() if len(s) > 10)
median = maxima[len(maxima) // 2] if maxima else 0.0
during = {"max_ms": worst(inside), "p99_ms": p99(inside)}
base = {"max_ms": median, "p99_ms": p99(quiet), "highest": maxima[-1] if maxima else 0.0,
        "stretches": len(maxima)}
mib = lambda kb: f"{int(kb) / 1024:.0f} MiB"
per_bot = (int(bots) - int(empty)) * 1024 / int(nbots)
per_voter = (int(full) - int(bots)) * 1024 / int(stored)
print(f"{name}: startup {int(startup)} ms | RSS after start {mib(full)} (peak {mib(start_hwm)}) | "
      f"peak RSS across snapshot {mib(snap_hwm)} | RSS after {mib(after)} | snapshot {snap} ms | "
      f"check max {during['max_ms']:.1f} ms (p99 {during['p99_ms']:.1f}) during the snapshot, "
      f"max {base['max_ms']:.1f} ms (median of {base['stretches']} stretches as long without one; "
      f"highest {base['highest']:.1f}; p99 {base['p99_ms']:.1f}) | "
      f"{per_bot:.0f} B per bot, {per_voter:.0f} B per stored voter")
PY
}

[ -n "${BEFORE:-}" ] && measure before "$BEFORE"
measure after "$BIN"
echo "== summary ($STORED stored voters over $BOTS bots)"
cat "$WORK/table"

[ -n "${SKIP_INGEST:-}" ] && exit 0
echo "== vote ingest: --fsync always against never (same run, fresh directories)"
for mode in always never; do
  mkdir -p "$WORK/votes-$mode"
  start_server "$BIN" "$WORK/votes-$mode" 18310 --fsync "$mode"
  bot=$(curl -s -X POST -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
    -d '{"platform_id":"42","name":"Bench","username":"bench","short_description":"bench"}' \
    http://127.0.0.1:18310/api/v1/admin/bots | python3 -c 'import sys,json; print(json.load(sys.stdin)["bot"]["id"])')
  wrk -t2 -c32 -d10s -s benches/votes.lua http://127.0.0.1:18310 -- "$bot" "$ADMIN" 2>&1 \
    | grep -E "Requests/sec|Latency|requests in" | sed "s/^/fsync $mode: /"
  stop_server
done
