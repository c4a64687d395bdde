"""Darshan's view of a job's I/O over time beside node_io's (docs/design.md, "Darshan DXT").

Per Darshan log and interval of the lake's node_io grid (``interval_s`` wide, multiples of it
since the epoch, as node_io's intervals are): the bytes its DXT segments read and wrote. A
segment's bytes are spread over the intervals it overlaps in proportion to its time in each,
as pydarshan's DXT heat map spreads them over its bins; one without duration counts in the
interval of its start. One module per log: DXT_MPIIO traces the same bytes as DXT_POSIX one
layer up, so a log's POSIX segments are summed where it has them, else its MPI-IO ones.

Beside each interval: the bytes node_io saw on the job's allocated nodes in the same interval
(``job_io``'s per-interval traffic, paper 004 §3), for the Slurm job whose raw id the log
carries (``jobs.job_id_raw``, else ``job_id``); null where no Slurm job of the machine matches.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .darshan_job import LOG
from .job_io import JOB

NS = 10**9


def one_module(dxt: DataFrame) -> DataFrame:
    """The segments of each log's summed module: DXT_POSIX where the log has it, else
    DXT_MPIIO."""
    has_posix = dxt.groupBy(LOG).agg(
        F.max((F.col("module") == "DXT_POSIX").cast("int")).alias("_posix")
    )
    chosen = F.when(F.col("_posix") == 1, "DXT_POSIX").otherwise("DXT_MPIIO")
    return dxt.join(has_posix, LOG).where(F.col("module") == chosen).drop("_posix")


def dxt_bins(dxt: DataFrame, interval_s: int) -> DataFrame:
    """(log_id, job_id, module, bin, read_bytes, write_bytes): per log and interval (``bin`` ×
    ``interval_s`` seconds since the epoch), its segments' bytes by time overlap."""
    if interval_s <= 0:
        raise ValueError(f"DXT time series: the interval must be > 0 s, not {interval_s}")
    width = F.lit(interval_s * NS).cast("long")
    start, end = F.col("start_ns"), F.col("end_ns")
    first = F.expr(f"start_ns div {interval_s * NS}")  # integer division: exact in ns
    last = F.when(end > start, F.expr(f"(end_ns - 1) div {interval_s * NS}")).otherwise(first)
    spread = one_module(dxt).withColumn("bin", F.explode(F.sequence(first, last)))
    low = F.col("bin") * width
    overlap = F.least(end, low + width) - F.greatest(start, low)
    moved = F.when(end == start, F.col("length").cast("double")).otherwise(
        F.col("length") * F.greatest(overlap, F.lit(0)).cast("double") / (end - start)
    )
    zero = F.lit(0.0)
    return (
        spread.withColumn("_bytes", moved)
        .groupBy(LOG, "module", "bin")
        .agg(
            F.first("job_id", ignorenulls=True).alias("job_id"),
            F.sum(F.when(F.col("op") == "read", F.col("_bytes")).otherwise(zero)).alias(
                "read_bytes"
            ),
            F.sum(F.when(F.col("op") == "write", F.col("_bytes")).otherwise(zero)).alias(
                "write_bytes"
            ),
        )
    )


def node_view(per_interval: DataFrame, node_bytes: DataFrame, jobs: DataFrame) -> DataFrame:
    """(raw_id, ts, node_io_bytes): node_io's read + write on each measured job's nodes per
    interval, keyed by the id Darshan records (``job_id_raw``, else ``job_id``); ``ts`` null on
    one row per job, so that a job without traffic in an interval still reads 0 there."""
    numbered = node_bytes.select("job_no", *JOB).distinct()
    raw = jobs.select(
        *(F.col(c).alias(f"_{c}") for c in JOB),
        F.coalesce(F.col("job_id_raw"), F.col("job_id")).alias("raw_id"),
    )
    on = numbered["job_id"] == raw["_job_id"]
    for column in JOB[1:]:
        on = on & numbered[column].eqNullSafe(raw[f"_{column}"])
    ids = numbered.join(raw, on).select("job_no", "raw_id")
    traffic = (
        per_interval.join(ids, "job_no")
        .groupBy("raw_id", "ts")
        .agg(F.sum("io").cast("long").alias("node_io_bytes"))
    )
    measured = (
        ids.select("raw_id")
        .distinct()
        .select("raw_id", F.lit(None).cast("timestamp").alias("ts"), F.lit(None).cast("long"))
    )
    return traffic.unionByName(measured.toDF("raw_id", "ts", "node_io_bytes"))


def dxt_job_series(dxt: DataFrame, interval_s: int, node_io_view: DataFrame) -> DataFrame:
    """dxt_job_series: per log and interval, DXT bytes and bytes per second beside node_io's
    (0 where the log's job is measured but its nodes moved nothing; null: no job matches)."""
    bins = dxt_bins(dxt, interval_s)
    ts = F.timestamp_seconds(F.col("bin") * F.lit(interval_s))
    dxt_bytes = F.col("read_bytes") + F.col("write_bytes")
    series = bins.select(
        LOG,
        "job_id",
        "module",
        ts.alias("ts"),
        F.lit(interval_s).cast("int").alias("interval_s"),
        "read_bytes",
        "write_bytes",
        (dxt_bytes / F.lit(float(interval_s))).alias("bytes_per_s"),
    )
    traffic = node_io_view.where(F.col("ts").isNotNull()).withColumnRenamed("ts", "_ts")
    measured = node_io_view.where(F.col("ts").isNull()).select(F.col("raw_id").alias("_job"))
    joined = series.join(
        traffic, (series["job_id"] == traffic["raw_id"]) & (series["ts"] == traffic["_ts"]), "left"
    ).join(measured, F.col("job_id") == F.col("_job"), "left")
    node_bytes = F.when(F.col("_job").isNotNull(), F.coalesce(F.col("node_io_bytes"), F.lit(0)))
    return joined.select(
        *series.columns,
        node_bytes.cast("long").alias("node_io_bytes"),
        (node_bytes / F.lit(float(interval_s))).alias("node_io_bytes_per_s"),
    )


def with_log_clusters(dxt: DataFrame, darshan_jobs: DataFrame) -> DataFrame:
    """``darshan_dxt`` with each null-cluster row given its log's machine (the machine
    :func:`darshan_job.with_clusters` gave the log)."""
    machine_of = darshan_jobs.select(LOG, F.col("cluster").alias("_log_cluster"))
    return (
        dxt.join(machine_of, LOG, "left")
        .withColumn("cluster", F.coalesce(F.col("cluster"), F.col("_log_cluster")))
        .select(*dxt.columns)
    )
