#!/usr/bin/env python3
"""Writes a random forwarding table as `prefix label` text, for stress tests
and benchmarks of what the shared BGP tables do not cover (every prefix
length, long prefixes spread apart, many labels).

    python3 bench/tables/random_table.py --family v6 --count 200000 \
        --lengths 0-128 --labels 100000 --seed 7 > v6-anylen.txt

Addresses are uniformly random (inside `--within PREFIX` when given),
each prefix's length drawn uniformly from
`--lengths` (a range `A-B` or a list `48,48,64,128`, repeated values
weighing more), labels uniformly from `0..labels`; duplicates are drawn
again. The same arguments write the same table.
"""

import argparse
import ipaddress
import random
import sys


def lengths(text, bits):
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-", 1))
            values = list(range(low, high + 1))
        else:
            values = [int(part) for part in text.split(",")]
    except ValueError:
        sys.exit(f"random_table.py: --lengths {text!r} is not A-B or a list of lengths")
    if not values or any(not 0 <= value <= bits for value in values):
        sys.exit(f"random_table.py: --lengths {text!r} must name lengths 0..{bits}")
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", choices=["v4", "v6"], default="v6")
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--lengths", default=None, help="A-B or a list (default: every length)")
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--within", default=None, help="draw every address inside this prefix")
    args = parser.parse_args()
    bits = 32 if args.family == "v4" else 128
    choices = lengths(args.lengths or f"0-{bits}", bits)
    base, fixed = 0, 0
    if args.within:
        try:
            within = ipaddress.ip_network(args.within)
        except ValueError as error:
            sys.exit(f"random_table.py: --within {args.within!r}: {error}")
        if within.max_prefixlen != bits:
            sys.exit(f"random_table.py: --within {args.within} is not of family {args.family}")
        base, fixed = int(within.network_address), within.prefixlen
        if any(length < fixed for length in choices):
            sys.exit(f"random_table.py: --lengths must be at least /{fixed} inside {args.within}")
    if args.labels < 1 or args.count < 0:
        sys.exit("random_table.py: --labels must be at least 1 and --count not negative")
    possible = sum(1 << (length - fixed) for length in set(choices))
    if args.count > possible:
        sys.exit(f"random_table.py: only {possible} distinct prefixes have those lengths")
    rng = random.Random(args.seed)
    address = ipaddress.IPv4Address if bits == 32 else ipaddress.IPv6Address
    seen = set()
    out = sys.stdout
    while len(seen) < args.count:
        length = rng.choice(choices)
        # No draw for /0: the same arguments keep writing the same table.
        if length:
            addr = (base | rng.getrandbits(bits) >> fixed) >> (bits - length) << (bits - length)
        else:
            addr = 0
        if (addr, length) in seen:
            continue
        seen.add((addr, length))
        out.write(f"{address(addr)}/{length} {rng.randrange(args.labels)}\n")


if __name__ == "__main__":
    main()
