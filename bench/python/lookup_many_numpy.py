#!/usr/bin/env python3
"""`Fib.lookup_many` on numpy arrays of binary addresses: a `uint32` array
of uniformly random IPv4 keys on dfz-v4-nh, and `(n, 16)` `uint8` arrays
of IPv6 keys on dfz-v6-nh, random in 2000::/3 ("random public") and random
hosts inside uniformly chosen prefixes of the table ("announced"), seeded.

    python3 bench/python/lookup_many_numpy.py [--keys 10000000] [--rounds 5]
        [--data ../shared/data]

Prints, per array, the median and fastest time of the rounds (one call
over the whole array each) and a summary of the answers (how many found,
the sum of the labels), so that two builds run one after the other can be
checked to answer alike.
"""

import argparse
import ipaddress
import os
import pathlib
import statistics
import time

import numpy as np

import fibkit


def announced_keys(fib: fibkit.Fib, n: int, rng: np.random.Generator) -> np.ndarray:
    """Random hosts inside uniformly chosen prefixes of `fib`, network order."""
    nets = [ipaddress.IPv6Network(prefix) for prefix, _ in fib.prefixes()]
    starts = np.frombuffer(
        b"".join(net.network_address.packed for net in nets), dtype=np.uint8
    ).reshape(-1, 16)
    lengths = np.array([net.prefixlen for net in nets])
    pick = rng.integers(0, len(nets), size=n)
    hosts = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    network_bits = np.arange(128)[None, :] < lengths[pick][:, None]
    network_bytes = np.packbits(network_bits, axis=1)
    return (starts[pick] & network_bytes) | (hosts & ~network_bytes)


def main() -> None:
    here = pathlib.Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", type=pathlib.Path, default=here.parent / "shared" / "data")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    v4 = fibkit.Fib.load(str(args.data / "dfz-v4-nh.txt.gz"))
    v6 = fibkit.Fib.load(str(args.data / "dfz-v6-nh.txt.gz"))
    ipv4 = rng.integers(0, 2**32, size=args.keys, dtype=np.uint64).astype(np.uint32)
    public = rng.integers(0, 256, size=(args.keys, 16), dtype=np.uint8)
    public[:, 0] = 0x20 | (public[:, 0] & 0x1F)
    announced = announced_keys(v6, args.keys, rng)
    print(f"fibkit {v4.spec} / {v6.spec}; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cases = [
        ("IPv4 uint32, random", v4, ipv4),
        ("IPv6 (n, 16) uint8, random public", v6, public),
        ("IPv6 (n, 16) uint8, announced", v6, announced),
    ]
    for name, fib, keys in cases:
        times = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            labels, found = fib.lookup_many(keys)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        print(
            f"{name}: {args.keys} keys, median {median * 1e3:.1f} ms "
            f"({args.keys / median / 1e6:.1f} M/s), fastest {min(times) * 1e3:.1f} ms; "
            f"found {int(found.sum())}, label sum {int(labels.astype(np.uint64).sum())}"
        )


if __name__ == "__main__":
    main()
