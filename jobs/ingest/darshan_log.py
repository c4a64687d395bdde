"""Read one Darshan log with pydarshan into per-module, per-rank totals.

See docs/design.md, 'Sources' and 'The lake'.

This module only reads: it turns a log into a :class:`DarshanLog` of plain Python and numpy
values (picklable, so it can cross from the isolated reader process, see ``darshan.py``).

What is summed, per module and rank, is declared once in :data:`MODULES`: which counters make
up bytes, operation counts and times. Modules without byte or operation counters (LUSTRE
striping, BG/Q, APMPI, APXC, HEATMAP) are listed in the log's ``modules`` but have no totals.
Rank -1 records are shared files that Darshan reduced over all ranks; they stay rank -1.
DXT records carry the hostname of the rank that wrote them (paper 004 §3 distributes I/O over
hosts), so ranks with a DXT record get a hostname. HEATMAP records (Darshan >= 3.3) give each
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
class DarshanLog:
    """What burstlake keeps of a Darshan log."""

    job: dict  # pydarshan's job header: jobid, uid, nprocs, start/end sec+nsec, run_time, ...
    exe: str
    modules: dict[str, bool]  # module -> partial flag (records lost to Darshan's memory limits)
    totals: list[RankTotals] = field(default_factory=list)
    hostnames: dict[int, str] = field(default_factory=dict)  # rank -> host, from DXT
    heatmaps: list[RankHeatmap] = field(default_factory=list)


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


def _dxt_hostnames(report) -> dict[int, str]:
    from darshan.backend import cffi_backend as backend

    hosts: dict[int, str] = {}
    for module in DXT_MODULES:
        if module not in report.modules:
            continue
        while (record := backend.log_get_dxt_record(report.log, module)) is not None:
            if record["hostname"]:
                hosts.setdefault(int(record["rank"]), record["hostname"])
    return hosts


def _heatmaps(report) -> list[RankHeatmap]:
    if "HEATMAP" not in report.modules:
        return []
    report.read_all_heatmap_records()
    found = []
    for name, heatmap in report.heatmaps.items():
        reads = heatmap.to_df(ops=["read"]).sort_index()  # columns: the bins' time intervals
        writes = heatmap.to_df(ops=["write"]).loc[reads.index]
        found.append(
            RankHeatmap(
                module=HEATMAP_MODULES.get(str(name), str(name)),
                ranks=reads.index.to_numpy(dtype=np.int64),
                bin_width_s=round(float(reads.columns[0].length), 9) if reads.shape[1] else 0.0,
                bytes_read=reads.to_numpy(dtype=np.int64),
                bytes_written=writes.to_numpy(dtype=np.int64),
            )
        )
    return found


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


def _read(path: str) -> DarshanLog:
    import darshan

    with darshan.DarshanReport(path, read_all=False) as report:
        return DarshanLog(
            job=dict(report.metadata["job"]),
            exe=report.metadata["exe"],
            modules={m: bool(info["partial_flag"]) for m, info in report.modules.items()},
            totals=[_module_totals(report, m) for m in report.modules if m in MODULES],
            hostnames=_dxt_hostnames(report),
            heatmaps=_heatmaps(report),
        )


def read_log(path: str) -> DarshanLog:
    """Read a log: header, per-rank totals of the modules in :data:`MODULES`, DXT hostnames,
    heatmaps. Raises :class:`UnreadableLog` if darshan-util cannot read all of it."""
    with _captured_stderr() as complaints:
        try:
            log = _read(path)
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
    """Worker loop: a JSON path per line on stdin; per path, on stdout, an 8-byte length and
    the pickled :class:`DarshanLog` (or :class:`UnreadableLog`)."""
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # nothing else may write into the answers
    for line in sys.stdin.buffer:
        try:
            result: DarshanLog | UnreadableLog = read_log(json.loads(line))
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
