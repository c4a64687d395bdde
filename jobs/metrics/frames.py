"""Lake tables as Spark DataFrames and back: the metrics jobs' only contact with storage.

Reading goes through ``burstlake.lake`` (delta-spark, at the version the run's snapshot pins,
so a Spark standalone cluster on the same file system reads the files in parallel); writing
collects the (aggregate-sized) result to the driver and lands it through ``burstlake.lake`` as
the fixed contribution ``metrics``, so a re-run replaces the previous output.
"""

from __future__ import annotations

import os

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from burstlake.lake import spark_frame, write_table
from burstlake.schemas import spec

SOURCE_ID = "metrics"


def read(spark: SparkSession, lake: str | os.PathLike, table: str) -> DataFrame:
    """A lake table as a DataFrame with its contract columns (empty if never written)."""
    return spark_frame(spark, lake, table)


def to_arrow(frame: DataFrame, table: str) -> pa.Table:
    """Collect a result with exactly the columns of ``table``'s contract, in key order."""
    table_spec = spec(table)
    result = frame.select(*table_spec.schema.names).toArrow()
    return result.sort_by([(key, "ascending") for key in table_spec.key])


def write(lake: str | os.PathLike, table: str, frame: DataFrame) -> int:
    """Land a metrics result as the ``metrics`` contribution of ``table``; returns rows."""
    return write_table(lake, table, to_arrow(frame, table), SOURCE_ID)
