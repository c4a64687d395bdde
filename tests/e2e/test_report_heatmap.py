"""The report's heatmap aggregated in DuckDB from streamed ``node_io`` (issue 41: it read the
whole table into pandas, 1.8 GB at 4.36 M rows): the same cells as the pandas computation it
replaced, recomputed here independently."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from burstlake import lake as lake_io
from burstlake.cli import main
from burstlake.report import MAX_ROWS, MAX_TIME_BINS, heatmap_grid


def _pandas_grid(cluster: lake_io.Cluster) -> pd.DataFrame:
    """The heatmap cells as the report computed them before, all of node_io in pandas."""
    traffic = cluster.read("node_io", ["node", "ts", "read_bytes", "write_bytes"]).to_pandas()
    topology = cluster.read("topology", ["node", "cabinet"]).to_pandas().drop_duplicates("node")
    traffic["bytes"] = traffic.read_bytes.fillna(0) + traffic.write_bytes.fillna(0)
    traffic = traffic.merge(topology, on="node", how="left")
    traffic["cabinet"] = traffic.cabinet.fillna("(no topology)")
    start, end = traffic.ts.min(), traffic.ts.max()
    span = max((end - start).total_seconds(), 1.0)
    bins = min(MAX_TIME_BINS, max(1, traffic.ts.nunique()))
    seconds = (traffic.ts - start).dt.total_seconds()
    traffic["bin"] = np.minimum((seconds / span * bins).astype(int), bins - 1)
    totals = traffic.groupby("cabinet")["bytes"].sum()
    rows = sorted(sorted(totals.index, key=lambda c: (-totals[c], c))[:MAX_ROWS])
    return traffic.pivot_table(
        index="cabinet", columns="bin", values="bytes", aggfunc="sum", fill_value=0
    ).reindex(index=rows, columns=range(bins), fill_value=0)


@pytest.mark.slow  # synthesizes a day of a machine
def test_the_heatmap_cells_match_pandas(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    assert (
        main(["synth", "--preset", "tiny", "--days", "1", "--seed", "3", "--lake", str(lake)]) == 0
    )
    (cluster,) = lake_io.clusters(lake)
    grid, levels, start, span = heatmap_grid(cluster)
    expected = _pandas_grid(cluster)
    times = cluster.read("node_io", ["ts"]).column(0).to_pandas()
    assert start == times.min() and span == (times.max() - times.min()).total_seconds()
    assert grid.index.name == "cabinet" and levels >= len(grid) > 1
    assert list(grid.index) == list(expected.index)
    np.testing.assert_allclose(grid.to_numpy(float), expected.to_numpy(float), rtol=1e-12)
    assert grid.to_numpy().sum() > 0


def test_an_empty_lake_has_no_heatmap(lake: Path) -> None:
    lake.mkdir(parents=True, exist_ok=True)
    assert heatmap_grid(lake_io.Cluster(lake, None)) is None
