"""Lake tables as Spark DataFrames and back: the metrics jobs' only contact with storage.

Reading takes the Parquet files of the version the run's snapshot pins from the Delta log
(:func:`burstlake.lake.table_layout`, the listing the DuckDB catalog reads too) and hands them to
Spark's Parquet reader, so a Spark standalone cluster on the same file system reads them in
parallel. delta-spark would replay each table's log in Spark jobs first: on a 3-day lake under
load that was 123 s before any metric (docs/design.md, "Metrics"). The lake's
one writer (delta-rs) writes no deletion vectors and no column mapping, so the listed files are
the table's rows; columns a file lacks (a lake older than the contract) read as nulls. Writing
collects the (aggregate-sized) result to the driver and lands it through ``burstlake.lake`` as
the fixed contribution ``metrics``, so a re-run replaces the previous output.

An intermediate several steps read (the per-interval cabinet and ION bytes) is computed once
and written as Parquet to a :class:`Scratch` folder in the lake's staging area, then read back:
cheaper than recomputing it per reader, and unlike ``cache()`` it holds no memory
(docs/design.md, "Metrics").
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from burstlake.lake import STAGING, Cluster, OwnedFolder, lake_path, table_layout, write_table
from burstlake.schemas import conform, spec

SOURCE_ID = "metrics"

Keep = Callable[[DataFrame, str], DataFrame]  # computes a frame once; returns it read back


def recompute(frame: DataFrame, name: str) -> DataFrame:
    """A :data:`Keep` that keeps nothing: each reader computes ``frame`` itself."""
    return frame


class Scratch:
    """A folder of the lake's staging area (``_staging/metrics-…``, removed by :meth:`remove`,
    or by ``clean_leftovers`` once a killed run's lock is gone) holding intermediates as
    Parquet; on the lake's file system, so a Spark cluster's executors reach it too."""

    def __init__(self, spark: SparkSession, lake: str | os.PathLike) -> None:
        self.spark, self.lake = spark, lake_path(lake)
        self._owned = OwnedFolder(self.lake / STAGING / f"metrics-{uuid.uuid4().hex[:12]}")
        self._kept = 0

    def keep(self, frame: DataFrame, name: str) -> DataFrame:
        """Write ``frame`` once as Parquet ``name`` and return it read back (a :data:`Keep`)."""
        self._kept += 1  # one folder per frame: a second machine's frames do not overwrite
        path = str(self._owned.path / f"{self._kept}-{name}")
        frame.write.mode("overwrite").parquet(path)
        return self.spark.read.parquet(path)

    def remove(self) -> None:
        self._owned.remove()
        with contextlib.suppress(OSError):
            (self.lake / STAGING).rmdir()  # only when no other write is staged


def contract(table: str) -> StructType:
    """The Spark schema of ``table``'s contract."""
    return from_arrow_schema(spec(table).schema)


def read(spark: SparkSession, lake: str | os.PathLike, table: str) -> DataFrame:
    """A lake table at its read version as a DataFrame with its contract columns (empty if never
    written)."""
    columns = contract(table)
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
