"""Per-job I/O and node distribution (paper 004 §3.2, §3.3, §6.2).

A job's bytes are node_io read + write on its allocated nodes while it runs. An interval
belongs to a job when its midpoint ``ts + interval_s / 2`` lies in ``[start, end)``: nodes are
allocated exclusively (004 §2.4), so each node-interval goes to at most one job, and an interval
cut by a job's start or end goes to whichever side holds most of it. Allocated nodes without
node_io rows count as zero (node_io is sparse). Only jobs that ran (start < end) and have
job_nodes rows are measured; nodes missing from topology count for the I/O distribution but
not for the cabinets.

Communication bytes are network bytes (rx + tx) minus Lustre bytes (read + write), floored at
zero, because Lustre traffic crosses the same interconnect; null when no network counter was
monitored, and then the job is not counted as low-communication nor optimizable.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from .nud import distribution, distribution_metrics, nud, ordered_sum, share, xlogx_sum
from .settings import MetricSettings

logger = logging.getLogger(__name__)

JOB = ["job_id", "cluster", "run"]  # a run of a requeued job is a job (docs/design.md)
JOB_INFO = [*JOB, "user", "job_name", "start", "end"]
RANK_BUCKETS = 64  # hash buckets of job ids that :func:`allocations` numbers in parallel


def epoch_s(column: str) -> Column:
    """A timestamp column as seconds since the epoch (double)."""
    return F.unix_micros(F.col(column)) / F.lit(1e6)


def join_on_job(left: DataFrame, right: DataFrame) -> DataFrame:
    """Join on (job_id, cluster, run), cluster and run compared null-safely (the last run of a
    job, and every job of a lake older than the run column, has a null run); keeps the left's
    key columns."""
    for column in JOB:
        right = right.withColumnRenamed(column, f"_{column}")
    on = left["job_id"] == right["_job_id"]
    for column in JOB[1:]:
        on = on & left[column].eqNullSafe(right[f"_{column}"])
    return left.join(right, on).drop(*(f"_{column}" for column in JOB))


def allocations(jobs: DataFrame, job_nodes: DataFrame, topology: DataFrame) -> DataFrame:
    """Job × node rows of the jobs that ran (start < end), with the run in epoch seconds, the
    node's cabinet and two numbers that stand for the keys in the node_io-sized steps: ``slot``
    for the job × node row and ``job_no`` for the job. Grouping and sorting by one integer
    instead of (job_id, cluster, run[, node]) costs less (docs/design.md, "Metrics"). They are
    ranks in (job, node) order within a bucket of the job id's hash, the bucket
    in the high bits: distinct, the same in every run, and ranked in parallel (a window over all
    rows would sort them in one task)."""
    ran = jobs.where(F.col("start").isNotNull() & (F.col("end") > F.col("start")))
    alloc = join_on_job(
        job_nodes.select(*JOB, "node", "node_index").dropDuplicates([*JOB, "node"]),
        ran.select(*JOB_INFO),
    )
    cabinets = F.broadcast(topology.select("node", "cabinet"))
    bucket = F.pmod(F.xxhash64("job_id"), F.lit(RANK_BUCKETS))
    in_bucket = Window.partitionBy("_bucket")
    high = F.col("_bucket") * F.lit(1 << 40)
    numbered = alloc.join(cabinets, "node", "left").withColumn("_bucket", bucket)
    return numbered.select(
        *JOB_INFO,
        "node",
        "node_index",
        "cabinet",
        epoch_s("start").alias("start_s"),
        epoch_s("end").alias("end_s"),
        (high + F.row_number().over(in_bucket.orderBy(*JOB, "node"))).alias("slot"),
        (high + F.dense_rank().over(in_bucket.orderBy(*JOB))).alias("job_no"),
    )


def node_traffic(node_io: DataFrame) -> DataFrame:
    """node_io as (node, ts, interval_s, mid_s, read, write, io, net), unmonitored I/O as 0."""
    read = F.coalesce(F.col("read_bytes"), F.lit(0))
    write = F.coalesce(F.col("write_bytes"), F.lit(0))
    rx, tx = F.col("net_rx_bytes"), F.col("net_tx_bytes")
    net = F.when(rx.isNull() & tx.isNull(), F.lit(None)).otherwise(
        F.coalesce(rx, F.lit(0)) + F.coalesce(tx, F.lit(0))
    )
    return node_io.select(
        "node",
        "ts",
        "interval_s",
        (epoch_s("ts") + F.col("interval_s") / 2).alias("mid_s"),
        read.alias("read"),
        write.alias("write"),
        (read + write).alias("io"),
        net.alias("net"),
    )


def bucket_rows(alloc: DataFrame, bucket_s: int) -> int:
    """How many (allocation, time bucket) rows :func:`job_intervals` builds from ``alloc``."""
    bucket = F.lit(bucket_s)
    span = F.floor(F.col("end_s") / bucket) - F.floor(F.col("start_s") / bucket) + 1
    return int(alloc.select(F.sum(span)).first()[0] or 0)


def job_intervals(
    alloc: DataFrame, traffic: DataFrame, bucket_s: int, broadcast: bool = True
) -> DataFrame:
    """The node_io rows whose midpoint is in the run of an allocation of their node, tagged with
    the allocation: (slot, job_no, ts, interval_s, read, write, io, net).

    The range join runs as an equi-join on (node, time bucket): each allocation is exploded
    over the buckets its run touches. With ``broadcast`` these rows (a day's buckets: 1.05 M for
    the Tianhe-1A month, against 16.8 M node_io rows) go to every task, so node_io is joined
    where it is read, neither shuffled nor sorted (docs/design.md, "Metrics");
    without it both sides are shuffled by (node, bucket), as a lake of many months needs.
    """
    bucket = F.lit(bucket_s)
    first, last = F.floor(F.col("start_s") / bucket), F.floor(F.col("end_s") / bucket)
    exploded = alloc.select("slot", "job_no", "node", "start_s", "end_s").withColumn(
        "bucket", F.explode(F.sequence(first, last))
    )
    if broadcast:
        exploded = F.broadcast(exploded)
    rows = traffic.withColumn("bucket", F.floor(F.col("mid_s") / bucket)).alias("io")
    inside = (
        (exploded["node"] == rows["node"])
        & (exploded["bucket"] == rows["bucket"])
        & (rows["mid_s"] >= exploded["start_s"])
        & (rows["mid_s"] < exploded["end_s"])
    )
    return exploded.join(rows, inside).select(
        exploded["slot"],
        exploded["job_no"],
        *[rows[c] for c in ("ts", "interval_s", "read", "write", "io", "net")],
    )


def job_node_bytes(alloc: DataFrame, joined: DataFrame) -> DataFrame:
    """Per job × allocated node: read, write, io and network bytes (zero for silent nodes)."""
    zero = F.lit(0)
    per_node = joined.groupBy("slot").agg(
        F.sum("read").alias("read_bytes"),
        F.sum("write").alias("write_bytes"),
        F.sum("io").alias("io_bytes"),
        F.sum("net").alias("net_bytes"),
    )
    return alloc.join(per_node, "slot", "left").select(
        *JOB_INFO,
        "job_no",
        "node",
        "node_index",
        "cabinet",
        "start_s",
        "end_s",
        *[F.coalesce(F.col(c), zero).alias(c) for c in ("read_bytes", "write_bytes", "io_bytes")],
        "net_bytes",
    )


def job_interval_traffic(joined: DataFrame) -> DataFrame:
    """Per job (``job_no``) and interval with node_io rows: the bytes its nodes moved (read,
    write, io) and how many of them moved any."""
    return joined.groupBy("job_no", "ts").agg(
        F.sum("io").alias("io"),
        F.sum("read").alias("read"),
        F.sum("write").alias("write"),
        F.count(F.when(F.col("io") > 0, 1)).alias("active_nodes"),
        F.max("interval_s").alias("interval_s"),
    )


def in_io_phase(settings: MetricSettings) -> Column:
    """A job's interval is in an I/O phase when its nodes move at least the I/O-phase rate."""
    rate = F.col("interval_s") * F.lit(settings.io_phase_bytes_per_s)
    return (F.col("io") >= rate) & (F.col("io") > 0)


def io_phases(per_interval: DataFrame, settings: MetricSettings) -> DataFrame:
    """Per job: seconds of its run in intervals where its nodes move at least the I/O-phase
    rate (temporal burstiness, 004 §1)."""
    return per_interval.groupBy("job_no").agg(
        F.sum(F.when(in_io_phase(settings), F.col("interval_s")).otherwise(0))
        .cast("double")
        .alias("io_phase_s")
    )


def per_job(node_bytes: DataFrame) -> DataFrame:
    """Roll job × node rows up to jobs via job × cabinet: the I/O distribution over nodes and
    the node distribution over cabinets in one pass."""
    by_cabinet = node_bytes.groupBy("job_no", *JOB_INFO, "start_s", "end_s", "cabinet").agg(
        F.count(F.lit(1)).alias("cabinet_nodes"),
        F.sum("read_bytes").alias("read_bytes"),
        F.sum("write_bytes").alias("write_bytes"),
        *distribution(F.col("io_bytes"), "io"),
        F.sum("net_bytes").alias("net_bytes"),
    )
    known = F.col("cabinet").isNotNull()
    cabinet_nodes = F.when(known, F.col("cabinet_nodes").cast("double"))
    return by_cabinet.groupBy("job_no", *JOB_INFO, "start_s", "end_s").agg(
        F.sum("cabinet_nodes").alias("nodes"),
        F.sum("io_active").alias("active_nodes"),
        F.sum("read_bytes").alias("read_bytes"),
        F.sum("write_bytes").alias("write_bytes"),
        F.sum("io_total").alias("io_total"),
        ordered_sum(F.col("io_xlogx")).alias("io_xlogx"),
        F.max("io_max").alias("io_max"),
        F.sum("net_bytes").alias("net_bytes"),
        F.count(F.when(known, 1)).alias("cabinets"),
        F.sum(cabinet_nodes).alias("cab_total"),
        xlogx_sum(cabinet_nodes).alias("cab_xlogx"),
    )


@dataclass(frozen=True)
class JobIO:
    """The job_io_metrics rows, the job × node bytes behind them (for app divergence) and the
    job × interval traffic of the intervals in an I/O phase (for the io_phases table), the
    latter keyed by ``job_no`` (:func:`allocations`), which ``node_bytes`` carries too."""

    metrics: DataFrame
    node_bytes: DataFrame
    per_interval: DataFrame  # job × interval traffic in I/O phases (:func:`in_io_phase`)


def characteristics(
    jobs: DataFrame, nodes_per_cabinet: int | None, settings: MetricSettings
) -> DataFrame:
    """The job_io_metrics columns from the per-job aggregates (004 §3.2, §3.3, §6.2)."""
    nodes, io = F.col("nodes"), F.col("io_bytes")
    io_nud, max_share = distribution_metrics("io", nodes)
    rank0 = F.when(max_share.isNotNull() & (nodes > 1), max_share > settings.rank0_share)
    comm = F.when(F.col("net_bytes").isNotNull(), F.greatest(F.col("net_bytes") - io, F.lit(0)))
    low_comm = F.when(F.col("net_bytes").isNotNull(), io > F.col("comm_bytes"))
    data_intensive = io > F.lit(settings.data_intensive_bytes)
    run_s = F.col("end_s") - F.col("start_s")
    cabinet_nud = nud(F.col("cab_total"), F.col("cab_xlogx"), F.col("cabinets"))
    app_id = F.concat_ws(
        "|", F.coalesce("user", F.lit("")), F.coalesce("job_name", F.lit("")), nodes
    )
    return (
        jobs.withColumn("io_bytes", F.col("io_total").cast("long"))
        .withColumn("io_nud", io_nud)
        .withColumn("max_node_share", max_share)
        .withColumn("rank0", rank0)
        .withColumn("all_rank", F.coalesce(~F.col("rank0"), F.lit(False)))
        .withColumn("uneven_io", F.col("io_nud") > settings.uneven_nud)
        .withColumn("min_cabinets", F.ceil(nodes / F.lit(nodes_per_cabinet)).cast("long"))
        .withColumn("in_min_cabinets", F.col("cabinets") == F.col("min_cabinets"))
        .withColumn("cabinet_nud", cabinet_nud)
        .withColumn("uneven_nodes", F.col("cabinet_nud") > settings.uneven_nud)
        .withColumn("comm_bytes", comm.cast("long"))
        .withColumn("low_comm", low_comm)
        .withColumn("data_intensive", data_intensive)
        .withColumn(
            "optimizable",
            data_intensive & F.col("all_rank") & F.coalesce(F.col("low_comm"), F.lit(False)),
        )
        .withColumn("run_s", run_s)
        .withColumn("io_phase_s", F.coalesce(F.col("io_phase_s"), F.lit(0.0)))
        .withColumn("io_phase_fraction", F.least(F.lit(1.0), share(F.col("io_phase_s"), run_s)))
        .withColumn("app_id", app_id)
    )


def job_io_metrics(
    jobs: DataFrame,
    job_nodes: DataFrame,
    node_io: DataFrame,
    topology: DataFrame,
    nodes_per_cabinet: int | None,
    settings: MetricSettings,
    keep: Callable[[DataFrame], DataFrame] = lambda frame: frame,
) -> JobIO:
    """job_io_metrics: I/O distribution (004 §3.2), node distribution (§3.3), traits (§6.2).
    Both roll-ups (job × node, job × interval) run the range join where they read node_io
    (broadcast up to ``broadcast_rows``): cheaper than writing its node_io-sized result once
    and reading it back twice. The allocations, which the count of bucket rows, both joins
    and the job × node roll-up read, are computed once if ``keep`` persists them."""
    alloc = keep(allocations(jobs, job_nodes, topology))
    traffic = node_traffic(node_io)
    rows = bucket_rows(alloc, settings.time_bucket_s)
    broadcast = rows <= settings.broadcast_rows
    logger.info(
        "range join: %d allocation-bucket rows, %s", rows, "broadcast" if broadcast else "shuffled"
    )
    joined = job_intervals(alloc, traffic, settings.time_bucket_s, broadcast)
    node_bytes = job_node_bytes(alloc, joined)
    # only the intervals in an I/O phase count for io_phase_s and the io_phases table: the
    # kept frame holds those, not every job × interval with traffic (node_io-sized)
    per_interval = job_interval_traffic(joined).where(in_io_phase(settings))
    jobs_io = per_job(node_bytes).join(io_phases(per_interval, settings), "job_no", "left")
    return JobIO(characteristics(jobs_io, nodes_per_cabinet, settings), node_bytes, per_interval)
