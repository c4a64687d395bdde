"""I/O phases of each job (paper 001 §II-C, §IV: the unit the coordination strategies schedule),
detected from node_io: the job's intervals in an I/O phase (its nodes move at least
``io_phase_bytes_per_s``), runs of them merged across quiet gaps shorter than
``io_phase_gap_s``. A phase's N is the job's allocated node count (all of them wait for the
I/O, 001 §IV-D's f = Σ N·T), its bytes are read + write of all its nodes in the phase."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .job_io import JOB, epoch_s, in_io_phase
from .settings import MetricSettings


def io_phase_rows(
    per_interval: DataFrame, node_bytes: DataFrame, settings: MetricSettings
) -> DataFrame:
    """The io_phases rows from the job × interval traffic and the job × node rows."""
    busy = per_interval.where(in_io_phase(settings)).withColumn("ts_s", epoch_s("ts"))
    order = Window.partitionBy("job_no").orderBy("ts_s")
    gap = F.col("ts_s") - F.lag(F.col("ts_s") + F.col("interval_s")).over(order)
    opens = F.when(gap.isNull() | (gap >= F.lit(settings.io_phase_gap_s)), 1).otherwise(0)
    numbered = busy.withColumn("opens", opens).withColumn(
        "phase", F.sum("opens").over(order.rowsBetween(Window.unboundedPreceding, 0)) - 1
    )
    phases = numbered.groupBy("job_no", "phase").agg(
        F.min("ts_s").alias("start_s"),
        F.max(F.col("ts_s") + F.col("interval_s")).alias("end_s"),
        F.sum("read").alias("read_bytes"),
        F.sum("write").alias("write_bytes"),
        F.sum("io").alias("bytes"),
        F.max("active_nodes").alias("active_nodes"),
        F.count(F.lit(1)).alias("intervals"),
    )
    nodes = node_bytes.groupBy("job_no", *JOB).agg(F.count(F.lit(1)).alias("nodes"))
    return phases.join(nodes, "job_no").select(
        *JOB,
        F.col("phase").cast("long").alias("phase"),
        F.timestamp_micros((F.col("start_s") * 1e6).cast("long")).alias("start"),
        F.timestamp_micros((F.col("end_s") * 1e6).cast("long")).alias("end"),
        (F.col("end_s") - F.col("start_s")).cast("double").alias("duration_s"),
        F.col("nodes").cast("long").alias("nodes"),
        F.col("active_nodes").cast("long").alias("active_nodes"),
        F.col("read_bytes").cast("long").alias("read_bytes"),
        F.col("write_bytes").cast("long").alias("write_bytes"),
        F.col("bytes").cast("long").alias("bytes"),
        (F.col("bytes") / F.col("nodes")).alias("bytes_per_node"),
        F.col("intervals").cast("long").alias("intervals"),
    )
