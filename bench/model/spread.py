#!/usr/bin/env python3
"""How far apart the same structures measure in runs minutes apart, and
what that spread allows any performance model on this machine.

    python3 bench/model/spread.py RUN.jsonl RUN.jsonl [RUN.jsonl ...]

Each RUN.jsonl is the output of one `fibkit model predict TABLE --trace ...
--measure --json` run (one JSON object per trace). For every trace and
trie depth (Table 3's 1-, 2- and 3-level tries) it takes the structures
measured in every run and prints:

- the spread: the mean and the largest (max - min) / (max + min) of their
  measured times over the runs, with the structure of the largest;
- the floor of the maximum error: a prediction that gives a structure one
  time, whatever the run, errs by at least that largest spread in the run
  farthest from it (the best single time, 2 min max / (min + max), is that
  far from both ends), so Table 3's maximum cannot be smaller in every run;
- the floor of the average error: for every pair of runs, the mean over
  the structures of |a - b| / (2 max(a, b)), the least the two runs'
  average errors can add up to halved; the largest pair's value is a
  lower bound on the average error of the worse run of that pair.

A model whose prediction follows the machine from run to run (`--track`)
is not bound by these floors, only by how much of the change its own
measurement of the machine sees.
"""

import itertools
import json
import sys
from collections import defaultdict


def load(paths):
    """{(trace, strides): {run: measured ns}} over the runs at `paths`."""
    measured = defaultdict(dict)
    for run, path in enumerate(paths):
        try:
            with open(path, encoding="utf-8") as file:
                lines = file.readlines()
        except (OSError, UnicodeDecodeError) as error:
            sys.exit(f"{path}: cannot read it ({error})")
        found = 0
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                result = json.loads(line)
                trace = result["trace"].rsplit("/", 1)[-1]
                rows = result["rows"]
                for row in rows:
                    if row.get("measured_ns") is not None:
                        measured[(trace, tuple(row["strides"]))][run] = float(row["measured_ns"])
                        found += 1
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as error:
                sys.exit(f"{path}:{number}: not a `fibkit model predict --json` line ({error!r})")
        if found == 0:
            sys.exit(f"{path}: no measured structure (make it with `fibkit model predict --measure --json`)")
    return measured


def name(strides):
    depths = list(itertools.accumulate(strides))
    return f"T{len(strides)}({','.join(map(str, depths))})"


def main() -> int:
    paths = sys.argv[1:]
    if len(paths) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    measured = load(paths)
    runs = range(len(paths))
    groups = defaultdict(list)
    for (trace, strides), times in measured.items():
        if all(run in times for run in runs):
            groups[(trace, len(strides))].append((strides, [times[run] for run in runs]))
    if not groups:
        sys.exit("no structure was measured in every run: give runs of the same table and traces")
    print(f"{len(paths)} runs; structures measured in every run")
    print("trace               levels  structures  spread mean/max %  (largest)              floor: max %  average %")
    for (trace, levels), rows in sorted(groups.items()):
        spreads = [((max(t) - min(t)) / (max(t) + min(t)), s, t) for s, t in rows]
        largest = max(spreads)
        mean_spread = sum(x[0] for x in spreads) / len(spreads)
        average_floor = max(
            sum(abs(t[a] - t[b]) / (2 * max(t[a], t[b])) for _, t in rows) / len(rows)
            for a, b in itertools.combinations(runs, 2)
        )
        print(
            f"{trace:20s} {levels:6d}  {len(rows):10d}  {100 * mean_spread:8.1f} / {100 * largest[0]:5.1f}"
            f"  ({name(largest[1])} {min(largest[2]):.1f}-{max(largest[2]):.1f} ns)"
            f"  {100 * largest[0]:12.1f}  {100 * average_floor:9.1f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
