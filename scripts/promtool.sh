#!/usr/bin/env bash
# Checks GET /metrics of a running demo with `promtool check metrics` (Debian's prometheus
# package), after traffic that touches every family: reads, a 304, a 429, stats, votes, a
# snapshot and a webhook test delivery.
#
#   scripts/promtool.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v promtool >/dev/null; then
  apt-get update -qq && apt-get install -y -qq prometheus >/dev/null
fi
cargo build --quiet
WORK=$(mktemp -d /tmp/botlist-promtool.XXXXXX)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$WORK"' EXIT
target/debug/botlist serve --demo --bind 127.0.0.1:0 --data-dir "$WORK" --rate-limit 5 \
  > "$WORK/out" 2> "$WORK/err" &
until grep -q "listening on" "$WORK/out" 2>/dev/null; do sleep 0.1; done
B=$(awk '/listening on/ {print $3}' "$WORK/out")
ROOT=${B%/api/v1}
BOT=$(awk '/demo bot id:/ {print $4}' "$WORK/out")
TOKEN=$(awk '/demo bot token:/ {print $4}' "$WORK/out")
ADMIN=$(awk '/admin token:/ {print $3}' "$WORK/out")
for _ in 1 2 3 4 5 6 7; do curl -s -o /dev/null "$B/bots?q=bot"; done
ETAG=$(curl -s -D - -o /dev/null "$B/bots/$BOT/stats" -H "Authorization: $TOKEN" | awk -F': ' 'tolower($1)=="etag" {print $2}' | tr -d '\r')
curl -s -o /dev/null -H "Authorization: $TOKEN" -H "If-None-Match: $ETAG" "$B/bots/$BOT/stats"
curl -s -o /dev/null -H "Authorization: $TOKEN" -H 'Content-Type: application/json' \
  -d '{"server_count": 1234}' "$B/bots/$BOT/stats"
for _ in 1 2; do
  curl -s -o /dev/null -H "Authorization: $ADMIN" -H 'Content-Type: application/json' \
    -d '{"user_id": "123456789012345678", "username": "probe", "avatar": null}' "$B/admin/bots/$BOT/votes"
done
curl -s -o /dev/null -X POST -H "Authorization: $ADMIN" "$B/admin/snapshot"
curl -s -o /dev/null -X POST -H "Authorization: $ADMIN" "$B/admin/bots/$BOT/webhook/test"
curl -s -o /dev/null "$ROOT/nowhere"
curl -s "$ROOT/metrics" > "$WORK/metrics"
echo "$(grep -c '^# TYPE' "$WORK/metrics") families, $(grep -vc '^#' "$WORK/metrics") samples"
promtool check metrics < "$WORK/metrics" && echo "promtool check metrics: clean"
