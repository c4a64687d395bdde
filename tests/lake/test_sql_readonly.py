"""`burstlake sql` only reads, and only the lake's own files: writes, attaching databases,
changing settings and reading files outside the lake each get one line, and the lake is
unchanged afterwards."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from burstlake import catalog
from burstlake.cli import main
from burstlake.lake import read_table, write_table


@pytest.fixture
def lake_with_rows(lake):
    rows = [
        {
            "node": "cn7",
            "ts": datetime(2024, 3, 1, h, tzinfo=UTC),
            "interval_s": 10,
            "read_bytes": h,
        }
        for h in range(3)
    ]
    write_table(lake, "node_io", pa.Table.from_pylist(rows), "a")
    catalog.refresh(lake)
    return lake


def _refused(lake, query: str, capsys) -> str:
    assert main(["sql", "--lake", str(lake), query]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("burstlake sql:"), err
    return err[0]


@pytest.mark.parametrize(
    "statement",
    [
        "COPY (SELECT 1 AS x) TO 'node_io/evil.parquet'",
        "CREATE TABLE t AS SELECT 1",
        "INSERT INTO node_io SELECT * FROM node_io",
        "ATTACH 'other.duckdb' AS o (READ_ONLY false)",
        "SET enable_external_access = true",
        "SELECT 1; DROP VIEW node_io",
    ],
)
def test_statements_that_write_are_refused(lake_with_rows, statement, capsys):
    before = sorted(p.name for p in (lake_with_rows / "node_io").rglob("*"))
    reason = _refused(lake_with_rows, statement, capsys)
    assert "refused" in reason or "one query at a time" in reason
    assert sorted(p.name for p in (lake_with_rows / "node_io").rglob("*")) == before
    assert read_table(lake_with_rows, "node_io").num_rows == 3


def test_files_outside_the_lake_cannot_be_read(lake_with_rows, tmp_path, capsys):
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    reason = _refused(lake_with_rows, f"SELECT * FROM read_csv('{secret}')", capsys)
    assert "Permission Error" in reason


def test_reads_still_work(lake_with_rows, capsys):
    for query in ("SELECT count(*) AS n FROM node_io", "DESCRIBE node_io", "SUMMARIZE node_io"):
        assert main(["sql", "--lake", str(lake_with_rows), query]) == 0
    assert "node" in capsys.readouterr().out
    assert (
        catalog.sql(lake_with_rows, "SELECT sum(read_bytes) AS s FROM node_io")["s"][0].as_py() == 3
    )
