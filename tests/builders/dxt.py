"""Darshan DXT segments as ``darshan_dxt`` rows (the report's heat maps, the report's lake)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from burstlake.lake import write_table

T0 = 1_700_000_000 * 10**9  # ns
S = 10**9


def dxt_rows(
    log_id: str, job_id: str, segments: list[tuple], cluster: str | None = None
) -> pa.Table:
    """``darshan_dxt`` rows of one log: (module, rank, op, length, start_s, end_s) after T0."""
    start = [T0 + round(s[4] * S) for s in segments]
    end = [T0 + round(s[5] * S) for s in segments]
    return pa.table(
        {
            "log_id": [log_id] * len(segments),
            "cluster": pa.array([cluster] * len(segments), pa.string()),
            "job_id": [job_id] * len(segments),
            "module": [s[0] for s in segments],
            "rank": pa.array([s[1] for s in segments], pa.int64()),
            "hostname": [f"cn{s[1]}" for s in segments],
            "record_id": pa.array([7] * len(segments), pa.int64()),
            "op": [s[2] for s in segments],
            "offset": pa.array([1000 * i for i in range(len(segments))], pa.int64()),
            "length": pa.array([s[3] for s in segments], pa.int64()),
            "start": pa.array([t // 1000 for t in start], pa.int64()).cast(
                pa.timestamp("us", "UTC")
            ),
            "end": pa.array([t // 1000 for t in end], pa.int64()).cast(pa.timestamp("us", "UTC")),
            "start_ns": pa.array(start, pa.int64()),
            "end_ns": pa.array(end, pa.int64()),
        }
    )


def write_dxt(lake: Path, cluster: str | None = None) -> None:
    """Three logs: A traced by POSIX and MPI-IO (2,200 POSIX bytes), B by MPI-IO only (3,000),
    C by POSIX (100 bytes)."""
    a = [
        ("DXT_POSIX", 0, "write", 1000, 0, 10),  # bins 0, 1 (width 5 s): 500 + 500
        ("DXT_POSIX", 1, "read", 400, 2, 4),  # bin 0
        ("DXT_POSIX", 1, "write", 600, 3, 13),  # 2/10, 5/10, 3/10: 120, 300, 180
        ("DXT_POSIX", 0, "read", 200, 20, 20),  # no duration, at the end: last bin
        ("DXT_MPIIO", 0, "write", 5000, 0, 10),  # the same bytes one layer up: not summed
    ]
    write_table(lake, "darshan_dxt", dxt_rows("A", "101", a, cluster), "a.darshan")
    b = [("DXT_MPIIO", 0, "write", 3000, 0, 1)]  # 750 per 0.25 s bin
    write_table(lake, "darshan_dxt", dxt_rows("B", "202", b, cluster), "b.darshan")
    c = [("DXT_POSIX", 0, "write", 100, 0, 1)]
    write_table(lake, "darshan_dxt", dxt_rows("C", "303", c, cluster), "c.darshan")
