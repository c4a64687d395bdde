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
from pathlib import Path

import duckdb
import pyarrow as pa

from burstlake.lake import (
    DAY,
    Cluster,
    LakeError,
    _lake_error,
    _locked,
    clean_leftovers,
    lake_path,
    read_versions,
    table_layout,
)
from burstlake.schemas import REGISTRY, TableSpec

log = logging.getLogger(__name__)

CATALOG = "catalog.duckdb"
META = "_burstlake_versions"  # table name -> Delta version each view reads


def catalog_path(lake: str | os.PathLike | None = None) -> Path:
    return lake_path(lake) / CATALOG


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _empty(spec: TableSpec) -> pa.Table:
    return pa.Table.from_pylist([], schema=spec.schema)


def _define(con: duckdb.DuckDBPyConnection, spec: TableSpec, root: Path, version: int | None):
    name = f'"{spec.name}"'
    files, stored = table_layout(root, spec.name, version) if version is not None else ([], set())
    if not files:
        empty = _empty(spec)  # noqa: F841 - read by DuckDB
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM empty")
        return
    paths = "[" + ", ".join(_quote(str(f)) for f in files) + "]"
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
        with _locked(root, "catalog"):
            versions = read_versions(root)
            con = duckdb.connect(str(scratch))
            try:
                con.execute(f"SET file_search_path = {_quote(str(root))}")
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
        error = _lake_error(err, root)
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
    lake: str | os.PathLike | None = None, read_only: bool = True, cluster: Cluster | None = None
) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection to the lake's catalog, rebuilt first unless it is current; with
    ``cluster``, every table that names machines shows only that machine's rows."""
    root = lake_path(lake)
    ensure(root)
    con = duckdb.connect(str(root / CATALOG), read_only=read_only)
    con.execute(f"SET file_search_path = {_quote(str(root))}")
    if cluster is not None:
        database = con.execute("SELECT current_database()").fetchone()[0]
        for name, table_spec in sorted(REGISTRY.items()):
            if "cluster" in table_spec.schema.names:
                con.execute(
                    f"CREATE TEMP VIEW {name} AS SELECT * FROM "
                    f'"{database}".main.{name} WHERE {cluster.sql()}'
                )
    return con


# What a query on the lake may be: reads only. DESCRIBE, SHOW, SUMMARIZE and PRAGMA show_*
# parse as SELECT; COPY, ATTACH, INSERT, CREATE, SET, CALL, LOAD, ... are refused.
READ_STATEMENTS = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.EXPLAIN})


def sql(lake: str | os.PathLike | None, query: str) -> pa.Table:
    """Run one read-only SQL query on the lake's catalog and return the result as Arrow.

    The query cannot damage the lake or look beyond it: it must be one SELECT (or EXPLAIN), and
    the connection may read files only inside the lake folder, with its configuration locked.
    """
    try:
        statements = duckdb.extract_statements(query)
    except duckdb.Error as err:
        raise ValueError(str(err).splitlines()[0]) from err
    if len(statements) != 1:
        raise ValueError(f"one query at a time, got {len(statements)} statements")
    if statements[0].type not in READ_STATEMENTS:
        raise ValueError(
            f"the lake is read-only here: {statements[0].type.name} statements are refused "
            "(write through burstlake ingest, metrics or replay)"
        )
    root = lake_path(lake).resolve()
    con = connect(root)
    try:
        # The views name the lake's files by absolute path; the relative folders are the
        # lake's own tables too (a query naming read_parquet('node_io/...') itself).
        folders = [f"{root}/", *(f"{p.name}/" for p in root.iterdir() if p.is_dir())]
        con.execute(f"SET allowed_directories = [{', '.join(map(_quote, folders))}]")
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        return con.execute(query).fetch_arrow_table()
    except duckdb.Error as err:
        raise ValueError(str(err).splitlines()[0]) from err
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
    con.execute(f"LOAD {_quote(str(found[0]))}")
    return con
