"""Lake tables as Spark DataFrames and back: the metrics jobs' only contact with storage.

Reading goes straight to the table's Parquet files with the TableSpec's schema (so a Spark
standalone cluster on the same file system reads them in parallel); writing collects the
(aggregate-sized) result to the driver and lands it through ``burstlake.lake`` as the fixed
contribution ``metrics``, so a re-run replaces the previous output.
"""

from __future__ import annotations

import os

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from burstlake.lake import table_files, write_table
from burstlake.schemas import spec

SOURCE_ID = "metrics"


def read(spark: SparkSession, lake: str | os.PathLike, table: str) -> DataFrame:
    """A lake table as a DataFrame with its contract columns (empty if never written)."""
    table_spec = spec(table)
    schema = from_arrow_schema(table_spec.schema)
    files = [str(p) for p in table_files(lake, table)]
    if not files:
        return spark.createDataFrame([], schema)
    frame = spark.read.schema(schema).parquet(*files)
    return frame.select(*table_spec.schema.names)


def to_arrow(frame: DataFrame, table: str) -> pa.Table:
    """Collect a result with exactly the columns of ``table``'s contract, in key order."""
    table_spec = spec(table)
    result = frame.select(*table_spec.schema.names).toArrow()
    return result.sort_by([(key, "ascending") for key in table_spec.key])


def write(lake: str | os.PathLike, table: str, frame: DataFrame) -> int:
    """Land a metrics result as the ``metrics`` contribution of ``table``; returns rows."""
    return write_table(lake, table, to_arrow(frame, table), SOURCE_ID)
