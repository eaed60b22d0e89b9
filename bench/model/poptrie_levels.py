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

With `--budgets`, it also counts a selective form of them: a node whose
children are *expanded* keeps each child entry as 32 consecutive entries
(the child node's own children, or 32 copies of a leaf), so a step from
it indexes `first + 32 * (count - 1) + next five bits` and consumes ten
bits in one read. Which nodes expand is chosen for the most reads saved
on the keys drawn within each extra-bytes budget (bytes per prefix over
the 5-bit layout; a dynamic program over the trie at a price per byte,
the price bisected to the budget). Entries are counted with each prefix
its own label (runs of equal leaves merge only within one prefix), which
overstates both layouts' entries a little.
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


def walk(nodes, key, top, path=None):
    """(levels, reads with chains skipped) for one key; the nodes it reads
    are appended to `path` when given."""
    depth, levels, reads, in_chain = top, 0, 0, False
    while (depth, key >> (128 - depth)) in nodes:
        children, ends = nodes[(depth, key >> (128 - depth))]
        if path is not None:
            path.append((depth, key >> (128 - depth)))
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


def child_entries(prefixes, nodes, top):
    """For each node: its child entries (child nodes plus runs of equal
    leaves, a leaf's value being the longest prefix ending inside the node
    that covers it, or the one inherited from above)."""
    ending = collections.defaultdict(list)
    for addr, plen in prefixes:
        depth = plen - 1 - (plen - 1 - top) % STRIDE
        if depth >= top and (depth, addr >> (128 - depth)) in nodes:
            ending[(depth, addr >> (128 - depth))].append((addr, plen))
    entries = {}
    for (depth, bits), (children, _) in nodes.items():
        slot_value = [None] * 2**STRIDE
        best_len = [-1] * 2**STRIDE
        for addr, plen in ending.get((depth, bits), ()):
            span = depth + STRIDE - plen
            first = (addr >> (128 - depth - STRIDE)) & (2**STRIDE - 1)
            for slot in range(first, first + 2**span):
                if plen > best_len[slot]:
                    best_len[slot], slot_value[slot] = plen, (addr, plen)
        count, previous = 0, object()
        for slot in range(2**STRIDE):
            if slot in children:
                count += 1
                previous = object()
            elif slot_value[slot] != previous:
                count += 1
                previous = slot_value[slot]
        entries[(depth, bits)] = count
    return entries


def expansion(nodes, entries, weight, budget_entries):
    """Reads saved, entries added and the nodes whose children expand, for
    the best choice within `budget_entries` more entries."""
    kids = collections.defaultdict(list)
    for depth, bits in nodes:
        parent = (depth - STRIDE, bits >> STRIDE)
        if parent in nodes:
            kids[parent].append((depth, bits))
    roots = [key for key in nodes if (key[0] - STRIDE, key[1] >> STRIDE) not in nodes]
    order = sorted(nodes, key=lambda key: -key[0])  # deepest first

    def solve(price):
        # Per node: (saved - price * added, saved, added) of its subtree.
        best, wide_at = {}, set()
        for key in order:
            plain = [0.0, 0, 0]
            for kid in kids[key]:
                plain = [a + b for a, b in zip(plain, best[kid])]
            choice = plain
            if kids[key]:
                added = 31 * entries[key] - sum(entries[kid] for kid in kids[key])
                wide = [weight[key] - price * added, weight[key], added]
                for kid in kids[key]:
                    for grand in kids[kid]:
                        wide = [a + b for a, b in zip(wide, best[grand])]
                if wide[0] > plain[0]:
                    choice = wide
                    wide_at.add(key)
            best[key] = choice
        saved = sum(best[key][1] for key in roots)
        added = sum(best[key][2] for key in roots)
        # The choice top down: an expanded node's children are gone, its
        # grandchildren choose again.
        expanded, stack = set(), list(roots)
        while stack:
            key = stack.pop()
            if key in wide_at:
                expanded.add(key)
                stack.extend(grand for kid in kids[key] for grand in kids[kid])
            else:
                stack.extend(kids[key])
        return saved, added, expanded

    low, high = 0.0, float(max(weight.values(), default=1) + 1)
    result = (0.0, 0, set())
    for _ in range(40):
        price = (low + high) / 2
        saved, cost, expanded = solve(price)
        if cost > budget_entries:
            low = price
        else:
            high = price
            result = (saved, cost, expanded)
    return result


def group_rounds(reads, group=32):
    """The mean over consecutive groups of `group` keys of the most reads
    in the group: the vector walk's rounds, which go on while any lane is
    at a node."""
    maxima = [max(reads[i : i + group]) for i in range(0, len(reads) - group + 1, group)]
    return sum(maxima) / len(maxima)


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
    parser.add_argument(
        "--budgets",
        default="",
        help="extra bytes per prefix to count expanded children within, e.g. 3,10,50",
    )
    args = parser.parse_args()
    if (128 - args.top) % STRIDE:
        raise SystemExit("--top: 128 - top must be a multiple of 5")

    prefixes = read_prefixes(args.table)
    nodes = node_index(prefixes, args.top)
    rng = random.Random(args.seed)
    levels, reads = collections.Counter(), collections.Counter()
    # Per node: the keys whose walk goes on from it to a child node.
    weight = collections.Counter()
    paths = []
    for _ in range(args.keys):
        addr, plen = rng.choice(prefixes)
        key = addr | (rng.getrandbits(128 - plen) if plen < 128 else 0)
        path = []
        walked, skipped = walk(nodes, key, args.top, path)
        levels[walked] += 1
        reads[skipped] += 1
        for node in path[:-1]:
            weight[node] += 1
        paths.append(path)
    print(f"{len(prefixes)} IPv6 prefixes, {args.keys} announced keys, root table {args.top} bits")
    describe("levels below the root table", levels)
    describe("reads with chains skipped", reads)

    if args.budgets:
        entries = child_entries(prefixes, nodes, args.top)
        total = sum(entries.values())
        print(
            f"5-bit layout: {len(nodes)} nodes, {total} child entries "
            f"({8 * total / len(prefixes):.1f} bytes per prefix, root and tables aside)"
        )
        plain = [len(path) for path in paths]
        print(f"5-bit layout: {group_rounds(plain):.2f} rounds per group of 32 keys")
        for budget in (float(b) for b in args.budgets.split(",")):
            saved, added, expanded = expansion(
                nodes, entries, weight, budget * len(prefixes) / 8
            )
            reads = [
                len(path) - sum(1 for node in path[:-1] if node in expanded) for path in paths
            ]
            print(
                f"expanded children within {budget:g} more bytes per prefix: "
                f"{len(expanded)} nodes, {saved / args.keys:.2f} reads fewer per key "
                f"(mean {sum(reads) / len(reads):.2f}), "
                f"{group_rounds(reads):.2f} rounds per group of 32 keys "
                f"({8 * added / len(prefixes):.1f} bytes per prefix added)"
            )

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
