"""A synthesized trace and its lake tables: jobs, job_nodes, node_io, synth_truth.

The rows are the ones ingest would land from the raw files: the same schema, job ids, node
names and compressed node lists. ``node_io`` comes out one UTC day at a time, sorted by
interval and node, so a month of traffic streams in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from burstlake.jobs.ingest.hostlist import compress
from burstlake.jobs.synth.behaviour import (
    TRAFFIC_COLUMNS,
    Behaviour,
    Phases,
    RunningJobs,
    Traits,
    traffic_columns,
    traffic_rows,
)
from burstlake.jobs.synth.calibration import Calibration
from burstlake.jobs.synth.submissions import Applications, user_name, user_uid
from burstlake.presets import ForwardingMachine
from burstlake.schemas import spec

FIRST_JOB_ID = 100_001
PARTITION = "compute"
DAY_S = 86_400
JOBS_PER_BATCH = 50_000  # jobs per batch of the jobs and job_nodes rows written


@dataclass
class Trace:
    """Everything one synthesizer run decided, as NumPy arrays."""

    preset: str
    cluster: str  # the machine's name in the lake: the preset's, unless synthesize names another
    seed: int
    machine: ForwardingMachine
    cal: Calibration
    epoch_s: int  # UTC seconds of the window start
    window_s: int
    apps: Applications
    traits: Traits
    jobs: RunningJobs
    behaviour: Behaviour
    phases: Phases
    io_bytes: np.ndarray = field(init=False)  # exact bytes per job, filled by node_io_days
    comm_bytes: np.ndarray = field(init=False)
    _names: np.ndarray | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self.io_bytes = np.zeros(len(self.jobs), dtype=np.int64)
        self.comm_bytes = np.zeros(len(self.jobs), dtype=np.int64)

    @property
    def intervals(self) -> int:
        return self.window_s // self.cal.interval_s

    def job_ids(self) -> list[str]:
        return [str(FIRST_JOB_ID + j) for j in range(len(self.jobs))]

    def node_names(self, indices: np.ndarray) -> np.ndarray:
        if self._names is None:
            self._names = np.array([self.machine.node_name(i) for i in range(self.machine.nodes)])
        return self._names[indices]

    def timestamps(self, seconds: np.ndarray) -> pa.Array:
        micros = (self.epoch_s + np.asarray(seconds, dtype=np.int64)) * 1_000_000
        return pa.array(micros, type=pa.timestamp("us", tz="UTC"))


def jobs_table(trace: Trace, first: int = 0, stop: int | None = None) -> pa.Table:
    """One ``jobs`` row per job (of jobs ``first`` to ``stop``), as the Slurm ingest lands a
    ``sacct -P`` line."""
    whole, apps, cores = trace.jobs, trace.apps, trace.machine.cores_per_node
    chosen = slice(first, len(whole) if stop is None else stop)
    app, nnodes, offset = whole.app[chosen], whole.nnodes[chosen], whole.node_offset[chosen]
    user = apps.user[app]
    cpus = nnodes * cores
    nodelists = [
        compress(trace.node_names(whole.flat_nodes[o : o + n]))
        for o, n in zip(offset, nnodes, strict=True)
    ]
    count = len(app)
    columns = {
        "job_id": trace.job_ids()[chosen],
        "cluster": [trace.cluster] * count,
        "job_name": apps.name[app],
        "user": [user_name(u) for u in user],
        "uid": [user_uid(u) for u in user],
        "account": [f"grp{u % 16:02d}" for u in user],
        "partition": [PARTITION] * count,
        "submit": trace.timestamps(whole.submit_s[chosen]),
        "eligible": trace.timestamps(whole.submit_s[chosen]),
        "start": trace.timestamps(whole.start_s[chosen]),
        "end": trace.timestamps(whole.end_s[chosen]),
        "req_cpus": cpus,
        "alloc_cpus": cpus,
        "nnodes": nnodes,
        "nodelist": nodelists,
        "state": ["COMPLETED"] * count,
        "exit_code": ["0:0"] * count,
    }
    return _table("jobs", columns)


def job_nodes_table(trace: Trace, first: int = 0, stop: int | None = None) -> pa.Table:
    """``job_nodes`` (of jobs ``first`` to ``stop``): node_index is the position in the sorted
    allocation."""
    jobs = trace.jobs
    stop = len(jobs) if stop is None else stop
    owner = np.repeat(np.arange(first, stop), jobs.nnodes[first:stop])
    begin = int(jobs.node_offset[first]) if first < len(jobs) else 0  # its first flat slot
    index = begin + np.arange(len(owner)) - jobs.node_offset[owner]
    ids = np.array(trace.job_ids()[first:stop], dtype=object)
    columns = {
        "job_id": ids[owner - first],
        "cluster": [trace.cluster] * len(owner),
        "node": trace.node_names(jobs.flat_nodes[begin : begin + len(owner)]),
        "node_index": index.astype(np.int32),
    }
    return _table("job_nodes", columns)


def job_batches(trace: Trace, table, jobs: int = JOBS_PER_BATCH) -> Iterator[pa.Table]:
    """``table(trace, first, stop)`` for consecutive batches of ``jobs`` jobs: a year's
    ``jobs`` and ``job_nodes`` rows are written a batch at a time."""
    for first in range(0, len(trace.jobs), jobs):
        yield table(trace, first, min(first + jobs, len(trace.jobs)))


def traffic_days(trace: Trace) -> Iterator[dict[str, np.ndarray]]:
    """Traffic rows one UTC day at a time, sorted by interval and node (see
    :func:`~burstlake.jobs.synth.behaviour.traffic` for the columns). Recounts each job's
    exact bytes into ``trace.io_bytes`` and ``trace.comm_bytes`` on the way."""
    per_day = DAY_S // trace.cal.interval_s
    xfer = trace.traits.xfer_bytes[trace.jobs.app]
    trace.io_bytes[:] = 0
    trace.comm_bytes[:] = 0
    bounds = np.searchsorted(trace.phases.first, np.arange(0, trace.intervals + per_day, per_day))
    carried: dict[str, np.ndarray] | None = None
    for day in range(len(bounds) - 1):
        chosen = trace.phases.take(np.arange(bounds[day], bounds[day + 1]))
        rows = traffic_rows(chosen, trace.jobs, trace.behaviour)
        np.add.at(trace.io_bytes, rows["job"], rows["lustre"])
        np.add.at(trace.comm_bytes, rows["job"], rows["comm"])
        if carried is not None:
            rows = {k: np.concatenate([carried[k], rows[k]]) for k in rows}
        later = rows["interval"] >= (day + 1) * per_day
        carried = {k: v[later] for k, v in rows.items()}
        today = {k: v[~later] for k, v in rows.items()}
        # sorted by interval, then node (stable: ties keep their order), on the few columns
        key = today["interval"] * trace.machine.nodes + today["node"]
        order = np.argsort(key, kind="stable")
        today = {k: v[order] for k, v in today.items()}
        yield traffic_columns(today, trace.behaviour, xfer)


def node_io_days(trace: Trace) -> Iterator[pa.Table]:
    """``node_io`` one UTC day at a time (sparse: rows only where traffic happened)."""
    for rows in traffic_days(trace):
        yield node_io_table(trace, rows)


def node_io_table(trace: Trace, rows: dict[str, np.ndarray]) -> pa.Table:
    iv = trace.cal.interval_s
    columns = {
        "node": trace.node_names(rows["node"]),
        "cluster": [trace.cluster] * len(rows["node"]),
        "ts": trace.timestamps(rows["interval"] * iv),
        "interval_s": np.full(len(rows["node"]), iv, dtype=np.int32),
        **{c: rows[c] for c in (*TRAFFIC_COLUMNS, "cpu_load", "mem_used_bytes")},
    }
    return _table("node_io", columns)


def topology_table(trace: Trace) -> pa.Table:
    """``topology``: the machine's nodes under the trace's cluster name."""
    rows = trace.machine.topology()
    at = rows.schema.get_field_index("cluster")
    return rows.set_column(at, "cluster", pa.array([trace.cluster] * rows.num_rows, pa.string()))


def truth_table(trace: Trace) -> pa.Table:
    """``synth_truth``; run after :func:`traffic_days` has recounted the exact bytes."""
    jobs, b, apps = trace.jobs, trace.behaviour, trace.apps
    multi = jobs.nnodes > 1
    count = len(jobs)
    columns = {
        "job_id": trace.job_ids(),
        "cluster": [trace.cluster] * count,
        "app_id": jobs.app,
        "user": [user_name(u) for u in apps.user[jobs.app]],
        "job_name": apps.name[jobs.app],
        "nnodes": jobs.nnodes,
        "rank0": pa.array(b.rank0, mask=~multi),
        "uneven": pa.array(b.uneven, mask=~multi),
        "data_intensive": b.data_intensive,
        "low_comm": b.low_comm,
        "optimizable": b.data_intensive & multi & ~b.rank0 & b.low_comm,
        "app_divergent": trace.traits.divergent[jobs.app],
        "io_bytes": trace.io_bytes,
        "comm_bytes": trace.comm_bytes,
        "io_nud": pa.array(b.io_nud, mask=~multi),
        "max_node_share": b.max_node_share,
        "preset": [trace.preset] * count,
        "seed": np.full(count, trace.seed, dtype=np.int64),
        "params": [trace.cal.to_json()] * count,
    }
    return _table("synth_truth", columns)


def _table(name: str, columns: dict) -> pa.Table:
    """Arrow table with the lake schema of ``name``; absent nullable columns become null."""
    schema = spec(name).schema
    rows = len(next(iter(columns.values())))
    arrays = []
    for f in schema:
        value = columns.get(f.name)
        if value is None:
            arrays.append(pa.nulls(rows, f.type))
        elif isinstance(value, pa.Array):
            arrays.append(value.cast(f.type))
        else:
            arrays.append(pa.array(value, type=f.type))
    return pa.Table.from_arrays(arrays, schema=schema)
