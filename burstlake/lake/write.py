"""The one writer: a contribution staged, then one atomic Delta commit in which records win by
their content (docs/design.md, 'The lake').
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake import Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError

from burstlake.lake.errors import as_lake_error
from burstlake.lake.files import (
    Part,
    PartWriter,
    distinct,
    owned_files,
    place,
    stored_batches,
    unplace,
)
from burstlake.lake.layout import (
    DAY,
    PREDICATE,
    ROWS_PER_FILE,
    RUNS,
    SOURCE,
    STAGING,
    delta_schema,
    is_delta,
    lake_path,
)
from burstlake.lake.locks import OwnedFolder, exclusive
from burstlake.lake.pause import checkpoint
from burstlake.lake.read import _open
from burstlake.lake.snapshot import Run
from burstlake.lake.sql import sql_literal
from burstlake.schemas import REGISTRY, TableSpec, conform, spec

log = logging.getLogger(__name__)
# Staged files live until their commit re-encodes them: lz4 and no column statistics, about
# half zstd's CPU per row written and read (a 1 GB Zabbix export stages 4.5 M rows of
# zabbix_samples).
STAGED_CODEC = "lz4"
COMMIT_RETRIES = 20  # attempts of a commit that conflicts with another writer's
TRACKED_KEYS = 100_000  # staged replace_key values a writer keeps to look up (beyond: ranges)


def _day_keys(table: pa.Table, column: str) -> pa.Array:
    return pc.cast(table.column(column), pa.date32()).combine_chunks()


def _stored(rows: pa.Table, table_spec: TableSpec, source_id: str) -> pa.Table:
    """Contract rows plus the hidden columns, in the stored schema."""
    out = rows.append_column(SOURCE, pa.repeat(pa.scalar(source_id, pa.string()), rows.num_rows))
    if table_spec.partition_by:
        days = _day_keys(rows, table_spec.partition_by)
        if days.null_count:
            raise ValueError(
                f"{table_spec.name}: null {table_spec.partition_by} in a partitioned table"
            )
        out = out.append_column(DAY, days)
    return out.cast(delta_schema(table_spec))


class ContributionWriter:
    """Streams the rows of one contribution into one table; ``commit()`` swaps them in.

    Rows are staged as Parquet under ``<lake>/_staging`` (memory stays bounded by one batch);
    ``commit()`` lands them in one Delta commit that also removes what the same ``source_id``
    (and the ids in ``replaces``) wrote before, and the rows of other contributions whose
    ``replace_key`` reappears (``superseded``).

    One writer may also write rows into other contributions of the table
    (``write(rows, contribution=...)``, or :meth:`claim` for one that ends up empty): rows
    computed from several inputs, such as the Zabbix stream's day x node-bucket parts of
    ``node_io``. Each such contribution is replaced whole by the same commit.
    """

    def __init__(
        self,
        lake: str | os.PathLike | None,
        table: str,
        source_id: str,
        replaces: Iterable[str] = (),
        staging: Path | None = None,
    ) -> None:
        """``staging``: a folder inside one its caller holds (an :class:`OwnedFolder`), for a
        writer that stages in one process and commits in another (``ingest --workers``);
        by default the writer holds a folder of its own."""
        self.spec = spec(table)
        self.lake = lake_path(lake)
        self.run = lake if isinstance(lake, Run) else None  # stamps the commit (see Run)
        self.source_id = source_id
        self.replaces = sorted(set(replaces) - {source_id})
        self.contributions: set[str] = set()  # other contributions written (replaced whole)
        self.rows = 0
        self.superseded = 0  # rows of older contributions replaced on commit
        self.stale = 0  # staged rows kept out on commit: the lake holds newer ones
        self.version: int | None = None  # the committed version
        name = f"{self.spec.name}-{uuid.uuid4().hex[:12]}"
        try:
            if staging is None:
                self._scratch: OwnedFolder | None = OwnedFolder(self.lake / STAGING / name)
                self._folder = self._scratch.path
            else:
                self._scratch, self._folder = None, staging / name
                self._folder.mkdir(parents=True)
        except OSError as err:
            raise (as_lake_error(err, self.lake) or err) from err
        self._writer: pq.ParquetWriter | None = None
        self._sink: pa.NativeFile | None = None
        self._staged: list[Path] = []
        self._file_rows = 0
        # rows are written once, as the table's own files (files.py), unless a commit may keep
        # some of them out (``precedence``, ``follows``): then they are staged for delta-rs
        self.direct = not (self.spec.precedence or self.spec.follows)
        partitioned = bool(self.spec.partition_by)
        self._parts = PartWriter(self.staging, delta_schema(self.spec), partitioned)
        self._placed: list[Part] = []  # files moved into the table for a commit
        self._days: set = set()  # the days the staged rows fall on
        self._ranges: dict[str, tuple | None] = {}  # replace_key column -> (min, max), or None
        # the staged replace_key values, for a one-column key (None: too many, or no such key)
        self._keys: set | None = set() if len(self.spec.replace_key) == 1 else None

    @property
    def staging(self) -> Path:
        return self._folder

    def __getstate__(self) -> dict:
        """A writer crosses processes once its files are closed, in a folder its caller holds."""
        if self._scratch is not None or self._writer is not None or self._parts.writing():
            raise TypeError("only a closed writer staging in its caller's folder is picklable")
        return dict(self.__dict__)

    def claim(self, contributions: Iterable[str]) -> None:
        """Replace these contributions in the commit, whether or not rows are written to them."""
        self.contributions.update(contributions)

    def write(self, rows: pa.Table | pa.RecordBatch, contribution: str | None = None) -> None:
        """Stage rows of this writer's contribution, or of ``contribution`` (see class doc)."""
        if contribution is not None and contribution != self.source_id:
            self.contributions.add(contribution)
        table = conform(rows, self.spec)
        if table.num_rows == 0:
            return
        stored = _stored(table, self.spec, contribution or self.source_id)
        self.rows += table.num_rows
        self._track(stored)
        if self.direct:
            try:
                self._parts.write(stored)
            except OSError as err:
                raise (as_lake_error(err, self.lake) or err) from err
            return
        try:
            if self._writer is not None and self._file_rows >= ROWS_PER_FILE:
                self._close()
            if self._writer is None:
                path = self.staging / f"part-{len(self._staged):04d}.parquet"
                self._staged.append(path)
                self._sink = pa.OSFile(str(path), "wb")  # closed by _close whatever happens
                # dictionaries only for text: numbers (offsets, times) rarely repeat, and
                # trying them costs more than the rest of the staging write
                text = [f.name for f in stored.schema if pa.types.is_string(f.type)]
                self._writer = pq.ParquetWriter(
                    self._sink,
                    stored.schema,
                    compression=STAGED_CODEC,
                    write_statistics=False,
                    use_dictionary=text,
                )
                self._file_rows = 0
            self._writer.write_table(stored)
        except OSError as err:
            raise (as_lake_error(err, self.lake) or err) from err
        self._file_rows += stored.num_rows

    def _track(self, stored: pa.Table) -> None:
        """Note the days, the replace_key ranges and values of staged rows (:func:`_may_meet`)."""
        if self.spec.partition_by:
            self._days.update(pc.unique(stored.column(DAY)).to_pylist())
        if self._keys is not None:
            self._keys.update(pc.unique(stored.column(self.spec.replace_key[0])).to_pylist())
            if len(self._keys) > TRACKED_KEYS:
                self._keys = None
        for key in self.spec.replace_key:
            column = stored.column(key)
            if key in self._ranges and self._ranges[key] is None:
                continue
            if column.null_count or not _ranged(column.type):
                self._ranges[key] = None  # NULL meets NULL: no range narrows it
                continue
            found = pc.min_max(column)
            low, high = found["min"].as_py(), found["max"].as_py()
            if key in self._ranges:
                low, high = min(low, self._ranges[key][0]), max(high, self._ranges[key][1])
            self._ranges[key] = (low, high)

    @property
    def _files(self) -> list[Path]:
        """The staged files."""
        return self._parts.files() if self.direct else self._staged

    def _rows_reader(self, schema: pa.Schema) -> pa.RecordBatchReader:
        """The staged rows in the stored schema, one row group at a time."""
        if self.direct:
            table = self.lake / self.spec.name
            return pa.RecordBatchReader.from_batches(
                schema, stored_batches(self._parts.parts, schema, table)
            )
        return _staged_rows(self._staged, schema)

    def commit(self) -> int:
        """Commit the staged rows as one Delta version; returns rows written."""
        try:
            self._close()
            with exclusive(self.lake, self.spec.name):
                for attempt in range(COMMIT_RETRIES):
                    try:
                        self.version = _commit(self)
                        self.rows -= self.stale
                        break
                    except CommitFailedError:
                        if attempt == COMMIT_RETRIES - 1:
                            raise
                        time.sleep(0.05 * (attempt + 1))
                current = self.run
                if current is not None and current.lake == self.lake:
                    current.written[self.spec.name] = self.version
                else:
                    _republish(self.lake, self.spec.name, self.version)
        except (OSError, DeltaError) as err:
            raise (as_lake_error(err, self.lake) or err) from err
        finally:
            self.abort()
        return self.rows

    def finish(self) -> None:
        """Close the staged files: nothing more is written (before the writer goes to the
        process that commits it)."""
        try:
            self._close()
        except OSError as err:
            raise (as_lake_error(err, self.lake) or err) from err

    def owned(self) -> list[str]:
        """Every contribution the commit replaces: its own, ``replaces`` and those written."""
        return [self.source_id, *self.replaces, *sorted(self.contributions - {self.source_id})]

    def _close(self) -> None:
        """Finish the staged file being written; its file handle is closed even on error (a
        full disk), so no deleted file stays open."""
        writer, sink, self._writer, self._sink = self._writer, self._sink, None, None
        try:
            if writer is not None:
                writer.close()
        finally:
            if sink is not None and not sink.closed:
                sink.close()
            self._parts.close()

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._close()
        if self.version is None:  # moved into the table for a commit that did not happen
            with contextlib.suppress(OSError):
                unplace(self._placed, self.lake / self.spec.name)
        if self._scratch is not None:
            self._scratch.remove()
        else:
            shutil.rmtree(self._folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            (self.lake / STAGING).rmdir()  # only when no other write is staged

    def __enter__(self) -> ContributionWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _republish(root: Path, table: str, version: int) -> None:
    """A write outside a run into a table a run publishes is visible at once."""
    folder = root / RUNS
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        record = json.loads(path.read_text())
        if table in record.get("tables", {}):
            record["tables"][table] = version
            scratch = path.with_suffix(f".{os.getpid()}.tmp")
            scratch.write_text(json.dumps(record, indent=1, sort_keys=True))
            os.replace(scratch, path)


def _commit(writer: ContributionWriter) -> int:
    """One Delta commit of a staged contribution; sets the writer's ``superseded`` and
    ``stale`` counts and returns the new version."""
    table_spec, path = writer.spec, writer.lake / writer.spec.name
    schema = delta_schema(table_spec)
    ids = writer.owned()
    predicate = f"{SOURCE} IN ({', '.join(map(sql_literal, ids))})"
    current = writer.run
    metadata = current.metadata() if current is not None and current.lake == writer.lake else {}
    metadata["burstlake.source_id"] = writer.source_id
    partition_by = [DAY] if table_spec.partition_by else None
    if not is_delta(path):  # created empty first, so the rows below stream in
        write_deltalake(
            path, schema.empty_table(), mode="append", partition_by=partition_by, name=path.name
        )
    dt = DeltaTable(path)
    outcome = _resolve(dt, table_spec, writer) if _may_meet(dt, writer) else _Outcome()
    writer.superseded, writer.stale = outcome.superseded, outcome.stale
    if (
        writer.direct
        and not outcome.superseded
        and outcome.landing is None
        and _same_schema(dt, schema)
    ):
        metadata[PREDICATE] = predicate
        return _commit_files(writer, dt, schema, metadata)
    data: pa.Table | pa.RecordBatchReader = writer._rows_reader(schema)
    if outcome.landing is not None:
        data = outcome.landing.cast(schema)
    if outcome.superseded:
        if table_spec.partition_by:
            predicate += f" OR {DAY} IN ({', '.join(sql_literal(str(d)) for d in outcome.days)})"
        else:
            predicate = None  # the whole table is rewritten
        landing = outcome.landing if outcome.landing is not None else data.read_all()
        data = pa.concat_tables([landing.cast(schema), outcome.kept.cast(schema)])
    metadata[PREDICATE] = predicate or ""  # what the commit replaced (see undo_landing)
    properties = CommitProperties(custom_metadata=metadata)
    write_deltalake(
        dt,
        data,
        mode="overwrite",
        predicate=predicate,
        schema_mode="merge",
        commit_properties=properties,
    )
    dt.update_incremental()
    return dt.version()


def _commit_files(
    writer: ContributionWriter, dt: DeltaTable, schema: pa.Schema, metadata: dict
) -> int:
    """Commit the writer's own files (files.py) as add actions, with remove actions for the
    files holding its contributions' earlier rows, in one transaction."""
    path = writer.lake / writer.spec.name
    unplace([p for p in writer._placed if p not in writer._parts.parts], path)  # a retry
    scratch = writer.staging / f"rewrite-{uuid.uuid4().hex[:8]}"
    scratch.mkdir()
    removal = owned_files(
        dt, path, writer.owned(), PartWriter(scratch, schema, bool(writer.spec.partition_by))
    )
    writer._placed = [*writer._parts.parts, *removal.rewritten]
    place(writer._placed, path)
    checkpoint(f"commit-files-{writer.spec.name}")  # the fault tests' stop: moved, uncommitted
    actions = [p.add_action(path) for p in writer._placed] + removal.removes
    dt.create_write_transaction(
        actions,
        mode="append",
        schema=schema,
        partition_by=[DAY] if writer.spec.partition_by else None,
        # the predicate of the overwrite it stands for, as delta-rs records one
        commit_properties=CommitProperties(
            custom_metadata={**metadata, "operationParameters": {"predicate": metadata[PREDICATE]}}
        ),
    )
    dt.update_incremental()
    return dt.version()


def _same_schema(dt: DeltaTable, schema: pa.Schema) -> bool:
    """Whether the table stores ``schema``'s columns (an older table first takes the newer
    ones through delta-rs's schema merge)."""
    stored = [(f.name, str(f.type)) for f in dt.schema().fields]
    return stored == [(f.name, str(f.type)) for f in DeltaSchema.from_arrow(schema).fields]


def _ranged(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_temporal(kind)


def _may_meet(dt: DeltaTable, writer: ContributionWriter) -> bool:
    """Whether a row of another contribution may share a ``replace_key`` with a staged row:
    a file of the staged rows' days whose statistics for every key column overlap the
    staged rows' range (a file without them may). Only then does :func:`_resolve` read."""
    table_spec = writer.spec
    if not table_spec.replace_key or not writer._files:
        return False
    if table_spec.follows:
        return True  # decided by the rows of another table
    actions = pa.table(dt.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return False
    names = set(actions.column_names)
    keep = pa.repeat(pa.scalar(True), actions.num_rows)
    if table_spec.partition_by and f"partition.{DAY}" in names:
        days = pa.array(sorted(writer._days), pa.date32())
        found = actions.column(f"partition.{DAY}")
        if not pa.types.is_date32(found.type):
            found = pc.cast(found, pa.date32())
        keep = pc.is_in(found, value_set=days)
    for key, bounds in writer._ranges.items():
        low, high = f"min.{key}", f"max.{key}"
        if bounds is None or low not in names or high not in names:
            continue
        lows, highs = actions.column(low), actions.column(high)
        try:
            apart = pc.or_(pc.greater(lows, bounds[1]), pc.less(highs, bounds[0]))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, TypeError):
            continue  # statistics this check cannot compare: they narrow nothing
        keep = pc.and_(keep, pc.invert(pc.fill_null(apart, False)))
    if not pc.any(keep).as_py():
        return False
    if writer._keys is None:  # no set of staged keys to look them up in
        return True
    (key,) = table_spec.replace_key
    mine = set(writer.owned())
    for name in actions.filter(keep).column("path").to_pylist():
        found = distinct(str(writer.lake / table_spec.name / name), key)
        if any(sid not in mine and value in writer._keys for value, sid in found):
            return True
    return False


def _staged_rows(files: list[Path], schema: pa.Schema) -> pa.RecordBatchReader:
    """The staged rows, one staged batch at a time: a commit of millions of rows (a DXT
    trace) streams in bounded memory (a dataset scanner reads many batches ahead)."""

    def batches():
        for path in files:
            with pq.ParquetFile(path) as staged:
                for batch in staged.iter_batches(use_threads=False):
                    yield batch.cast(schema)

    return pa.RecordBatchReader.from_batches(schema, batches())


@dataclass
class _Outcome:
    """What a commit does besides replacing its own contributions (see :func:`_resolve`)."""

    superseded: int = 0  # rows of other contributions replaced by staged rows
    kept: pa.Table | None = None  # the other rows of the days (or the table) rewritten
    days: list = field(default_factory=list)  # the days rewritten
    stale: int = 0  # staged rows kept out: the lake holds newer content for their key
    landing: pa.Table | None = None  # the staged rows that land, when some are kept out


def _files_sql(paths: Iterable[str]) -> str:
    return "[" + ", ".join(sql_literal(p) for p in paths) + "]"


def _resolve(dt: DeltaTable, table_spec: TableSpec, writer: ContributionWriter) -> _Outcome:
    """Which staged rows land and which rows of other contributions they replace.

    Rows meet by ``replace_key`` (NULL matches NULL); only the days the staged rows touch are
    compared (the whole table when it is not partitioned). A staged row lands unless the lake
    holds a newer row of its key (``precedence``), or, for a table that ``follows`` another,
    unless another contribution holds that table's row of its key; the rows it meets are
    replaced. Records win by their content, so every order of landing ends the same.
    """
    if not table_spec.replace_key or not writer._files:
        return _Outcome()
    own = set(writer.owned())
    mine = ", ".join(map(sql_literal, own))
    key = table_spec.replace_key
    match = " AND ".join(f'o."{k}" IS NOT DISTINCT FROM n."{k}"' for k in key)
    with duckdb.connect() as con:
        staged = _files_sql(str(f) for f in writer._files)
        con.execute(f"CREATE TEMP VIEW s AS SELECT * FROM read_parquet({staged})")
        uris = [u.removeprefix("file://") for u in dt.file_uris()]
        if table_spec.partition_by:
            days = {f"{DAY}={d}" for d in writer._days}
            uris = [u for u in uris if Path(u).parent.name in days]
        _older_view(con, table_spec, uris, mine)
        land = _landing_sql(con, table_spec, writer.lake, mine)
        columns = ", ".join(f'"{k}"' for k in key)
        con.execute(f"CREATE TEMP TABLE n AS SELECT DISTINCT {columns} FROM s WHERE {land}")
        outcome = _Outcome(
            stale=con.execute(f"SELECT count(*) FROM s WHERE NOT ({land})").fetchone()[0]
        )
        if outcome.stale:
            outcome.landing = con.execute(f"SELECT * FROM s WHERE {land}").fetch_arrow_table()
        hit = f"EXISTS (SELECT 1 FROM n WHERE {match})"
        outcome.superseded = con.execute(f"SELECT count(*) FROM o WHERE {hit}").fetchone()[0]
        if not outcome.superseded:
            return outcome
        scope = ""
        if table_spec.partition_by:
            query = f"SELECT DISTINCT CAST({DAY} AS DATE) FROM o WHERE {hit}"
            outcome.days = [r[0] for r in con.execute(query).fetchall()]
            days = ", ".join(sql_literal(str(d)) for d in outcome.days)
            scope = f"CAST(o.{DAY} AS DATE) IN ({days}) AND "
        names = ", ".join(f'o."{c}"' for c in table_spec.schema.names)
        kept = con.execute(
            f"SELECT {names}, o.{SOURCE} FROM o WHERE {scope}NOT ({hit})"
        ).fetch_arrow_table()
    outcome.kept = conform(kept, table_spec).append_column(SOURCE, kept.column(SOURCE))
    if table_spec.partition_by:
        outcome.kept = outcome.kept.append_column(
            DAY, _day_keys(outcome.kept, table_spec.partition_by)
        )
    return outcome


def _older_view(
    con: duckdb.DuckDBPyConnection, table_spec: TableSpec, uris: list[str], mine: str
) -> None:
    """View ``o``: the rows of other contributions in ``uris`` (files of an older layout lack
    the contract's newer columns: they read as nulls)."""
    if not uris:
        con.execute(f"CREATE TEMP VIEW o AS SELECT * FROM s WHERE {SOURCE} IS NULL")
        return
    hive = "true" if table_spec.partition_by else "false"
    con.execute(
        f"CREATE TEMP VIEW f AS SELECT * FROM read_parquet({_files_sql(uris)}, "
        f"hive_partitioning={hive}, hive_types_autocast=false, union_by_name=true)"
    )
    stored = {row[0] for row in con.execute("DESCRIBE f").fetchall()}
    newer = "".join(f', NULL AS "{c}"' for c in table_spec.schema.names if c not in stored)
    con.execute(f"CREATE TEMP VIEW o AS SELECT *{newer} FROM f WHERE {SOURCE} NOT IN ({mine})")


def _landing_sql(
    con: duckdb.DuckDBPyConnection, table_spec: TableSpec, lake: Path, mine: str
) -> str:
    """SQL condition on a staged row ``s``: whether it lands (see :func:`_resolve`)."""
    key = table_spec.replace_key
    if table_spec.follows:
        parent = spec(table_spec.follows)
        uris = (
            [u.removeprefix("file://") for u in _open(lake, parent.name, None).file_uris()]
            if is_delta(lake / parent.name)
            else []
        )
        if not uris:
            return "true"
        pkey = ", ".join(f'"{k}"' for k in parent.replace_key)
        con.execute(
            f"CREATE TEMP TABLE x AS SELECT DISTINCT {pkey} FROM read_parquet({_files_sql(uris)}, "
            f"hive_partitioning=false, union_by_name=true) WHERE {SOURCE} NOT IN ({mine})"
        )
        same = " AND ".join(f'x."{k}" IS NOT DISTINCT FROM s."{k}"' for k in parent.replace_key)
        return f"NOT EXISTS (SELECT 1 FROM x WHERE {same})"
    if not table_spec.precedence:
        return "true"
    ranks = ", ".join(f"{expr} AS r{i}" for i, expr in enumerate(table_spec.precedence))
    as_of = f"max({table_spec.as_of or 'NULL'}) OVER (PARTITION BY {SOURCE}) AS ra"
    columns = ", ".join(f'"{k}"' for k in key)
    names = table_spec.schema.names
    content = "hash(" + ", ".join(f'"{c}"' for c in names) + ")"
    con.execute(
        f"CREATE TEMP TABLE x AS SELECT {columns}, {SOURCE}, mine, {ranks}, {as_of}, "
        f"{content} AS h FROM (SELECT *, true AS mine FROM s "
        "UNION ALL BY NAME SELECT *, false AS mine FROM o)"
    )
    order = ", ".join(f"r{i} DESC NULLS LAST" for i in range(len(table_spec.precedence)))
    con.execute(
        f"CREATE TEMP TABLE w AS SELECT {columns}, mine, h FROM x QUALIFY row_number() OVER "
        f"(PARTITION BY {columns} ORDER BY {order}, ra DESC NULLS LAST, {SOURCE} DESC) = 1"
    )
    same = " AND ".join(f'w."{k}" IS NOT DISTINCT FROM s."{k}"' for k in key)
    # a staged row the same as the newest lands too (it changes nothing): not older
    staged = "hash(" + ", ".join(f's."{c}"' for c in names) + ")"
    return f"EXISTS (SELECT 1 FROM w WHERE {same} AND (w.mine OR w.h = {staged}))"


def write_table(
    lake: str | os.PathLike | None,
    table: str,
    rows: pa.Table | Iterable[pa.Table | pa.RecordBatch],
    source_id: str,
    replaces: Iterable[str] = (),
) -> int:
    """Write a whole contribution (one table, or an iterable of batches) as one commit.

    ``replaces`` names other source_ids whose rows the same commit removes (a file re-ingested
    with new content replaces what its earlier content wrote).
    """
    with ContributionWriter(lake, table, source_id, replaces) as writer:
        for batch in [rows] if isinstance(rows, pa.Table) else rows:
            writer.write(batch)
    return writer.rows


def delete_contribution(
    lake: str | os.PathLike | None, source_id: str, tables: Iterable[str] | None = None
) -> int:
    """Delete what ``source_id`` contributed to ``tables`` (default: every table), one commit
    per table that has its rows. Returns rows deleted."""
    root = lake_path(lake)
    names = list(tables) if tables is not None else sorted(REGISTRY)
    removed = 0
    for name in names:
        path = root / name
        if not is_delta(path):
            continue
        try:
            with exclusive(root, name):
                dt = DeltaTable(path)
                metrics = dt.delete(
                    f"{SOURCE} = {sql_literal(source_id)}",
                    commit_properties=CommitProperties(
                        custom_metadata={"burstlake.deleted": source_id}
                    ),
                )
                removed += int(metrics.get("num_deleted_rows") or 0)
                dt.update_incremental()
                _republish(root, name, dt.version())
        except (OSError, DeltaError) as err:
            raise (as_lake_error(err, root) or err) from err
    return removed
