#!/usr/bin/env bash
# Checks the deployment files (docs/OPERATIONS.md): the systemd unit with `systemd-analyze
# verify`, the Prometheus alert rules with `promtool check rules` and their unit tests with
# `promtool test rules`. Installs systemd and Debian's prometheus package (promtool) when
# missing. The Grafana dashboard's metric names are checked by `cargo test --test api`
# (operations::the_dashboard_names_only_metrics_that_exist).
#
#   scripts/check-deploy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v promtool >/dev/null || need+=(prometheus)
if ((${#need[@]})); then
  apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
fi
cargo build --quiet --bin botlist
WORK=$(mktemp -d /tmp/botlist-deploy.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# The unit names /usr/local/bin/botlist, where it is installed; verify checks that the program
# exists, so the copy checked names the one just built.
sed "s|/usr/local/bin/botlist|$PWD/target/debug/botlist|" deploy/botlist.service > "$WORK/botlist.service"
systemd-analyze verify "$WORK/botlist.service"
promtool check rules deploy/prometheus/botlist-alerts.yml
(cd deploy/prometheus && promtool test rules botlist-alerts.test.yml)
echo "deployment files: ok"
