"""Reading the lake at its read version: files, Arrow datasets and tables, contributions, and
Spark's reader (delta-spark).

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from deltalake import DeltaTable

from burstlake.lake.layout import SOURCE, is_delta, table_dir
from burstlake.lake.snapshot import read_version
from burstlake.schemas import spec

log = logging.getLogger(__name__)


def _open(lake: str | os.PathLike | None, table: str, version: int | None) -> DeltaTable | None:
    path = table_dir(lake, table)
    if version is None:
        return DeltaTable(path) if is_delta(path) else None
    return DeltaTable(path, version=version)


def table_layout(
    lake: str | os.PathLike | None, table: str, version: int | None = None
) -> tuple[list[Path], set[str]]:
    """A table's read version in one look at its log: its Parquet files (sorted; none if never
    written) and the columns it stores. A lake written by an older burstlake lacks the
    contract's newer (nullable) columns; every reader gives them as nulls."""
    dt = _open(lake, table, version if version is not None else read_version(lake, table))
    if dt is None:
        return [], set()
    files = sorted(Path(uri.removeprefix("file://")) for uri in dt.file_uris())
    return files, {field.name for field in dt.schema().fields}


def table_files(
    lake: str | os.PathLike | None, table: str, version: int | None = None
) -> list[Path]:
    """The Parquet files of a table's read version, sorted (empty if never written)."""
    return table_layout(lake, table, version)[0]


def dataset(lake: str | os.PathLike | None, table: str) -> ds.Dataset:
    """A pyarrow Dataset over a table's read version with the spec's schema."""
    table_spec = spec(table)
    files = [str(p) for p in table_files(lake, table)]
    if not files:
        return ds.dataset(pa.Table.from_pylist([], schema=table_spec.schema))
    return ds.dataset(files, schema=table_spec.schema, format="parquet")


def read_table(
    lake: str | os.PathLike | None,
    table: str,
    columns: list[str] | None = None,
    filter: pc.Expression | None = None,
) -> pa.Table:
    """Read a table (or some columns, filtered) into memory with its contract schema."""
    return dataset(lake, table).to_table(columns=columns, filter=filter)


def contribution_keys(
    lake: str | os.PathLike | None, table: str, columns: Iterable[str] = ()
) -> set[tuple]:
    """The distinct (source_id, *columns) of a table's rows: which contribution holds what."""
    names = [SOURCE, *columns]
    files = [str(p) for p in table_files(lake, table)]
    if not files:
        return set()
    rows = ds.dataset(files, format="parquet").to_table(columns=names)
    rows = rows.group_by(names).aggregate([])
    return set(zip(*(rows.column(n).to_pylist() for n in names), strict=True))


def contribution_ids(lake: str | os.PathLike | None, table: str) -> set[str]:
    """The source_ids that have rows in a table."""
    return {key[0] for key in contribution_keys(lake, table)}


def spark_frame(spark, lake: str | os.PathLike | None, table: str):
    """A lake table as a Spark DataFrame through delta-spark, at its read version."""
    from pyspark.sql.pandas.types import from_arrow_schema

    table_spec = spec(table)
    version = read_version(lake, table)
    if version is None:
        return spark.createDataFrame([], from_arrow_schema(table_spec.schema))
    frame = (
        spark.read.format("delta").option("versionAsOf", version).load(str(table_dir(lake, table)))
    )
    from pyspark.sql import functions as F

    stored, types = set(frame.columns), from_arrow_schema(table_spec.schema)
    return frame.select(
        *[
            F.col(name) if name in stored else F.lit(None).cast(types[name].dataType).alias(name)
            for name in table_spec.schema.names
        ]
    )
