"""Arrow schemas of the metrics tables (paper 004 §3, §4, §6; docs/design.md, "Metrics"):
written by the Spark jobs in jobs/metrics, which read the lake tables named in :data:`INPUTS`.

Every table carries ``cluster``: the machine its rows were computed on, each machine alone, as
if it were the only one in the lake (null: the unnamed machine; docs/design.md, "Several
machines in one lake").

Shares and NUDs are fractions in [0, 1]. A null NUD or flag means "undefined": a single-node
job, a job without traffic, a job whose nodes sit in one cabinet (paper 004 §3.1, Def. 2).
"""

from __future__ import annotations

import pyarrow as pa

from .tables import TS, TableSpec, _schema

I64, F64, STR, BOOL = pa.int64(), pa.float64(), pa.string(), pa.bool_()

JOB_IO_METRICS = TableSpec(
    name="job_io_metrics",
    doc="Per job: I/O distribution over its nodes, node distribution over cabinets, and the "
    "characteristics of 004 §3.2, §3.3, §6.2.",
    schema=_schema(
        ("job_id", STR, False),
        ("cluster", STR, True),
        ("run", pa.int32(), True),  # jobs.run: each run of a requeued job is measured apart
        ("user", STR, True),
        ("job_name", STR, True),
        ("app_id", STR, False),  # user|job_name|nodes: the application of 004 §6.1
        ("start", TS, False),
        ("end", TS, False),
        ("run_s", F64, False),
        ("nodes", I64, False),  # allocated nodes (job_nodes rows)
        ("active_nodes", I64, False),  # nodes that moved any byte
        ("read_bytes", I64, False),
        ("write_bytes", I64, False),
        ("io_bytes", I64, False),
        ("io_nud", F64, True),
        ("max_node_share", F64, True),
        ("rank0", BOOL, True),  # max_node_share > rank0_share (004 §3.2.1)
        ("all_rank", BOOL, False),  # multi-node, with traffic, not rank 0 (004 §3.2.2)
        ("uneven_io", BOOL, True),  # io_nud > uneven_nud
        ("cabinets", I64, False),
        ("min_cabinets", I64, True),  # ceil(nodes / nodes per cabinet); null: no topology
        ("in_min_cabinets", BOOL, True),  # (004 §3.3.1)
        ("cabinet_nud", F64, True),  # NUD of the nodes over the cabinets spanned (004 §3.3.2)
        ("uneven_nodes", BOOL, True),
        ("comm_bytes", I64, True),  # network bytes minus Lustre bytes; null if not monitored
        ("low_comm", BOOL, True),  # io_bytes > comm_bytes (004 §6.2)
        ("data_intensive", BOOL, False),  # io_bytes > data_intensive_bytes (004 §6.2)
        ("optimizable", BOOL, False),  # data-intensive, all-rank and low-communication
        ("io_phase_s", F64, False),  # seconds of the run in I/O phases
        ("io_phase_fraction", F64, True),
    ),
    key=("job_id", "cluster", "run"),
    nonnegative=("run_s", "nodes", "active_nodes", "io_bytes", "cabinets", "comm_bytes"),
    ordered=(("start", "end"),),
)

IO_PHASES = TableSpec(
    name="io_phases",
    doc="Per job, its I/O phases detected from node_io: runs of intervals at the I/O-phase rate "
    "merged across gaps shorter than io_phase_gap_s (paper 001's unit of coordination).",
    schema=_schema(
        ("job_id", STR, False),
        ("cluster", STR, True),
        ("run", pa.int32(), True),  # jobs.run
        ("phase", I64, False),  # 0, 1, ... in time order within the job
        ("start", TS, False),
        ("end", TS, False),  # end of the phase's last interval
        ("duration_s", F64, False),  # end - start: the phase's I/O time as it ran
        ("nodes", I64, False),  # N: the job's allocated nodes
        ("active_nodes", I64, False),  # most nodes moving bytes in one of its intervals
        ("read_bytes", I64, False),
        ("write_bytes", I64, False),
        ("bytes", I64, False),
        ("bytes_per_node", F64, False),  # bytes / nodes
        ("intervals", I64, False),  # intervals at the I/O-phase rate in it
    ),
    key=("job_id", "cluster", "run", "phase"),
    nonnegative=("duration_s", "nodes", "active_nodes", "read_bytes", "write_bytes", "bytes"),
    ordered=(("start", "end"),),
)

DARSHAN_JOB_METRICS = TableSpec(
    name="darshan_job_metrics",
    doc="Per Darshan log: I/O distribution over ranks and, where DXT names them, over hosts. "
    "Shared (rank -1) bytes cannot be attributed to ranks and are reported apart.",
    schema=_schema(
        ("log_id", STR, False),
        ("cluster", STR, True),
        ("job_id", STR, True),
        ("nprocs", I64, True),
        ("ranks_with_io", I64, False),
        ("rank_bytes", I64, False),  # bytes in per-rank records
        ("shared_bytes", I64, False),  # bytes in rank -1 (shared, reduced) records
        ("shared_share", F64, True),
        ("rank_nud", F64, True),
        ("max_rank_share", F64, True),
        ("rank0", BOOL, True),
        ("uneven_io", BOOL, True),
        ("hosts", I64, False),  # distinct DXT hostnames
        ("host_nud", F64, True),
        ("max_host_share", F64, True),
    ),
    key=("log_id",),
    nonnegative=("nprocs", "ranks_with_io", "rank_bytes", "shared_bytes", "hosts"),
)

DXT_JOB_SERIES = TableSpec(
    name="dxt_job_series",
    doc="Per Darshan log and node_io interval: the bytes its DXT segments read and wrote (one "
    "module, spread by time overlap) and bytes per second, beside node_io's bytes on the job's "
    "nodes in the same interval (0: they moved nothing; null: no Slurm job of the machine "
    "matches the log).",
    schema=_schema(
        ("log_id", STR, False),
        ("cluster", STR, True),
        ("job_id", STR, True),  # the id Darshan records (jobs.job_id_raw, else job_id)
        ("module", STR, False),  # DXT_POSIX, else DXT_MPIIO
        ("ts", TS, False),  # interval start: a multiple of interval_s since the epoch
        ("interval_s", pa.int32(), False),  # node_io's interval
        ("read_bytes", F64, False),  # fractional: a segment's bytes split by time overlap
        ("write_bytes", F64, False),
        ("bytes_per_s", F64, False),
        ("node_io_bytes", I64, True),
        ("node_io_bytes_per_s", F64, True),
    ),
    key=("cluster", "log_id", "ts"),
    nonnegative=("interval_s", "read_bytes", "write_bytes", "bytes_per_s", "node_io_bytes"),
)

INTERVAL_METRICS = TableSpec(
    name="interval_metrics",
    doc="Per interval with traffic: system bytes and the spatial burstiness of 004 §4.1, §7.4, "
    "§7.5 (top-k shares of nodes, cabinets, IONs; IONs serving the busiest nodes).",
    schema=_schema(
        ("ts", TS, False),
        ("cluster", STR, True),
        ("interval_s", pa.int32(), False),
        ("system_bytes", I64, False),
        ("active_nodes", I64, False),
        ("top_node_share", F64, True),
        ("top_cabinet_share", F64, True),
        ("top_ion_share", F64, True),
        ("top_node_ions", I64, False),  # distinct IONs serving the busiest nodes
    ),
    key=("cluster", "ts"),
    nonnegative=("interval_s", "system_bytes", "active_nodes", "top_node_ions"),
)


def _load(level: str) -> TableSpec:
    return TableSpec(
        name=f"{level}_load",
        doc=f"Total traffic per {level} over the whole trace (004 Fig. 7).",
        schema=_schema(
            (level, STR, False),
            ("cluster", STR, True),
            ("nodes", I64, False),
            ("read_bytes", I64, False),
            ("write_bytes", I64, False),
            ("io_bytes", I64, False),
            ("share", F64, True),
            ("active_intervals", I64, False),
            ("peak_bytes", I64, False),  # its busiest interval
        ),
        key=("cluster", level),
        nonnegative=("nodes", "io_bytes", "active_intervals", "peak_bytes"),
    )


CABINET_LOAD = _load("cabinet")
ION_LOAD = _load("ion")

APP_METRICS = TableSpec(
    name="app_metrics",
    doc="Per multi-node application (same user, job name, node count) with more than "
    "min_app_jobs jobs: consistency degrees (004 Def. 3) and divergence (Def. 4).",
    schema=_schema(
        ("app_id", STR, False),
        ("cluster", STR, True),
        ("user", STR, True),
        ("job_name", STR, True),
        ("nodes", I64, False),
        ("jobs", I64, False),
        ("consistency_data_intensive", F64, True),
        ("consistency_all_rank", F64, True),
        ("consistency_low_comm", F64, True),
        ("divergence", F64, True),  # over jobs with traffic; null with fewer than two
        ("consistent_distribution", BOOL, True),
    ),
    key=("cluster", "app_id"),
    nonnegative=("nodes", "jobs", "divergence"),
)

PLATFORM_SUMMARY = TableSpec(
    name="platform_summary",
    doc="The lake's headline figures (004 §3, §4.1, §6.2, Table 3) beside the paper's values.",
    schema=_schema(
        ("figure", STR, False),
        ("cluster", STR, True),
        ("section", STR, False),  # where in paper 004 the figure is defined
        ("description", STR, False),
        ("value", F64, True),
        ("tianhe1a", F64, True),  # the paper's value on Tianhe-1A, if it gives one
        ("cs19", F64, True),
        ("unit", STR, False),  # 'fraction', 'ratio', 'count'
        ("basis", I64, False),  # how many jobs, intervals or applications it is over
    ),
    key=("cluster", "figure"),
    nonnegative=("basis",),
)

TABLES: tuple[TableSpec, ...] = (
    JOB_IO_METRICS,
    IO_PHASES,
    DARSHAN_JOB_METRICS,
    DXT_JOB_SERIES,
    INTERVAL_METRICS,
    CABINET_LOAD,
    ION_LOAD,
    APP_METRICS,
    PLATFORM_SUMMARY,
)

NAMES: tuple[str, ...] = tuple(spec.name for spec in TABLES)
"""The metrics tables in dependency order: what ``burstlake metrics`` writes."""

INPUTS: tuple[str, ...] = (
    "jobs",
    "job_nodes",
    "node_io",
    "topology",
    "darshan_jobs",
    "darshan_rank_io",
    "darshan_dxt",
)
"""The lake tables the metrics read: the metrics DAG runs when any of them changes."""
