"""Lake tables as Spark DataFrames and back: the metrics jobs' only contact with storage.

Reading takes the Parquet files of the version the run's snapshot pins from the Delta log
(:func:`burstlake.lake.table_layout`, the listing the DuckDB catalog reads too) and hands them to
Spark's Parquet reader, so a Spark standalone cluster on the same file system reads them in
parallel. delta-spark would replay each table's log in Spark jobs first: on a 3-day lake under
load that was 123 s before any metric (README, "Where the Spark metrics time goes"). The lake's
one writer (delta-rs) writes no deletion vectors and no column mapping, so the listed files are
the table's rows; columns a file lacks (a lake older than the contract) read as nulls. Writing
collects the (aggregate-sized) result to the driver and lands it through ``burstlake.lake`` as
the fixed contribution ``metrics``, so a re-run replaces the previous output.
"""

from __future__ import annotations

import os

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from burstlake.lake import Cluster, table_layout, write_table
from burstlake.schemas import conform, spec

SOURCE_ID = "metrics"


def read(spark: SparkSession, lake: str | os.PathLike, table: str) -> DataFrame:
    """A lake table at its read version as a DataFrame with its contract columns (empty if never
    written)."""
    columns = from_arrow_schema(spec(table).schema)
    files, _ = table_layout(lake, table)
    if not files:
        return spark.createDataFrame([], columns)
    return spark.read.schema(columns).parquet(*(str(path) for path in files))


def stored(lake: str | os.PathLike, table: str) -> bool:
    """Whether the read version of ``table`` has any file (a lake without Darshan logs has
    none): steps over a table without files can be skipped without a Spark job."""
    return bool(table_layout(lake, table)[0])


def to_arrow(frame: DataFrame, table: str) -> pa.Table:
    """Collect a result with exactly the columns of ``table``'s contract, in key order."""
    table_spec = spec(table)
    result = conform(frame.select(*table_spec.schema.names).toArrow(), table_spec)
    return result.sort_by([(key, "ascending") for key in table_spec.key])


def write(lake: str | os.PathLike, table: str, rows: pa.Table) -> int:
    """Land a collected metrics result, in key order, as the ``metrics`` contribution of
    ``table``; returns rows."""
    ordered = rows.sort_by([(key, "ascending") for key in spec(table).key])
    return write_table(lake, table, ordered, SOURCE_ID)


def one_machine(frame: DataFrame, machine: Cluster) -> DataFrame:
    """The rows of one machine of the lake (the rule of :class:`burstlake.lake.Cluster`)."""
    return frame.where(machine.sql())
