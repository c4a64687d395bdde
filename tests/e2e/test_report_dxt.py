"""The report's DXT heat maps (issue 36, "Uses"): bins computed by hand on a hand-built
``darshan_dxt``, the same cells as pydarshan's own binning (``get_heatmap_df``), and the section
drawn or saying what fills it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from burstlake import lake as lake_io
from burstlake.cli import main
from burstlake.lake import write_table
from burstlake.report_dxt import dxt_grids, dxt_section
from tests.builders.dxt import T0, S, dxt_rows, write_dxt


def test_dxt_bins_by_hand(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    write_dxt(lake)
    first, second = dxt_grids(lake_io.Cluster(lake, None), jobs=2, bins=4)
    assert (first.log_id, first.job_id, first.module, first.total_bytes) == (
        "B", "202", "DXT_MPIIO", 3000
    )  # fmt: skip
    np.testing.assert_allclose(first.grid, [[750, 750, 750, 750]])
    assert first.width_s == pytest.approx(0.25)
    assert (second.log_id, second.module, second.total_bytes, second.ranks) == (
        "A", "DXT_POSIX", 2200, 2
    )  # fmt: skip
    np.testing.assert_allclose(second.grid, [[500, 500, 0, 200], [520, 300, 180, 0]])
    assert second.start == pd.Timestamp(T0, unit="ns", tz="UTC") and second.width_s == 5
    assert [g.log_id for g in dxt_grids(lake_io.Cluster(lake, None), jobs=9)] == ["B", "A", "C"]
    with pytest.raises(ValueError, match="at least one job"):
        dxt_grids(lake_io.Cluster(lake, None), jobs=0)


def test_dxt_bins_match_pydarshan(tmp_path: Path) -> None:
    """Random segments binned here and by pydarshan's ``get_heatmap_df`` (the job summary's
    heat map), times relative to the first segment."""
    heatmap_handling = pytest.importorskip("darshan.experimental.plots.heatmap_handling")
    rng = np.random.default_rng(36)
    n, ranks, bins = 300, 5, 40
    starts = np.sort(rng.uniform(0.01, 50, n))
    ends = starts + rng.exponential(2.0, n)
    rank = rng.integers(0, ranks, n)
    rank[0], length = ranks - 1, rng.integers(1, 10**6, n)
    segments = [
        ("DXT_POSIX", int(r), "write" if i % 3 else "read", int(x), float(s), float(e))
        for i, (r, x, s, e) in enumerate(zip(rank, length, starts, ends, strict=True))
    ]
    lake = tmp_path / "lake"
    write_table(lake, "darshan_dxt", dxt_rows("R", "9", segments), "r.darshan")
    (grid,) = dxt_grids(lake_io.Cluster(lake, None), jobs=1, bins=bins)
    stored = pd.DataFrame(
        {
            "length": length,
            "start_time": (np.round(starts * S) - round(starts[0] * S)) / S,
            "end_time": (np.round(ends * S) - round(starts[0] * S)) / S,
            "rank": rank,
        }
    )
    # pydarshan's bins are (low, high]: the first segment's start, 0, would fall in none
    stored.loc[0, "start_time"] = 1e-12
    theirs = heatmap_handling.get_heatmap_df(stored, xbins=bins, nprocs=ranks)
    np.testing.assert_allclose(grid.grid, theirs.to_numpy(float), rtol=1e-9, atol=1e-6)
    assert grid.grid.sum() == pytest.approx(length.sum())


def test_the_report_draws_the_busiest_jobs_or_says_what_fills_it(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    lake.mkdir()
    empty = dxt_section(lake_io.Cluster(lake, None))
    assert empty.png is None and empty.empty == "no DXT segments: run `burstlake ingest darshan`"
    write_dxt(lake)
    section = dxt_section(lake_io.Cluster(lake, None), jobs=2)
    assert section.png and section.caption.endswith("Jobs: 202, 101.")
    out = tmp_path / "r.html"
    assert main(["report", "--lake", str(lake), "--out", str(out), "--dxt-jobs", "1"]) == 0
    text = out.read_text()
    assert 'data-figure="dxt"' in text and re.search(r"Jobs: 202\.</figcaption>", text)
    assert main(["report", "--lake", str(lake), "--dxt-jobs", "0"]) == 2


def test_many_ranks_are_drawn_in_bands(tmp_path: Path) -> None:
    """250 ranks: at most MAX_ROWS (120) rows, so 3 consecutive ranks a row (84 rows)."""
    from burstlake.report_parts import MAX_ROWS

    lake = tmp_path / "lake"
    segments = [("DXT_POSIX", r, "write", r + 1, 0, 1) for r in range(250)]
    write_table(lake, "darshan_dxt", dxt_rows("W", "1", segments), "w.darshan")
    (grid,) = dxt_grids(lake_io.Cluster(lake, None), bins=1)
    assert (grid.ranks, grid.ranks_per_row, grid.grid.shape) == (250, 3, (84, 1))
    assert MAX_ROWS == 120 and grid.grid[0, 0] == 1 + 2 + 3 and grid.grid[83, 0] == 250
    assert grid.grid.sum() == sum(range(1, 251))
