"""The report's DXT heat maps: per job, bytes read and written per rank and time bin, drawn
from ``darshan_dxt`` as pydarshan's job summary draws one (``plot_dxt_heatmap``; docs/design.md,
"Darshan DXT"), aggregated in DuckDB over streamed batches so memory stays flat whatever the
number of segments; the log is never loaded."""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from burstlake import lake as lake_io
from burstlake.report_parts import MAX_ROWS, Section, figure_png, pyplot

# pydarshan's job summary bins a DXT heat map into 200 time columns (plot_dxt_heatmap's xbins).
DXT_TIME_BINS = 200
# How many jobs the report draws a heat map for: those with the most DXT bytes.
DXT_JOBS = 4
# DXT_MPIIO traces the same bytes as DXT_POSIX one layer up: a log's heat map sums POSIX where
# the log traced it, else MPI-IO (docs/design.md, "Darshan DXT").
DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")


@dataclass(frozen=True)
class DxtGrid:
    """One job's heat map: bytes per row (a rank, or a band of ``ranks_per_row`` ranks) × time
    bin, the bins ``width_s`` seconds wide from ``start``."""

    log_id: str
    job_id: str | None
    module: str
    total_bytes: int
    ranks: int  # highest rank + 1
    ranks_per_row: int
    start: pd.Timestamp
    width_s: float
    grid: np.ndarray  # rows × bins, bytes


def _scan(lake: lake_io.Cluster, condition: pc.Expression | None = None) -> pa.RecordBatchReader:
    columns = ["log_id", "job_id", "module", "rank", "length", "start_ns", "end_ns"]
    rows = lake_io.dataset(lake.lake, "darshan_dxt")
    return rows.scanner(columns=columns, filter=lake.only(condition)).to_reader()


def dxt_grids(
    lake: lake_io.Cluster, jobs: int = DXT_JOBS, bins: int = DXT_TIME_BINS
) -> list[DxtGrid]:
    """The heat maps of the ``jobs`` logs with the most DXT bytes (busiest first). A segment's
    bytes are spread over the bins it overlaps in proportion to the time it spends in each, as
    pydarshan's ``heatmap_handling.get_heatmap_df`` does; a zero-length segment falls in the bin
    of its start. Time runs from the job's first segment start to its last segment end."""
    import duckdb

    if jobs < 1 or bins < 1:
        raise ValueError(f"a DXT heat map needs at least one job and one bin, not {jobs}, {bins}")
    with duckdb.connect(config={"memory_limit": "512MB", "threads": 1}) as con:
        con.register("first_scan", _scan(lake))
        chosen = con.execute(  # the scan is read once: one row per log and module
            "WITH per_module AS MATERIALIZED (SELECT log_id, module, any_value(job_id) AS job_id, "
            "sum(length) AS total_bytes, min(start_ns) AS t0, max(end_ns) AS t1, "
            "max(rank) + 1 AS ranks FROM first_scan GROUP BY log_id, module) "
            "SELECT * FROM per_module WHERE module = CASE WHEN EXISTS (SELECT 1 FROM per_module p "
            "WHERE p.log_id = per_module.log_id AND p.module = 'DXT_POSIX') THEN 'DXT_POSIX' "
            "ELSE 'DXT_MPIIO' END ORDER BY total_bytes DESC, log_id LIMIT $jobs",
            {"jobs": jobs},
        ).df()
        if chosen.empty:
            return []
        chosen["span_ns"] = np.maximum(chosen.t1 - chosen.t0, 1)
        chosen["width_ns"] = chosen.span_ns / bins
        chosen["band"] = -(-chosen.ranks // MAX_ROWS)  # ranks per row, at most MAX_ROWS rows
        con.register("params", chosen[["log_id", "module", "t0", "width_ns", "band"]])
        condition = pc.field("log_id").isin(chosen.log_id.tolist())
        con.register("second_scan", _scan(lake, condition))
        cells = con.execute(
            "WITH seg AS (SELECT s.log_id, s.rank // p.band AS row, s.length::DOUBLE AS length, "
            "(s.start_ns - p.t0)::DOUBLE AS a, (s.end_ns - p.t0)::DOUBLE AS b, p.width_ns AS w "
            "FROM second_scan s JOIN params p ON s.log_id = p.log_id AND s.module = p.module), "
            "spread AS (SELECT *, unnest(range(least(floor(a / w)::BIGINT, $bins - 1), "
            "least(floor(b / w)::BIGINT, $bins - 1) + 1)) AS bin FROM seg) "
            "SELECT log_id, row, bin, sum(CASE WHEN b = a THEN length ELSE length * "
            "greatest(least(b, CASE WHEN bin = $bins - 1 THEN b ELSE (bin + 1) * w END) "
            "- greatest(a, bin * w), 0) / (b - a) END) AS bytes FROM spread GROUP BY ALL",
            {"bins": bins},
        ).df()
    grids = []
    for job in chosen.itertuples():
        rows = int(-(-job.ranks // job.band))
        grid = np.zeros((rows, bins))
        mine = cells[cells.log_id == job.log_id]
        np.add.at(grid, (mine.row.to_numpy(int), mine.bin.to_numpy(int)), mine.bytes)
        grids.append(
            DxtGrid(
                log_id=job.log_id,
                job_id=None if pd.isna(job.job_id) else job.job_id,
                module=job.module,
                total_bytes=int(job.total_bytes),
                ranks=int(job.ranks),
                ranks_per_row=int(job.band),
                start=pd.Timestamp(int(job.t0), unit="ns", tz="UTC"),
                width_s=float(job.width_ns) / 1e9,
                grid=grid,
            )
        )
    return grids


def dxt_section(lake: lake_io.Cluster, jobs: int = DXT_JOBS) -> Section:
    """One DXT heat map per job with the most traced bytes."""
    title = "DXT heat maps"
    grids = dxt_grids(lake, jobs)
    caption = (
        f"Per job, the {len(grids) or jobs} with the most bytes Darshan's extended tracing "
        "recorded: bytes read and written per rank and time bin, log scale, as pydarshan's job "
        "summary draws its DXT heat map (one module: POSIX where traced, else MPI-IO). The "
        "burst per job behind the system-wide traffic of paper 004 §4."
    )
    if not grids:
        return Section(
            "dxt", title, caption, empty="no DXT segments: run `burstlake ingest darshan`"
        )
    plt = pyplot()
    fig, axes = plt.subplots(len(grids), 1, figsize=(10, 2.4 * len(grids)), squeeze=False)
    for ax, job in zip(axes[:, 0], grids, strict=True):
        image = ax.imshow(
            np.log10(job.grid + 1),
            aspect="auto",
            interpolation="nearest",
            cmap="viridis",
            extent=(0, job.width_s * job.grid.shape[1], job.grid.shape[0], 0),
        )
        label = f"job {job.job_id}" if job.job_id else f"log {job.log_id}"
        ax.set_title(
            f"{label} ({job.module}, {job.total_bytes / 1e6:.3g} MB, {job.ranks} ranks)",
            fontsize=10,
        )
        ax.set_xlabel(f"seconds since {job.start:%Y-%m-%d %H:%M:%S} UTC")
        ax.set_ylabel("rank" if job.ranks_per_row == 1 else f"ranks / {job.ranks_per_row}")
        fig.colorbar(image, ax=ax, label="log10 bytes")
    fig.tight_layout()
    labels = ", ".join(html.escape(str(g.job_id or g.log_id)) for g in grids)
    return Section("dxt", title, f"{caption} Jobs: {labels}.", png=figure_png(fig))
