"""The lake's layout on disk: its folder, the folders its writers keep there, the hidden columns
every table stores, and the commit metadata a write leaves.

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa

from burstlake.schemas import REGISTRY, TableSpec, spec

DEFAULT_LAKE = "lake"
ROWS_PER_FILE = 4_000_000  # rows per Parquet file a write stages
SOURCE = "_source_id"  # hidden column: the contribution a row belongs to
DAY = "day"  # hidden partition column of day-partitioned tables
STAGING = "_staging"  # rows staged before their commit (see write.ContributionWriter)
LOCKS = "_locks"  # lock files (see locks.exclusive)
RUNS = "_runs"  # the last published run of each multi-table job (see snapshot.run)
TXN = "_txn"  # intent records of landings in progress (see snapshot.landing)
MIGRATE = "_migrate"  # scratch folder of a migration (see maintenance.migrate)
PREDICATE = "burstlake.predicate"  # commit metadata: the rows a write replaced


def lake_path(lake: str | os.PathLike | None = None) -> Path:
    """The lake directory: the argument, else ``$BURSTLAKE_LAKE``, else ``./lake``, absolute
    and normalised (``sub/../lake`` is ``lake``: Delta names its files that way)."""
    return Path(os.path.abspath(lake or os.environ.get("BURSTLAKE_LAKE") or DEFAULT_LAKE))


def table_dir(lake: str | os.PathLike | None, table: str) -> Path:
    return lake_path(lake) / spec(table).name


def is_delta(path: Path) -> bool:
    """Whether ``path`` holds a Delta table (a ``_delta_log`` with at least one commit)."""
    return (path / "_delta_log").is_dir() and any((path / "_delta_log").glob("*.json"))


def is_lake(path: Path) -> bool:
    """Whether ``path`` is a lake directory: its catalog, a table or a folder of its writers."""
    own = ("catalog.duckdb", STAGING, LOCKS, RUNS, TXN, MIGRATE, *REGISTRY)
    return path.is_dir() and any((path / name).exists() for name in own)


def delta_schema(table_spec: TableSpec) -> pa.Schema:
    """The stored schema: the contract's columns, ``_source_id`` and (if partitioned) ``day``."""
    fields = [*table_spec.schema, pa.field(SOURCE, pa.string(), nullable=False)]
    if table_spec.partition_by:
        fields.append(pa.field(DAY, pa.date32(), nullable=False))
    return pa.schema(fields)
