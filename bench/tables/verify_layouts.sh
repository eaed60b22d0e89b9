#!/usr/bin/env bash
# Verifies every engine, in its default and in non-default layouts, on
# small seeded random tables under heavy churn: each table gets 5,000
# random changes, checked against the reference table every 250. The
# tables rotate by seed over four kinds: IPv4 and IPv6 prefixes of every
# length, and prefixes clustered inside 10.128.0.0/9 or 2001:db8::/32.
# Prints one line per engine and table; exits 1 if any check failed (a
# layout that cannot encode a table is reported and not a failure).
#
#   bench/tables/verify_layouts.sh [FIRST_SEED [LAST_SEED [WORKDIR]]]   (default 101 140, a temporary directory)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
first=${1:-101}
last=${2:-140}
work=${3:-$(mktemp -d)}
mkdir -p "$work"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin fibkit
fibkit="$root/target/release/fibkit"
# shellcheck source=verify_lib.sh
source "$here/verify_lib.sh"

v4_engines="dxr dxr:k=16 dxr:k=24 dxr:d=12,x=4 dxr:d=16,x=3 dir24-8 cpe cpe:levels=2 cpe:nopush cpe:levels=5,nopush btree btree:k=8 poptrie poptrie:s=8 bspl bspl:levels=2 bspl:first=22 bspl:hybrid lctrie lctrie:lookup=classic levels levels:strides=8+8+8 bloom bloom:search=linear"
v6_engines="dxr6 dxr6:k=8,stride=3,density=1 dxr6:k=24 cpe cpe:levels=18,nopush btree btree:k=8 poptrie poptrie:s=8 bspl bspl:levels=3 bspl:hybrid lctrie levels levels:strides=16+16+16 bloom bloom:search=linear"
failed=0
for seed in $(seq "$first" "$last"); do
    case $((seed % 4)) in
        0) family=v4 within=() lengths=0-32 ;;
        1) family=v6 within=() lengths=0-128 ;;
        2) family=v4 within=(--within 10.128.0.0/9) lengths=9-32 ;;
        *) family=v6 within=(--within 2001:db8::/32) lengths=32,36,40,44,48,48,48,56,64,128 ;;
    esac
    table="$work/t$seed.txt"
    python3 "$here/random_table.py" --family $family --count $((2000 + seed * 97 % 30000)) \
        --lengths $lengths --labels $((1 + seed % 50)) --seed "$seed" "${within[@]}" > "$table"
    python3 "$here/random_updates.py" "$table" --count 5000 --seed "$seed" > "$table.updates"
    case $family in v4) engines=$v4_engines ;; *) engines=$v6_engines ;; esac
    # shellcheck disable=SC2086 # the engine lists split into words
    verify_engines "seed $seed $family" "$table" "$table.updates" "$family" 5000 250 $engines ||
        failed=1
done
exit $failed
