#!/usr/bin/env bash
# What the HTTP layer costs on the read paths of benches/load.sh: the same requests against
# `serve --demo`, with compression and the per-request log line off (RUST_LOG=warn, no
# Accept-Encoding), then with the log line on (RUST_LOG=info into a file), then with it and
# Accept-Encoding: gzip, then br; route by route, so all see the same machine. Prints req/s
# and ratios to "off".
#
#   benches/http_layer.sh [SECONDS] [CONNECTIONS] [BASE_BINARY]
#
# BASE_BINARY, if given, is a release build of another commit (say, the one before the HTTP
# layer), measured the same way as "off", for what the middleware costs by itself.
# Needs wrk (apt-get install wrk). Limits off (--rate-limit 0). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10}
CONNECTIONS=${2:-32}
BASE_BINARY=${3:-}
command -v wrk >/dev/null || { echo "needs wrk: apt-get install wrk" >&2; exit 1; }
cargo build --release --quiet
WORK=$(mktemp -d /tmp/botlist-http-layer.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT

start() { # name binary port rust_log
  mkdir -p "$WORK/$1"
  RUST_LOG=$4 "$2" serve --demo --bind "127.0.0.1:$3" --data-dir "$WORK/$1" --rate-limit 0 \
    > "$WORK/$1.out" 2> "$WORK/$1.log" &
  until grep -q "listening on" "$WORK/$1.out" 2>/dev/null; do sleep 0.1; done
}

start off target/release/botlist 18601 warn
start on target/release/botlist 18602 info
if [ -n "$BASE_BINARY" ]; then start base "$BASE_BINARY" 18603 warn; fi
# The demo is deterministic: the same ids and token in every server.
BOT=$(awk '/demo bot id:/ {print $4}' "$WORK/off.out")
TOKEN=$(awk '/demo bot token:/ {print $4}' "$WORK/off.out")
VOTER=$(awk '/a recent voter:/ {print $4}' "$WORK/off.out")

rps() { # url header...
  local url=$1
  shift
  local args=()
  for h in "$@"; do args+=(-H "$h"); done
  wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" "${args[@]}" "$url" | awk '/Requests\/sec/ {print $2}'
}

printf "%-36s %8s %8s %8s %8s %8s %6s %6s %6s\n" route base off on on-gzip on-br on/off gz/off br/off
row() { # name path [auth header]
  local name=$1 path=$2
  shift 2
  local base="-"
  if [ -n "$BASE_BINARY" ]; then base=$(rps "http://127.0.0.1:18603$path" "$@"); fi
  local off on gzip br
  off=$(rps "http://127.0.0.1:18601$path" "$@")
  on=$(rps "http://127.0.0.1:18602$path" "$@")
  gzip=$(rps "http://127.0.0.1:18602$path" "$@" "Accept-Encoding: gzip")
  br=$(rps "http://127.0.0.1:18602$path" "$@" "Accept-Encoding: br")
  awk -v n="$name" -v b="$base" -v o="$off" -v l="$on" -v g="$gzip" -v r="$br" \
    'BEGIN { printf "%-36s %8s %8.0f %8.0f %8.0f %8.0f %6.2f %6.2f %6.2f\n", n, (b == "-" ? b : sprintf("%.0f", b)), o, l, g, r, l/o, g/o, r/o }'
}

row healthz /healthz
row "GET /bots/:id" "/api/v1/bots/$BOT"
row "GET /bots/:id/stats" "/api/v1/bots/$BOT/stats"
row "GET /bots/:id/check" "/api/v1/bots/$BOT/check?userId=$VOTER" "Authorization: $TOKEN"
row "GET /bots/:id/votes (1000 voters)" "/api/v1/bots/$BOT/votes" "Authorization: $TOKEN"
row "GET /bots?limit=24" "/api/v1/bots?limit=24"
row "GET /bots?limit=100" "/api/v1/bots?limit=100"
row "GET /bots?q=wizard&sort=newest" "/api/v1/bots?q=wizard&sort=newest"
echo "log lines written by the logging server: $(grep -c 'botlist::access' "$WORK/on.log")"
for path in "/api/v1/bots?limit=100" "/api/v1/bots/$BOT/votes"; do
  plain=$(curl -s -H "Authorization: $TOKEN" "http://127.0.0.1:18601$path" | wc -c)
  gz=$(curl -s -H "Authorization: $TOKEN" -H 'Accept-Encoding: gzip' "http://127.0.0.1:18601$path" | wc -c)
  br=$(curl -s -H "Authorization: $TOKEN" -H 'Accept-Encoding: br' "http://127.0.0.1:18601$path" | wc -c)
  echo "bytes of $path: $plain plain, $gz gzip, $br br"
done
