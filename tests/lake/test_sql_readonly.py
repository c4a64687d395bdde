"""`burstlake sql` only reads, and only the lake's own data files (issue 25, class 1): every
statement that writes, attaches, installs, loads or changes settings is refused in one line,
bare or wrapped (EXPLAIN, EXPLAIN ANALYZE, a CTE, a PIVOT, a subquery, a table function), and
the lake is byte for byte unchanged afterwards; the connection itself cannot make a file; a
query that needs too much memory is stopped by the limit."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from burstlake import catalog, readonly
from burstlake.cli import main
from burstlake.lake import read_table, table_files, write_table


def _rows(n: int) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "node": "cn7",
                "ts": datetime(2024, 3, 1, h, tzinfo=UTC),
                "interval_s": 10,
                "read_bytes": h,
            }
            for h in range(n)
        ]
    )


@pytest.fixture(scope="module")
def lake_with_rows(tmp_path_factory) -> Path:
    lake = tmp_path_factory.mktemp("sql") / "lake"
    lake.mkdir()
    write_table(lake, "node_io", _rows(3), "a")
    catalog.refresh(lake)
    return lake


def _state(root: Path) -> dict[str, str]:
    """Every file under ``root`` and a hash of its bytes."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _refused(lake: Path, query: str, capsys) -> str:
    assert main(["sql", "--lake", str(lake), query]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("burstlake sql:"), err
    return err[0]


def _writers(lake: Path) -> dict[str, str]:
    """One statement of each kind that writes or widens the connection, aimed at the lake."""
    data = table_files(lake, "node_io")[0]
    log = lake / "node_io" / "_delta_log" / "00000000000000000099.json"
    return {
        "COPY": f"COPY (SELECT 1 AS x) TO '{data}' (FORMAT parquet, USE_TMP_FILE false)",
        "COPY-log": f"COPY (SELECT 1 AS x) TO '{log}' (FORMAT json)",
        "EXPORT": f"EXPORT DATABASE '{lake / 'exported'}'",
        "ATTACH": f"ATTACH '{lake / 'other.duckdb'}' AS o",
        "INSTALL": "INSTALL httpfs",
        "LOAD": "LOAD httpfs",
        "CREATE": "CREATE TABLE t AS SELECT 1 AS x",
        "SET": "SET enable_external_access = true",
    }


WRAPPERS = {
    "bare": "{w}",
    "explain": "EXPLAIN {w}",
    "explain-analyze": "EXPLAIN ANALYZE {w}",
    "explain-options": "EXPLAIN (FORMAT json) {w}",
    "explain-commented": "/* a */ EXPLAIN -- b\n ANALYZE /* c */ {w}",
    "cte": "WITH a AS ({w}) SELECT * FROM a",
    "pivot": "PIVOT ({w}) ON x",
    "subquery": "SELECT * FROM ({w})",
    "table-function": "SELECT * FROM query('{q}')",
    "serialized": "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('{q}'))",
    "second-statement": "SELECT 1; {w}",
}
WRITERS = ("COPY", "COPY-log", "EXPORT", "ATTACH", "INSTALL", "LOAD", "CREATE", "SET")


@pytest.mark.parametrize("wrapper", WRAPPERS)
@pytest.mark.parametrize("writer", WRITERS)
def test_every_wrapper_of_every_write_is_refused(
    lake_with_rows, writer, wrapper, capsys, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # a relative path would land here
    statement = _writers(lake_with_rows)[writer]
    query = WRAPPERS[wrapper].format(w=statement, q=statement.replace("'", "''"))
    before = _state(lake_with_rows)
    _refused(lake_with_rows, query, capsys)
    assert _state(lake_with_rows) == before
    assert not list(tmp_path.iterdir())
    assert read_table(lake_with_rows, "node_io").num_rows == 3


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO node_io SELECT * FROM node_io",
        "ATTACH 'other.duckdb' AS o (READ_ONLY false)",
        "SELECT 1; DROP VIEW node_io",
        "CALL enable_logging(storage = 'file', storage_path = 'logs')",
        "SELECT * FROM enable_logging(storage = 'file', storage_path = 'logs')",
        "SELECT * FROM copy_database('memory', 'memory')",
        "SELECT * FROM import_database('node_io')",
        "PIVOT node_io ON node USING sum(read_bytes); SELECT 1",  # two statements as written
        "SELECT 1; PIVOT node_io ON node USING sum(read_bytes)",
        "PIVOT node_io ON node; DROP VIEW node_io",
        "PIVOT node_io ON node; CREATE TYPE t AS ENUM ('a')",
        "CREATE TYPE t AS ENUM ('a'); SELECT 1",
        "CREATE TABLE t AS PIVOT node_io ON node USING sum(read_bytes)",
        "INSERT INTO node_io PIVOT node_io ON node USING sum(read_bytes)",
        "EXPLAIN ANALYZE CREATE TABLE t AS PIVOT node_io ON node",
        "PIVOT (SELECT * FROM checkpoint()) ON x",  # a PIVOT's calls are checked too
        'SELECT * FROM (PIVOT (FROM main."force_checkpoint" ()) ON x)',
        "PIVOT (SELECT * FROM query('SELECT 1 AS x')) ON x",
        "SELECT * FROM query('SELECT 1 AS one')",  # SQL as text: not checked, so refused
        "SELECT * FROM (SELECT 1) WHERE 1 IN (SELECT 1 FROM checkpoint())",
        "SELECT * FROM main.force_checkpoint()",
        "EXPLAIN ANALYZE SELECT * FROM enable_logging(storage = 'file', storage_path = 'l')",
        "WITH a AS (SELECT * FROM checkpoint()) SELECT * FROM a",
        "SELECT (SELECT count(*) FROM copy_database('memory', 'memory')) AS n",
        "PRAGMA enable_profiling",
        "CHECKPOINT",
        "",
        "   ",
    ],
)
def test_other_escapes_are_refused(lake_with_rows, statement, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = _state(lake_with_rows)
    _refused(lake_with_rows, statement, capsys)
    assert _state(lake_with_rows) == before and not list(tmp_path.iterdir())


def test_every_table_function_of_duckdb_is_classified():
    """A DuckDB upgrade that adds a table function fails here until it is classified."""
    refused = {
        "add_parquet_key",
        "checkpoint",
        "copy_database",
        "force_checkpoint",
        "import_database",
        "json_execute_serialized_sql",
        "query",
        "truncate_duckdb_logs",
    }
    with duckdb.connect() as con:
        names = {
            name
            for (name,) in con.execute(
                "SELECT DISTINCT function_name FROM duckdb_functions() "
                "WHERE function_type = 'table'"
            ).fetchall()
        }
    for name in names:
        allowed = name in readonly.READ_FUNCTIONS or name.startswith(
            readonly.READ_FUNCTION_PREFIXES
        )
        stateful = name in refused or name.startswith(("enable_", "disable_", "verify_"))
        assert allowed != stateful, f"table function {name}: classify it in burstlake.readonly"


def test_files_outside_the_lake_cannot_be_read(lake_with_rows, tmp_path, capsys):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    for query in (f"SELECT * FROM read_csv('{secret}')", f"SELECT * FROM glob('{tmp_path}/*')"):
        reason = _refused(lake_with_rows, query, capsys)
        assert "Permission Error" in reason


def test_the_connection_itself_cannot_make_a_file(lake_with_rows, tmp_path):
    """The second lock alone, past the statement check: no new file, in the lake or outside."""
    root = lake_with_rows
    files = readonly.lake_files(root, table_files(root, "node_io"))
    con = catalog.connect(root)
    try:
        readonly.lock(con, files, "1GB", 1)
        before = _state(root)
        data = table_files(root, "node_io")[0]  # COPY writes a scratch file beside it first
        log = root / "node_io" / "_delta_log" / "00000000000000000099.json"
        for target in (data, root / "node_io" / "new.parquet", log, tmp_path / "x"):
            with pytest.raises(duckdb.PermissionException):
                con.execute(f"COPY (SELECT 1 AS x) TO '{target}'")
        with pytest.raises(duckdb.Error):
            con.execute("SET lock_configuration = false")
        with pytest.raises(duckdb.Error):
            con.execute("INSTALL httpfs")
        assert con.execute("SELECT count(*) FROM node_io").fetchone() == (3,)
        assert _state(root) == before and not list(tmp_path.iterdir())
    finally:
        con.close()


def test_reads_still_work(lake_with_rows, capsys):
    for query in (
        "SELECT count(*) AS n FROM node_io",
        "WITH a AS (SELECT * FROM node_io) SELECT node, sum(read_bytes) FROM a GROUP BY node",
        "SELECT * FROM (SELECT node FROM node_io) s",
        "PIVOT node_io ON node IN ('cn7') USING sum(read_bytes)",
        "PIVOT node_io ON node USING sum(read_bytes)",  # DuckDB makes an enum type first
        "-- a; comment\nPIVOT node_io /* ; */ ON node USING sum(read_bytes);",
        "WITH p AS (PIVOT node_io ON node USING sum(read_bytes)) SELECT * FROM p",
        "UNPIVOT (PIVOT node_io ON node USING sum(read_bytes) GROUP BY ts) ON cn7 "
        "INTO NAME k VALUE v",
        "UNPIVOT node_io ON read_bytes, interval_s INTO NAME k VALUE v",
        "SELECT ';' AS semicolon, 'DROP VIEW node_io; --' AS s FROM node_io",
        "EXPLAIN SELECT * FROM node_io",
        "EXPLAIN ANALYZE SELECT count(*) FROM node_io",
        "/* why */ EXPLAIN (FORMAT json) SELECT 1",
        "DESCRIBE node_io",
        "SHOW TABLES",
        "SUMMARIZE node_io",
        "FROM node_io LIMIT 1",
        "PRAGMA show_tables",
        "SELECT * FROM range(3) r JOIN duckdb_tables() ON true",
    ):
        assert main(["sql", "--lake", str(lake_with_rows), query]) == 0, query
    assert "node" in capsys.readouterr().out
    assert (
        catalog.sql(lake_with_rows, "SELECT sum(read_bytes) AS s FROM node_io")["s"][0].as_py() == 3
    )


def test_a_pivot_without_in_list_answers_and_leaves_the_lake_as_it_was(
    lake_with_rows, capsys, tmp_path, monkeypatch
):
    """Issue 41: a read-only PIVOT was refused as two statements (DuckDB makes an enum type of
    the pivot's values first); it runs, its columns are the values, the lake is unchanged."""
    monkeypatch.chdir(tmp_path)
    before = _state(lake_with_rows)
    query = "PIVOT node_io ON node USING sum(read_bytes) GROUP BY interval_s"
    assert main(["sql", "--lake", str(lake_with_rows), query]) == 0
    assert "cn7" in capsys.readouterr().out
    result = catalog.sql(lake_with_rows, query)
    assert result.column_names == ["interval_s", "cn7"]
    assert result.to_pylist() == [{"interval_s": 10, "cn7": 0 + 1 + 2}]
    unpivot = catalog.sql(
        lake_with_rows, f"UNPIVOT ({query}) ON cn7 INTO NAME node VALUE read_bytes"
    )
    assert unpivot.to_pylist() == [{"interval_s": 10, "node": "cn7", "read_bytes": 3}]
    assert _state(lake_with_rows) == before and not list(tmp_path.iterdir())
    assert read_table(lake_with_rows, "node_io").num_rows == 3


def test_a_memory_bomb_is_stopped_by_the_limit(lake_with_rows, capsys):
    query = "SELECT string_agg(repeat('x', 1000), '') AS s FROM range(3000000)"
    args = ["sql", "--lake", str(lake_with_rows), "--memory-limit", "256MB", "--threads", "1"]
    assert main([*args, query]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "memory limit of 256MB" in err[0] and "--memory-limit" in err[0]


@pytest.mark.parametrize("setting", ["lots", "0GB", "-1%", "150%", "1e9"])
def test_a_bad_memory_limit_is_refused(lake_with_rows, setting, capsys):
    args = ["sql", "--lake", str(lake_with_rows), f"--memory-limit={setting}", "SELECT 1"]
    assert main(args) == 2
    assert f"memory limit {setting!r}" in capsys.readouterr().err


def test_memory_limit_default_is_a_share_of_ram(monkeypatch):
    monkeypatch.delenv("BURSTLAKE_SQL_MEMORY", raising=False)
    ram_mib = (readonly.os.sysconf("SC_PAGE_SIZE") * readonly.os.sysconf("SC_PHYS_PAGES")) >> 20
    assert readonly.memory_limit() == f"{ram_mib // 4}MiB"
    monkeypatch.setenv("BURSTLAKE_SQL_MEMORY", "2GiB")
    assert readonly.memory_limit() == "2GiB"
    assert readonly.memory_limit("25%") == f"{ram_mib // 4}MiB"


def test_threads_must_be_positive(lake_with_rows, capsys):
    assert main(["sql", "--lake", str(lake_with_rows), "--threads", "0", "SELECT 1"]) == 2
    assert "--threads must be 1..256, not 0" in capsys.readouterr().err


def test_a_large_result_is_streamed_not_held(lake_with_rows, capsys):
    """30 M rows (240 MB held whole) under a 100 MB limit: the query stops after the rows
    printed, and says there are more."""
    args = ["sql", "--lake", str(lake_with_rows), "--memory-limit", "100MB", "--max-rows", "2"]
    assert main([*args, "SELECT * FROM range(30000000)"]) == 0
    out = capsys.readouterr().out
    assert "(more rows than the 2 shown: raise --max-rows, or SELECT count(*))" in out
    assert out.splitlines()[2:4] == ["0    ", "1    "] or "0" in out.splitlines()[2]
