#!/usr/bin/env python3
"""Writes a seeded update stream for a `prefix label` table, in the format
of the shared LINX stream (`unix-time a|w prefix nexthop`), for
`fibkit verify --updates` and `fibkit replay`.

    python3 bench/tables/random_updates.py TABLE --count 20000 --seed 11 > updates.txt

Each change is, with probability 0.4, a withdrawal of one of the table's
prefixes; 0.3 a new next hop for one of them; 0.3 an announcement of a
random prefix whose length is drawn from the family's edges (/0, /1, /2,
the longest two lengths) and a few common ones, so nested, default and
host routes all occur. Next hops are 50 random addresses of the table's
family. A withdrawal may name a prefix already withdrawn (a no-op, as
real streams have).
"""

import argparse
import ipaddress
import random
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table", help="a `prefix label` text table (one family)")
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    prefixes = []
    try:
        with open(args.table) as table:
            for number, line in enumerate(table, 1):
                fields = line.split()
                if not fields or fields[0].startswith("#"):
                    continue
                try:
                    prefixes.append(ipaddress.ip_network(fields[0]))
                except ValueError as error:
                    sys.exit(f"random_updates.py: {args.table}:{number}: {error}")
    except OSError as error:
        sys.exit(f"random_updates.py: {error}")
    if not prefixes:
        sys.exit(f"random_updates.py: {args.table} holds no prefixes")
    bits = prefixes[0].max_prefixlen
    if any(prefix.max_prefixlen != bits for prefix in prefixes):
        sys.exit(f"random_updates.py: {args.table} mixes IPv4 and IPv6; give one family")
    address = ipaddress.IPv4Address if bits == 32 else ipaddress.IPv6Address
    none = "0.0.0.0" if bits == 32 else "::"
    lengths = [0, 1, 2, bits, bits - 1, 8, 16, 24] + ([32, 48, 64] if bits == 128 else [20, 28])
    rng = random.Random(args.seed)
    hops = [str(address(rng.getrandbits(bits))) for _ in range(50)]
    out = sys.stdout
    for i in range(args.count):
        time = 1_000_000_000 + i
        draw = rng.random()
        if draw < 0.4:
            out.write(f"{time} w {rng.choice(prefixes)} {none}\n")
        elif draw < 0.7:
            out.write(f"{time} a {rng.choice(prefixes)} {rng.choice(hops)}\n")
        else:
            length = rng.choice(lengths)
            addr = rng.getrandbits(bits) >> (bits - length) << (bits - length) if length else 0
            out.write(f"{time} a {address(addr)}/{length} {rng.choice(hops)}\n")


if __name__ == "__main__":
    main()
