"""Darshan DXT: one ``darshan_dxt`` row per traced read or write, in bounded batches.

See docs/design.md, 'Sources'.

Darshan's extended tracing (DXT) keeps, per file and rank, every read and write with its
offset, length and start and end times (seconds since the job's start). The reader process
streams them into an Arrow IPC file (:class:`.darshan_log.DxtTrace`, at most
:data:`.darshan_log.DXT_BATCH` segments a batch); this module turns each of its batches into one
:class:`Batch` of ``darshan_dxt`` rows, so memory holds one batch whatever the log's size.

Each segment is an input record. One that runs backwards in time, ends past the job's end, has
no valid time, or a negative offset or length, is quarantined by its DXT record and segment
index with a one-line reason; the rank's other segments land. Every segment belongs to the
log header: if the header is quarantined, so are they.

Byte accounting: per module and op (``dxt_posix_bytes_written``...), ``seen`` is what the
module's own counters say (POSIX for DXT_POSIX, MPI-IO for DXT_MPIIO); the segments land or
are quarantined. Where Darshan marks the DXT module partial (its trace memory ran out), the
bytes the counters saw beyond the trace are a ``gap`` of the trace, not a loss of the ingest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest.darshan_log import DXT_COUNTED, DXT_MODULES, DXT_OPS, DarshanLog
from burstlake.jobs.ingest.source import RECORD, Batch, Reject
from burstlake.schemas import spec

NS = 10**9
TRACED_MEASURE = {"read": "bytes_read", "write": "bytes_written"}


def metric(module: str, op: str) -> str:
    """The traffic metric of a DXT module's reads or writes: ``dxt_posix_bytes_read``..."""
    return f"{module.lower()}_{TRACED_MEASURE[op]}"


CLOCK_SLACK_NS = NS
"""How far past the job's end a segment may end and still land. Darshan's runtime counts a
rank's DXT times from that rank's own start of Darshan, taken before the job's start time (the
earliest rank's, taken later in Darshan's start-up; darshan-runtime/lib/darshan-core.c), so
on a loaded machine real segments end past the job's recorded end by up to that start-up time
(tens of ms seen, in logs of 1-4 ranks on 2 busy cores)."""


def job_window_ns(job: Mapping) -> tuple[int, int]:
    """The job's start and the latest time a segment may end, in ns since the epoch: its end,
    or its start plus its run time where that is later (logs before Darshan 3.4 keep whole
    seconds, and their run time counts the last second), plus :data:`CLOCK_SLACK_NS`."""
    start = job["start_time_sec"] * NS + job.get("start_time_nsec", 0)
    end = job["end_time_sec"] * NS + job.get("end_time_nsec", 0)
    return start, max(end, start + round(float(job["run_time"]) * NS)) + CLOCK_SLACK_NS


def header_traffic(log: DarshanLog) -> dict[str, dict[str, int]]:
    """``seen`` per DXT metric from the counted module's counters, and the ``gap`` of a
    partial trace (module doc)."""
    counted = {t.module: t for t in log.totals}
    traffic: dict[str, dict[str, int]] = {}
    for module, traced in (log.dxt.traced if log.dxt else {}).items():
        totals = counted.get(DXT_COUNTED[module])
        for op in DXT_OPS:
            if totals is not None and TRACED_MEASURE[op] in totals.measures:
                seen = int(totals.measures[TRACED_MEASURE[op]].sum() or 0)
            else:  # no counters to hold the trace to: it is all that was seen
                seen = traced[op]
            parts = {"seen": seen}
            if log.modules.get(module) and seen > traced[op]:
                parts["gap"] = seen - traced[op]
            if seen:
                traffic[metric(module, op)] = parts
    return traffic


def measure(tables: Mapping[str, pa.Table]) -> dict[str, int]:
    """Bytes per DXT metric in the ``darshan_dxt`` rows of ``tables``."""
    rows = tables.get("darshan_dxt")
    if rows is None or rows.num_rows == 0:
        return {}
    lengths = np.maximum(rows.column("length").to_numpy(), 0)
    found = {}
    for module in DXT_MODULES:
        of_module = pc.equal(rows.column("module"), module)
        for op in DXT_OPS:
            chosen = pc.and_(of_module, pc.equal(rows.column("op"), op)).to_numpy(
                zero_copy_only=False
            )
            if chosen.any():
                found[metric(module, op)] = int(lengths[chosen].sum())
    return found


def _location(module: int, record: int, rank: int, op: int, segment: int) -> str:
    return f"{DXT_MODULES[module]} record {record} (rank {rank}) {DXT_OPS[op]} segment {segment}"


class SegmentOrigins(Mapping):
    """(location, raw) of each record of a DXT batch, made when asked (a batch holds up to
    :data:`.darshan_log.DXT_BATCH` of them)."""

    def __init__(self, columns: dict[str, np.ndarray], first_record: int) -> None:
        self._columns, self._first = columns, first_record

    def __len__(self) -> int:
        return len(self._columns["record"])

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._first, self._first + len(self)))

    def __getitem__(self, record: int) -> tuple[str, str]:
        i = record - self._first
        if not 0 <= i < len(self):
            raise KeyError(record)
        c = self._columns
        where = _location(c["module"][i], c["record"][i], c["rank"][i], c["op"][i], c["segment"][i])
        raw = {
            "record_id": int(c["record_id"][i]),
            **{k: c[k][i].item() for k in ("offset", "length", "start", "end")},
        }
        return where, json.dumps(raw)


def _reasons(columns: dict[str, np.ndarray], end_ns: np.ndarray, window: tuple[int, int]) -> list:
    """(mask, reason of row i) of each rule a segment must meet (module doc)."""
    start, end = columns["start"], columns["end"]
    timed = np.isfinite(start) & np.isfinite(end)
    limit_ns = window[1]
    job_s = (window[1] - CLOCK_SLACK_NS - window[0]) / NS
    return [
        (~timed, lambda i: f"DXT segment without a valid time (start {start[i]}, end {end[i]})"),
        (
            timed & (end < start),
            lambda i: (
                f"DXT segment runs backwards in time: it ends {end[i]:.9f} s after the "
                f"job's start, before it starts ({start[i]:.9f} s)"
            ),
        ),
        (
            timed & (end >= start) & (end_ns > limit_ns),
            lambda i: (
                f"DXT segment ends past the job's end: {end[i]:.9f} s after the job's "
                f"start, the job ended at {job_s:.9f} s"
            ),
        ),
        (
            columns["offset"] < 0,
            lambda i: f"DXT segment at a negative offset ({columns['offset'][i]})",
        ),
        (
            columns["length"] < 0,
            lambda i: f"DXT segment of negative length ({columns['length'][i]})",
        ),
    ]


def _batch(
    batch: pa.RecordBatch,
    log: DarshanLog,
    ids: tuple[str, str | None, str],
    first_record: int,
    header: int,
) -> Batch:
    log_id, cluster, job_id = ids
    columns = {name: batch.column(name).to_numpy() for name in batch.schema.names}
    window = job_window_ns(log.job)
    start_ns = window[0]
    n = batch.num_rows
    timed = np.isfinite(columns["start"]) & np.isfinite(columns["end"])
    rel_start = np.where(timed, columns["start"], 0.0)
    rel_end = np.where(timed, columns["end"], 0.0)
    starts = start_ns + np.round(rel_start * NS).astype(np.int64)
    ends = start_ns + np.round(rel_end * NS).astype(np.int64)
    bad = np.zeros(n, dtype=bool)
    reasons: dict[int, list[str]] = {}
    for mask, reason in _reasons(columns, ends, window):
        for i in np.flatnonzero(mask).tolist():
            reasons.setdefault(i, []).append(reason(i))
        bad |= mask
    origins = SegmentOrigins(columns, first_record)
    rejects, traffic = [], {}
    for i, why in reasons.items():
        rejects.append(Reject(*origins[first_record + i], "; ".join(why)))
        name = metric(DXT_MODULES[columns["module"][i]], DXT_OPS[columns["op"][i]])
        parts = traffic.setdefault(name, {})
        parts["quarantined"] = parts.get("quarantined", 0) + max(0, int(columns["length"][i]))
    keep = np.flatnonzero(~bad)
    ranks = columns["rank"][keep]
    unique, inverse = np.unique(ranks, return_inverse=True)
    hosts = pa.array([log.hostnames.get(r) for r in unique.tolist()], pa.string())
    hostname = hosts.take(pa.array(inverse.astype(np.int64)))
    us = pa.timestamp("us", tz="UTC")
    rows = pa.table(
        {
            "log_id": pa.repeat(pa.scalar(log_id), len(keep)),
            "cluster": pa.repeat(pa.scalar(cluster, pa.string()), len(keep)),
            "job_id": pa.repeat(pa.scalar(job_id), len(keep)),
            "module": pa.array(DXT_MODULES).take(pa.array(columns["module"][keep])),
            "rank": ranks,
            "hostname": hostname,
            "record_id": columns["record_id"][keep],
            "op": pa.array(DXT_OPS).take(pa.array(columns["op"][keep])),
            "offset": columns["offset"][keep],
            "length": columns["length"][keep],
            "start": pa.array(starts[keep] // 1000, pa.int64()).cast(us),
            "end": pa.array(ends[keep] // 1000, pa.int64()).cast(us),
            "start_ns": starts[keep],
            "end_ns": ends[keep],
            RECORD: first_record + keep,
        },
        schema=spec("darshan_dxt").schema.append(pa.field(RECORD, pa.int64(), nullable=False)),
    )
    return Batch(
        tables={"darshan_dxt": rows},
        records=n,
        rejects=rejects,
        origins=origins,
        traffic=traffic,
        measure=measure,
        belongs_to=header,
    )


def batches(
    log: DarshanLog, ids: tuple[str, str | None, str], first_record: int, header: int = 0
) -> Iterator[Batch]:
    """The ``darshan_dxt`` batches of a log's streamed trace, its segments numbered as input
    records from ``first_record``; ``ids`` = (log_id, cluster, job_id)."""
    if log.dxt is None or not log.dxt.segments:
        return
    with pa.OSFile(str(Path(log.dxt.path))) as source:  # read, not mapped: RSS stays flat
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            yield _batch(batch, log, ids, first_record, header)
            first_record += batch.num_rows
