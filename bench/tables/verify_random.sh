#!/usr/bin/env bash
# Verifies every engine on seeded random tables (every prefix length, long
# prefixes spread apart, many labels) with a replayed random update
# stream: what the shared BGP tables do not exercise. Prints one line per
# engine and table; exits 1 if any check failed (a clear build error, such
# as a layout that cannot encode the table, is reported and not a failure).
#
#   bench/tables/verify_random.sh [WORKDIR]     (default: a temporary directory)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" --bin fibkit
fibkit="$root/target/release/fibkit"
# shellcheck source=verify_lib.sh
source "$here/verify_lib.sh"

python3 "$here/random_table.py" --family v4 --count 600000 --lengths 0-32 --labels 200000 --seed 7 > "$work/v4-anylen.txt"
python3 "$here/random_table.py" --family v6 --count 200000 --lengths 0-128 --labels 100000 --seed 7 > "$work/v6-anylen.txt"
python3 "$here/random_table.py" --family v6 --count 300000 --lengths 48,48,48,48,48,48,48,48,32,40,44,64,128 --labels 300 --seed 7 > "$work/v6-bgpish.txt"
# Clustered: every prefix inside one short prefix, so one root chunk or
# first-level block holds them all.
python3 "$here/random_table.py" --family v4 --count 500000 --lengths 32 --labels 70000 --seed 24 --within 10.0.0.0/12 > "$work/v4-hosts-in-12.txt"
python3 "$here/random_table.py" --family v6 --count 200000 --lengths 128 --labels 1000 --seed 21 --within 2001:db8:1:2::/64 > "$work/v6-hosts-in-64.txt"
tables="v4-anylen v4-hosts-in-12 v6-anylen v6-bgpish v6-hosts-in-64"
for table in $tables; do
    python3 "$here/random_updates.py" "$work/$table.txt" --count 20000 --seed 11 > "$work/$table.updates"
done

v4_engines="dxr dxr:d=16,x=3 dir24-8 cpe cpe:nopush btree poptrie bspl bspl:hybrid lctrie levels bloom"
v6_engines="dxr6 cpe:levels=18 cpe:levels=18,nopush btree poptrie bspl bspl:hybrid lctrie levels bloom"
failed=0
for table in $tables; do
    case $table in v4-*) family=v4 engines=$v4_engines ;; *) family=v6 engines=$v6_engines ;; esac
    # shellcheck disable=SC2086 # the engine lists split into words
    verify_engines "$table" "$work/$table.txt" "$work/$table.updates" "$family" 20000 5000 $engines ||
        failed=1
done
exit $failed
