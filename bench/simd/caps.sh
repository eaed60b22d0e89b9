#!/bin/bash
# Measures each engine's narrower vector paths beside its widest one on
# this CPU: one `fibkit bench` process per FIBKIT_MAX_SIMD cap and round,
# the caps' order rotated every round so that no cap always runs first,
# every process on CPU 1 with the same keys (same seed). Then prints each
# path's median ratio to the AVX-512 one over the rounds (ratios paired
# within a round) with their range.
#
# usage: bench/simd/caps.sh OUTDIR ROUNDS TABLE ENGINE...
#   env: PATTERNS (announced,rnd-public), MODES (batch,burst,key),
#        BURST (8,32), KEYS (4194304), MIN_SECONDS (0.3),
#        FIBKIT (target/release/fibkit)
set -euo pipefail
if [ $# -lt 4 ]; then
    echo "usage: $0 OUTDIR ROUNDS TABLE ENGINE..." >&2
    exit 2
fi
out=$1
rounds=$2
table=$3
shift 3
fibkit=${FIBKIT:-target/release/fibkit}
mkdir -p "$out"
engines=()
for engine in "$@"; do
    engines+=(--engine "$engine")
done
caps=(avx512 avx2 portable)
for round in $(seq 1 "$rounds"); do
    for turn in 0 1 2; do
        cap=${caps[$(((round + turn) % 3))]}
        FIBKIT_MAX_SIMD=$cap taskset -c 1 "$fibkit" bench "$table" "${engines[@]}" \
            --patterns "${PATTERNS:-announced,rnd-public}" --modes "${MODES:-batch,burst,key}" \
            --burst "${BURST:-8,32}" --runs 1 --keys "${KEYS:-4194304}" \
            --min-seconds "${MIN_SECONDS:-0.3}" --no-ceiling --json "$out/$round-$cap.json" \
            > /dev/null
    done
done
python3 "$(dirname "$0")/caps_table.py" "$out"
