#!/usr/bin/env bash
# Peers side by side: fibkit's engines, DPDK rte_lpm / rte_fib / rte_fib6,
# Go's bart and the Rust crates prefix-trie and treebitmap on the same table
# and the same keys, in alternating rounds (run 1 of every configuration of
# every harness, then run 2, ...); checks that every engine returns the
# reference's label for every key, then prints the rounds, the medians and
# fibkit's ratios to DPDK's call shapes (median of per-round ratios), and
# saves it all as JSON.
#
#   bench/peers/run.sh TABLE [FAMILY]      FAMILY: 4, 6 or all (default: all
#                                          the families the table has)
#
# Environment (defaults in brackets):
#   PEERS_KEYS         keys per pattern [16777216 = 2^24]
#   PEERS_PATTERNS     key patterns [rnd for IPv4, announced for IPv6]; `seq`
#                      chains each key through the previous lookup's label
#                      (dependent lookups: one key per call only), and
#                      `seq-announced` keys inside announced prefixes (IPv6)
#   PEERS_ENGINES      fibkit engine specs, comma-separated [every registered
#                      engine of the family but radix, the reference]
#   PEERS_C_ENGINE     engine of fibkit's C library, linked into the DPDK
#                      harness and run in its process beside DPDK (`c:SPEC/...`
#                      rows) [default: the family's default engine; none: skip]
#   PEERS_MODES        fibkit's modes [plain,key,reader,batch,burst]
#   PEERS_BURSTS       keys per call of fibkit's burst mode [8,32]
#   PEERS_BASELINES    the configurations fibkit's ratios are taken to
#                      [DPDK's: rte_lpm/key, rte_lpm/burst8, rte_lpm/burst32,
#                      rte_fib/burst8, rte_fib/burst32, rte_fib/batch, and
#                      rte_fib6/burst8, rte_fib6/burst32, rte_fib6/batch;
#                      on `seq` keys rte_fib/burst1 and rte_fib6/burst1]
#   PEERS_MIN_SECONDS  each run lasts at least this long [1]
#   PEERS_ROUNDS       rounds, each running every configuration once; medians
#                      over rounds are reported [5]
#   PEERS_SEED         key generator seed [1]
#   PEERS_CORE         CPU every harness is pinned to [0]
#   PEERS_EAL_MEM      MB of memory for DPDK's EAL [4096]
#   PEERS_HUGE         1: every harness on 2 MiB pages, as DPDK runs in
#                      production: DPDK's EAL on hugetlbfs pages (reserved
#                      for the run and given back after it; needs root) and
#                      the C heaps of fibkit's harnesses advised for
#                      transparent huge pages (glibc.malloc.hugetlb=1);
#                      Go keeps its own policy. [0: 4 KiB pages, DPDK with
#                      --no-huge]
#   PEERS_OUT          scratch directory [bench/peers/target]
# A quick check: PEERS_KEYS=1000000 PEERS_MIN_SECONDS=0.2 PEERS_ROUNDS=3.
# Exit status: 0 when every engine agrees with the reference on every key,
# 1 on any disagreement, 2 on any other failure.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
usage="usage: bench/peers/run.sh TABLE [4|6|all]"
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
table="$(realpath "$1")"
family="${2:-all}"
keys="${PEERS_KEYS:-16777216}"
min_seconds="${PEERS_MIN_SECONDS:-1}"
rounds="${PEERS_ROUNDS:-5}"
bursts="${PEERS_BURSTS:-8,32}"
baselines="${PEERS_BASELINES:-rte_lpm/key,rte_lpm/burst8,rte_lpm/burst32,rte_fib/burst1,rte_fib/burst8,rte_fib/burst32,rte_fib/batch,rte_fib6/burst1,rte_fib6/burst8,rte_fib6/burst32,rte_fib6/batch}"
seed="${PEERS_SEED:-1}"
core="${PEERS_CORE:-0}"
eal_mem="${PEERS_EAL_MEM:-4096}"
huge="${PEERS_HUGE:-0}"
case "$huge" in 0|1) ;; *) echo "run.sh: PEERS_HUGE is 0 or 1, not '$huge'" >&2; exit 2 ;; esac
c_engine="${PEERS_C_ENGINE:-default}"
[ "$c_engine" = none ] && c_engine=""
out="${PEERS_OUT:-$here/target}"
export CARGO_TERM_COLOR=never

fail() { echo "run.sh: $*" >&2; exit 2; }

# ---- install what is missing (DPDK and pkg-config from Debian; Go and Rust
# are expected on the machine: Debian's Go is too old for bart).
need_apt=()
command -v pkg-config >/dev/null 2>&1 || need_apt+=(pkg-config)
command -v cc >/dev/null 2>&1 || need_apt+=(gcc libc6-dev)
if ! pkg-config --exists libdpdk 2>/dev/null; then need_apt+=(dpdk-dev libdpdk-dev); fi
if [ ${#need_apt[@]} -gt 0 ]; then
    echo "== installing ${need_apt[*]} (apt-get)"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq </dev/null
    $sudo apt-get install -y -qq --no-install-recommends "${need_apt[@]}" </dev/null >/dev/null
fi
pkg-config --exists libdpdk || fail "libdpdk not found by pkg-config after installing dpdk-dev"
command -v go >/dev/null 2>&1 || fail "go not found (bart needs Go >= 1.24)"
command -v cargo >/dev/null 2>&1 || fail "cargo not found"
pin=()
if command -v taskset >/dev/null 2>&1; then pin=(taskset -c "$core"); fi

# ---- page size
eal_pages=(--no-huge)
heap=(env)
if [ "$huge" = 1 ]; then
    [ "$(id -u)" -eq 0 ] || fail "PEERS_HUGE=1 reserves huge pages: run as root"
    [ -w /proc/sys/vm/nr_hugepages ] || fail "PEERS_HUGE=1: this kernel has no huge pages to reserve"
    grep -qE '\[(madvise|always)\]' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null \
        || fail "PEERS_HUGE=1: transparent huge pages are off on this machine"
    hugetlbfs="$out/hugetlbfs"
    previous_pages="$(cat /proc/sys/vm/nr_hugepages)"
    wanted_pages=$((previous_pages + eal_mem / 2 + 64))
    give_back() {
        umount "$hugetlbfs" 2>/dev/null || true
        echo "$previous_pages" > /proc/sys/vm/nr_hugepages
    }
    trap give_back EXIT
    echo "$wanted_pages" > /proc/sys/vm/nr_hugepages
    got_pages="$(cat /proc/sys/vm/nr_hugepages)"
    [ "$got_pages" -ge "$wanted_pages" ] \
        || fail "PEERS_HUGE=1: asked for $wanted_pages huge pages of 2 MiB, the kernel gave $got_pages (free memory, or a smaller PEERS_EAL_MEM)"
    mkdir -p "$hugetlbfs"
    mountpoint -q "$hugetlbfs" || mount -t hugetlbfs -o pagesize=2M nodev "$hugetlbfs" \
        || fail "PEERS_HUGE=1: cannot mount hugetlbfs on $hugetlbfs"
    eal_pages=(--huge-dir "$hugetlbfs" --huge-unlink)
    heap=(env GLIBC_TUNABLES=glibc.malloc.hugetlb=1)
fi

# ---- build
mkdir -p "$out"
echo "== building the harnesses into $out"
(cd "$here/rust" && CARGO_TARGET_DIR="$out/rust" cargo build --release --quiet) \
    || fail "the Rust harness did not build"
mkdir -p "$out/dpdk" "$out/bart"
# Debian's libdpdk flags include its own -march baseline (corei7); nothing
# more is added, as fibkit is built for the default target too.
# fibkit's C library, linked statically into the DPDK harness.
repo="$(cd "$here/../.." && pwd)"
(cd "$repo" && CARGO_TARGET_DIR="$out/rust" cargo build --release --quiet -p fibkit-c) \
    || fail "fibkit's C library did not build"
cc -O2 -Wall -o "$out/dpdk/peers-dpdk" "$here/dpdk/peers-dpdk.c" -I "$repo/crates/fibkit-c/include" \
    "$out/rust/release/libfibkit.a" $(pkg-config --cflags --libs libdpdk) -lpthread -ldl -lm \
    || fail "the DPDK harness did not build"
(cd "$here/bart" && go build -o "$out/bart/peers-bart" .) || fail "the bart harness did not build"
peers="$out/rust/release/fibkit-peers"

# ---- which families and patterns
if [ "$family" = all ]; then
    families="$("$peers" families "$table")" || fail "cannot read $table"
else
    case "$family" in 4|6) families="$family" ;; *) echo "$usage" >&2; exit 2 ;; esac
fi

dirs=()
for fam in $families; do
    if [ -n "${PEERS_PATTERNS:-}" ]; then
        patterns="$PEERS_PATTERNS"
    elif [ "$fam" = 4 ]; then
        patterns=rnd
    else
        patterns=announced # uniform IPv6 keys almost never match a prefix
    fi
    engines="${PEERS_ENGINES:-$("$peers" engines --family "$fam")}"
    modes="${PEERS_MODES:-plain,key,reader,batch,burst}"
    # radix alone (no other engine for the family) is slow: its plain loop only.
    [ "$engines" = radix ] && modes=plain
    for pattern in ${patterns//,/ }; do
        dir="$out/run/v$fam-${pattern//[^a-z0-9-]/_}"
        rm -rf "$dir"
        echo
        echo "== IPv$fam, $pattern keys"
        "$peers" prep "$table" --family "$fam" --pattern "$pattern" --keys "$keys" \
            --seed "$seed" --out "$dir"
        # The harnesses build their tables, then the driver runs round 1 of
        # every configuration of every harness, round 2, ... (rounds.rs).
        "${heap[@]}" "$peers" rounds "$dir" --rounds "$rounds" -- \
            "${pin[@]}" "$peers" serve "$dir" --engines "$engines" --modes "$modes" \
                --burst "$bursts" --min-seconds "$min_seconds" :: \
            "$out/dpdk/peers-dpdk" "${eal_pages[@]}" --no-pci --no-shconf --no-telemetry -l "$core" \
                -m "$eal_mem" --log-level=lib.eal:error --force-max-simd-bitwidth=512 \
                -- "$fam" "$dir" "$min_seconds" ${c_engine:+"$c_engine"} :: \
            "${pin[@]}" "$out/bart/peers-bart" "$fam" "$dir" "$min_seconds"
        dirs+=("$dir")
    done
done

# ---- compare and report
echo
echo "== results ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, every harness on CPU $core;" \
    "$([ "$huge" = 1 ] && echo "2 MiB pages;" || echo "4 KiB pages;") $keys keys, $rounds rounds of runs >= $min_seconds s; load average: $(cut -d' ' -f1-3 /proc/loadavg))"
status=0
"$peers" compare "${dirs[@]}" --json "$out/results.json" --baselines "$baselines" || status=$?
exit "$status"
