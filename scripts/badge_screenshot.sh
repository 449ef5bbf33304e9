#!/usr/bin/env bash
# Renders badges as a person sees them: starts botlist with the demo directory, fetches badges
# of each kind and style, puts them on one HTML page and screenshots it with headless Chromium.
#
#   scripts/badge_screenshot.sh [OUT.png]     (default: target/badges.png)
#
# Needs a built botlist (target/debug or target/release, or BOTLIST=path) and chromium
# (apt-get install -y chromium).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$here/target/badges.png}"
bin="${BOTLIST:-}"
if [ -z "$bin" ]; then
  for candidate in "$here/target/release/botlist" "$here/target/debug/botlist"; do
    if [ -x "$candidate" ]; then bin="$candidate"; break; fi
  done
fi
[ -n "$bin" ] || { echo "build botlist first (cargo build)" >&2; exit 2; }
chrome="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
[ -n "$chrome" ] || { echo "install chromium first" >&2; exit 2; }

tmp="$(mktemp -d)"
port="${PORT:-18199}"
"$bin" serve --demo --bind "127.0.0.1:$port" --data-dir "$tmp/data" --snapshot-interval 0 \
  >"$tmp/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
base="http://127.0.0.1:$port/api/v1"
for _ in $(seq 1 100); do
  curl -fs "$base/weekend" >/dev/null 2>&1 && break
  sleep 0.2
done
bot=700000000000000000
token="$(sed -n 's/.*demo bot token: *//p' "$tmp/server.log")"
curl -fs -X POST "$base/bots/$bot/stats" -H "Authorization: $token" \
  -H 'Content-Type: application/json' -d '{"server_count": 12345}' >/dev/null

fetch() { # name, path?query
  curl -fs "$base/bots/$bot/badge/$2" -o "$tmp/$1.svg"
}
fetch servers 'servers.svg'
fetch votes 'votes.svg?color=brightgreen'
fetch monthly 'monthly_votes.svg?style=flat-square&color=orange'
fetch label 'servers.svg?label=used%20in%20servers&color=yellow'
fetch escaped 'votes.svg?label=%3Cb%3E%26%20%22quoted%22%20%C3%BCn%C3%AFc%C3%B6de&color=4c1'
fetch bare 'votes.svg?label=&color=e05d44&style=flat-square'

{
  echo '<!doctype html><html><body style="margin:16px;background:#fff;font:14px sans-serif">'
  for name in servers votes monthly label escaped bare; do
    echo "<p style=\"margin:6px 0\"><img src=\"$name.svg\" style=\"zoom:3;vertical-align:middle\"> <span>$name</span></p>"
  done
  echo '</body></html>'
} >"$tmp/page.html"

"$chrome" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$(mktemp -d)" --hide-scrollbars --window-size=900,520 \
  --screenshot="$out" "file://$tmp/page.html" >/dev/null 2>&1
echo "wrote $out"
