"""Prints the table of bench/simd/caps.sh: per engine, key pattern and
call shape, the AVX-512 path's median Mlps and each narrower path's median
ratio to it over the rounds (each ratio paired within one round), with
the range of the per-round ratios."""

import collections
import glob
import json
import os
import statistics
import sys

CAPS = ["avx512", "avx2", "portable"]


def main(out):
    rounds = sorted({int(os.path.basename(p).split("-")[0]) for p in glob.glob(f"{out}/*-*.json")})
    if not rounds:
        sys.exit(f"{out}: no results")
    runs = collections.defaultdict(lambda: collections.defaultdict(dict))
    for r in rounds:
        for cap in CAPS:
            path = f"{out}/{r}-{cap}.json"
            with open(path) as f:
                report = json.load(f)
            if report["max_simd"] != cap:
                sys.exit(f"{path}: measured under {report['max_simd']}, not {cap}")
            for m in report["measurements"]:
                key = (m["engine"].split(":")[0], m["pattern"], m["mode"])
                runs[key][cap][r] = m["median_mlps"]
    print(f"{len(rounds)} rounds")
    print("| engine | keys | call shape | AVX-512 Mlps | AVX2 ÷ AVX-512 | portable ÷ AVX-512 |")
    print("|---|---|---|---|---|---|")
    for key in sorted(runs):
        caps = runs[key]
        wide = caps["avx512"]
        cells = []
        for cap in CAPS[1:]:
            ratios = [caps[cap][r] / wide[r] for r in rounds]
            cells.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})")
        print(f"| {key[0]} | {key[1]} | {key[2]} | {statistics.median(wide.values()):.1f} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main(sys.argv[1])
