#!/usr/bin/env bash
# Where a request's CPU goes, thread by thread, and how often the server's threads are switched
# out: for each server given, R rounds of S seconds of `wrk -t2 -c64` on one route, reading
# /proc/PID/task/*/{stat,status} before and after. Printed per server and round: req/s, user
# and system CPU a request (µs), the CPU a request of each thread group that used more than
# 0.2 µs, and the voluntary and involuntary context switches per 1,000 requests.
# docs/PERFORMANCE.md ("The writes, thread by thread") reads the writes' threads and the scheduler's part off it.
#
#   benches/threads_per_request.sh ROUTE ROUNDS SECONDS NAME=BINARY[,ARG...] [...]
#   ROUTE: check (GET /bots/:id/check) or post (POST /bots/:id/stats)
#   e.g. benches/threads_per_request.sh post 2 6 bare=target/release/examples/bare \
#          always=target/release/botlist never=target/release/botlist,--fsync,never
#
# A server named `bare` is the bare handler (examples/bare.rs), asked for a body of the same
# size. Each botlist serves its own empty data directory with one listed bot, in its default
# configuration but for --rate-limit 0 and the ARGs given. A benchmark that prints figures, not
# a test. Needs wrk, curl and jq.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUTE=${1:?route}; ROUNDS=${2:?rounds}; SECS=${3:?seconds}; shift 3
for tool in wrk curl jq; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
WORK=$(mktemp -d /tmp/botlist-threads.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
ADMIN=threads-bench-admin-token
PORT=18780

# One thread per line: tid, name, voluntary and involuntary switches, user and system ticks.
snapshot() {
  for task in /proc/"$1"/task/*; do
    echo "$(basename "$task") $(tr ' ' _ < "$task/comm")" \
      "$(awk '/^voluntary_ctxt/ {v=$2} /^nonvoluntary_ctxt/ {n=$2} END {print v, n}' "$task/status")" \
      "$(awk '{print $14, $15}' "$task/stat")"
  done | sort
}

measure() {
  local name=$1 bin=$2; shift 2
  local dir="$WORK/$name" url body=() token=x
  mkdir -p "$dir"
  PORT=$((PORT + 1))
  if [ "$name" = bare ]; then
    "$bin" 127.0.0.1:$PORT > "$dir/out" 2>&1 &
    until grep -q "listening on" "$dir/out" 2>/dev/null; do sleep 0.1; done
    url=http://127.0.0.1:$PORT/bytes/11
  else
    "$bin" serve --bind 127.0.0.1:$PORT --data-dir "$dir/data" --rate-limit 0 \
      --admin-token "$ADMIN" --snapshot-interval 0 "$@" > "$dir/out" 2> "$dir/log" &
    local started=$!
    until grep -q "listening on" "$dir/out" 2>/dev/null; do
      kill -0 $started 2>/dev/null || { echo "$name did not start:" >&2; cat "$dir/log" >&2; exit 1; }
      sleep 0.1
    done
    local api=http://127.0.0.1:$PORT/api/v1 made bot
    made=$(curl -sf -X POST "$api/admin/bots" -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
      -d '{"platform_id":"999999999123456789","name":"Threads Probe","username":"threads-probe","short_description":"The bot the threads benchmark reads.","tags":["music"],"language_code":"en"}')
    bot=$(echo "$made" | jq -r .bot.id); token=$(echo "$made" | jq -r .token)
    case $ROUTE in
      check) url="$api/bots/$bot/check?userId=123456789012345678" ;;
      post) url="$api/bots/$bot/stats" ;;
    esac
  fi
  local pid=$!
  case $ROUTE in
    check) body=(-H "Authorization: $token" "$url") ;;
    post) body=(-s benches/stats_post.lua "$url" -- "$token") ;;
    *) echo "unknown route $ROUTE" >&2; exit 2 ;;
  esac
  wrk -t2 -c64 -d2s "${body[@]}" > /dev/null
  for round in $(seq 1 "$ROUNDS"); do
    snapshot $pid > "$dir/before"
    local rate
    rate=$(wrk -t2 -c64 -d"${SECS}s" "${body[@]}" | awk '/Requests\/sec/ {print $2}')
    snapshot $pid > "$dir/after"
    join "$dir/before" "$dir/after" | awk -v r="$rate" -v s="$SECS" -v name="$name" -v round="$round" \
      -v hz="$(getconf CLK_TCK)" '
      { vol += $8 - $3; inv += $9 - $4; u += $10 - $5; k += $11 - $6; t[$2] += ($10 - $5) + ($11 - $6) }
      END {
        n = r * s; us = 1e6 / hz / n
        printf "%-8s round %d  %8.0f req/s  user %.2f sys %.2f = %.2f us  switches/1k: %.0f voluntary, %.0f involuntary  [", name, round, r, u * us, k * us, (u + k) * us, vol / n * 1000, inv / n * 1000
        for (g in t) if (t[g] * us > 0.2) printf " %s %.2f", g, t[g] * us
        print " ]"
      }'
  done
  kill -INT $pid; wait $pid 2>/dev/null || true
}

echo "== $ROUTE, wrk -t2 -c64, $ROUNDS rounds of $SECS s; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for spec in "$@"; do
  name=${spec%%=*}; rest=${spec#*=}
  IFS=, read -r -a parts <<< "$rest"
  measure "$name" "${parts[@]}"
done
