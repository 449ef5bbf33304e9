#!/usr/bin/env bash
# The check path against /healthz, several builds side by side: each serves `--demo` on its own
# port (--rate-limit 0, RUST_LOG default, logs to a file); every round measures /healthz then
# GET /bots/:id/check on each build in turn (wrk -t2 -c64), so load from elsewhere hits all alike.
#   ROUNDS=4 SECS=4 benches/check_ratio.sh before=/tmp/before/target/release/botlist after=target/release/botlist
# Needs wrk. Loopback only; prints req/s and the ratio per build and round.
set -u
ROUNDS=${ROUNDS:-2}; SECS=${SECS:-5}
declare -a NAMES=() PORTS=() BOTS=() TOKENS=() VOTERS=() PIDS=() DIRS=()
i=0
for spec in "$@"; do
  name=${spec%%=*}; bin=${spec#*=}; port=$((18600 + i)); d=$(mktemp -d /tmp/botlist-check.XXXXXX); DIRS+=($d)
  "$bin" serve --demo --bind 127.0.0.1:$port --data-dir $d/data --rate-limit 0 > $d/out 2> $d/err &
  PIDS+=($!); until grep -q "listening on" $d/out 2>/dev/null; do sleep 0.1; done
  NAMES+=($name); PORTS+=($port)
  BOTS+=($(awk '/demo bot id:/ {print $4}' $d/out)); TOKENS+=($(awk '/demo bot token:/ {print $4}' $d/out)); VOTERS+=($(awk '/a recent voter:/ {print $4}' $d/out))
  i=$((i+1))
done
for r in $(seq 1 $ROUNDS); do
  for j in $(seq 0 $((i-1))); do
    B=http://127.0.0.1:${PORTS[$j]}
    hz=$(wrk -t2 -c64 -d${SECS}s $B/healthz | awk '/Requests\/sec/ {print $2}')
    ck=$(wrk -t2 -c64 -d${SECS}s -H "Authorization: ${TOKENS[$j]}" "$B/api/v1/bots/${BOTS[$j]}/check?userId=${VOTERS[$j]}" | awk '/Requests\/sec/ {print $2}')
    awk -v n=${NAMES[$j]} -v r=$r -v hz=$hz -v ck=$ck -v l="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {printf "round %d %-7s healthz %7.0f  check %7.0f  ratio %.2f  (load %s)\n", r, n, hz, ck, ck/hz, l}'
  done
done
kill ${PIDS[@]}; wait 2>/dev/null
rm -rf "${DIRS[@]}"
