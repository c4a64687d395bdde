"""The Parquet lake (SPEC §3): the one place that writes a table and the one that reads it.

Layout: ``<lake>/<table>/src-<source_id>-<n>.parquet``, or for day-partitioned tables
``<lake>/<table>/day=YYYY-MM-DD/src-<source_id>-<n>.parquet``. A *contribution* is everything
one input (a file, a synthesizer run, a metrics job) wrote, named by its ``source_id``. Writing a
contribution replaces whatever the same ``source_id`` wrote before, in every partition, so
re-ingesting a file is idempotent. Files are staged under ``<lake>/_staging`` and moved in on
commit, so a crash mid-write leaves the previous contribution intact.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from burstlake.schemas import TableSpec, conform, spec

DEFAULT_LAKE = "lake"
ROWS_PER_FILE = 4_000_000


def lake_path(lake: str | os.PathLike | None = None) -> Path:
    """The lake directory: the argument, else ``$BURSTLAKE_LAKE``, else ``./lake``."""
    return Path(lake or os.environ.get("BURSTLAKE_LAKE") or DEFAULT_LAKE).absolute()


def table_dir(lake: str | os.PathLike | None, table: str) -> Path:
    return lake_path(lake) / spec(table).name


def table_files(lake: str | os.PathLike | None, table: str) -> list[Path]:
    """All Parquet files of a table, sorted (empty if the table has never been written)."""
    root = table_dir(lake, table)
    return sorted(root.rglob("*.parquet")) if root.exists() else []


def _day_keys(table: pa.Table, column: str) -> pa.Array:
    return pc.strftime(table.column(column), format="%Y-%m-%d").combine_chunks()


class ContributionWriter:
    """Streams the rows of one contribution into one table; ``commit()`` swaps them in.

    Memory stays bounded by one batch: each partition has an open ParquetWriter that rolls
    over to a new file every ``ROWS_PER_FILE`` rows.
    """

    def __init__(self, lake: str | os.PathLike | None, table: str, source_id: str) -> None:
        self.spec = spec(table)
        self.lake = lake_path(lake)
        self.source_id = source_id
        self.staging = (
            self.lake / "_staging" / f"{self.spec.name}-{source_id}-{uuid.uuid4().hex[:8]}"
        )
        self.staging.mkdir(parents=True, exist_ok=True)
        self._writers: dict[str, tuple[pq.ParquetWriter, int, int]] = {}  # part -> (w, n, rows)
        self.rows = 0
        self.superseded = 0  # rows of older contributions replaced on commit

    def write(self, rows: pa.Table | pa.RecordBatch) -> None:
        table = conform(rows, self.spec)
        if table.num_rows == 0:
            return
        self.rows += table.num_rows
        if self.spec.partition_by is None:
            self._write_part("", table)
            return
        days = _day_keys(table, self.spec.partition_by)
        for day in pc.unique(days).to_pylist():
            if day is None:
                raise ValueError(
                    f"{self.spec.name}: null {self.spec.partition_by} in a partitioned table"
                )
            self._write_part(f"day={day}", table.filter(pc.equal(days, day)))

    def _write_part(self, part: str, table: pa.Table) -> None:
        writer, n, rows = self._writers.get(part, (None, 0, 0))
        if writer is not None and rows >= ROWS_PER_FILE:
            writer.close()
            writer, n, rows = None, n + 1, 0
        if writer is None:
            path = self.staging / part / f"src-{self.source_id}-{n:04d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = pq.ParquetWriter(path, self.spec.schema, compression="zstd")
        writer.write_table(table)
        self._writers[part] = (writer, n, rows + table.num_rows)

    def commit(self) -> int:
        """Replace the source's previous contribution with the staged files; returns rows."""
        for writer, _, _ in self._writers.values():
            writer.close()
        delete_contribution(self.lake, self.source_id, tables=[self.spec.name])
        self.superseded = _supersede(self.lake / self.spec.name, self.staging, self.spec)
        target = self.lake / self.spec.name
        for staged in sorted(self.staging.rglob("*.parquet")):
            final = target / staged.relative_to(self.staging)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, final)
        target.mkdir(parents=True, exist_ok=True)
        self.abort()
        return self.rows

    def abort(self) -> None:
        for writer, _, _ in self._writers.values():
            if writer.is_open:
                writer.close()
        self._writers.clear()
        shutil.rmtree(self.staging, ignore_errors=True)
        with contextlib.suppress(OSError):
            self.staging.parent.rmdir()  # only when no other write is staged

    def __enter__(self) -> ContributionWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _supersede(target: Path, staging: Path, table_spec: TableSpec) -> int:
    """Drop rows of older contributions whose ``replace_key`` reappears in the staged files.

    Only the partitions the new contribution touches are read; the matching is an anti-join
    in DuckDB (NULL keys match NULL keys). Returns the number of rows removed.
    """
    staged = sorted(staging.rglob("*.parquet"))
    if not table_spec.replace_key or not staged:
        return 0
    parts = sorted({f.parent.relative_to(staging) for f in staged})
    older = [f for part in parts for f in sorted((target / part).glob("src-*.parquet"))]
    if not older:
        return 0
    keys = ", ".join(f'"{k}"' for k in table_spec.replace_key)
    match = " AND ".join(f'o."{k}" IS NOT DISTINCT FROM n."{k}"' for k in table_spec.replace_key)
    removed = 0
    with duckdb.connect() as con:
        files = "[" + ", ".join(f"'{f}'" for f in staged) + "]"
        con.execute(f"CREATE TEMP TABLE n AS SELECT DISTINCT {keys} FROM read_parquet({files})")
        for path in older:
            source = f"read_parquet('{path}') AS o"
            hits = con.execute(
                f"SELECT count(*) FROM {source} WHERE EXISTS (SELECT 1 FROM n WHERE {match})"
            ).fetchone()[0]
            if not hits:
                continue
            kept = con.execute(
                f"SELECT o.* FROM {source} WHERE NOT EXISTS (SELECT 1 FROM n WHERE {match})"
            ).fetch_arrow_table()
            removed += hits
            if kept.num_rows:
                scratch = path.with_suffix(".rewrite")
                pq.write_table(conform(kept, table_spec), scratch, compression="zstd")
                os.replace(scratch, path)
            else:
                path.unlink()
    return removed


def write_table(
    lake: str | os.PathLike | None,
    table: str,
    rows: pa.Table | Iterable[pa.Table | pa.RecordBatch],
    source_id: str,
) -> int:
    """Write a whole contribution (one table, or an iterable of batches) and commit it."""
    with ContributionWriter(lake, table, source_id) as writer:
        for batch in [rows] if isinstance(rows, pa.Table) else rows:
            writer.write(batch)
    return writer.rows


def delete_contribution(
    lake: str | os.PathLike | None, source_id: str, tables: Iterable[str] | None = None
) -> int:
    """Delete what ``source_id`` contributed to ``tables`` (default: every table). Returns files."""
    root = lake_path(lake)
    names = list(tables) if tables is not None else [p.name for p in root.iterdir() if p.is_dir()]
    removed = 0
    for name in names:
        if name.startswith("_"):
            continue
        for path in (root / name).rglob(f"src-{source_id}-*.parquet"):
            path.unlink()
            removed += 1
        for part in sorted((root / name).glob("*/"), reverse=True):
            if part.is_dir() and not any(part.iterdir()):
                part.rmdir()
    return removed


def contribution_ids(lake: str | os.PathLike | None, table: str) -> set[str]:
    """The source_ids that have rows in a table."""
    return {p.name[4:].rsplit("-", 1)[0] for p in table_files(lake, table)}


def dataset(lake: str | os.PathLike | None, table: str) -> ds.Dataset:
    """A pyarrow Dataset over a table with the spec's schema (empty if never written)."""
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
