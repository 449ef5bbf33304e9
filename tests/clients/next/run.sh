#!/usr/bin/env bash
# The 2026 client libraries, @top-gg/sdk 4.0.0 and topggpy 2.0.0, against a botlist started
# here: every method of each against the project API, values checked, and their webhook classes
# (and the Standard Webhooks libraries of both languages) against real deliveries in the `v1` and
# `standard` formats.
#
# Neither 2026 library is on its registry (npm's newest @top-gg/sdk is 3.1.6, PyPI's topggpy
# 2.0.0a0 is a 2021 pre-release of another design), so they are built here from their source
# repositories, at a pinned revision, given as git directories:
#
#   NODE_SDK_GIT=/path/to/node-sdk/.git PYTHON_SDK_GIT=/path/to/python-sdk/.git \
#     tests/clients/next/run.sh
#
# NODE_SDK_REV (default v4.0.0) and PYTHON_SDK_REV (default 9a357ec, whose topgg/version.py and
# pyproject.toml say 2.0.0) pin them. Everything else comes from the registries at pinned
# versions: typescript, raw-body, express and standardwebhooks from npm; aiohttp, yarl and
# standardwebhooks from PyPI. BOTLIST_BIN takes a built binary (default: cargo build). Exits
# non-zero on any failure; without NODE_SDK_GIT or PYTHON_SDK_GIT it says so and exits 3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../../.."
if [ -z "${NODE_SDK_GIT:-}" ] || [ -z "${PYTHON_SDK_GIT:-}" ]; then
  echo "skipped: set NODE_SDK_GIT and PYTHON_SDK_GIT to the libraries' git directories" >&2
  exit 3
fi
NODE_SDK_REV="${NODE_SDK_REV:-v4.0.0}" PYTHON_SDK_REV="${PYTHON_SDK_REV:-9a357ec}"
bin="${BOTLIST_BIN:-}"
if [ -z "$bin" ]; then
  (cd "$root" && cargo build --quiet)
  bin="${CARGO_TARGET_DIR:-$root/target}/debug/botlist"
fi
work="$(mktemp -d /tmp/botlist-clients-next.XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  [ "${KEEP_TMP:-0}" = 1 ] && echo "temp dir: $work" || rm -rf "$work"
}
trap cleanup EXIT

echo "== building @top-gg/sdk $NODE_SDK_REV and installing topggpy $PYTHON_SDK_REV into $work"
mkdir -p "$work/node-sdk" "$work/python-sdk"
git --git-dir="$NODE_SDK_GIT" archive "$NODE_SDK_REV" | tar -x -C "$work/node-sdk"
git --git-dir="$PYTHON_SDK_GIT" archive "$PYTHON_SDK_REV" | tar -x -C "$work/python-sdk"
grep -q '"version": "4.0.0"' "$work/node-sdk/package.json"
grep -q '^version = "2.0.0"' "$work/python-sdk/pyproject.toml"
# The library's one dependency, and what builds it; --no-save keeps its package.json as it is.
(cd "$work/node-sdk" && npm install --no-save --ignore-scripts --no-audit --no-fund --loglevel=error \
  raw-body@3.0.2 typescript@5.9.3 express@5.2.1 standardwebhooks@1.1.1 >/dev/null &&
  npx tsc --noCheck >/dev/null)
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --disable-pip-version-check "$work/python-sdk" standardwebhooks==1.1.0

admin="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
BOTLIST_ADMIN_TOKEN="$admin" "$bin" serve --bind 127.0.0.1:0 --data-dir "$work/data" \
  --allow-private-webhooks >"$work/out" 2>"$work/err" &
pids+=($!)
origin=""
for _ in $(seq 1 600); do
  origin="$(sed -n 's#^listening on \(http://[^/]*\).*#\1#p' "$work/out" | head -n 1)"
  [ -n "$origin" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/err" >&2; exit 2; }
  sleep 0.1
done
[ -n "$origin" ] || { echo "the server did not start" >&2; exit 2; }
BASE="$origin/api/v1"

admin_post() { curl -sS --fail-with-body -X POST "$BASE$1" -H "Authorization: $admin" \
  -H 'Content-Type: application/json' -d "$2"; }
field() { python3 -c 'import json, sys; v = json.load(sys.stdin)
for k in sys.argv[1].split("."): v = v[k]
print(v)' "$1"; }
OWNER=300000000000000052 VOTER=300000000000000053 OTHER=300000000000000054
BOT_ID=700000000000000052 BOT_NAME="Next generation"
owner_id="$(admin_post /admin/users "{\"username\": \"nextowner\", \"platform_id\": \"$OWNER\"}" | field id)"
created="$(admin_post /admin/bots "{\"platform_id\": \"$BOT_ID\", \"name\": \"$BOT_NAME\",
  \"username\": \"nextbot\", \"short_description\": \"Checks every 2026 call\",
  \"tags\": [\"utility\"], \"owner_ids\": [\"$owner_id\"]}")"
TOKEN="$(field token <<<"$created")"
admin_post "/admin/bots/$(field bot.id <<<"$created")/votes" \
  "{\"user_id\": \"$VOTER\", \"username\": \"nextvoter\", \"avatar\": null}" >/dev/null
# One review of 4 stars: the project's `review_score` (out of 5) and `review_count`.
reviewer="$(admin_post /admin/users '{"username": "nextreviewer"}' | field id)"
review_token="$(admin_post "/admin/users/$reviewer/tokens" \
  '{"scopes": ["reviews"], "label": "sdk check"}' | field token)"
curl -sS --fail-with-body -X POST "$BASE/bots/$(field bot.id <<<"$created")/reviews" \
  -H "Authorization: $review_token" -H 'Content-Type: application/json' \
  -d '{"rating": 4, "content": "Checked by the 2026 clients"}' >/dev/null
export BASE TOKEN BOT_ID BOT_NAME VOTER OTHER

status=0
echo "== @top-gg/sdk 4.0.0 (node $(node --version))"
(cd "$work/node-sdk" && SDK_DIR="$work/node-sdk" node --import "$here/redirect.mjs" \
  "$here/topgg_sdk4_client.mjs") || status=1
echo "== topggpy 2.0.0 ($("$work/venv/bin/python" --version))"
"$work/venv/bin/python" "$here/topggpy2_client.py" || status=1

echo "== webhook classes against real deliveries"
export V1_SECRET="next-v1-secret" STANDARD_SECRET="whsec_$(python3 -c 'import base64, os; print(base64.b64encode(os.urandom(24)).decode())')"
cp "$here/receiver.mjs" "$work/node-sdk/receiver.mjs"   # so that its imports resolve there
SDK_DIR="$work/node-sdk" node "$work/node-sdk/receiver.mjs" >"$work/node.log" 2>"$work/node.err" &
pids+=($!)
py_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
PORT="$py_port" "$work/venv/bin/python" -u "$here/receiver.py" >"$work/py.log" 2>"$work/py.err" &
pids+=($!)
node_port=""
for _ in $(seq 1 100); do
  node_port="$(sed -n 's/^port //p' "$work/node.err")"
  [ -n "$node_port" ] && grep -q "^port" "$work/py.err" && break
  sleep 0.1
done
[ -n "$node_port" ] || { echo "the node receiver did not start"; cat "$work/node.err"; exit 2; }
grep -q "^port" "$work/py.err" || { echo "the python receiver did not start"; cat "$work/py.err"; exit 2; }
ADMIN="$admin" python3 "$here/drive.py" \
  "@top-gg/sdk|http://127.0.0.1:$node_port/v1|v1|$work/node.log" \
  "standardwebhooks (npm)|http://127.0.0.1:$node_port/standard|standard|$work/node.log" \
  "topggpy|http://127.0.0.1:$py_port/v1|v1|$work/py.log" \
  "standardwebhooks (PyPI)|http://127.0.0.1:$py_port/standard|standard|$work/py.log" || status=1
exit "$status"
