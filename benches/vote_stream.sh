#!/usr/bin/env bash
# Vote ingest with 0, 1 and 100 live readers of the bot's vote stream, each as a ratio of the
# rate with no reader, measured in one run against one server. The readers are one process
# (examples/stream_reader.rs: every stream on one thread, as a real client would read them) that
# counts the vote events, checks that each stream's ids are consecutive and reports overflows.
# Beside each rate: the server's own CPU time per vote (from /proc/PID/stat, over the wrk
# round), and the CPU time of wrk and of the reader, which share the machine with the server.
#
#   cargo build --release --bin botlist --example stream_reader && benches/vote_stream.sh
#   DURATION=10 FSYNC=always CONNECTIONS=32 READERS="0 1 100 0" benches/vote_stream.sh
#   BIN=/tmp/before/botlist benches/vote_stream.sh      # another build, same reader
#   PERF=/tmp/vote_stream.perf PERF_READERS=100 benches/vote_stream.sh  # profile that round
#   PERF_CALLGRAPH=dwarf,16384 PERF=...    # whole call chains (the release build keeps no frame pointers)
#   SYSCALLS=1 benches/vote_stream.sh   # also the server's sends, writes and epoll waits per vote
#   SERVER_ARGS="--stream-write-interval-ms 10" benches/vote_stream.sh   # more server options
#
# Needs wrk (apt-get install -y wrk), curl, python3, and perf (linux-perf) for PERF.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-target/release/botlist}
READER=${READER:-target/release/examples/stream_reader}
DURATION=${DURATION:-10}
FSYNC=${FSYNC:-always}
CONNECTIONS=${CONNECTIONS:-32}
READERS=${READERS:-0 1 100 0}
PERF=${PERF:-}
PERF_READERS=${PERF_READERS:-100}
SYSCALLS=${SYSCALLS:-}
SERVER_ARGS=${SERVER_ARGS:-}
ADMIN=bench-admin-token-0001
[ -x "$READER" ] || { echo "build the reader first: cargo build --release --example stream_reader" >&2; exit 1; }

dir=$(mktemp -d)
"$BIN" serve --bind 127.0.0.1:0 --data-dir "$dir/data" --admin-token "$ADMIN" --rate-limit 0 \
  --max-streams-per-bot 200 --fsync "$FSYNC" --snapshot-interval 0 $SERVER_ARGS >"$dir/out" 2>"$dir/err" &
server=$!
reader=""
cleanup() {
  [ -n "$reader" ] && kill "$reader" 2>/dev/null || true
  kill "$server" 2>/dev/null || true
  wait "$server" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
for _ in $(seq 100); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
BASE=$(sed -n 's/^listening on //p' "$dir/out")
ROOT=${BASE%/api/v1}
HOSTPORT=${ROOT#http://}
created=$(curl -sf -X POST "$BASE/admin/bots" -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
  -d '{"platform_id":"4242","name":"Bench","username":"bench","short_description":"streams"}')
BOT=$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["bot"]["id"])')
TOKEN=$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')

# User plus system CPU ticks of a process.
ticks() { awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)

echo "$(basename "$BIN"): fsync=$FSYNC, wrk -t2 -c$CONNECTIONS -d${DURATION}s, $(nproc) cores"
printf '%-8s %10s %6s %9s %8s %8s  %s\n' readers votes/s ratio "server" wrk reader "reader's tally; load"
printf '%-8s %10s %6s %9s %8s %8s\n' "" "" "" "µs/vote" "cpu s" "cpu s"
run=0
rounds=""
base_rate=""
for n in $READERS; do
  run=$((run + 1))
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  reader=""
  if [ "$n" -gt 0 ]; then
    "$READER" "$HOSTPORT" /api/v1 "$BOT" "$TOKEN" "$n" >"$dir/reader.$run" 2>"$dir/reader.$run.err" &
    reader=$!
  fi
  sleep 1
  perf_pid=""
  if [ -n "$PERF" ] && [ "$n" = "$PERF_READERS" ]; then
    perf record -q -F 499 ${PERF_CALLGRAPH:+--call-graph "$PERF_CALLGRAPH"} -p "$server" -o "$PERF" -- sleep "$DURATION" 2>/dev/null &
    perf_pid=$!
  fi
  stat_pid=""
  if [ -n "$SYSCALLS" ]; then
    perf stat -x, -o "$dir/syscalls.$run" -p "$server" \
      -e syscalls:sys_enter_sendto,syscalls:sys_enter_write,syscalls:sys_enter_epoll_wait -- sleep "$DURATION" &
    stat_pid=$!
  fi
  before=$(ticks "$server")
  /usr/bin/time -f '%U %S' -o "$dir/wrk.time" \
    wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s benches/votes.lua "$ROOT" -- "$BOT" "$ADMIN" "${run}000000000000" \
    >"$dir/wrk.$run" 2>&1
  after=$(ticks "$server")
  [ -n "$perf_pid" ] && wait "$perf_pid" 2>/dev/null || true
  rate=$(awk '/Requests\/sec/ {print $2}' "$dir/wrk.$run")
  votes=$(awk '/requests in/ {print $1}' "$dir/wrk.$run")
  wrk_cpu=$(awk '{print $1 + $2}' "$dir/wrk.time")
  calls=""
  if [ -n "$stat_pid" ]; then
    wait "$stat_pid" 2>/dev/null || true
    calls=$(awk -F, -v votes="$votes" '/syscalls:/ { sub(/.*sys_enter_/, "", $3); printf "%s %.1f/vote, ", $3, $1 / votes }' "$dir/syscalls.$run")
  fi
  sleep 1
  tally="" reader_cpu="-" whole=1
  if [ -n "$reader" ]; then
    kill -TERM "$reader" 2>/dev/null || true
    wait "$reader" 2>/dev/null || true
    reader=""
    line=$(cat "$dir/reader.$run")
    reader_cpu=$(echo "$line" | sed -n 's/.*reader_cpu_s \([0-9.]*\).*/\1/p')
    tally=$(echo "$line" | python3 -c "
import sys
f = sys.stdin.read().split(); d = dict(zip(f[0::2], f[1::2]))
print(f\"{int(d['votes']) / int(d['streams']):.0f} of $votes votes per stream, gaps {d['gaps']}, overflows {d['overflows']}, failed {d['failed']}; \", end='')")
    # A round whose readers were cut off, missed votes or failed did not carry the load it
    # claims: its rate is shown but left out of the paired ratios.
    whole=$(echo "$line" | awk '{ for (i = 1; i < NF; i += 2) f[$i] = $(i + 1) } END { print (f["gaps"] + f["overflows"] + f["failed"] == 0) }')
  fi
  [ -z "$base_rate" ] && base_rate=$rate
  ratio=$(python3 -c "print(f'{$rate / $base_rate:.2f}')")
  per_vote=$(python3 -c "print(f'{($after - $before) / $HZ / $votes * 1e6:.1f}')")
  printf '%-8s %10s %6s %9s %8s %8s  %s\n' "$n" "$rate" "$ratio" "$per_vote" "$wrk_cpu" "$reader_cpu" "${tally}${calls}load $load"
  rounds="$rounds $n:$rate:$whole"
done

# The host's other tenants move the no-reader rate by up to a quarter within one run, so each
# round with readers is also compared with the no-reader rounds on either side of it (the
# nearest before and after, averaged), and the median of those paired ratios is given per
# reader count: alternate the counts (READERS="0 100 0 100 0 100 0") for it to mean much.
python3 - $rounds <<'PY'
import statistics, sys
rounds = [(int(n), float(r), w == "1") for n, r, w in (a.split(":") for a in sys.argv[1:])]
left_out = [i + 1 for i, (n, _, whole) in enumerate(rounds) if n and not whole]
if left_out:
    print(f"left out of the paired ratios (readers cut off, gaps or failures): round {', '.join(map(str, left_out))}")
rounds = [(n, r) for n, r, whole in rounds if whole or n == 0]
paired = {}
for i, (n, rate) in enumerate(rounds):
    if n == 0:
        continue
    before = next((r for m, r in reversed(rounds[:i]) if m == 0), None)
    after = next((r for m, r in rounds[i + 1:] if m == 0), None)
    near = [r for r in (before, after) if r is not None]
    if near:
        paired.setdefault(n, []).append(rate / (sum(near) / len(near)))
for n, ratios in sorted(paired.items()):
    shown = " ".join(f"{r:.2f}" for r in ratios)
    print(f"paired with the no-reader rounds beside them, {n} readers: median {statistics.median(ratios):.2f} ({shown})")
PY
