#!/usr/bin/env bash
# Runs every fuzz target with this machine's stable toolchain (no sanitizer), starting from the
# committed seeds, then merges what grew coverage back into fuzz/seeds/<target>/, minimised.
#
#   fuzz/run.sh [SECONDS_PER_TARGET] [TARGET...]     (default 600 s, every target)
#
# Needs cargo-fuzz: cargo install cargo-fuzz. AddressSanitizer instead:
#   RUSTC_BOOTSTRAP=1 cargo fuzz run <target> fuzz/seeds/<target>
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(search_query json_body ids snapshot_file journal_segment)
cargo fuzz build --sanitizer none
BIN=fuzz/target/$(rustc -vV | awk '/host:/ {print $2}')/release
for target in "${TARGETS[@]}"; do
  mkdir -p "fuzz/corpus/$target" "fuzz/artifacts/$target"
  echo "== $target for $SECONDS_PER_TARGET s"
  "$BIN/$target" "fuzz/corpus/$target" "fuzz/seeds/$target" \
    -max_total_time="$SECONDS_PER_TARGET" -rss_limit_mb=2048 -max_len=131072 \
    -artifact_prefix="fuzz/artifacts/$target/" -print_final_stats=1 2>&1 | tail -15
  # Minimise before merging back: the named (hand-written, bug-finding) seeds are always kept;
  # of the rest, the smallest set that covers the same edges as the old seeds and the new
  # corpus together, then any input that still adds an edge.
  fresh=$(mktemp -d)
  find "fuzz/seeds/$target" -type f -regextype posix-extended ! -regex '.*/[0-9a-f]{40}' -exec cp {} "$fresh/" \;
  "$BIN/$target" -set_cover_merge=1 -use_counters=0 -max_len=131072 -rss_limit_mb=2048 \
    "$fresh" "fuzz/seeds/$target" "fuzz/corpus/$target" 2>&1 | tail -1
  "$BIN/$target" -merge=1 -use_counters=0 -max_len=131072 -rss_limit_mb=2048 \
    "$fresh" "fuzz/seeds/$target" "fuzz/corpus/$target" 2>&1 | tail -1
  rm -rf "fuzz/seeds/$target" && mv "$fresh" "fuzz/seeds/$target"
  # Thousands of its seeds are short records that each add one edge: many per file instead.
  if [ "$target" = journal_segment ]; then python3 fuzz/pack.py "fuzz/seeds/$target"; fi
done
