#!/usr/bin/env bash
# Each read and write of issue 25's table as a ratio to the ceiling: a bare actix-web handler with
# no middleware (examples/bare.rs, in its own process) answering a body of the same size. A
# benchmark that prints figures, not a test. Beside them: a vote by a profile token (issue 36), a
# stats post spread over 200 bots (each its own token: the actors spread over the workers),
# the classic surface's getBot and search and the project API's `GET /projects/@me` (issue 38).
#
#   benches/ceiling.sh [--bots N] [--votes-per-bot V] [--seconds S] [--rounds R]
#                      [--connections C] [--bin PATH] [--bare PATH] [--data DIR] [--only REGEX]
#                      [--serve-arg ARG]...
#
# botlist (default target/release/botlist) serves an empty data directory (or DIR, kept between
# runs: a directory already filled is not filled again) in its default configuration but for
# --rate-limit 0 (so the handlers are measured, not the 429 path), --snapshot-interval 0 and an
# admin token, and each --serve-arg after them (e.g. `--serve-arg --classic-base-path=` to serve
# no classic surface); its log lines go to a file. It is filled through `POST /admin/bots` and
# `POST /admin/bots/:id/votes` (benches/fill_directory.lua, 32 in flight: N bots, default
# 100,000, V votes per bot on average, default 2), then one more bot is listed, voted for and
# posted stats to for the single-bot routes. Resident memory is read before and after the fill.
#
# Then every route, R rounds (default 3) of S seconds each (default 5), wrk -t2 -c C (default 64)
# --latency: the bare handler asked for a body of the route's size, then botlist, alternating.
# Printed per route: body bytes, the median req/s of each, the median of the per-round ratios
# (and their range), and p50/p99 of each (medians over rounds). Loopback only; needs wrk, curl, jq.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in wrk curl jq; do
  command -v "$tool" >/dev/null || { echo "needs $tool: apt-get install $tool" >&2; exit 1; }
done

BOTS=100000 PER_BOT=2 SECS=5 ROUNDS=3 CONNS=64 BIN=target/release/botlist
BARE=target/release/examples/bare DATA="" ONLY="" ADMIN=bench-admin-token
SERVE_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --bots) BOTS=$2; shift 2 ;;
    --votes-per-bot) PER_BOT=$2; shift 2 ;;
    --seconds) SECS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --connections) CONNS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --bare) BARE=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --serve-arg) SERVE_ARGS+=("$2"); shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
for b in "$BIN" "$BARE"; do
  [ -x "$b" ] || { echo "no binary at $b (cargo build --release --bin botlist --example bare)" >&2; exit 1; }
done

WORK=$(mktemp -d /tmp/botlist-ceiling.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
[ -n "$DATA" ] || DATA=$WORK/data
mkdir -p "$DATA"
PORT=18720 BARE_PORT=18721
API=http://127.0.0.1:$PORT/api/v1
BARE_URL=http://127.0.0.1:$BARE_PORT/bytes

"$BARE" 127.0.0.1:$BARE_PORT > "$WORK/bare.out" 2>&1 &
BARE_PID=$!
"$BIN" serve --bind 127.0.0.1:$PORT --data-dir "$DATA" --rate-limit 0 --admin-token "$ADMIN" \
  --snapshot-interval 0 "${SERVE_ARGS[@]}" > "$WORK/botlist.out" 2> "$WORK/botlist.log" &
PID=$!
until grep -q "listening on" "$WORK/botlist.out" 2>/dev/null; do
  kill -0 $PID 2>/dev/null || { echo "botlist did not start:" >&2; cat "$WORK/botlist.log" >&2; exit 1; }
  sleep 0.2
done
until grep -q "listening on" "$WORK/bare.out" 2>/dev/null; do sleep 0.1; done
rss() { awk '/VmRSS/ {printf "%.0f\n", $2 * 1024}' /proc/$PID/status; }

echo "== botlist $BIN, bare $BARE; wrk -t2 -c$CONNS, $ROUNDS rounds of $SECS s; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
listed=$(curl -sf "$API/bots?limit=0" | jq -r .total)
RSS0=$(rss)
if [ "$listed" -lt "$BOTS" ]; then
  quota=$(( (BOTS - listed + 1) / 2 ))
  prefix=$WORK/fill
  t0=$(date +%s.%N)
  wrk -t2 -c32 -d3000s --timeout 30s -s benches/fill_directory.lua "$API" -- \
    "$ADMIN" "$quota" "$PER_BOT" "$prefix" > "$WORK/fill-wrk.log" 2>&1 &
  FILL=$!
  while kill -0 $FILL 2>/dev/null && ! { [ -e "$prefix.1" ] && [ -e "$prefix.2" ]; }; do sleep 0.2; done
  t1=$(date +%s.%N)
  kill -INT $FILL 2>/dev/null || true; wait $FILL 2>/dev/null || true
  read -r b v r < <(cat "$prefix".* | awk '{b += $1; v += $2; r += $3} END {print b, v, r}')
  printf -- '-- filled %s bots and %s votes through the admin API in %.1f s (%.0f requests/s, %s refused)\n' \
    "$b" "$v" "$(echo "$t1 - $t0" | bc -l)" "$(echo "($b + $v) / ($t1 - $t0)" | bc -l)" "$r"
else
  echo "-- $DATA already lists $listed bots: not filled again"
fi
listed=$(curl -sf "$API/bots?limit=0" | jq -r .total)
sleep 1
RSS1=$(rss)
echo "-- $listed bots listed; resident $((RSS1 / 1048576)) MiB ($((RSS0 / 1048576)) MiB before the fill): $(( RSS1 / listed )) bytes per bot (whole process)"

# The bot the single-bot routes ask about, and a user who voted for it.
PLATFORM=999999999$(date +%s%N | cut -c10-18)
made=$(curl -sf -X POST "$API/admin/bots" -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
  -d "{\"platform_id\":\"$PLATFORM\",\"name\":\"Ceiling Probe\",\"username\":\"ceiling-probe\",\"short_description\":\"The bot the ceiling benchmark reads.\",\"tags\":[\"music\",\"fun\"],\"language_code\":\"en\"}")
BOT=$(echo "$made" | jq -r .bot.id); TOKEN=$(echo "$made" | jq -r .token)
VOTER=123456789012345678
curl -sf -X POST "$API/admin/bots/$BOT/votes" -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
  -d "{\"user_id\":\"$VOTER\",\"username\":\"voter\",\"avatar\":null}" > /dev/null
curl -sf -X POST "$API/bots/$BOT/stats" -H "Authorization: $TOKEN" -H 'Content-Type: application/json' \
  -d '{"server_count":1234,"shard_count":2}' > /dev/null

# The voters of the profile-token vote (issue 36): PROFILES profiles (default 5,000) with a
# `vote` token and 200 bots, so that every vote of the run is a (profile, bot) pair not used
# before (benches/profile_votes.lua; each round starts 300,000 pairs further on). Made only
# when that route is measured.
PROFILE_ROUTE="POST /bots/:id/votes by profile token (fsync always)"
MANY_ROUTE="POST /bots/:id/stats over 200 bots (fsync always)"
if [[ -z $ONLY || $PROFILE_ROUTE =~ $ONLY || $MANY_ROUTE =~ $ONLY ]]; then
  python3 benches/profile_voters.py "$API" "$ADMIN" "${PROFILES:-5000}" 200 "$WORK/voters" \
    "$(date +%s | cut -c5-)"
  VOTED=$(tail -n 1 "$WORK/voters.bots")
fi

# name | method | path (after /api/v1) | auth (token|admin|profile|none) | wrk script
ROUTES=(
  "GET /bots first page (24)|GET|/bots|none|"
  "GET /bots?q=wizard&category=music&sort=newest|GET|/bots?q=wizard&category=music&sort=newest|none|"
  "GET /bots?q=e (broad q)|GET|/bots?q=e|none|"
  "GET /bots?votes=5|GET|/bots?votes=5|none|"
  "GET /bots?offset=5000|GET|/bots?offset=5000|none|"
  "GET /bots?page=200&limit=100|GET|/bots?page=200&limit=100|none|"
  "GET /bots/:id/check?userId=|GET|/bots/$BOT/check?userId=$VOTER|token|"
  "GET /bots/:id/stats|GET|/bots/$BOT/stats|none|"
  "GET /bots/:id|GET|/bots/$BOT|none|"
  "GET /bots/:id/badge/servers.svg|GET|/bots/$BOT/badge/servers.svg|none|"
  "GET /bots/:id/stats/history (day)|GET|/bots/$BOT/stats/history|none|"
  "GET /bots/:id/stats/history?interval=hour|GET|/bots/$BOT/stats/history?interval=hour|none|"
  "GET /api/bots/:id (classic getBot)|GET|/api/bots/$PLATFORM|none|"
  "GET /api/bots?search= (classic search)|GET|/api/bots?search=username%3A%20ceiling&limit=50|none|"
  "GET /projects/@me (project API, Bearer)|GET|/projects/@me|bearer|"
  "POST /bots/:id/stats (fsync always)|POST|/bots/$BOT/stats|token|benches/stats_post.lua"
  "POST /admin/bots/:id/votes (fsync always)|POST|/admin/bots/$BOT/votes|admin|benches/votes.lua"
  "$PROFILE_ROUTE|POST|/bots/${VOTED:-}/votes|profile|benches/profile_votes.lua"
  "$MANY_ROUTE|POST|/bots/${VOTED:-}/stats|many|benches/stats_post_many.lua"
)

# One wrk run; prints "req/s p50_ms p99_ms".
run_wrk() { # out url auth-header-or-empty script-or-empty script-args...
  local out=$1 url=$2 auth=$3 script=$4; shift 4
  local -a extra=()
  [ -n "$auth" ] && extra+=(-H "Authorization: $auth")
  [ -n "$script" ] && extra+=(-s "$script")
  wrk -t2 -c"$CONNS" -d"${SECS}s" --timeout 30s --latency "${extra[@]}" "$url" ${1+--} "$@" > "$out" 2>&1 || true
  awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
       /Requests\/sec/ {r = $2} $1 == "50%" {p50 = ms($2)} $1 == "99%" {p99 = ms($2)}
       END {printf "%.0f %.3f %.3f\n", r, p50, p99}' "$out"
}

ROWS=$WORK/rows; : > "$ROWS"
k=0
for route in "${ROUTES[@]}"; do
  IFS='|' read -r name method path auth script <<< "$route"
  [[ -z $ONLY || $name =~ $ONLY ]] || continue
  # A path under /api/ is the classic surface's, from the server's root; any other is {base}'s.
  url=$API$path
  case $path in /api/*) url=${API%/api/v1}$path ;; esac
  case $auth in token) header=$TOKEN ;; bearer) header="Bearer $TOKEN" ;; admin) header=$ADMIN ;; profile) header=$(tail -n 1 "$WORK/voters.tokens") ;; many) header=$(tail -n 1 "$WORK/voters.bot_tokens") ;; *) header="" ;; esac
  # The body botlist answers with, for the bare handler's size.
  if [ "$method" = GET ]; then
    bytes=$(curl -sf ${header:+-H "Authorization: $header"} "$url" | wc -c)
  elif [ "$auth" = profile ]; then
    # The last pair (last token, last bot): the run reaches it only past 1,000,000 votes.
    bytes=$(curl -sf -X POST -H "Authorization: $header" "$API$path" | wc -c)
  elif [ "$auth" = admin ]; then
    bytes=$(curl -sf -X POST -H "Authorization: $header" -H 'Content-Type: application/json' \
      -d '{"user_id":"987654321098765432","username":"once","avatar":null}' "$API$path" | wc -c)
  else
    bytes=$(curl -sf -X POST -H "Authorization: $header" -H 'Content-Type: application/json' \
      -d '{"server_count":1500}' "$API$path" | wc -c)
  fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  for r in $(seq 1 "$ROUNDS"); do
    k=$((k + 1))
    # The bare handler gets a POST of the same kind for the write routes.
    if [ "$method" = POST ]; then
      bare=$(run_wrk "$WORK/$k.bare" "$BARE_URL/$bytes" "" benches/stats_post.lua x)
    else
      bare=$(run_wrk "$WORK/$k.bare" "$BARE_URL/$bytes" "" "")
    fi
    case $script in
      "") ours=$(run_wrk "$WORK/$k.ours" "$url" "$header" "") ;;
      benches/votes.lua) ours=$(run_wrk "$WORK/$k.ours" "http://127.0.0.1:$PORT" "" "$script" "$BOT" "$ADMIN" "$((r * 1000000000))") ;;
      benches/profile_votes.lua) ours=$(run_wrk "$WORK/$k.ours" "http://127.0.0.1:$PORT" "" "$script" \
        "$WORK/voters.tokens" "$WORK/voters.bots" "$(( (r - 1) * 300000 ))") ;;
      benches/stats_post_many.lua) ours=$(run_wrk "$WORK/$k.ours" "http://127.0.0.1:$PORT" "" "$script" \
        "$WORK/voters.bots" "$WORK/voters.bot_tokens") ;;
      *) ours=$(run_wrk "$WORK/$k.ours" "$API$path" "" "$script" "$TOKEN") ;;
    esac
    for f in "$WORK/$k.bare" "$WORK/$k.ours"; do
      if grep -qE "Non-2xx|Socket errors|unexpected status" "$f"; then
        echo "   note: $name round $r ($(basename "$f")): $(grep -E 'Non-2xx|Socket errors' "$f" | tr -s ' ' | paste -sd';')" >&2
      fi
    done
    echo "$name|$bytes|$load|$bare|$ours" >> "$ROWS"
  done
  printf '   %-50s %7s bytes, load %s\n' "$name" "$bytes" "$load"
done

echo
echo "| route | bytes | botlist req/s | bare req/s | ratio (median, range) | botlist p50 / p99 ms | bare p50 / p99 ms | load |"
echo "|---|---:|---:|---:|---|---|---|---:|"
awk -F'|' -v digits=2 -v loads=last -f benches/rounds_table.awk "$ROWS"
echo
echo "resident after the runs: $(( $(rss) / 1048576 )) MiB; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "log lines written: $(wc -l < "$WORK/botlist.log")"
# What bounds the write routes: the journal's fsyncs over the whole run (fill included).
curl -sf "http://127.0.0.1:$PORT/metrics" | awk '
  /^botlist_journal_fsync_duration_seconds_sum/ {s = $2} /^botlist_journal_fsync_duration_seconds_count/ {c = $2}
  /^botlist_journal_written_bytes_total/ {b = $2}
  END { if (c > 0) printf "journal: %d fsyncs, mean %.2f ms each, %.0f bytes written per fsync\n", c, s / c * 1000, b / c }'

kill $PID; wait $PID 2>/dev/null || true
