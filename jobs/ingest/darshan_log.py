"""Read one Darshan log with pydarshan into per-module, per-rank totals.

See docs/design.md, 'Sources' and 'The lake'.

This module only reads: it turns a log into a :class:`DarshanLog` of plain Python and numpy
values (picklable, so it can cross from the isolated reader process, see ``darshan.py``).

What is summed, per module and rank, is declared once in :data:`MODULES`: which counters make
up bytes, operation counts and times. Modules without byte or operation counters (LUSTRE
striping, BG/Q, APMPI, APXC, HEATMAP) are listed in the log's ``modules`` but have no totals.
Rank -1 records are shared files that Darshan reduced over all ranks; they stay rank -1.
DXT records carry the hostname of the rank that wrote them (paper 004 §3 distributes I/O over
hosts), so ranks with a DXT record get a hostname; asked for them, the reader also streams the
DXT segments, a record at a time, into an Arrow IPC file (:class:`DxtTrace`) and lists the
name records with their mount points. HEATMAP records (Darshan >= 3.3) give each
rank's bytes per time bin from the job start: the only time-resolved view of a rank's I/O.

darshan-util reports damage (a truncated or corrupt log) only as ``Error:`` lines on the C
stderr and then stops returning records; :func:`read_log` captures those lines so that the
caller can refuse the log instead of landing part of it as if it were whole. On some damaged
logs darshan-util crashes the process (SIGSEGV, failed assertion), so ``python -m`` this module
is a worker (:func:`serve`) that reads logs for another process.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import struct
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from burstlake.schemas.tables import DARSHAN_MEASURES as MEASURES

TIME_MEASURES = ("read_time", "write_time", "meta_time")


@dataclass(frozen=True)
class ModuleCounters:
    """The Darshan counters summed into each measure of one module (missing measure = null)."""

    measures: dict[str, tuple[str, ...]]


def _module(prefix: str, **measures: tuple[str, ...] | str) -> ModuleCounters:
    names = {m: (c,) if isinstance(c, str) else c for m, c in measures.items()}
    return ModuleCounters({m: tuple(f"{prefix}_{c}" for c in cs) for m, cs in names.items()})


def _layer(prefix: str, reads: tuple[str, ...], writes: tuple[str, ...], opens: tuple[str, ...]):
    """A module with the usual BYTES_READ/WRITTEN and F_READ/WRITE/META_TIME counters."""
    return _module(
        prefix,
        bytes_read="BYTES_READ",
        bytes_written="BYTES_WRITTEN",
        reads=reads,
        writes=writes,
        opens=opens,
        read_time="F_READ_TIME",
        write_time="F_WRITE_TIME",
        meta_time="F_META_TIME",
    )


MODULES: dict[str, ModuleCounters] = {
    "POSIX": _layer("POSIX", ("READS",), ("WRITES",), ("OPENS",)),
    "MPI-IO": _layer(
        "MPIIO",
        ("INDEP_READS", "COLL_READS", "SPLIT_READS", "NB_READS"),
        ("INDEP_WRITES", "COLL_WRITES", "SPLIT_WRITES", "NB_WRITES"),
        ("INDEP_OPENS", "COLL_OPENS"),
    ),
    "STDIO": _layer("STDIO", ("READS",), ("WRITES",), ("OPENS", "FDOPENS")),
    "H5F": _module("H5F", opens="OPENS", meta_time="F_META_TIME"),
    "H5D": _layer("H5D", ("READS",), ("WRITES",), ("OPENS",)),
    "PNETCDF_FILE": _module(
        "PNETCDF_FILE",
        bytes_read="BYTES_READ",
        bytes_written="BYTES_WRITTEN",
        opens=("CREATES", "OPENS"),
        meta_time="F_META_TIME",
    ),
    "PNETCDF_VAR": _layer(
        "PNETCDF_VAR",
        ("INDEP_READS", "COLL_READS", "NB_READS"),
        ("INDEP_WRITES", "COLL_WRITES", "NB_WRITES"),
        ("OPENS",),
    ),
    "DFS": _layer("DFS", ("READS", "NB_READS"), ("WRITES", "NB_WRITES"), ("OPENS", "GLOBAL_OPENS")),
    "DAOS": _layer(
        "DAOS",
        ("ARRAY_READS", "KV_GETS"),
        ("ARRAY_WRITES", "KV_PUTS"),
        ("OBJ_OPENS", "ARRAY_OPENS", "KV_OPENS"),
    ),
}
"""Counters per measure and module. MPI-IO, H5*, PNETCDF_* and DFS sit on top of POSIX or DAOS,
so their bytes are the same bytes seen higher up the stack."""

STORAGE_MODULES = ("POSIX", "STDIO", "DAOS")
"""The lowest instrumented layers: a log's bytes_read/bytes_written are their sum, so bytes
that went through MPI-IO, HDF5 or PnetCDF are not counted twice."""

DXT_MODULES = ("DXT_POSIX", "DXT_MPIIO")
DXT_COUNTED = {"DXT_POSIX": "POSIX", "DXT_MPIIO": "MPI-IO"}  # the module whose counters it traces
DXT_OPS = ("write", "read")  # Darshan stores a DXT record's writes, then its reads
DXT_BATCH = 65_536
"""Segments per batch of a streamed DXT trace: memory holds one batch (and Darshan's one
record), whatever the number of segments in the log."""
SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"), ("end", "<f8")])
"""darshan-util's ``struct segment_info``: times are seconds since the job's start."""
HEATMAP_MODULES = {"MPIIO": "MPI-IO"}  # heatmap names that differ from the module's own


@dataclass
class RankTotals:
    """One module's totals by rank: ``ranks`` and one masked array per measure (aligned;
    masked = unknown)."""

    module: str
    ranks: np.ndarray
    measures: dict[str, np.ma.MaskedArray]


@dataclass
class RankHeatmap:
    """One module's heatmap: bytes per rank (rows, aligned with ``ranks``) and time bin."""

    module: str
    ranks: np.ndarray
    bin_width_s: float
    bytes_read: np.ndarray
    bytes_written: np.ndarray


@dataclass
class DxtTrace:
    """Where a log's DXT segments were streamed: an Arrow IPC file of batches of at most
    :data:`DXT_BATCH` rows (:func:`dxt_schema`), and what they add up to."""

    path: str
    segments: int = 0
    traced: dict[str, dict[str, int]] = field(default_factory=dict)  # module -> op -> bytes


def dxt_schema():
    """The columns of a streamed DXT trace: one row per segment, in the log's order."""
    import pyarrow as pa

    return pa.schema(
        [
            ("module", pa.int8()),  # index in DXT_MODULES
            ("record", pa.int64()),  # index of the DXT record in the log, over modules
            ("rank", pa.int64()),
            ("record_id", pa.int64()),  # Darshan's uint64 record id, its bits as int64
            ("op", pa.int8()),  # index in DXT_OPS
            ("segment", pa.int64()),  # index of the segment among the record's reads/writes
            ("offset", pa.int64()),
            ("length", pa.int64()),
            ("start", pa.float64()),  # seconds since the job's start
            ("end", pa.float64()),
        ]
    )


@dataclass
class DarshanLog:
    """What burstlake keeps of a Darshan log."""

    job: dict  # pydarshan's job header: jobid, uid, nprocs, start/end sec+nsec, run_time, ...
    exe: str
    modules: dict[str, bool]  # module -> partial flag (records lost to Darshan's memory limits)
    totals: list[RankTotals] = field(default_factory=list)
    hostnames: dict[int, str] = field(default_factory=dict)  # rank -> host, from DXT
    heatmaps: list[RankHeatmap] = field(default_factory=list)
    files: list[tuple[int, str, str | None, str | None]] = field(default_factory=list)
    # (record id as int64, path, mount point, file-system type) of every name record
    dxt: DxtTrace | None = None  # set when the segments were asked for


def _counter_columns(module: str, measure: str) -> list[tuple[bool, int]] | None:
    """(is_float, column) of each counter of a measure, or None if the module lacks it."""
    from darshan.backend import cffi_backend as backend

    names = MODULES[module].measures.get(measure)
    if names is None:
        return None
    integer = backend.counter_names(module) or []
    floating = backend.fcounter_names(module) or []
    found = []
    for name in names:
        if name in integer:
            found.append((False, integer.index(name)))
        elif name in floating:
            found.append((True, floating.index(name)))
        else:
            raise RuntimeError(f"pydarshan has no counter {name} in module {module}")
    return found


def _sum_by_rank(values: np.ndarray, group: np.ndarray, ngroups: int) -> np.ma.MaskedArray:
    """Sum counter columns (records × counters) by rank group; negative values are unknown.

    Darshan writes -1 for what it did not record. A counter that is negative in every record
    did not exist in the Darshan version that wrote the log (STDIO_FDOPENS before 3.2): it is
    left out. A negative value among known ones (a bogus timer) makes its rank's total unknown.
    A measure none of whose counters exists is unknown for every rank.
    """
    recorded = values[:, (values >= 0).any(axis=0)] if len(values) else values
    if recorded.shape[1] == 0:
        return np.ma.masked_all(ngroups, dtype=values.dtype)
    known = np.where(recorded >= 0, recorded, 0).sum(axis=1)
    unknown = (recorded < 0).any(axis=1)
    totals = np.zeros(ngroups, dtype=values.dtype)
    np.add.at(totals, group, known)
    damaged = np.zeros(ngroups, dtype=bool)
    np.logical_or.at(damaged, group, unknown)
    return np.ma.MaskedArray(totals, mask=damaged)


def _module_totals(report, module: str) -> RankTotals:
    """Sum a module's records by rank (rank -1 = shared file, reduced over all ranks)."""
    ranks, counters, fcounters = [], [], []
    for record in report.mod_records(module, dtype="numpy", warnings=False):
        ranks.append(record["rank"])
        counters.append(record["counters"])
        fcounters.append(record["fcounters"])
    unique, group = np.unique(np.asarray(ranks, dtype=np.int64), return_inverse=True)
    tables = {False: np.asarray(counters, dtype=np.int64), True: np.asarray(fcounters)}
    measures = {}
    for measure in MEASURES:
        columns = _counter_columns(module, measure)
        if columns is None:
            continue
        dtype = np.float64 if measure in TIME_MEASURES else np.int64
        values = np.column_stack(
            [tables[is_float][:, col] if ranks else [] for is_float, col in columns]
        ).astype(dtype)
        measures[measure] = _sum_by_rank(values, group, len(unique))
    return RankTotals(module, unique, measures)


class _DxtStream:
    """Collects DXT segments into batches of :data:`DXT_BATCH` rows written to an Arrow IPC
    file (or nowhere, when only host names are wanted)."""

    def __init__(self, path: str | None) -> None:
        import pyarrow as pa

        self.schema = dxt_schema()
        self.trace = DxtTrace(path) if path else None
        self._writer: pa.ipc.RecordBatchFileWriter | None = None  # opened at the first segment
        self._parts: list[dict[str, np.ndarray]] = []
        self._rows = 0

    def add(self, module: int, record: int, rank: int, record_id: int, writes: int, segments):
        if self.trace is None or not len(segments):
            return
        ops = np.repeat(np.array([0, 1], dtype=np.int8), [writes, len(segments) - writes])
        index = np.arange(len(segments), dtype=np.int64)
        index[writes:] -= writes
        name = DXT_MODULES[module]
        traced = self.trace.traced.setdefault(name, {op: 0 for op in DXT_OPS})
        traced["write"] += int(segments["length"][:writes].sum())
        traced["read"] += int(segments["length"][writes:].sum())
        self.trace.segments += len(segments)
        for at in range(0, len(segments), DXT_BATCH):
            part = slice(at, at + DXT_BATCH)
            n = len(index[part])
            self._parts.append(
                {
                    "module": np.full(n, module, dtype=np.int8),
                    "record": np.full(n, record, dtype=np.int64),
                    "rank": np.full(n, rank, dtype=np.int64),
                    "record_id": np.full(n, record_id, dtype=np.uint64).view(np.int64),
                    "op": ops[part],
                    "segment": index[part],
                    **{k: np.array(segments[k][part]) for k in SEGMENT.names},
                }
            )
            self._rows += n
            if self._rows >= DXT_BATCH:
                self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self._parts:
            return
        if self._writer is None:
            self._sink = pa.OSFile(self.trace.path, "wb")
            self._writer = pa.ipc.new_file(self._sink, self.schema)
        columns = {k: np.concatenate([p[k] for p in self._parts]) for k in self.schema.names}
        self._parts, self._rows = [], 0
        for at in range(0, len(columns["record"]), DXT_BATCH):
            arrays = [pa.array(columns[k][at : at + DXT_BATCH]) for k in self.schema.names]
            self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))

    def close(self) -> DxtTrace | None:
        if self.trace is not None:
            self._flush()
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
        return self.trace


def _dxt(report, stream: _DxtStream) -> dict[int, str]:
    """Read the DXT records one at a time from darshan-util (as pydarshan's
    ``log_get_dxt_record`` does, without a Python object per segment) into ``stream``;
    returns the host name of each rank that has a record."""
    from darshan.backend.cffi_backend import ffi, libdutil

    hosts: dict[int, str] = {}
    header = ffi.sizeof("struct dxt_file_record")
    record = 0
    for module, name in enumerate(DXT_MODULES):
        if name not in report.modules:
            continue
        index = report.modules[name]["idx"]
        buffer = ffi.new("void **")
        while libdutil.darshan_log_get_record(report.log["handle"], index, buffer) > 0:
            try:
                dxt = ffi.cast("struct dxt_file_record *", buffer[0])
                rank, writes = int(dxt.base_rec.rank), int(dxt.write_count)
                count = writes + int(dxt.read_count)
                hostname = ffi.string(dxt.hostname).decode("utf-8", "replace")
                if hostname:
                    hosts.setdefault(rank, hostname)
                data = ffi.buffer(ffi.cast("char *", buffer[0]) + header, count * SEGMENT.itemsize)
                segments = np.frombuffer(data, dtype=SEGMENT)
                stream.add(module, record, rank, int(dxt.base_rec.id), writes, segments)
            finally:
                libdutil.darshan_free(buffer[0])
                buffer[0] = ffi.NULL  # darshan-util reuses a non-null buffer
            record += 1
    return hosts


def _mount_of(path: str, mounts: list[tuple[str, str]]) -> tuple[str | None, str | None]:
    """The longest mount point holding ``path``, and its file-system type."""
    best: tuple[str | None, str | None] = (None, None)
    for point, kind in mounts:
        root = point.rstrip("/") + "/"
        if (path == point or path.startswith(root)) and len(point) > len(best[0] or ""):
            best = (point, kind)
    return best


def _files(report) -> list[tuple[int, str, str | None, str | None]]:
    from darshan.backend import cffi_backend as backend

    mounts = backend.log_get_mounts(report.log)
    names = backend.log_get_name_records(report.log)
    signed = np.array(list(names), dtype=np.uint64).view(np.int64).tolist()
    return [(i, n, *_mount_of(n, mounts)) for i, n in zip(signed, names.values(), strict=True)]


HEATMAP_RECORDS = {
    16592106915301738621: "POSIX",
    3989511027826779520: "STDIO",
    3668870418325792824: "MPIIO",
    1597927878319380788: "DFS",
    4131494093108637317: "DAOS",
}
"""The record ids of the heatmaps' name records (``heatmap:POSIX``...), as pydarshan's
``DarshanReport.read_all_heatmap_records`` names them (an unknown id names itself)."""


def _heatmaps(report) -> list[RankHeatmap]:
    """Each module's heatmap, read record by record from darshan-util as pydarshan's
    ``read_all_heatmap_records`` does (a rank's later record replaces its earlier one, the
    bin count and width must agree), and arranged as its ``Heatmap.to_df`` would (ranks
    ascending, bin width the first interval's), without building a DataFrame per op."""
    from darshan.backend import cffi_backend as backend

    if "HEATMAP" not in report.modules:
        return []
    found: dict[str, dict] = {}
    while (record := backend._log_get_heatmap_record(report.log)) is not None:
        name = str(HEATMAP_RECORDS.get(record["id"], record["id"]))
        heatmap = found.setdefault(name, {"nbins": record["nbins"], "width": None, "ranks": {}})
        if heatmap["nbins"] != record["nbins"]:
            raise ValueError("Record nbins is not consistent with current heatmap.")
        if heatmap["width"] is None:
            heatmap["width"] = record["bin_width_seconds"]
        if heatmap["width"] != record["bin_width_seconds"]:
            raise ValueError("Record bin_width_seconds is not consistent with current heatmap.")
        heatmap["ranks"][record["rank"]] = (record["read_bins"], record["write_bins"])
    heatmaps = []
    for name, heatmap in found.items():
        nbins, ranks = heatmap["nbins"], sorted(heatmap["ranks"])
        breaks = np.linspace(start=0, stop=nbins * heatmap["width"], num=nbins + 1)
        bins = [heatmap["ranks"][r] for r in ranks]
        heatmaps.append(
            RankHeatmap(
                module=HEATMAP_MODULES.get(name, name),
                ranks=np.array(ranks, dtype=np.int64),
                bin_width_s=round(float(breaks[1] - breaks[0]), 9) if nbins else 0.0,
                bytes_read=np.array([b[0] for b in bins], dtype=np.int64).reshape(-1, nbins),
                bytes_written=np.array([b[1] for b in bins], dtype=np.int64).reshape(-1, nbins),
            )
        )
    return heatmaps


@contextlib.contextmanager
def _captured_stderr() -> Iterator[list[str]]:
    """Collect what C code writes to file descriptor 2 while the block runs."""
    lines: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as sink:
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            sink.seek(0)
            text = sink.read().decode("utf-8", "replace")
            lines.extend(line.strip() for line in text.splitlines() if line.strip())


class UnreadableLog(Exception):
    """darshan-util cannot read the log, or only part of it; the message says what it said."""


def _read(path: str, dxt: str | None) -> DarshanLog:
    import darshan

    with darshan.DarshanReport(path, read_all=False) as report:
        stream = _DxtStream(dxt)
        log = DarshanLog(
            job=dict(report.metadata["job"]),
            exe=report.metadata["exe"],
            modules={m: bool(info["partial_flag"]) for m, info in report.modules.items()},
            totals=[_module_totals(report, m) for m in report.modules if m in MODULES],
            hostnames=_dxt(report, stream),
            heatmaps=_heatmaps(report),
            files=_files(report) if dxt else [],
        )
        log.dxt = stream.close()
        return log


def read_log(path: str, dxt: str | None = None) -> DarshanLog:
    """Read a log: header, per-rank totals of the modules in :data:`MODULES`, DXT hostnames,
    heatmaps; with ``dxt`` (a file to create) also its name records and its DXT segments,
    streamed into that file (:class:`DxtTrace`). Raises :class:`UnreadableLog` if darshan-util
    cannot read all of it."""
    with _captured_stderr() as complaints:
        try:
            log = _read(path, dxt)
        except RuntimeError as err:  # pydarshan's "Failed to open file."
            log, failure = None, str(err)
    errors = list(dict.fromkeys(line for line in complaints if line.startswith("Error")))
    if log is None:
        raise UnreadableLog(
            "; ".join(["not a Darshan log darshan-util can read", failure, *errors])
        )
    if errors:
        raise UnreadableLog(
            "darshan-util could read only part of this log (truncated or corrupt): "
            + "; ".join(errors)
        )
    return log


def serve() -> None:
    """Worker loop: per line on stdin a JSON list [log path, DXT file or null]; per line, on
    stdout, an 8-byte length and the pickled :class:`DarshanLog` (or :class:`UnreadableLog`)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # nothing else may write into the answers
    for line in sys.stdin.buffer:
        try:
            result: DarshanLog | UnreadableLog = read_log(*json.loads(line))
        except UnreadableLog as err:
            result = err
        except Exception as err:  # pydarshan on a malformed log: the log is unusable
            result = UnreadableLog(f"pydarshan failed: {type(err).__name__}: {err}")
        data = pickle.dumps(result)
        answers.write(struct.pack("<Q", len(data)) + data)
        answers.flush()


if __name__ == "__main__":
    # Run the module under its own name, so its classes pickle as importable ones.
    from burstlake.jobs.ingest import darshan_log

    darshan_log.serve()
