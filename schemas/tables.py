"""Arrow schemas of the lake tables: the one contract between ingest, metrics and replay.

See docs/design.md, 'The lake'.

Every table is declared once here as a :class:`TableSpec`. Writers cast to these schemas, readers
return them, the DuckDB catalog and the Great Expectations suites are derived from them.
Time columns are UTC timestamps (microseconds). Tables with ``partition_by`` set are
hive-partitioned by day (``day=YYYY-MM-DD``) on that timestamp column.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class TableSpec:
    """A lake table: its name, Arrow schema, natural key and partitioning."""

    name: str
    schema: pa.Schema
    key: tuple[str, ...]
    partition_by: str | None = None  # timestamp column whose UTC day names the partition
    doc: str = ""
    nonnegative: tuple[str, ...] = field(default=())  # count/byte columns that must be >= 0
    ordered: tuple[tuple[str, str], ...] = field(default=())  # (earlier, later) time pairs
    node_columns: tuple[str, ...] = field(default=())  # node names that must resolve in topology
    # Rows of another contribution with the same values here are replaced by the one being
    # written (overlapping sacct dumps, re-exported topologies, overlapping exports), unless
    # ``precedence`` or ``follows`` says the row in the lake is the newer.
    replace_key: tuple[str, ...] = field(default=())
    # Which of two rows with one replace_key is newer, by their content: SQL expressions over a
    # row, compared in turn (larger is newer, NULL lowest), then ``as_of`` of the row's
    # contribution (the largest over its rows: a dump's own time), then the contribution id,
    # so every order of landing ends with the same row (burstlake/lake/write.py, _resolve).
    precedence: tuple[str, ...] = field(default=())
    as_of: str | None = None
    # A table whose rows belong to rows of another (job_steps, job_nodes to jobs): they land
    # only with the contribution that holds that table's row of the same replace_key.
    follows: str | None = None
    # Checked by the vectorised Arrow evaluation of its rules instead of GX's pandas engine
    # (burstlake/validate.py): the Darshan tables, millions of DXT rows in one log and
    # thousands of small logs an hour, where GX's start-up and per-batch cost dominate.
    arrow_checks: bool = False


def _schema(*fields: tuple[str, pa.DataType, bool]) -> pa.Schema:
    return pa.schema([pa.field(name, dtype, nullable=nullable) for name, dtype, nullable in fields])


# Slurm's order of a job's states (docs/design.md, "Records win by their content"): a state a
# job can only reach later is the newer record. Unknown or missing states rank lowest.
SLURM_PENDING = ("PENDING", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED_PENDING")
SLURM_ACTIVE = (
    "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "STOPPED", "RESIZING", "SIGNALING",
    "STAGE_OUT", "POWER_UP_NODE", "UPDATE_DB",
)  # fmt: skip
SLURM_TERMINAL = (
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY",
    "BOOT_FAIL", "DEADLINE", "REQUEUED", "REVOKED", "SPECIAL_EXIT",
)  # fmt: skip


def _rank_sql(column: str, *levels: tuple[str, ...]) -> str:
    """SQL: 1 + the index of the level holding ``column``'s value, 0 for none or NULL."""
    cases = " ".join(
        f"WHEN {column} IN ({', '.join(repr(v) for v in level)}) THEN {i}"
        for i, level in enumerate(levels, start=1)
    )
    return f"CASE {cases} ELSE 0 END"


JOB_PRECEDENCE = (_rank_sql("state", SLURM_PENDING, SLURM_ACTIVE, SLURM_TERMINAL), '"end"')
JOB_AS_OF = 'greatest(submit, eligible, start, "end")'  # the latest time a sacct row names

JOBS = TableSpec(
    name="jobs",
    doc="One row per Slurm allocation (heterogeneous components and array tasks are separate).",
    schema=_schema(
        ("job_id", pa.string(), False),  # '123', '123+1' (het component), '123_7' (array task)
        # the scheduler's unique id (JobIDRaw, SLURM_JOB_ID: what Darshan records): differs
        # from job_id for array tasks and het components; null when the input names only JobID
        ("job_id_raw", pa.string(), True),
        ("cluster", pa.string(), True),
        # run of a requeued job (sacct -D): earlier runs 0, 1, ... in start order; null for the
        # job's last run, the one sacct prints without -D (docs/design.md, "Run identity")
        ("run", pa.int32(), True),
        ("job_name", pa.string(), True),
        ("user", pa.string(), True),
        ("uid", pa.int64(), True),
        ("account", pa.string(), True),
        ("partition", pa.string(), True),
        ("submit", TS, True),
        ("eligible", TS, True),
        ("start", TS, True),
        ("end", TS, True),
        ("req_cpus", pa.int64(), True),
        ("alloc_cpus", pa.int64(), True),
        ("nnodes", pa.int64(), True),
        ("nodelist", pa.string(), True),
        ("state", pa.string(), True),
        ("cancelled_by", pa.int64(), True),  # uid from 'CANCELLED by N'
        ("exit_code", pa.string(), True),
    ),
    key=("job_id", "cluster", "run"),
    nonnegative=("uid", "req_cpus", "alloc_cpus", "nnodes", "run"),
    ordered=(("submit", "start"), ("eligible", "start"), ("start", "end")),
    replace_key=("job_id", "cluster", "run"),
    precedence=JOB_PRECEDENCE,
    as_of=JOB_AS_OF,
)

JOB_STEPS = TableSpec(
    name="job_steps",
    doc="One row per Slurm step: 'batch', 'extern', '0', '1', ...",
    schema=_schema(
        ("job_id", pa.string(), False),
        ("cluster", pa.string(), True),
        ("run", pa.int32(), True),  # the run (jobs.run) whose allocation the step ran in
        ("step_id", pa.string(), False),
        ("step_name", pa.string(), True),
        ("start", TS, True),
        ("end", TS, True),
        ("alloc_cpus", pa.int64(), True),
        ("nnodes", pa.int64(), True),
        ("nodelist", pa.string(), True),
        ("state", pa.string(), True),
        ("exit_code", pa.string(), True),
    ),
    key=("job_id", "cluster", "run", "step_id"),
    nonnegative=("alloc_cpus", "nnodes", "run"),
    ordered=(("start", "end"),),
    replace_key=("job_id", "cluster", "run", "step_id"),
    follows="jobs",
)

JOB_NODES = TableSpec(
    name="job_nodes",
    doc="Job × node, node_index = position of the node in the sorted allocation (0-based).",
    schema=_schema(
        ("job_id", pa.string(), False),
        ("cluster", pa.string(), True),
        ("run", pa.int32(), True),  # jobs.run: each run of a requeued job has its own nodes
        ("node", pa.string(), False),
        ("node_index", pa.int32(), False),
    ),
    key=("job_id", "cluster", "run", "node"),
    nonnegative=("node_index", "run"),
    node_columns=("node",),
    replace_key=("job_id", "cluster", "run"),
    follows="jobs",
)

NODE_IO_TRAFFIC = (  # per-interval volumes: a node_io row exists only where one is > 0
    "read_bytes",
    "write_bytes",
    "read_ops",
    "write_ops",
    "osc_read_bytes",
    "osc_write_bytes",
    "net_rx_bytes",
    "net_tx_bytes",
)
NODE_IO_GAUGES = ("cpu_load", "mem_used_bytes")  # levels riding on traffic rows

NODE_IO = TableSpec(
    name="node_io",
    doc="Node × interval traffic, sparse: an absent row means no traffic in that interval.",
    schema=_schema(
        ("node", pa.string(), False),
        ("cluster", pa.string(), True),  # the machine (null: the unnamed one)
        ("ts", TS, False),  # interval start
        ("interval_s", pa.int32(), False),
        ("read_bytes", pa.int64(), True),
        ("write_bytes", pa.int64(), True),
        ("read_ops", pa.int64(), True),
        ("write_ops", pa.int64(), True),
        ("osc_read_bytes", pa.int64(), True),
        ("osc_write_bytes", pa.int64(), True),
        ("net_rx_bytes", pa.int64(), True),
        ("net_tx_bytes", pa.int64(), True),
        ("cpu_load", pa.float64(), True),  # gauge: mean over the interval's samples
        ("mem_used_bytes", pa.int64(), True),  # gauge: last sample in the interval
    ),
    key=("cluster", "node", "ts"),
    partition_by="ts",
    nonnegative=("interval_s", *NODE_IO_TRAFFIC, *NODE_IO_GAUGES),
    node_columns=("node",),
    replace_key=("cluster", "node", "ts"),
)

DARSHAN_JOBS = TableSpec(
    name="darshan_jobs",
    doc="One row per Darshan log.",
    schema=_schema(
        ("log_id", pa.string(), False),
        ("cluster", pa.string(), True),  # the machine; see jobs/metrics/darshan_job.py
        ("job_id", pa.string(), True),
        ("uid", pa.int64(), True),
        ("exe", pa.string(), True),
        ("nprocs", pa.int64(), True),
        ("start", TS, True),
        ("end", TS, True),
        ("run_time", pa.float64(), True),
        ("darshan_version", pa.string(), True),
        ("modules", pa.list_(pa.string()), True),
        ("bytes_read", pa.int64(), True),
        ("bytes_written", pa.int64(), True),
        ("partial", pa.bool_(), False),  # the log says some records were lost (memory limits)
    ),
    key=("log_id",),
    nonnegative=("nprocs", "run_time", "bytes_read", "bytes_written"),
    ordered=(("start", "end"),),
    replace_key=("log_id",),
    arrow_checks=True,
)

DARSHAN_MEASURES = (  # per log × module × rank, summed from the module's Darshan counters
    "bytes_read",
    "bytes_written",
    "reads",
    "writes",
    "opens",
    "read_time",
    "write_time",
    "meta_time",
)

DARSHAN_RANK_IO = TableSpec(
    name="darshan_rank_io",
    doc="Log × module × rank totals; rank -1 holds shared-file records reduced over all ranks.",
    schema=_schema(
        ("log_id", pa.string(), False),
        ("cluster", pa.string(), True),  # the machine; see jobs/metrics/darshan_job.py
        ("job_id", pa.string(), True),
        ("module", pa.string(), False),
        ("rank", pa.int64(), False),
        ("hostname", pa.string(), True),
        ("bytes_read", pa.int64(), True),
        ("bytes_written", pa.int64(), True),
        ("reads", pa.int64(), True),
        ("writes", pa.int64(), True),
        ("opens", pa.int64(), True),
        ("read_time", pa.float64(), True),
        ("write_time", pa.float64(), True),
        ("meta_time", pa.float64(), True),
    ),
    key=("log_id", "module", "rank"),
    nonnegative=DARSHAN_MEASURES,
    replace_key=("log_id",),
    arrow_checks=True,
)

DARSHAN_HEATMAP = TableSpec(
    name="darshan_heatmap",
    doc="Log × module × rank × time bin, from Darshan's HEATMAP module (>= 3.3); sparse: only "
    "bins with traffic. The time-resolved view of each rank's I/O (its I/O phases).",
    schema=_schema(
        ("log_id", pa.string(), False),
        ("cluster", pa.string(), True),  # the machine; see jobs/metrics/darshan_job.py
        ("job_id", pa.string(), True),
        ("module", pa.string(), False),
        ("rank", pa.int64(), False),
        ("ts", TS, False),  # bin start: the log's start + bin index × interval_s
        ("interval_s", pa.float64(), False),  # bin width (Darshan widens bins as a run goes on)
        ("bytes_read", pa.int64(), False),
        ("bytes_written", pa.int64(), False),
    ),
    key=("log_id", "module", "rank", "ts"),
    nonnegative=("interval_s", "bytes_read", "bytes_written"),
    replace_key=("log_id",),
    arrow_checks=True,
)


DARSHAN_DXT = TableSpec(
    name="darshan_dxt",
    doc="One row per DXT segment (Darshan's extended tracing): which rank, on which host, read "
    "or wrote which bytes of which file, and when. Delta keeps timestamps in "
    "microseconds, so start_ns/end_ns keep the nanoseconds: the job's start plus the segment's "
    "relative times.",
    schema=_schema(
        ("log_id", pa.string(), False),
        ("cluster", pa.string(), True),  # the machine; see jobs/metrics/darshan_job.py
        ("job_id", pa.string(), True),
        ("module", pa.string(), False),  # DXT_POSIX, DXT_MPIIO
        ("rank", pa.int64(), False),
        ("hostname", pa.string(), True),  # the host the rank ran on, as the log names it
        ("record_id", pa.int64(), False),  # Darshan's 64-bit record id (darshan_files), signed
        ("op", pa.string(), False),  # read, write
        ("offset", pa.int64(), False),
        ("length", pa.int64(), False),
        ("start", TS, False),  # microseconds (partition day)
        ("end", TS, False),
        ("start_ns", pa.int64(), False),  # nanoseconds since the epoch, UTC
        ("end_ns", pa.int64(), False),
    ),
    key=("log_id", "module", "record_id", "rank", "op", "start_ns", "offset"),
    partition_by="start",
    nonnegative=("offset", "length"),
    ordered=(("start_ns", "end_ns"),),
    replace_key=("log_id",),
    arrow_checks=True,
)

DARSHAN_FILES = TableSpec(
    name="darshan_files",
    doc="One row per name record of a Darshan log: the file (or other object) a record id "
    "stands for, and the mount point and file-system type Darshan found it under.",
    schema=_schema(
        ("log_id", pa.string(), False),
        ("cluster", pa.string(), True),
        ("record_id", pa.int64(), False),  # as in darshan_dxt
        ("path", pa.string(), False),
        ("mount_point", pa.string(), True),  # null: under no mount point the log lists
        ("fs_type", pa.string(), True),
    ),
    key=("log_id", "record_id"),
    replace_key=("log_id",),
    arrow_checks=True,
)


TOPOLOGY = TableSpec(
    name="topology",
    doc="One row per compute node: where it sits and which I/O node (ION) serves it.",
    schema=_schema(
        ("node", pa.string(), False),
        ("cluster", pa.string(), True),  # node names are unique within one machine
        ("cabinet", pa.string(), False),
        ("ion", pa.string(), True),
        ("switch", pa.string(), True),
        ("row", pa.int32(), True),
        ("col", pa.int32(), True),
        ("x", pa.int32(), True),
        ("y", pa.int32(), True),
        ("z", pa.int32(), True),
        ("node_type", pa.string(), True),  # 'compute', 'service', ...
    ),
    key=("cluster", "node"),
    replace_key=("cluster", "node"),
)

ZABBIX_SAMPLES = TableSpec(
    name="zabbix_samples",
    doc="Ingest state, not for analysis: the usable samples of every Zabbix file, so that the "
    "files of one export (one per history syncer, rotated to .old) are read as one stream per "
    "item and a later file continues the series of an earlier one (jobs/ingest/zabbix/stream.py).",
    schema=_schema(
        ("node", pa.string(), False),
        ("cluster", pa.string(), True),  # a series is one cluster x node x item
        ("item", pa.string(), False),  # itemid, or 'name:<item name>' without one
        ("metric", pa.string(), False),
        ("kind", pa.string(), False),  # counter, rate, gauge
        ("ts", TS, False),  # sample time (partition day); t_ns is exact
        ("t_ns", pa.int64(), False),
        ("value", pa.decimal128(38, 6), False),
        ("bucket", pa.int32(), False),  # node bucket of the node_io contribution it feeds
        ("source_id", pa.string(), False),  # the file's contribution
        ("file", pa.string(), False),
        ("line_no", pa.int64(), False),
        ("seq", pa.int64(), False),  # ingest order: of two files' samples at one instant the
        # earlier-ingested counts, as the earlier line of a concatenation would
    ),
    key=("source_id", "line_no"),
    partition_by="ts",
)

QUARANTINE = TableSpec(
    name="quarantine",
    doc="Rejected input: what, where and why. Rows in = rows landed + rows quarantined.",
    schema=_schema(
        ("source", pa.string(), False),
        ("file", pa.string(), False),
        ("location", pa.string(), False),  # 'line 12', 'byte 4096', 'record rank=3 module=POSIX'
        ("raw", pa.string(), True),
        ("reason", pa.string(), False),
        ("ingested_at", TS, False),
    ),
    key=("source", "file", "location"),
)

TRAFFIC_BALANCE = pa.list_(
    pa.struct(
        [
            ("metric", pa.string()),
            ("seen", pa.int64()),
            ("landed", pa.int64()),
            ("quarantined", pa.int64()),
            ("gap", pa.int64()),
            ("reset", pa.int64()),
        ]
    )
)

INGEST_LOG = TableSpec(
    name="ingest_log",
    doc="One row per ingested file: its content id and its row accounting (docs/design.md, "
    "'The lake').",
    schema=_schema(
        ("source", pa.string(), False),
        ("file", pa.string(), False),
        ("source_id", pa.string(), False),
        ("bytes", pa.int64(), False),
        ("records_in", pa.int64(), False),
        ("landed", pa.int64(), False),
        ("quarantined", pa.int64(), False),
        # records the lake already held newer content for (an older dump ingested later):
        # records_in = landed + quarantined + stale; null in lakes written before it existed
        ("stale", pa.int64(), True),
        # Byte accounting per traffic metric (Zabbix, Darshan): seen in the input = landed +
        # quarantined (its record failed) + gap (not attributable to an interval) + reset
        # (counted since a counter reset); null for sources without traffic.
        ("traffic", TRAFFIC_BALANCE, True),
        ("ingested_at", TS, False),
    ),
    key=("source_id",),
    nonnegative=("bytes", "records_in", "landed", "quarantined", "stale"),
)

RAW_TABLES: tuple[TableSpec, ...] = (
    JOBS,
    JOB_STEPS,
    JOB_NODES,
    NODE_IO,
    DARSHAN_JOBS,
    DARSHAN_RANK_IO,
    DARSHAN_HEATMAP,
    DARSHAN_DXT,
    DARSHAN_FILES,
    TOPOLOGY,
    ZABBIX_SAMPLES,
    QUARANTINE,
    INGEST_LOG,
)

TABLES = RAW_TABLES
