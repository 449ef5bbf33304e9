#!/usr/bin/env bash
# The released client libraries against a botlist started here (what .ci/run runs).
#
# Builds the debug binary (or takes BOTLIST_BIN), serves an empty directory on a free loopback
# port, fills it through the admin API with values of its own (an owner profile linked to a
# platform id, a bot, a fresh vote), then runs run.sh against the classic surface, `/api`,
# with those values to check. Needs PyPI and npm (run.sh installs the libraries), curl and
# python3. Exits with run.sh's status.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
bin="${BOTLIST_BIN:-}"
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --quiet)
  bin="${CARGO_TARGET_DIR:-$root/target}/debug/botlist"
fi
work="$(mktemp -d /tmp/botlist-clients-ci.XXXXXX)"
server=""
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
admin="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
BOTLIST_ADMIN_TOKEN="$admin" "$bin" serve --bind 127.0.0.1:0 --data-dir "$work/data" \
  >"$work/out" 2>"$work/err" &
server=$!
origin=""
for _ in $(seq 1 300); do
  origin="$(sed -n 's#^listening on \(http://[^/]*\).*#\1#p' "$work/out" | head -n 1)"
  [ -n "$origin" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$work/err" >&2; exit 2; }
  sleep 0.1
done
[ -n "$origin" ] || { echo "the server did not start" >&2; cat "$work/err" >&2; exit 2; }

admin_post() { # path, JSON body -> response body
  curl -sS --fail-with-body -X POST "$origin/api/v1$1" -H "Authorization: $admin" \
    -H 'Content-Type: application/json' -d "$2"
}
field() { python3 -c 'import json, sys; v = json.load(sys.stdin)
for k in sys.argv[1].split("."): v = v[k]
print(v)' "$1"; }

OWNER=300000000000000042 OWNER_NAME=classicowner
BOT_ID=700000000000000042 BOT_USERNAME=classicbot VOTER=300000000000000043
owner_id="$(admin_post /admin/users "{\"username\": \"$OWNER_NAME\", \"platform_id\": \"$OWNER\"}" | field id)"
created="$(admin_post /admin/bots "{\"platform_id\": \"$BOT_ID\", \"name\": \"$BOT_USERNAME\",
  \"username\": \"$BOT_USERNAME\", \"short_description\": \"Checks every classic call\",
  \"tags\": [\"utility\"], \"owner_ids\": [\"$owner_id\"]}")"
TOKEN="$(field token <<<"$created")"
bot_uuid="$(field bot.id <<<"$created")"
admin_post "/admin/bots/$bot_uuid/votes" \
  "{\"user_id\": \"$VOTER\", \"username\": \"classicvoter\", \"avatar\": null}" >/dev/null

BASE="$origin/api" BOT_ID="$BOT_ID" TOKEN="$TOKEN" VOTER="$VOTER" OWNER="$OWNER" \
  OWNER_NAME="$OWNER_NAME" BOT_USERNAME="$BOT_USERNAME" "$here/run.sh"
