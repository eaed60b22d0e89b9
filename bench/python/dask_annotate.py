#!/usr/bin/env python3
"""Rows per second of the Dask flow-log annotation (fibkit.dask, as
crates/fibkit-py/examples/annotate_dask.py runs it) on 1 and 2 local worker
processes, alternating 1, 2, 1, 2, ... so each ratio pairs adjacent runs.

    python3 bench/python/dask_annotate.py [--rows 4000000] [--rounds 3]

Builds the images from ../shared/data (dfz-v4-nh, dfz-v4-asn) and a
synthetic Parquet flow log (uint32 `src_addr`, string `dst_addr`) in a
scratch directory first. A run reads the log, annotates both address
columns and writes Parquet; the cluster's start is not timed.
"""

import argparse
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT.parent / "shared" / "data"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    from fibkit.dask import annotate, prepare_images, synthetic_flow_log

    with tempfile.TemporaryDirectory() as scratch:
        scratch = pathlib.Path(scratch)
        images = prepare_images(DATA / "dfz-v4-nh.txt.gz", DATA / "dfz-v4-asn.txt.gz", scratch / "images")
        prefixes = [line.strip() for line in open(images.prefix_list)]
        synthetic_flow_log(scratch / "flows", prefixes, args.rows, args.partitions, seed=3)
        rates = {1: [], 2: []}
        for round_ in range(args.rounds):
            for workers in (1, 2):
                with LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster, Client(cluster):
                    out = scratch / "out"
                    shutil.rmtree(out, ignore_errors=True)
                    started = time.perf_counter()
                    frame = annotate(dd.read_parquet(scratch / "flows"), images, ["src_addr", "dst_addr"])
                    frame.to_parquet(out, write_index=False)
                    seconds = time.perf_counter() - started
                rates[workers].append(args.rows / seconds)
                print(f"round {round_ + 1}, {workers} worker(s): {seconds:.2f} s, "
                      f"{args.rows / seconds:,.0f} rows/s", flush=True)
    load = open("/proc/loadavg").read().split()[:3]
    ratios = [two / one for one, two in zip(rates[1], rates[2])]
    print(f"\n{args.rows} rows, {args.partitions} partitions, 2 address columns, "
          f"load average {' '.join(load)}")
    for workers, values in rates.items():
        print(f"{workers} worker(s): median {statistics.median(values):,.0f} rows/s "
              f"(min {min(values):,.0f}, max {max(values):,.0f})")
    print(f"2 workers / 1 worker per round: median {statistics.median(ratios):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
