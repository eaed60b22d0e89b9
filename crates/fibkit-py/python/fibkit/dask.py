"""Annotating flow logs at scale with Dask: the matched prefix, next hop and
origin AS of every address, from fibkit images.

The tables are built once into images (`prepare_images`); every Dask worker
process then maps each image once (the first partition it annotates opens
them, later partitions reuse them) and annotates its partitions with bulk
lookups that release the GIL:

>>> import dask.dataframe as dd
>>> from fibkit.dask import prepare_images, annotate
>>> images = prepare_images("dfz-v4-nh.txt.gz", "dfz-v4-asn.txt.gz", "/shared/images")
>>> flows = dd.read_parquet("flows.parquet")
>>> annotate(flows, images, ["src_addr", "dst_addr"]).to_parquet("annotated/")

For each address column `c` (IPv4: `uint32` host integers or dotted-quad
strings) the result has `c_prefix` (string, the matched prefix of the
next-hop table), `c_nexthop` and `c_origin_as` (nullable `UInt32`); rows no
prefix matches hold nulls.

Images are opened by path on the workers: on a real cluster put them on
storage every worker sees (NFS, a shared volume) or copy them to the same
path on every worker first (`Client.upload_file` works for small ones).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

import numpy as np

from ._fibkit import Fib

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class Images:
    """Where the annotation's images are: plain paths, so the value pickles
    to workers in a few bytes."""

    nexthop: str
    """Image of the next-hop table: label = next hop."""
    origin_as: str
    """Image of the IP-to-ASN table: label = origin AS."""
    prefix: str
    """Image of the next-hop table's prefixes: label = position in `prefix_list`."""
    prefix_list: str
    """Text file, one prefix per line, in label order."""

    @staticmethod
    def in_directory(directory: PathLike) -> "Images":
        """The images `prepare_images` writes into `directory`."""
        d = os.fspath(directory)
        return Images(
            nexthop=os.path.join(d, "nexthop.fib"),
            origin_as=os.path.join(d, "origin-as.fib"),
            prefix=os.path.join(d, "prefix.fib"),
            prefix_list=os.path.join(d, "prefixes.txt"),
        )


def prepare_images(
    nexthop_table: PathLike,
    asn_table: PathLike,
    directory: PathLike,
    engine: str = "dir24-8",
) -> Images:
    """Builds the IPv4 images the annotation reads, into `directory`: the
    next-hop table, the IP-to-ASN table, and the next-hop table's prefixes
    labelled by position (so a lookup answers which prefix matched).

    `asn_table` may be a `prefix origin-as` table, a prefix-to-AS file
    (CAIDA's `pfx2as`, pyasn's `ipasn`), an MRT RIB dump or bgpdump's text
    of one, read with its
    origin ASes as labels (`Fib.load(..., label="origin-as")`); so one dump
    can serve as both tables."""
    images = Images.in_directory(directory)
    os.makedirs(os.fspath(directory), exist_ok=True)
    nexthop = Fib.load(nexthop_table, engine=engine, family=4)
    nexthop.save_image(images.nexthop)
    Fib.load(asn_table, engine=engine, family=4, label="origin-as").save_image(images.origin_as)
    prefixes = [prefix for prefix, _ in nexthop.prefixes()]
    ordinals = Fib.from_prefixes(
        ((prefix, i) for i, prefix in enumerate(prefixes)), engine=engine, family=4
    )
    ordinals.save_image(images.prefix)
    with open(images.prefix_list, "w", encoding="ascii") as out:
        out.write("\n".join(prefixes))
        out.write("\n")
    return images


@dataclass(frozen=True)
class _Opened:
    nexthop: Fib
    origin_as: Fib
    prefix: Fib
    prefix_names: np.ndarray  # object array of str, one more slot (None) for "no match"


@functools.lru_cache(maxsize=4)
def _open(images: Images) -> _Opened:
    """The images mapped once per worker process."""
    with open(images.prefix_list, encoding="ascii") as lines:
        names = [line.strip() for line in lines if line.strip()]
    return _Opened(
        nexthop=Fib.open_image(images.nexthop),
        origin_as=Fib.open_image(images.origin_as),
        prefix=Fib.open_image(images.prefix),
        prefix_names=np.array(names + [None], dtype=object),
    )


def _lookup_input(column):
    """A pandas column as `Fib.lookup_many` input, without a copy where the
    column already is one (uint32, Arrow-backed strings)."""
    import pandas as pd

    if column.dtype == np.uint32:
        return column.to_numpy()
    if isinstance(column.dtype, pd.StringDtype) or isinstance(
        column.dtype, getattr(pd, "ArrowDtype", ())
    ):
        import pyarrow as pa

        return pa.array(column.array)
    return column.to_numpy(dtype=object)


def annotate_partition(part, images: Images, columns: Sequence[str]):
    """Annotates one pandas DataFrame (a Dask partition): see the module
    documentation for the columns added."""
    import pandas as pd

    opened = _open(images)
    added = {}
    for column in columns:
        addrs = _lookup_input(part[column])
        ordinal, found = opened.prefix.lookup_many(addrs)
        nexthop, nexthop_found = opened.nexthop.lookup_many(addrs)
        origin_as, as_found = opened.origin_as.lookup_many(addrs)
        no_match = len(opened.prefix_names) - 1
        names = opened.prefix_names[np.where(found, ordinal, no_match)]
        added[f"{column}_prefix"] = pd.array(names, dtype="string")
        added[f"{column}_nexthop"] = pd.arrays.IntegerArray(nexthop, ~nexthop_found)
        added[f"{column}_origin_as"] = pd.arrays.IntegerArray(origin_as, ~as_found)
    return part.assign(**{name: pd.Series(values, index=part.index) for name, values in added.items()})


def annotate(frame, images: Images, columns: Iterable[str]):
    """The Dask DataFrame `frame` with prefix, next-hop and origin-AS
    columns for each address column in `columns` (lazy: compute it or write
    it with `to_parquet`)."""
    import pandas as pd

    columns = list(columns)
    meta = frame._meta.copy()
    for column in columns:
        meta[f"{column}_prefix"] = pd.Series([], dtype="string")
        meta[f"{column}_nexthop"] = pd.Series([], dtype="UInt32")
        meta[f"{column}_origin_as"] = pd.Series([], dtype="UInt32")
    return frame.map_partitions(annotate_partition, images, columns, meta=meta)


def synthetic_flow_log(
    path: PathLike,
    prefixes: Sequence[str],
    rows: int,
    partitions: int = 8,
    seed: int = 1,
    matched_share: float = 0.9,
) -> None:
    """Writes a Parquet flow log of `rows` rows (`partitions` files) to try
    and measure the annotation: `time`, `src_addr` (uint32), `dst_addr`
    (dotted-quad string), `bytes`. `matched_share` of the addresses fall
    inside random `prefixes`, the rest are uniformly random."""
    import pandas as pd

    rng = np.random.default_rng(seed)
    nets = np.array([_v4_int(p.split("/")[0]) for p in prefixes], dtype=np.uint64)
    plens = np.array([int(p.split("/")[1]) for p in prefixes], dtype=np.uint64)
    os.makedirs(os.fspath(path), exist_ok=True)
    per_part = -(-rows // partitions)
    for part in range(partitions):
        n = max(0, min(per_part, rows - part * per_part))

        def addresses() -> np.ndarray:
            pick = rng.integers(0, len(nets), n)
            host_bits = np.uint64(32) - plens[pick]
            offset = rng.integers(0, 1 << 32, n, dtype=np.uint64) & ((np.uint64(1) << host_bits) - np.uint64(1))
            inside = (nets[pick] + offset).astype(np.uint32)
            anywhere = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
            return np.where(rng.random(n) < matched_share, inside, anywhere)

        src = addresses()
        dst = addresses()
        frame = pd.DataFrame(
            {
                "time": np.arange(part * per_part, part * per_part + n, dtype=np.int64),
                "src_addr": src,
                "dst_addr": pd.array(_dotted(dst), dtype="string"),
                "bytes": rng.integers(40, 1500, n, dtype=np.int64),
            }
        )
        frame.to_parquet(os.path.join(os.fspath(path), f"part-{part:04d}.parquet"), index=False)


def _v4_int(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def _dotted(addrs: np.ndarray) -> list:
    octets = [((addrs >> shift) & 0xFF).tolist() for shift in (24, 16, 8, 0)]
    return [f"{a}.{b}.{c}.{d}" for a, b, c, d in zip(*octets)]
