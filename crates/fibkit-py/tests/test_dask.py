"""The Dask annotation on a local cluster of two worker processes, every row
checked against an independent longest-prefix match written with numpy
(conftest.V4Table)."""

import numpy as np
import pandas as pd
import pytest

from conftest import V4Table, data

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

from fibkit.dask import annotate, prepare_images, synthetic_flow_log  # noqa: E402

ROWS = 2_000_000


def test_a_two_worker_cluster_annotates_every_row_right(tmp_path):
    nexthop_table, asn_table = data("dfz-v4-nh.txt.gz"), data("dfz-v4-asn.txt.gz")
    images = prepare_images(nexthop_table, asn_table, tmp_path / "images")
    with open(images.prefix_list) as lines:
        prefixes = [line.strip() for line in lines]
    synthetic_flow_log(tmp_path / "flows", prefixes, ROWS, partitions=8, seed=5)

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        flows = dd.read_parquet(tmp_path / "flows")
        annotate(flows, images, ["src_addr", "dst_addr"]).to_parquet(tmp_path / "out", write_index=False)
        assert len(client.scheduler_info()["workers"]) == 2
        # Each worker process opened the images once, for all its partitions.
        opened = client.run(lambda: __import__("fibkit.dask").dask._open.cache_info().misses)
        assert sorted(opened.values()) == [1, 1], opened

    result = pd.read_parquet(tmp_path / "out").sort_values("time", ignore_index=True)
    assert len(result) == ROWS
    nexthop, origin = V4Table(nexthop_table), V4Table(asn_table)
    dst = np.array(
        [sum(int(x) << s for x, s in zip(a.split("."), (24, 16, 8, 0))) for a in result["dst_addr"]],
        dtype=np.uint32,
    )
    for column, addrs in (("src_addr", result["src_addr"].to_numpy(np.uint32)), ("dst_addr", dst)):
        found, labels, names = nexthop.lookup(addrs)
        as_found, as_labels, _ = origin.lookup(addrs)
        assert found.mean() > 0.5, "the log has addresses inside the table's prefixes"
        got_prefix = result[f"{column}_prefix"].astype(object).where(result[f"{column}_prefix"].notna(), None)
        assert (got_prefix.to_numpy() == names).all(), column
        got = result[f"{column}_nexthop"]
        assert (got.notna().to_numpy() == found).all(), column
        assert (got[found].to_numpy(np.uint32) == labels[found]).all(), column
        got = result[f"{column}_origin_as"]
        assert (got.notna().to_numpy() == as_found).all(), column
        assert (got[as_found].to_numpy(np.uint32) == as_labels[as_found]).all(), column
