#!/usr/bin/env bash
# Every test: the Rust workspace (the C library's programs included: cargo
# compiles and runs them with cc), then the Python package, built from this
# checkout and installed with pip, under pytest (its reference answers come
# from the `fibkit` command the first step built).
# Needs: cargo, cc, python3 with pip; maturin, pytest, numpy, pyarrow,
# dask[dataframe] and distributed (.ci/run installs them).
set -euo pipefail
cd "$(dirname "$0")"

# The tests read real tables from the shared data set: stop at once, saying
# where it belongs, rather than after a build with hundreds of failures.
data="${FIBKIT_DATA_DIR:-../shared/data}"
if [ ! -d "$data" ]; then
    echo "test.sh: the shared data set is missing: the tests read real routing tables from $data" \
        "(../shared/data beside the repository clone, holding dfz-v4-nh.txt.gz and the other" \
        "files its README lists, or the folder FIBKIT_DATA_DIR names); put the data there and" \
        "run the tests again" >&2
    exit 1
fi

# The C library's archive first: `cargo test` builds only what tests link,
# and the C test programs link libfibkit.a.
cargo build --release -p fibkit-c -p fibkit-cli
# The core without optional features (no loaders' compression or MRT, no
# synthetic generators), as an embedder builds it, so the feature gates do
# not rot.
cargo build --release -p fibkit --no-default-features
cargo test --release --workspace

# The library's examples are what an embedder copies first: each must run
# (on the real table; each takes a few seconds at most).
for example in crates/fibkit/examples/*.rs; do
    name=$(basename "$example" .rs)
    case "$name" in
        dual_stack) tables=("$data/dfz-v4-nh.txt.gz" "$data/dfz-v6-nh.txt.gz") ;;
        *) tables=("$data/dfz-v4-nh.txt.gz") ;;
    esac
    echo "test.sh: example $name" >&2
    cargo run --release --quiet -p fibkit --example "$name" -- "${tables[@]}"
done

# Without build isolation pip uses the maturin installed here, so no
# download is needed; with it pip fetches maturin into a fresh environment.
isolation=()
if python3 -c "import maturin" 2>/dev/null; then
    isolation=(--no-build-isolation)
fi
python3 -m pip install --quiet --root-user-action=ignore --force-reinstall --no-deps \
    "${isolation[@]}" ./crates/fibkit-py
python3 -m pytest crates/fibkit-py/tests
