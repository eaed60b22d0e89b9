#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 60) each. Needs the nightly
# toolchain; installs cargo-fuzz if missing. Crashes land in
# fuzz/artifacts/<target>/: turn each into a regression test.
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-60}
command -v cargo-fuzz >/dev/null 2>&1 || cargo install cargo-fuzz --locked
for target in load_table load_updates engines_vs_reference specs_vs_reference update_batches failed_updates image; do
    mkdir -p "corpus/$target"
    cargo +nightly fuzz run "$target" "corpus/$target" -- -max_total_time="$seconds" -rss_limit_mb=4096
done
