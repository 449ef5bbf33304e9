#!/usr/bin/env bash
# Start-up of one data directory by each build given, alternating: for each of R rounds, each
# build starts `serve` on DIR and is stopped once it prints `listening on`. Printed per start:
# the wall time to that line, the CPU by then (user + system from /proc/PID/stat), the minor
# page faults by then (the fresh pages the start touched) and the resident memory
# (/proc/PID/status); then each build's mean. A benchmark that prints figures, not a test.
#
#   benches/start_up.sh ROUNDS DIR NAME=BINARY [NAME=BINARY ...]
#   e.g. target/release/botlist generate --bots 100000 --votes 5000000 --out /tmp/start-data
#        benches/start_up.sh 5 /tmp/start-data before=/tmp/botlist-before after=target/release/botlist
#
# Every build reads the same directory (a start writes nothing a later start reads but a new,
# empty journal segment). The first start of a round may meet a cold page cache.
set -euo pipefail
ROUNDS=${1:?rounds}; DIR=${2:?data directory}; shift 2
WORK=$(mktemp -d /tmp/botlist-start.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
hz=$(getconf CLK_TCK)

# One start: prints "wall cpu faults rss_mib".
start() { # binary
  local out=$WORK/out t0 t1 pid
  : > "$out"
  t0=$(date +%s%N)
  "$1" serve --data-dir "$DIR" --bind 127.0.0.1:0 --snapshot-interval 0 > "$out" 2>/dev/null &
  pid=$!
  until grep -q "listening on" "$out" 2>/dev/null; do
    kill -0 $pid 2>/dev/null || { echo "$1 did not start" >&2; exit 1; }
    sleep 0.01
  done
  t1=$(date +%s%N)
  local -a stat; read -r -a stat < "/proc/$pid/stat"
  local rss; rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status")
  kill $pid; wait $pid 2>/dev/null || true
  awk -v w=$((t1 - t0)) -v c=$((stat[13] + stat[14])) -v hz="$hz" -v f="${stat[9]}" -v r="$rss" \
    'BEGIN {printf "%.3f %.2f %d %d\n", w / 1e9, c / hz, f, r}'
}

echo "== $ROUNDS rounds over $DIR; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "build round wall_s cpu_s minor_faults resident_mib"
for round in $(seq 1 "$ROUNDS"); do
  for spec in "$@"; do
    echo "${spec%%=*} $round $(start "${spec#*=}")"
  done
done | tee "$WORK/starts"
echo "-- means (wall s, CPU s, minor faults, resident MiB); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
awk '{n[$1]++; w[$1] += $3; c[$1] += $4; f[$1] += $5; r[$1] += $6}
     END {for (b in n) printf "%s %.3f %.2f %.0f %.0f\n", b, w[b] / n[b], c[b] / n[b], f[b] / n[b], r[b] / n[b]}' "$WORK/starts"
