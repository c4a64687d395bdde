"""Applications: consistency and divergence of their jobs (paper 004 §6.1, §6.3, Defs. 3-4).

An application is the jobs with the same user, job name and node count (``app_id``). Only
multi-node applications with more than ``min_app_jobs`` jobs are measured, as in Figs. 10-11.
A characteristic's consistency degree is max(p, 1 - p) over the jobs where it is known.
Divergence is the mean Euclidean distance over all pairs of the jobs' per-node traffic-share
vectors ordered by node_index; jobs without traffic have no share vector and are left out.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .divergence import divergences
from .settings import MetricSettings

CHARACTERISTICS = ("data_intensive", "all_rank", "low_comm")


def consistency(flag: str) -> Column:
    """Def. 3: max(p, 1 - p), p the share of jobs (with the flag known) that have it."""
    p = F.avg(F.col(flag).cast("double"))
    return F.greatest(p, F.lit(1.0) - p).alias(f"consistency_{flag}")


def share_vectors(node_bytes: DataFrame, app_jobs: DataFrame) -> DataFrame:
    """Per job with traffic: (app_id, shares), shares ordered by node_index."""
    per_job = node_bytes.groupBy("job_no").agg(
        F.array_sort(F.collect_list(F.struct("node_index", "io_bytes"))).alias("items"),
        F.sum("io_bytes").alias("total"),
    )
    total = F.col("total")
    return (
        per_job.where(total > 0)
        .join(app_jobs.select("job_no", "app_id"), "job_no")
        .select(
            "app_id", F.transform("items", lambda item: item["io_bytes"] / total).alias("shares")
        )
    )


def app_metrics(job_io: DataFrame, node_bytes: DataFrame, settings: MetricSettings) -> DataFrame:
    """app_metrics: consistency (004 Def. 3) and divergence (Def. 4) per application (§6.1).
    The share vectors of the measured applications' jobs are collected (one per job) and
    their pairs measured on the driver (:func:`.divergence.divergences`)."""
    multi_node = job_io.where(F.col("nodes") > 1)
    apps = (
        multi_node.groupBy("app_id")
        .agg(
            *[F.first(c).alias(c) for c in ("user", "job_name", "nodes")],
            F.count(F.lit(1)).alias("jobs"),
            *[consistency(c) for c in CHARACTERISTICS],
        )
        .where(F.col("jobs") > settings.min_app_jobs)
    )
    app_jobs = multi_node.join(apps.select("app_id"), "app_id", "left_semi")
    spread = job_io.sparkSession.createDataFrame(
        divergences(share_vectors(node_bytes, app_jobs).toArrow()),
        "app_id string, divergence double",
    )
    return apps.join(spread, "app_id", "left").withColumn(
        "consistent_distribution", F.col("divergence") <= settings.divergence_consistent
    )
