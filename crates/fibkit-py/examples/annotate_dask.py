#!/usr/bin/env python3
"""Annotate a Parquet flow log with prefix, next hop and origin AS on Dask.

    # 1. Build the images once (next-hop table, IP-to-ASN table):
    python annotate_dask.py prepare ../shared/data/dfz-v4-nh.txt.gz \\
        ../shared/data/dfz-v4-asn.txt.gz --images /tmp/fibkit-images
    # 2. A synthetic flow log to try it on (or bring your own: any Parquet
    #    data set with uint32 or dotted-quad address columns):
    python annotate_dask.py generate --images /tmp/fibkit-images \\
        --rows 4000000 --flows /tmp/flows
    # 3. Annotate, on a local cluster of 2 worker processes...
    python annotate_dask.py annotate --images /tmp/fibkit-images \\
        --flows /tmp/flows --out /tmp/annotated --workers 2
    # ... or on a running cluster (images on storage every worker sees):
    python annotate_dask.py annotate --scheduler tcp://scheduler:8786 ...

Prints the rows annotated per second (reading, annotating and writing
Parquet included).
"""

import argparse
import sys
import time

from fibkit.dask import Images, annotate, prepare_images, synthetic_flow_log


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    prepare = commands.add_parser("prepare", help="build the images")
    prepare.add_argument("nexthop_table")
    prepare.add_argument("asn_table")
    prepare.add_argument("--images", required=True, help="directory for the images")
    prepare.add_argument("--engine", default="dir24-8")
    generate = commands.add_parser("generate", help="write a synthetic flow log")
    generate.add_argument("--images", required=True)
    generate.add_argument("--flows", required=True, help="output directory of Parquet files")
    generate.add_argument("--rows", type=int, default=4_000_000)
    generate.add_argument("--partitions", type=int, default=8)
    generate.add_argument("--seed", type=int, default=1)
    run = commands.add_parser("annotate", help="annotate a flow log")
    run.add_argument("--images", required=True)
    run.add_argument("--flows", required=True, help="Parquet file or directory")
    run.add_argument("--out", required=True, help="output directory")
    run.add_argument("--columns", default="src_addr,dst_addr")
    where = run.add_mutually_exclusive_group()
    where.add_argument("--workers", type=int, default=2, help="local cluster size")
    where.add_argument("--scheduler", help="address of a running scheduler")
    args = parser.parse_args()

    if args.command == "prepare":
        started = time.perf_counter()
        images = prepare_images(args.nexthop_table, args.asn_table, args.images, args.engine)
        print(f"images in {args.images} ({time.perf_counter() - started:.1f} s): {images}")
        return 0
    if args.command == "generate":
        images = Images.in_directory(args.images)
        with open(images.prefix_list, encoding="ascii") as lines:
            prefixes = [line.strip() for line in lines if line.strip()]
        synthetic_flow_log(args.flows, prefixes, args.rows, args.partitions, args.seed)
        print(f"{args.rows} rows in {args.flows}")
        return 0

    import dask.dataframe as dd
    from distributed import Client, LocalCluster

    if args.scheduler:
        client = Client(args.scheduler)
    else:
        cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True)
        client = Client(cluster)
    with client:
        flows = dd.read_parquet(args.flows)
        rows = len(flows)
        started = time.perf_counter()
        annotated = annotate(flows, Images.in_directory(args.images), args.columns.split(","))
        annotated.to_parquet(args.out, write_index=False)
        seconds = time.perf_counter() - started
        workers = len(client.scheduler_info()["workers"])
    print(
        f"{rows} rows on {workers} workers in {seconds:.2f} s: "
        f"{rows / seconds:,.0f} rows/s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
