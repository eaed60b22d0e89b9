#!/usr/bin/env python3
"""How many dependent reads `poptrie`'s walk takes below its root table on
keys inside announced IPv6 prefixes, and what two other node layouts would
take, counted from a table without building them.

    python3 bench/model/poptrie_levels.py ../shared/data/dfz-v6-nh.txt.gz \
        [--keys 200000] [--seed 1] [--top 23]

Keys are drawn like `fibkit bench --patterns announced`: a prefix chosen
uniformly, then a random address inside it. For each key it prints the
distribution and mean of:

- levels: the 5-bit nodes the walk reads below the root table (`--top`
  bits, 23 for the default `poptrie:s=18,d=5`): a node exists at depth d
  on the key's path while some prefix longer than d covers the key's
  first d bits.
- with chains skipped: the same walk where every run of chain nodes (one
  child node, no prefix ending inside the node, so every other child is
  the same leaf) costs one read, as a path-compressed node that compares
  the run's bits at once would. This is a lower bound for such a layout:
  the compare itself is not counted.

For 10-bit nodes (a node of 32 entries, each a 5-bit poptrie node, so one
read consumes 10 bits) it prints the nodes needed below depths 23 and 28
and their bytes at 256 bytes per node, against the table's prefix count.
"""

import argparse
import collections
import gzip
import ipaddress
import random

STRIDE = 5


def read_prefixes(path):
    """The IPv6 prefixes of a `prefix label` table (gzip or plain text)."""
    opener = gzip.open if path.endswith(".gz") else open
    prefixes = []
    with opener(path, "rt") as lines:
        for number, line in enumerate(lines, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            try:
                net = ipaddress.ip_network(text.split()[0], strict=False)
            except ValueError as error:
                raise SystemExit(f"{path}:{number}: not a prefix: {error}")
            if net.version == 6:
                prefixes.append((int(net.network_address), net.prefixlen))
    if not prefixes:
        raise SystemExit(f"{path}: no IPv6 prefixes")
    return prefixes


def node_index(prefixes, top):
    """For each 5-bit node (depth, bits above it): the child slots that are
    nodes, and whether a prefix ends inside the node."""
    nodes = {}
    for addr, plen in prefixes:
        depth = top
        while depth < plen:
            entry = nodes.setdefault((depth, addr >> (128 - depth)), [set(), False])
            if plen <= depth + STRIDE:
                entry[1] = True
            else:
                entry[0].add((addr >> (128 - depth - STRIDE)) & (2**STRIDE - 1))
            depth += STRIDE
    return nodes


def walk(nodes, key, top):
    """(levels, reads with chains skipped) for one key."""
    depth, levels, reads, in_chain = top, 0, 0, False
    while (depth, key >> (128 - depth)) in nodes:
        children, ends = nodes[(depth, key >> (128 - depth))]
        levels += 1
        if len(children) == 1 and not ends:
            if not in_chain:
                reads += 1
                in_chain = True
            if (key >> (128 - depth - STRIDE)) & (2**STRIDE - 1) not in children:
                break
        else:
            reads += 1
            in_chain = False
        depth += STRIDE
    return levels, reads


def describe(name, counts):
    total = sum(counts.values())
    mean = sum(k * v for k, v in counts.items()) / total
    shares = ", ".join(f"{k}: {100 * v / total:.1f}%" for k, v in sorted(counts.items()))
    print(f"{name}: mean {mean:.2f} ({shares})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("table")
    parser.add_argument("--keys", type=int, default=200000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--top", type=int, default=23, help="bits of the root table")
    args = parser.parse_args()
    if (128 - args.top) % STRIDE:
        raise SystemExit("--top: 128 - top must be a multiple of 5")

    prefixes = read_prefixes(args.table)
    nodes = node_index(prefixes, args.top)
    rng = random.Random(args.seed)
    levels, reads = collections.Counter(), collections.Counter()
    for _ in range(args.keys):
        addr, plen = rng.choice(prefixes)
        key = addr | (rng.getrandbits(128 - plen) if plen < 128 else 0)
        walked, skipped = walk(nodes, key, args.top)
        levels[walked] += 1
        reads[skipped] += 1
    print(f"{len(prefixes)} IPv6 prefixes, {args.keys} announced keys, root table {args.top} bits")
    describe("levels below the root table", levels)
    describe("reads with chains skipped", reads)

    for top in (23, 28):
        wide = set()
        for addr, plen in prefixes:
            depth = top
            while depth < plen:
                wide.add((depth, addr >> (128 - depth)))
                depth += 2 * STRIDE
        per_depth = collections.Counter(depth for depth, _ in wide)
        size = len(wide) * 256
        print(
            f"10-bit nodes below /{top}: {len(wide)} ({dict(sorted(per_depth.items())[:3])} ...), "
            f"{size / 1e6:.1f} MB, {size / len(prefixes):.1f} bytes per prefix"
        )


if __name__ == "__main__":
    main()
