#!/usr/bin/env bash
# Runs every fuzz target with this machine's stable toolchain (no sanitizer), starting from the
# committed seeds, then merges what grew coverage back into fuzz/seeds/<target>/.
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
  # Keep the inputs that add coverage, next to the hand-written seeds.
  "$BIN/$target" -merge=1 "fuzz/seeds/$target" "fuzz/corpus/$target" 2>&1 | tail -1
done
