"""Housekeeping: undoing a killed landing, vacuuming old versions, migrating a pre-Delta lake.

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import DeltaError

from burstlake.lake.errors import LakeError, as_lake_error
from burstlake.lake.layout import (
    DAY,
    MIGRATE,
    PREDICATE,
    STAGING,
    delta_schema,
    is_delta,
    lake_path,
)
from burstlake.lake.locks import READERS, clean_leftovers, exclusive
from burstlake.lake.snapshot import (
    _commit_sources,
    _consistent_cut,
    _published,
    commit_metadata,
)
from burstlake.lake.sql import sql_literal
from burstlake.lake.write import _republish, _stored
from burstlake.schemas import REGISTRY, TableSpec, conform, spec

log = logging.getLogger(__name__)


def undo_landing(
    lake: str | os.PathLike | None, source_id: str, tables: Iterable[str], since: float
) -> int:
    """Undo the commits a killed landing of ``source_id`` made since ``since`` (epoch s).

    Each commit is undone by one new commit that puts back what it replaced (the rows its
    predicate covered, as of the version before it), newest first, so every table is as it
    was before the landing: earlier contents of the same path come back with their
    ``ingest_log`` row. Sound because a landing's contributions are written by no one else
    until it is reconciled (writers of a shared contribution hold their source's lock, see
    ``CounterStream``). Returns the number of commits undone.
    """
    root = lake_path(lake)
    undone = 0
    for name in tables:
        path = root / name
        if not is_delta(path):
            continue
        try:
            with exclusive(root, name):
                for version, sid in _commit_sources(root, name, since - 5):
                    if sid != source_id:
                        continue
                    info = commit_metadata(root, name, version)
                    if PREDICATE not in info or "burstlake.deleted" in info:
                        continue
                    _put_back(root, name, version, info[PREDICATE] or None, source_id)
                    undone += 1
        except (OSError, DeltaError) as err:
            raise (as_lake_error(err, root) or err) from err
    return undone


def _put_back(root: Path, name: str, version: int, predicate: str | None, source_id: str) -> None:
    """One commit restoring the rows ``predicate`` covered before ``version`` (all if None)."""
    table_spec, path = spec(name), root / name
    schema = delta_schema(table_spec)
    before = DeltaTable(path, version=version - 1)
    uris = [u.removeprefix("file://") for u in before.file_uris()]
    if uris:
        listed = "[" + ", ".join(sql_literal(u) for u in uris) + "]"
        hive = "true" if table_spec.partition_by else "false"
        where = f" WHERE {predicate}" if predicate else ""
        with duckdb.connect() as con:
            rows = con.execute(
                f"SELECT * FROM read_parquet({listed}, hive_partitioning={hive}, "
                f"union_by_name=true){where}"
            ).fetch_arrow_table()
        rows = rows.select(schema.names).cast(schema)
    else:
        rows = schema.empty_table()
    dt = DeltaTable(path)
    write_deltalake(
        dt,
        rows,
        mode="overwrite",
        predicate=predicate,
        schema_mode="merge",
        commit_properties=CommitProperties(custom_metadata={"burstlake.deleted": source_id}),
    )
    dt.update_incremental()
    _republish(root, name, dt.version())


def vacuum(
    lake: str | os.PathLike | None,
    retention_hours: int,
    on_wait: Callable[[], None] | None = None,
) -> dict[str, int]:
    """Delete files no version newer than ``retention_hours`` needs, table by table.

    The versions readers are pinned to (published runs, unfinished landings) are kept whatever
    their age, and the files a running query reads too: vacuum holds the :data:`READERS` lock
    exclusive, which every query on the lake holds shared from before it reads the catalog
    until its last row, so it waits for the queries running (``on_wait`` is called once
    first) and queries starting meanwhile wait for it. Returns the number of files removed per
    table; staging leftovers go too.
    """
    root = lake_path(lake)
    clean_leftovers(root)
    removed: dict[str, int] = {}
    with exclusive(root, READERS, on_wait):
        published = _published(root)
        cut = _consistent_cut(root)  # versions readers see while a landing is unfinished
        for name in sorted(REGISTRY):
            path = root / name
            if not is_delta(path):
                continue
            with exclusive(root, name):
                dt = DeltaTable(path)
                keep = [v for v in (published.get(name), cut.get(name)) if v is not None] or None
                files = dt.vacuum(
                    retention_hours=retention_hours,
                    dry_run=False,
                    enforce_retention_duration=False,
                    full=True,  # also the files of a killed write that no commit took
                    keep_versions=keep,
                )
            removed[name] = len(files)
    return removed


def legacy_tables(lake: str | os.PathLike | None = None) -> list[str]:
    """Tables still in the pre-Delta layout (``<table>/[day=…/]src-<id>-<n>.parquet``)."""
    root = lake_path(lake)
    return [
        name
        for name in sorted(REGISTRY)
        if (root / name).is_dir()
        and not is_delta(root / name)
        and any((root / name).rglob("src-*.parquet"))
    ]


def migrate(lake: str | os.PathLike | None = None) -> dict[str, int]:
    """Convert every table still in the pre-Delta layout to a Delta table, every row kept.

    Each table is written whole to ``_migrate/<table>`` as one commit (each old file's
    ``source_id`` kept as its contribution), its row count checked against the old files, then
    swapped in; the old files are removed last. Re-running after a kill finishes the job.
    Returns rows per converted table.
    """
    root = lake_path(lake)
    scratch = root / MIGRATE
    for done in sorted(scratch.glob("*")) if scratch.is_dir() else []:
        if done.name in REGISTRY and is_delta(done) and not (root / done.name).exists():
            os.replace(done, root / done.name)  # killed between the two renames
    converted: dict[str, int] = {}
    for name in legacy_tables(root):
        table_spec = spec(name)
        old = sorted((root / name).rglob("src-*.parquet"))
        expected = sum(pq.ParquetFile(f).metadata.num_rows for f in old)
        target = scratch / name
        shutil.rmtree(target, ignore_errors=True)
        schema = delta_schema(table_spec)

        def batches(
            files: list[Path] = old, ts: TableSpec = table_spec
        ) -> Iterator[pa.RecordBatch]:
            for path in files:
                source_id = path.name[4:].rsplit("-", 1)[0]
                yield from _stored(conform(pq.read_table(path), ts), ts, source_id).to_batches()

        write_deltalake(
            target,
            pa.RecordBatchReader.from_batches(schema, batches()),
            mode="append",
            partition_by=[DAY] if table_spec.partition_by else None,
            commit_properties=CommitProperties(custom_metadata={"burstlake.migrated": name}),
        )
        got = DeltaTable(target).count()
        if got != expected:
            raise LakeError(f"{name}: migration wrote {got} rows, the old files hold {expected}")
        with exclusive(root, name):
            legacy = scratch / f"legacy-{name}"
            shutil.rmtree(legacy, ignore_errors=True)
            os.replace(root / name, legacy)
            os.replace(target, root / name)
            shutil.rmtree(legacy, ignore_errors=True)
        converted[name] = got
    shutil.rmtree(root / STAGING, ignore_errors=True)
    with contextlib.suppress(OSError):
        scratch.rmdir()
    return converted
