"""I/O distribution of a Darshan log over its ranks and hosts (paper 004 §3.2).

Bytes are read + written in the modules that reach the file system (``darshan_modules``,
POSIX, STDIO and DAOS by default: MPI-IO, HDF5 and PnetCDF sit above them and would count the
same bytes twice). The rank distribution has n = nprocs values (ranks without records count 0).
Rank -1 records are files shared by all ranks, reduced by Darshan at shutdown: how their bytes
were split over the ranks is lost, so they are not attributed to any rank. They are reported
as ``shared_bytes`` / ``shared_share``; the distribution describes the per-rank records only.
The host distribution (where DXT records name each rank's host) is over the distinct hosts.

A log names no machine. It belongs to the ``cluster`` it was ingested with (``--cluster``);
a log ingested without one joins the one job whose raw id (``jobs.job_id_raw``, else
``job_id``: the ``SLURM_JOB_ID`` Darshan records) it carries, when exactly one machine of the
lake has a job of that id; otherwise it stays with the unnamed machine (:func:`with_clusters`,
docs/design.md, "Several machines in one lake").
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .nud import distribution, distribution_metrics, share
from .settings import MetricSettings

LOG = "log_id"


def log_bytes(rank_io: DataFrame, settings: MetricSettings) -> DataFrame:
    """(log_id, rank, hostname, bytes) of the file-system-level modules."""
    moved = F.coalesce(F.col("bytes_read"), F.lit(0)) + F.coalesce(F.col("bytes_written"), F.lit(0))
    return rank_io.where(F.col("module").isin(*settings.darshan_modules)).select(
        LOG, "rank", "hostname", moved.alias("bytes")
    )


def over(moved: DataFrame, item: str, prefix: str) -> DataFrame:
    """Per log: the distribution aggregates of its bytes over ``item`` (rank or hostname)."""
    per_item = moved.groupBy(LOG, item).agg(F.sum("bytes").alias("bytes"))
    return per_item.groupBy(LOG).agg(*distribution(F.col("bytes"), prefix))


def darshan_job_metrics(
    darshan_jobs: DataFrame, rank_io: DataFrame, settings: MetricSettings
) -> DataFrame:
    """darshan_job_metrics: per log, rank and host distributions and the shared bytes."""
    moved = log_bytes(rank_io, settings)
    ranks = over(moved.where(F.col("rank") >= 0), "rank", "rank")
    hosts = over(
        moved.where((F.col("rank") >= 0) & F.col("hostname").isNotNull()), "hostname", "host"
    )
    shared = moved.where(F.col("rank") == -1).groupBy(LOG).agg(F.sum("bytes").alias("shared_bytes"))
    nprocs = F.coalesce(F.col("nprocs"), F.col("rank_items"))
    rank_nud, max_rank_share = distribution_metrics("rank", nprocs)
    host_nud, max_host_share = distribution_metrics("host", F.col("host_items"))
    zero = F.lit(0).cast("long")
    rank_bytes = F.coalesce(F.col("rank_total"), zero).cast("long")
    shared_bytes = F.coalesce(F.col("shared_bytes"), zero)
    return (
        darshan_jobs.select(LOG, "job_id", "nprocs")
        .join(ranks, LOG, "left")
        .join(hosts, LOG, "left")
        .join(shared, LOG, "left")
        .select(
            LOG,
            "job_id",
            "nprocs",
            F.coalesce(F.col("rank_active"), zero).alias("ranks_with_io"),
            rank_bytes.alias("rank_bytes"),
            shared_bytes.alias("shared_bytes"),
            share(shared_bytes, rank_bytes + shared_bytes).alias("shared_share"),
            rank_nud.alias("rank_nud"),
            max_rank_share.alias("max_rank_share"),
            F.when(nprocs > 1, max_rank_share > settings.rank0_share).alias("rank0"),
            (rank_nud > settings.uneven_nud).alias("uneven_io"),
            F.coalesce(F.col("host_items"), zero).alias("hosts"),
            host_nud.alias("host_nud"),
            max_host_share.alias("max_host_share"),
        )
    )


def with_clusters(
    darshan_jobs: DataFrame, rank_io: DataFrame, jobs: DataFrame
) -> tuple[DataFrame, DataFrame]:
    """``darshan_jobs`` and ``darshan_rank_io`` with each null-cluster log given the machine of
    its job when exactly one machine has a job of its raw id (module doc)."""
    raw = F.coalesce(F.col("job_id_raw"), F.col("job_id"))
    owners = (
        jobs.select(raw.alias("_raw"), F.col("cluster").alias("_owner"))
        .distinct()
        .groupBy("_raw")
        .agg(F.count(F.lit(1)).alias("_machines"), F.first("_owner").alias("_owner"))
        .where(F.col("_machines") == 1)
    )
    resolved = (
        darshan_jobs.join(owners, darshan_jobs["job_id"] == owners["_raw"], "left")
        .withColumn("cluster", F.coalesce(F.col("cluster"), F.col("_owner")))
        .select(*darshan_jobs.columns)
    )
    machine_of = resolved.select(LOG, F.col("cluster").alias("_log_cluster"))
    rank_io = (
        rank_io.join(machine_of, LOG, "left")
        .withColumn("cluster", F.coalesce(F.col("cluster"), F.col("_log_cluster")))
        .select(*rank_io.columns)
    )
    return resolved, rank_io
