"""A Darshan lake's content as comparable data: the tables a Darshan ingest writes, each as
its rows sorted, without the columns that differ between two equal landings."""

from __future__ import annotations

from pathlib import Path

from burstlake.lake import read_table

DARSHAN_TABLES = (
    "darshan_jobs",
    "darshan_rank_io",
    "darshan_heatmap",
    "darshan_files",
    "darshan_dxt",
    "quarantine",
    "ingest_log",
)


def lake_state(lake: Path, ignore: tuple[str, ...] = ("ingested_at", "file")) -> dict[str, list]:
    """Each Darshan table's rows, sorted, without the ``ignore`` columns."""
    out = {}
    for table in DARSHAN_TABLES:
        rows = read_table(lake, table).to_pylist() if (lake / table).exists() else []
        out[table] = sorted(
            str(sorted((k, str(v)) for k, v in r.items() if k not in ignore)) for r in rows
        )
    return out
