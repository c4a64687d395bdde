"""Darshan: per-rank I/O of one application run from its binary log, any 3.x version.

See docs/design.md, 'Sources'.

Lands one ``darshan_jobs`` row per log, one ``darshan_rank_io`` row per module and rank
(rank -1: shared files reduced over all ranks), the per-rank view paper 004 §3.2 reads rank-0
and uneven I/O from, the heatmap bins with traffic in ``darshan_heatmap``, the log's name
records in ``darshan_files`` and its DXT segments in ``darshan_dxt`` (:mod:`.darshan_dxt`,
streamed in bounded batches). Logs are read with pydarshan (:mod:`.darshan_log`); small logs
land in groups (``Source.grouped``, :mod:`.grouped`).

Identity and joins: ``log_id`` is the id of what the log says (blake2b-64 of everything read
from it: header, module × rank totals, host names, heatmaps; :func:`log_id`), not of its bytes:
the same log always gets the same id, whatever its bytes (a copy with a few bytes changed that
reads the same is the same record and replaces it), and different logs never share one, even the
per-process logs of one non-MPI job that started in the same second.
``job_id`` is the scheduler job id Darshan recorded (``SLURM_JOB_ID``), as text, so it joins
``jobs.job_id_raw``. A log does not name its machine: ``cluster`` is ``--cluster``, else null,
and a null-cluster log joins the one job of that raw id if exactly one machine has it
(:func:`burstlake.jobs.metrics.darshan_job.with_clusters`).

Input records, for the accounting of docs/design.md, 'The lake': a log's header (its
``darshan_jobs`` row), each module × rank total (a ``darshan_rank_io`` row) and each module ×
rank heatmap (its bins with traffic, ``darshan_heatmap`` rows), each name record (a
``darshan_files`` row) and each DXT segment (a ``darshan_dxt`` row); a record failing its
expectations is quarantined alone, except the header: the log's other records describe its run
and are quarantined with it. A log whose records Darshan had to drop at run time (memory
limits) lands with ``partial = true``. A log darshan-util cannot open, can only read part of
(truncated, corrupt), or crashes on, is quarantined whole. darshan-util can crash the process on
a damaged log, so logs are read in a separate process."""

from __future__ import annotations

import atexit
import hashlib
import json
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from subprocess import PIPE

import numpy as np
import pyarrow as pa

from burstlake.jobs.ingest import darshan_dxt, darshan_log
from burstlake.jobs.ingest.darshan_log import MEASURES, STORAGE_MODULES, DarshanLog, UnreadableLog
from burstlake.jobs.ingest.source import (
    RECORD,
    Batch,
    ParseContext,
    Source,
    UnusableInput,
    record_cluster,
)
from burstlake.schemas import spec

FILE_PATTERN = "*.darshan"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _IsolatedReader:
    """Reads logs in a worker process (``python -m ...darshan_log``) kept across logs, and
    replaced when a log crashes it."""

    def __init__(self) -> None:
        self._worker: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def read(self, path: Path, dxt: Path | None = None) -> DarshanLog:
        """The log at ``path``; with ``dxt`` its segments streamed into that file too."""
        with self._lock:
            if self._worker is None:
                command = [sys.executable, "-m", darshan_log.__name__]
                self._worker = subprocess.Popen(command, stdin=PIPE, stdout=PIPE)
            try:
                result = self._ask(self._worker, path, dxt)
            except (BrokenPipeError, EOFError):
                status = self._worker.wait()
                self._worker = None
                if status >= 0:  # not killed by a signal: the worker could not run at all
                    raise RuntimeError(
                        f"the Darshan reader process ({darshan_log.__name__}) exited with "
                        f"status {status}; its error output is above"
                    ) from None
                raise UnusableInput(
                    f"darshan-util crashed reading this log ({signal.Signals(-status).name}): "
                    "it is truncated or corrupt"
                ) from None
        if isinstance(result, UnreadableLog):
            raise UnusableInput(str(result))
        return result

    @staticmethod
    def _ask(worker: subprocess.Popen, path: Path, dxt: Path | None) -> DarshanLog | UnreadableLog:
        request = [str(path), None if dxt is None else str(dxt)]
        worker.stdin.write(json.dumps(request).encode() + b"\n")
        worker.stdin.flush()
        header = worker.stdout.read(8)
        if len(header) < 8:
            raise EOFError
        (size,) = struct.unpack("<Q", header)
        answer = worker.stdout.read(size)
        if len(answer) < size:
            raise EOFError
        return pickle.loads(answer)

    def close(self) -> None:
        with self._lock:
            if self._worker is not None:
                self._worker.stdin.close()
                self._worker.wait()
                self._worker = None


class _InProcessReader:
    """Reads logs in this process (a worker process of ``ingest --workers``, apart already:
    a crash of darshan-util ends it alone, and the ingest process lands its files again)."""

    def read(self, path: Path, dxt: Path | None = None) -> DarshanLog:
        try:
            return darshan_log.read_log(str(path), None if dxt is None else str(dxt))
        except UnreadableLog as err:
            raise UnusableInput(str(err)) from None
        except Exception as err:  # pydarshan on a malformed log, as the reader process says
            raise UnusableInput(f"pydarshan failed: {type(err).__name__}: {err}") from None

    def close(self) -> None:
        pass


_READER: _IsolatedReader | _InProcessReader = _IsolatedReader()
atexit.register(lambda: _READER.close())


def read_in_this_process() -> None:
    """From now on read logs in this process, not in a reader process (a worker process,
    see :class:`_InProcessReader`)."""
    global _READER
    _READER = _InProcessReader()


def _microseconds(seconds: int, nanoseconds: int) -> int:
    return seconds * 10**6 + nanoseconds // 1000


def _timestamp(seconds: int, nanoseconds: int) -> datetime:
    return EPOCH + timedelta(microseconds=_microseconds(seconds, nanoseconds))


def _storage_bytes(log: DarshanLog, measure: str) -> int:
    """Bytes at the lowest instrumented layers (no double count through MPI-IO, HDF5...)."""
    return int(
        sum(t.measures[measure].sum() or 0 for t in log.totals if t.module in STORAGE_MODULES)
    )


def log_id(log: DarshanLog) -> str:
    """The id of a log's content as read (see the module doc): blake2b-64, hex."""
    digest = hashlib.blake2b(digest_size=8)
    header = {"job": log.job, "exe": log.exe, "modules": log.modules, "hosts": log.hostnames}
    digest.update(json.dumps(header, sort_keys=True, default=str).encode())
    for totals in log.totals:
        digest.update(totals.module.encode() + np.ascontiguousarray(totals.ranks).tobytes())
        for measure in sorted(totals.measures):
            values = np.ma.asarray(totals.measures[measure])
            digest.update(measure.encode() + np.ma.getdata(values).tobytes())
            digest.update(np.ma.getmaskarray(values).tobytes())
    for heatmap in log.heatmaps:
        digest.update(f"{heatmap.module}:{heatmap.bin_width_s!r}".encode())
        for array in (heatmap.ranks, heatmap.bytes_read, heatmap.bytes_written):
            digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


def identify(path: Path) -> str:
    """The :func:`log_id` of the log at ``path`` (read in the reader process)."""
    return log_id(_READER.read(path))


def _job_row(log: DarshanLog, log_id: str) -> dict:
    job = log.job
    return {
        "log_id": log_id,
        "job_id": str(job["jobid"]),
        "uid": job["uid"],
        "exe": log.exe,
        "nprocs": job["nprocs"],
        "start": _timestamp(job["start_time_sec"], job["start_time_nsec"]),
        "end": _timestamp(job["end_time_sec"], job["end_time_nsec"]),
        "run_time": job["run_time"],
        "darshan_version": job["metadata"].get("lib_ver") or job["log_ver"],
        "modules": list(log.modules),
        "bytes_read": _storage_bytes(log, "bytes_read"),
        "bytes_written": _storage_bytes(log, "bytes_written"),
        "partial": any(log.modules.values()),
    }


def _rank_rows(log: DarshanLog, log_id: str) -> Iterator[dict]:
    job_id = str(log.job["jobid"])
    for totals in log.totals:
        for i, rank in enumerate(totals.ranks.tolist()):
            row = {
                "log_id": log_id,
                "job_id": job_id,
                "module": totals.module,
                "rank": rank,
                "hostname": log.hostnames.get(rank),
            }
            for measure in MEASURES:
                value = totals.measures[measure][i] if measure in totals.measures else None
                row[measure] = None if value is None or value is np.ma.masked else value.item()
            yield row


def _heatmap_columns(log: DarshanLog, first_record: int) -> dict[str, list]:
    """The bins with traffic of every heatmap record; bin i starts at start + i × width."""
    start_us = _microseconds(log.job["start_time_sec"], log.job["start_time_nsec"])
    columns: dict[str, list] = {c: [] for c in ("module", "rank", "ts", "read", "written", RECORD)}
    record = first_record
    for heatmap in log.heatmaps:
        rows, bins = np.nonzero((heatmap.bytes_read > 0) | (heatmap.bytes_written > 0))
        columns["module"] += [heatmap.module] * len(rows)
        columns["rank"] += heatmap.ranks[rows].tolist()
        columns["ts"] += (start_us + np.round(bins * heatmap.bin_width_s * 1e6)).tolist()
        columns["read"] += heatmap.bytes_read[rows, bins].tolist()
        columns["written"] += heatmap.bytes_written[rows, bins].tolist()
        columns[RECORD] += (record + rows).tolist()
        record += len(heatmap.ranks)
    return columns


def _heatmap_table(
    log: DarshanLog, log_id: str, first_record: int, cluster: str | None
) -> pa.Table:
    columns = _heatmap_columns(log, first_record)
    widths = {h.module: h.bin_width_s for h in log.heatmaps}
    rows = len(columns[RECORD])
    return pa.table(
        {
            "log_id": [log_id] * rows,
            "cluster": [cluster] * rows,
            "job_id": [str(log.job["jobid"])] * rows,
            "module": columns["module"],
            "rank": columns["rank"],
            "ts": pa.array(columns["ts"], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            "interval_s": [widths[m] for m in columns["module"]],
            "bytes_read": columns["read"],
            "bytes_written": columns["written"],
            RECORD: columns[RECORD],
        },
        schema=_schema("darshan_heatmap"),
    )


def _heatmap_origins(log: DarshanLog, first_record: int) -> dict[int, tuple[str, str]]:
    origins = {}
    record = first_record
    for heatmap in log.heatmaps:
        for i, rank in enumerate(heatmap.ranks.tolist()):
            raw = {
                "interval_s": heatmap.bin_width_s,
                "read_bins": heatmap.bytes_read[i].tolist(),
                "write_bins": heatmap.bytes_written[i].tolist(),
            }
            origins[record] = (f"heatmap module={heatmap.module} rank={rank}", json.dumps(raw))
            record += 1
    return origins


def _schema(table: str) -> pa.Schema:
    return spec(table).schema.append(pa.field(RECORD, pa.int64(), nullable=False))


def _table(name: str, rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=_schema(name))


def _origin(row: dict, location: str) -> tuple[str, str]:
    return location, json.dumps({k: v for k, v in row.items() if k != RECORD}, default=str)


def _files_table(log: DarshanLog, log_id: str, first_record: int, cluster: str | None):
    ids, names, mounts, kinds = zip(*log.files, strict=True) if log.files else ([],) * 4
    return pa.table(
        {
            "log_id": [log_id] * len(ids),
            "cluster": [cluster] * len(ids),
            "record_id": list(ids),
            "path": list(names),
            "mount_point": list(mounts),
            "fs_type": list(kinds),
            RECORD: range(first_record, first_record + len(ids)),
        },
        schema=_schema("darshan_files"),
    )


def _file_origins(log: DarshanLog, first_record: int) -> dict[int, tuple[str, str]]:
    return {
        first_record + i: (f"name record {record_id}", json.dumps(name))
        for i, (record_id, name, _, _) in enumerate(log.files)
    }


def parse(path: Path, context: ParseContext) -> Iterator[Batch]:
    """A log's header batch (its ``darshan_jobs``, ``darshan_rank_io``, ``darshan_heatmap``
    and ``darshan_files`` rows), then its DXT segments in bounded ``darshan_dxt`` batches
    (:mod:`.darshan_dxt`), streamed through a scratch file the reader process writes."""
    with tempfile.TemporaryDirectory(prefix="burstlake-dxt-") as scratch:
        yield from _parse(path, context, Path(scratch) / "dxt.arrow")


def _parse(path: Path, context: ParseContext, trace: Path) -> Iterator[Batch]:
    log = _READER.read(path, trace)
    if log.dxt is not None and log.dxt.segments > darshan_log.DXT_BATCH:
        # a long trace is landed next, and its Delta commit grows with its rows: the reader
        # process's memory is not held beside it (the next log starts a new one)
        _READER.close()
    identity, cluster = log_id(log), record_cluster(context.options)
    job = {**_job_row(log, identity), "cluster": cluster, RECORD: 0}
    ranks = [
        {**row, "cluster": cluster, RECORD: i}
        for i, row in enumerate(_rank_rows(log, identity), start=1)
    ]
    first_heatmap = len(ranks) + 1
    first_file = first_heatmap + sum(len(h.ranks) for h in log.heatmaps)
    origins = {0: _origin(job, "log header")}
    origins |= {r[RECORD]: _origin(r, f"module={r['module']} rank={r['rank']}") for r in ranks}
    origins |= _heatmap_origins(log, first_heatmap)
    origins |= _file_origins(log, first_file)
    seen, by_record = _traffic(ranks)
    yield Batch(
        tables={
            "darshan_jobs": _table("darshan_jobs", [job]),
            "darshan_rank_io": _table("darshan_rank_io", ranks),
            "darshan_heatmap": _heatmap_table(log, identity, first_heatmap, cluster),
            "darshan_files": _files_table(log, identity, first_file, cluster),
        },
        records=len(origins),
        origins=origins,
        parents={record: 0 for record in origins if record},
        traffic=seen | darshan_dxt.header_traffic(log),
        record_traffic=by_record,
    )
    ids = (identity, cluster, job["job_id"])
    yield from darshan_dxt.batches(log, ids, first_file + len(log.files), header=0)


def _traffic(ranks: list[dict]) -> tuple[dict[str, dict[str, int]], dict[int, dict[str, int]]]:
    """Byte accounting of a log: the storage-layer bytes of each rank record (what
    ``darshan_jobs`` sums), landing with the record or quarantined with it."""
    seen: dict[str, dict[str, int]] = {}
    by_record: dict[int, dict[str, int]] = {}
    for row in ranks:
        if row["module"] not in STORAGE_MODULES:
            continue
        for measure in ("bytes_read", "bytes_written"):
            amount = max(0, int(row[measure] or 0))
            if amount:
                by_record.setdefault(row[RECORD], {})[measure] = amount
                parts = seen.setdefault(measure, {})
                parts["seen"] = parts.get("seen", 0) + amount
    return seen, by_record


SOURCE = Source(
    name="darshan",
    tables=("darshan_jobs", "darshan_rank_io", "darshan_heatmap", "darshan_files", "darshan_dxt"),
    parse=parse,
    file_pattern=FILE_PATTERN,
    grouped=True,
)
