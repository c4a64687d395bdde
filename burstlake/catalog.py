"""``<lake>/catalog.duckdb``: one DuckDB view per lake table (SPEC §3), so SQL works at once.

A table with files is a view over its Parquet files (with a ``day`` column for day-partitioned
tables); a table never written is an empty DuckDB table with the contract's columns, so queries
and joins work on a fresh lake too. ``refresh`` runs after every write.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import duckdb
import pyarrow as pa

from burstlake.lake import lake_path, table_files
from burstlake.schemas import REGISTRY, TableSpec

CATALOG = "catalog.duckdb"


def catalog_path(lake: str | os.PathLike | None = None) -> Path:
    return lake_path(lake) / CATALOG


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _view_sql(spec: TableSpec, root: Path) -> str:
    name = f'"{spec.name}"'
    if spec.partition_by:
        glob = _quote(root / spec.name / "*" / "*.parquet")
        source = f"read_parquet({glob}, hive_partitioning = true, union_by_name = true)"
    else:
        glob = _quote(root / spec.name / "*.parquet")
        source = f"read_parquet({glob}, union_by_name = true)"
    return f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM {source}"


def _define(con: duckdb.DuckDBPyConnection, spec: TableSpec, root: Path, has_files: bool) -> None:
    name = f'"{spec.name}"'
    kinds = con.execute(
        "SELECT table_type FROM information_schema.tables WHERE table_name = ?", [spec.name]
    ).fetchall()
    for (kind,) in kinds:
        con.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} {name}")
    if has_files:
        con.execute(_view_sql(spec, root))
    else:
        empty = pa.Table.from_pylist([], schema=spec.schema)  # noqa: F841 - read by DuckDB
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM empty")


def refresh(lake: str | os.PathLike | None = None, tables: list[str] | None = None) -> None:
    """(Re)define the views of ``tables`` (default: all) in the lake's catalog.

    If another process holds the catalog open for writing, warns and leaves it as it was: the
    Parquet files are the truth and the next refresh catches up.
    """
    root = lake_path(lake)
    root.mkdir(parents=True, exist_ok=True)
    names = tables if tables is not None else sorted(REGISTRY)
    try:
        con = duckdb.connect(str(root / CATALOG))
    except duckdb.IOException as err:
        print(f"burstlake: catalog not refreshed, it is in use: {err}", file=sys.stderr)
        return
    try:
        for name in names:
            _define(con, REGISTRY[name], root, bool(table_files(root, name)))
    finally:
        con.close()


def connect(
    lake: str | os.PathLike | None = None, read_only: bool = True
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to the lake's catalog, refreshed first if it does not exist yet."""
    path = catalog_path(lake)
    if not path.exists():
        refresh(lake)
    return duckdb.connect(str(path), read_only=read_only)


def sql(lake: str | os.PathLike | None, query: str) -> pa.Table:
    """Run one SQL query on the lake's catalog and return the result as Arrow."""
    con = connect(lake)
    try:
        return con.execute(query).fetch_arrow_table()
    finally:
        con.close()
