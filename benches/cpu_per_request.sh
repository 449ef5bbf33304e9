#!/usr/bin/env bash
# CPU per request of each botlist build given, beside the bare handler (examples/bare.rs), for
# the single-bot reads, the classic search of `ceiling.sh` and /healthz: each build serves its
# own empty data directory with one listed bot and one vote, in its default configuration but
# for --rate-limit 0; wrk -t2 -c64
# runs S seconds per route against the bare handler, then each build in turn, for R rounds.
# Printed per route and round: req/s and the server process's CPU (user + system, from
# /proc/PID/stat) divided by the requests it answered. Steadier than req/s on a shared machine,
# and what docs/PERFORMANCE.md ("CPU per request, and what the layer costs") compares builds with,
# ablations included.
#
#   benches/cpu_per_request.sh ROUNDS SECONDS NAME=BINARY [NAME=BINARY ...]
#   e.g. benches/cpu_per_request.sh 2 4 before=/tmp/botlist-before after=target/release/botlist
#
# A benchmark that prints figures, not a test. Needs wrk, curl, jq and a release build of the
# bare handler (cargo build --release --example bare).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:?rounds}; SECS=${2:?seconds}; shift 2
BARE=target/release/examples/bare
[ -x "$BARE" ] || { echo "no $BARE (cargo build --release --example bare)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/botlist-cpu.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
ADMIN=cpu-bench-admin-token-long
BARE_PORT=18769
"$BARE" 127.0.0.1:$BARE_PORT > "$WORK/bare.out" 2>&1 &
declare -A PORT PID
port=18770
for spec in "$@"; do
  name=${spec%%=*}; bin=${spec#*=}
  "$bin" serve --bind 127.0.0.1:$port --data-dir "$WORK/data.$name" --rate-limit 0 \
    --admin-token "$ADMIN" --snapshot-interval 0 > "$WORK/out.$name" 2> "$WORK/log.$name" &
  PID[$name]=$!; PORT[$name]=$port; port=$((port + 1))
done
for spec in "$@"; do
  name=${spec%%=*}
  until grep -q "listening on" "$WORK/out.$name" 2>/dev/null; do sleep 0.2; done
  api=http://127.0.0.1:${PORT[$name]}/api/v1
  made=$(curl -sf -X POST "$api/admin/bots" -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
    -d '{"platform_id":"999999999123456789","name":"Ceiling Probe","username":"ceiling-probe","short_description":"The bot the ceiling benchmark reads.","tags":["music","fun"],"language_code":"en"}')
  echo "$(echo "$made" | jq -r .bot.id) $(echo "$made" | jq -r .token)" > "$WORK/bot.$name"
  curl -sf -X POST "$api/admin/bots/$(cut -d' ' -f1 "$WORK/bot.$name")/votes" -H "Authorization: $ADMIN" \
    -H 'Content-Type: application/json' -d '{"user_id":"123456789012345678","username":"voter","avatar":null}' > /dev/null
done
until grep -q "listening on" "$WORK/bare.out" 2>/dev/null; do sleep 0.1; done
BARE_PID=$(jobs -p | head -1)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
run() { # pid wrk-args...
  local pid=$1; shift
  local t0 t1 out; t0=$(ticks "$pid"); out=$(wrk -t2 -c64 -d"${SECS}s" "$@"); t1=$(ticks "$pid")
  echo "$out" | awk -v t=$((t1 - t0)) -v hz="$hz" '/requests in/ {n = $1} /Requests\/sec/ {printf "%.0f/s %.2fus", $2, t * 1e6 / hz / n}'
}
# The classic search of `ceiling.sh`, whose body depends on the bot listed: its size is read.
CLASSIC="/api/bots?search=username%3A%20ceiling&limit=50"
CLASSIC_SIZE=$(curl -sf "http://127.0.0.1:${PORT[${1%%=*}]}$CLASSIC" | wc -c)
echo "== wrk -t2 -c64, $ROUNDS rounds of $SECS s; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for round in $(seq 1 "$ROUNDS"); do
  for route in healthz stats check bot classic; do
    case $route in healthz) size=15 ;; stats) size=18 ;; check) size=11 ;; bot) size=479 ;; classic) size=$CLASSIC_SIZE ;; esac
    line="$route  bare $(run "$BARE_PID" "http://127.0.0.1:$BARE_PORT/bytes/$size")"
    for spec in "$@"; do
      name=${spec%%=*}; read -r bot token < "$WORK/bot.$name"; base=http://127.0.0.1:${PORT[$name]}
      case $route in
        healthz) v=$(run "${PID[$name]}" "$base/healthz") ;;
        stats) v=$(run "${PID[$name]}" "$base/api/v1/bots/$bot/stats") ;;
        check) v=$(run "${PID[$name]}" -H "Authorization: $token" "$base/api/v1/bots/$bot/check?userId=123456789012345678") ;;
        bot) v=$(run "${PID[$name]}" "$base/api/v1/bots/$bot") ;;
        classic) v=$(run "${PID[$name]}" "$base$CLASSIC") ;;
      esac
      line="$line  $name $v"
    done
    echo "$line"
  done
done
