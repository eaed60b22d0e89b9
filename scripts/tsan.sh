#!/usr/bin/env bash
# The live-update tests under ThreadSanitizer: reader threads and the writer
# of the `Fib` handle (arc-swap publication, snapshot recycling) run with
# every memory access instrumented, so a data race between a reader and a
# batch being applied is reported even when it gives no wrong answer.
# Needs the nightly toolchain with rust-src (installed here when missing).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! rustup component list --toolchain nightly --installed 2>/dev/null | grep -q rust-src; then
    rustup toolchain install nightly --profile minimal --component rust-src
fi
target=$(rustc -vV | sed -n 's/^host: //p')
# Instrumented code runs many times slower: replay the first batches only.
export FIBKIT_LIVE_BATCHES=${FIBKIT_LIVE_BATCHES:-150}
export TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}"
RUSTFLAGS="-Zsanitizer=thread" RUSTDOCFLAGS="-Zsanitizer=thread" \
    cargo +nightly test -Zbuild-std --target "$target" --release \
    --target-dir target/tsan -p fibkit --test live "$@"
