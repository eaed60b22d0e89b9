#!/usr/bin/env python3
"""fibkit's `Fib.lookup_many` against pytricia and pyasn, on the same table
and the same addresses, every answer compared.

    python3 bench/python/lookup_many_vs_peers.py [--table dfz-v4-nh.txt.gz]
        [--keys 10000000] [--rounds 5] [--engine dxr]

Installs pytricia and pyasn from PyPI if they are missing (the test suite
never needs them). The table (from ../shared/data; dfz-v4-nh.txt.gz by
default, whose labels are next hops; dfz-v4-asn.txt.gz has origin AS
numbers) goes to all three without its label-0 prefixes (in the AS table,
"unknown origin", which pyasn rejects), converted to pyasn's ipasn format on
the way: pyasn stores any integer label as the "AS number". Keys: 90%
inside random prefixes of the table, 10% uniformly random (seeded).

Each round times fibkit (uint32 array, and a list of strings), pytricia and
pyasn one after another on the same keys (A, B, C, A, B, C, ...), so a ratio
pairs measurements taken moments apart; medians over the rounds are printed
with the load average. pytricia and pyasn take one address per call, as
strings: the form their users have.
"""

import argparse
import gzip
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"


def ensure(module: str, package: str) -> None:
    try:
        __import__(module)
    except ImportError:
        subprocess.check_call([sys.executable, "-m", "pip", "install", "--quiet", package])


def load_pairs(path: pathlib.Path) -> list:
    with gzip.open(path, "rt") as lines:
        return [(p, int(label)) for p, label in (line.split() for line in lines if line.strip())]


def keys_for(pairs: list, count: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    nets = np.array(
        [sum(int(x) << s for x, s in zip(p.split("/")[0].split("."), (24, 16, 8, 0))) for p, _ in pairs],
        dtype=np.uint64,
    )
    plens = np.array([int(p.split("/")[1]) for p, _ in pairs], dtype=np.uint64)
    pick = rng.integers(0, len(nets), count)
    host = (np.uint64(1) << (np.uint64(32) - plens[pick])) - np.uint64(1)
    inside = (nets[pick] + (rng.integers(0, 1 << 32, count, dtype=np.uint64) & host)).astype(np.uint32)
    anywhere = rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32)
    return np.where(rng.random(count) < 0.9, inside, anywhere)


def dotted(addrs: np.ndarray) -> list:
    octets = [((addrs >> s) & 0xFF).tolist() for s in (24, 16, 8, 0)]
    return [f"{a}.{b}.{c}.{d}" for a, b, c, d in zip(*octets)]


def timed(function):
    started = time.perf_counter()
    result = function()
    return time.perf_counter() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--engine", default="dxr")
    parser.add_argument("--table", default="dfz-v4-nh.txt.gz", help="a file in ../shared/data")
    args = parser.parse_args()
    ensure("pytricia", "pytricia")
    ensure("pyasn", "pyasn")
    import fibkit
    import pyasn
    import pytricia

    # pyasn rejects AS 0 (the AS table's "unknown origin"), so all three
    # get the table without label-0 prefixes.
    everything = load_pairs(DATA / args.table)
    pairs = [(prefix, label) for prefix, label in everything if label != 0]
    print(f"{len(pairs)} of {len(everything)} prefixes (those with a nonzero label)")
    keys = keys_for(pairs, args.keys, seed=7)
    texts = dotted(keys)

    fib = fibkit.Fib.from_prefixes(pairs, engine=args.engine)
    tree = pytricia.PyTricia(32)
    for prefix, label in pairs:
        tree[prefix] = label
    with tempfile.TemporaryDirectory() as scratch:
        ipasn = os.path.join(scratch, "dfz-v4-asn.ipasn")
        with open(ipasn, "w") as out:
            out.write(f"; IP-to-ASN table in pyasn's format, from {args.table}\n")
            out.writelines(f"{prefix}\t{label}\n" for prefix, label in pairs)
        asndb = pyasn.pyasn(ipasn)

    runs = {"fibkit uint32": [], "fibkit str list": [], "pytricia": [], "pyasn": []}
    for round_ in range(args.rounds):
        seconds, (labels, found) = timed(lambda: fib.lookup_many(keys))
        runs["fibkit uint32"].append(seconds)
        seconds, (labels_text, found_text) = timed(lambda: fib.lookup_many(texts))
        runs["fibkit str list"].append(seconds)
        seconds, tricia = timed(lambda: [tree.get(a) for a in texts])
        runs["pytricia"].append(seconds)
        seconds, asns = timed(lambda: [asndb.lookup(a)[0] for a in texts])
        runs["pyasn"].append(seconds)
        if round_ == 0:
            expected = np.array([-1 if t is None else t for t in tricia], dtype=np.int64)
            got = np.where(found, labels.astype(np.int64), -1)
            assert (got == expected).all(), "fibkit and pytricia disagree"
            assert (np.where(found_text, labels_text.astype(np.int64), -1) == expected).all()
            from_pyasn = np.array([-1 if a is None else a for a in asns], dtype=np.int64)
            assert (from_pyasn == expected).all(), "pyasn and pytricia disagree"
            print(f"answers: all {args.keys} equal across fibkit, pytricia and pyasn "
                  f"({found.mean():.1%} found)")
        print(f"round {round_ + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in runs.items()), flush=True)

    load = open("/proc/loadavg").read().split()[:3]
    print(f"\n{args.table}, {args.keys} IPv4 keys, {args.rounds} rounds, fibkit {args.engine}, "
          f"load average {' '.join(load)}")
    base = runs["fibkit uint32"]
    for name, seconds in runs.items():
        ratios = [s / b for s, b in zip(seconds, base)]
        print(
            f"{name:16} median {statistics.median(seconds):8.3f} s  "
            f"{args.keys / statistics.median(seconds) / 1e6:8.2f} M lookups/s  "
            f"time / fibkit uint32 per round: median {statistics.median(ratios):7.1f}x "
            f"(min {min(ratios):.1f}x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
