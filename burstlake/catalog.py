"""``<lake>/catalog.duckdb``: one DuckDB view per lake table, so SQL works.

See docs/design.md, 'The lake'.

The catalog is derived data. Each view reads the Parquet files of one committed Delta version
of its table (the version :func:`burstlake.lake.read_version` names, so all views together are
one consistent state of the lake), with a ``day`` column for day-partitioned tables; a table
never written is an empty table with the contract's columns. Paths are absolute, so
``duckdb lake/catalog.duckdb`` answers from any folder; the catalog records the folder it was
built for, and every burstlake command (``burstlake sql``, ``burstlake lake catalog``) rebuilds
it for a moved or copied lake, which then reads its own files.

The catalog is rebuilt whole into a scratch file and moved into place, so a kill or a full
disk never leaves a broken one; :func:`connect` rebuilds it whenever it is missing, unreadable,
stale (a table has a newer version) or was built for another folder.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from burstlake import readonly
from burstlake.lake import (
    DAY,
    READERS,
    Cluster,
    LakeError,
    as_lake_error,
    checkpoint,
    clean_leftovers,
    cluster_of,
    exclusive,
    lake_path,
    read_versions,
    shared,
    sql_literal,
    table_files,
    table_layout,
)
from burstlake.schemas import REGISTRY, TableSpec

log = logging.getLogger(__name__)

CATALOG = "catalog.duckdb"
STREAM_ROWS = 65_536  # rows per batch of a streamed query result
MAX_HEAD_ROWS = 1_000_000  # rows `burstlake sql` may print
CELL_CHARS = 1_000  # characters of a text cell `burstlake sql` prints (cut in DuckDB)
META = "_burstlake_versions"  # table name -> Delta version each view reads


def catalog_path(lake: str | os.PathLike | None = None) -> Path:
    return lake_path(lake) / CATALOG


def _empty(spec: TableSpec) -> pa.Table:
    return pa.Table.from_pylist([], schema=spec.schema)


def _define(con: duckdb.DuckDBPyConnection, spec: TableSpec, root: Path, version: int | None):
    name = f'"{spec.name}"'
    files, stored = table_layout(root, spec.name, version) if version is not None else ([], set())
    if not files:
        empty = _empty(spec)  # noqa: F841 - read by DuckDB
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM empty")
        return
    paths = "[" + ", ".join(sql_literal(str(f)) for f in files) + "]"
    types = dict(zip(spec.schema.names, con.from_arrow(_empty(spec)).dtypes, strict=True))
    columns = ", ".join(  # a column newer than the lake's files reads as null
        f'"{c}"' if c in stored else f'CAST(NULL AS {types[c]}) AS "{c}"' for c in spec.schema.names
    )
    # files written before a column was added lack it: match columns by name
    options = "union_by_name = true"
    if spec.partition_by:
        hive = "hive_partitioning = true, hive_types_autocast = false"
        source = f"read_parquet({paths}, {hive}, {options})"
        columns += f", CAST({DAY} AS DATE) AS {DAY}"
    else:
        source = f"read_parquet({paths}, hive_partitioning = false, {options})"
    con.execute(f"CREATE VIEW {name} AS SELECT {columns} FROM {source}")


def refresh(lake: str | os.PathLike | None = None, tables: list[str] | None = None) -> None:
    """Rebuild the catalog from the lake's committed versions and move it into place.

    ``tables`` is accepted for callers that name what they wrote; the whole catalog is always
    rebuilt (views only: it takes milliseconds), so it is never half old, half new.
    """
    del tables
    root = lake_path(lake)
    root.mkdir(parents=True, exist_ok=True)
    clean_leftovers(root)
    scratch = root / f".catalog-{os.getpid()}-{uuid.uuid4().hex[:8]}.duckdb"
    try:
        with exclusive(root, "catalog"):
            versions = read_versions(root)
            con = duckdb.connect(str(scratch))
            try:
                con.execute(f"SET file_search_path = {sql_literal(str(root))}")
                for name, version in versions.items():
                    _define(con, REGISTRY[name], root, version)
                con.execute(f'CREATE TABLE "{META}" (root VARCHAR, name VARCHAR, version BIGINT)')
                con.executemany(
                    f'INSERT INTO "{META}" VALUES (?, ?, ?)',
                    [(str(root), n, v) for n, v in versions.items()],
                )
                con.execute("CHECKPOINT")
            finally:
                con.close()
            Path(f"{root / CATALOG}.wal").unlink(missing_ok=True)
            os.replace(scratch, root / CATALOG)
    except (OSError, duckdb.Error) as err:
        error = as_lake_error(err, root)
        raise (error or LakeError(f"catalog {root / CATALOG} not rebuilt: {err}")) from err
    finally:
        for leftover in root.glob(f"{scratch.name}*"):
            leftover.unlink(missing_ok=True)


def is_current(lake: str | os.PathLike | None = None) -> bool:
    """Whether the catalog exists, opens, was built here and names the current versions."""
    root = lake_path(lake)
    path = root / CATALOG
    if not path.exists():
        return False
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error:
        return False
    try:
        rows = con.execute(f'SELECT root, name, version FROM "{META}"').fetchall()
    except duckdb.Error:
        return False
    finally:
        con.close()
    built = {name: version for _, name, version in rows}
    return all(r == str(root) for r, _, _ in rows) and built == read_versions(root)


def ensure(lake: str | os.PathLike | None = None) -> bool:
    """Rebuild the catalog if it is missing, corrupt, stale or from another folder.

    Returns whether it was rebuilt.
    """
    if is_current(lake):
        return False
    if catalog_path(lake).exists():
        log.info("catalog %s is stale or unreadable; rebuilding it", catalog_path(lake))
    refresh(lake)
    return True


def connect(
    lake: str | os.PathLike | None = None,
    read_only: bool = True,
    cluster: Cluster | str | None = None,
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to the lake's catalog, rebuilt first unless it is current; with
    ``cluster`` (a machine, or its name), every table that names machines shows only that
    machine's rows."""
    root = lake_path(lake)
    ensure(root)
    if isinstance(cluster, str):
        cluster = cluster_of(root, cluster)  # an unknown name: one line listing the machines
    con = duckdb.connect(str(root / CATALOG), read_only=read_only)
    con.execute(f"SET file_search_path = {sql_literal(str(root))}")
    if cluster is not None:
        database = con.execute("SELECT current_database()").fetchone()[0]
        for name, table_spec in sorted(REGISTRY.items()):
            if "cluster" in table_spec.schema.names:
                con.execute(
                    f"CREATE TEMP VIEW {name} AS SELECT * FROM "
                    f'"{database}".main.{name} WHERE {cluster.sql()}'
                )
    return con


def sql(
    lake: str | os.PathLike | None,
    query: str,
    memory: str | None = None,
    threads: int | None = None,
) -> pa.Table:
    """Run one read-only SQL query on the lake's catalog and return the result as Arrow.

    The query cannot damage the lake or look beyond it (:mod:`burstlake.readonly`): it must be
    one SELECT (or EXPLAIN of one, DESCRIBE, SHOW), and the connection may open only the data
    files its views read, within a memory limit (``memory``, e.g. ``4GB`` or ``25%``; default
    :data:`burstlake.readonly.DEFAULT_MEMORY` of the RAM) and ``threads``.
    """
    with _read_only(lake, query, memory, threads) as result:
        return result.read_all()


def sql_head(
    lake: str | os.PathLike | None,
    query: str,
    rows: int,
    memory: str | None = None,
    threads: int | None = None,
) -> tuple[pa.Table, bool]:
    """The first ``rows`` rows of :func:`sql`'s result, and whether it has more. The query runs
    under ``LIMIT rows + 1`` (DuckDB stops there: a cross join of 1e13 rows is not counted) with
    every text, blob or nested cell cut to :data:`CELL_CHARS` characters in DuckDB, so the rows
    held in Python are at most ``rows + 1`` of bounded width whatever the table's; a statement
    that cannot be a subquery (EXPLAIN, DESCRIBE, SHOW) is streamed in batches of ``rows + 1``
    and stopped there."""
    if not 0 <= rows <= MAX_HEAD_ROWS:
        raise ValueError(f"--max-rows must be 0..{MAX_HEAD_ROWS}, not {rows}")
    kept: list[pa.RecordBatch] = []
    total = 0
    with _read_only(lake, query, memory, threads, head=rows + 1) as result:
        for batch in result:
            kept.append(batch.slice(0, rows + 1 - total))
            total += kept[-1].num_rows
            if total > rows:
                break
        head = pa.Table.from_batches(kept, schema=result.schema)
    return head.slice(0, rows), total > rows


def _head_query(con: duckdb.DuckDBPyConnection, query: str, rows: int) -> str | None:
    """``query`` as a subquery under ``LIMIT rows`` with wide cells cut (see :func:`sql_head`),
    or None when it cannot be a subquery."""
    inner = query.strip().rstrip(";").strip()
    try:
        described = con.execute(f"DESCRIBE SELECT * FROM ({inner})").fetchall()
    except duckdb.Error:
        return None
    columns = []
    for name, kind, *_ in described:
        quoted = '"' + str(name).replace('"', '""') + '"'
        if kind == "VARCHAR":
            text = quoted
        elif kind == "BLOB" or "[" in kind or kind.startswith(("STRUCT", "MAP", "UNION", "JSON")):
            text = f"CAST({quoted} AS VARCHAR)"
        else:
            columns.append(quoted)
            continue
        columns.append(
            f"CASE WHEN strlen({text}) > {CELL_CHARS} THEN left({text}, {CELL_CHARS - 1}) || '…' "
            f"ELSE {text} END AS {quoted}"
        )
    return f"SELECT {', '.join(columns)} FROM ({inner}) LIMIT {rows}"


@contextlib.contextmanager
def _read_only(
    lake: str | os.PathLike | None,
    query: str,
    memory: str | None,
    threads: int | None,
    head: int | None = None,
) -> Iterator[pa.RecordBatchReader]:
    """The result of one read-only query, streamed (see :func:`sql`; ``head``: its first rows
    alone, see :func:`sql_head`); DuckDB errors as one-line ValueErrors. The lake's
    :data:`~burstlake.lake.READERS` lock is held shared from before the catalog is read until
    the last row, so a vacuum never deletes a file the query reads (it waits)."""
    readonly.check(query)
    readonly.memory_limit(memory)  # a bad setting is refused before any work
    root = lake_path(lake).resolve()
    with shared(root, READERS):
        con = connect(root)
        try:
            versions = con.execute(f'SELECT name, version FROM "{META}"').fetchall()
            files = [f for name, v in versions if v is not None for f in table_files(root, name, v)]
            readonly.lock(con, readonly.lake_files(root, files), memory, threads)
            checkpoint("sql-query")  # the fault tests' pause: the files are named, not yet read
            if head is None:
                yield con.execute(query).fetch_record_batch(STREAM_ROWS)
            else:
                limited = _head_query(con, query, head)
                batch = max(1, min(head, STREAM_ROWS))
                yield con.execute(limited or query).fetch_record_batch(batch)
        except duckdb.Error as err:
            raise ValueError(readonly.describe_error(err, memory)) from err
        finally:
            con.close()


def delta_connection() -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the ``delta`` extension loaded from the pinned wheel's file.

    ``delta_scan('/abs/path/<lake>/<table>')`` then reads a table's newest version straight
    from its Delta log, independently of the catalog (no download: the extension ships with the
    ``duckdb-extension-delta`` package, built for the pinned DuckDB).
    """
    import duckdb_extension_delta

    folder = Path(duckdb_extension_delta.__file__).parent / "extensions"
    found = sorted(folder.glob(f"v{duckdb.__version__}/delta.duckdb_extension"))
    if not found:
        raise LakeError(
            f"the DuckDB delta extension for DuckDB {duckdb.__version__} is not in {folder}; "
            "install the duckdb-extension-delta version equal to duckdb's"
        )
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    with contextlib.suppress(duckdb.Error):
        con.execute("SET autoinstall_known_extensions = false")
    con.execute(f"LOAD {sql_literal(str(found[0]))}")
    return con
