"""Total traffic per cabinet and per I/O node over the whole trace (paper 004 §4.1, Fig. 7).

Every cabinet / ION of the topology gets a row, idle ones with zero bytes, so the load
balance (Fig. 7, 15a-b) shows the idle ones too.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .nud import share


def level_load(topology: DataFrame, per_interval: DataFrame, level: str) -> DataFrame:
    """cabinet_load or ion_load from the per-interval bytes of each cabinet (or ION)."""
    members = (
        topology.where(F.col(level).isNotNull()).groupBy(level).agg(F.count("node").alias("nodes"))
    )
    totals = per_interval.groupBy(level).agg(
        F.sum("read").alias("read_bytes"),
        F.sum("write").alias("write_bytes"),
        F.sum("io").alias("io_bytes"),
        F.count(F.lit(1)).alias("active_intervals"),
        F.max("io").alias("peak_bytes"),
    )
    zero = F.lit(0).cast("long")
    counts = ("read_bytes", "write_bytes", "io_bytes", "active_intervals", "peak_bytes")
    load = members.join(totals, level, "left").select(
        level, "nodes", *[F.coalesce(F.col(c), zero).alias(c) for c in counts]
    )
    system = F.sum("io_bytes").over(Window.partitionBy())
    return load.withColumn("share", share(F.col("io_bytes"), system))
