"""The lake's writer, reader and DuckDB catalog (SPEC §3)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest

from burstlake import catalog
from burstlake.lake import ContributionWriter, read_table, table_files, write_table


def _io_rows(node: str, hours: list[int], day: int = 1) -> pa.Table:
    return pa.Table.from_pylist(
        [
            {
                "node": node,
                "ts": datetime(2024, 3, day, h, tzinfo=UTC),
                "interval_s": 10,
                "read_bytes": 100 * h,
                "write_bytes": 1,
            }
            for h in hours
        ]
    )


def test_partitioned_table_lands_one_folder_per_day(lake):
    rows = pa.concat_tables([_io_rows("cn1", [1, 2], day=1), _io_rows("cn1", [5], day=2)])
    assert write_table(lake, "node_io", rows, "a") == 3
    days = sorted(p.parent.name for p in table_files(lake, "node_io"))
    assert days == ["day=2024-03-01", "day=2024-03-02"]
    back = read_table(lake, "node_io").sort_by("ts")
    assert back.column("read_bytes").to_pylist() == [100, 200, 500]
    assert back.schema.field("net_rx_bytes").type == pa.int64()  # missing nullable column: null
    assert back.column("net_rx_bytes").null_count == 3


def test_rewriting_a_contribution_replaces_it_in_every_partition(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1], day=1), "a")
    write_table(lake, "node_io", _io_rows("cn2", [1], day=2), "b")
    write_table(lake, "node_io", _io_rows("cn1", [3], day=3), "a")  # 'a' moved to day 3
    back = read_table(lake, "node_io").sort_by("node")
    assert back.column("node").to_pylist() == ["cn1", "cn2"]
    assert back.column("read_bytes").to_pylist() == [300, 100]
    days = {p.parent.name for p in table_files(lake, "node_io")}
    assert days == {"day=2024-03-02", "day=2024-03-03"}  # day 1 has no file in this version


def test_failed_write_keeps_the_previous_contribution(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1]), "a")
    with pytest.raises(RuntimeError), ContributionWriter(lake, "node_io", "a") as writer:
        writer.write(_io_rows("cn9", [2]))
        raise RuntimeError("crash mid-write")
    assert read_table(lake, "node_io").column("node").to_pylist() == ["cn1"]
    assert not (lake / "_staging").exists()


def test_missing_required_column_is_an_error_naming_it(lake):
    with pytest.raises(ValueError, match="required column 'ts'"):
        write_table(lake, "node_io", pa.table({"node": ["cn1"]}), "a")


def test_catalog_has_every_table_even_before_any_write(lake):
    catalog.refresh(lake)
    assert catalog.sql(lake, "SELECT count(*) AS n FROM jobs").column("n").to_pylist() == [0]
    columns = catalog.sql(lake, "SELECT * FROM node_io LIMIT 0").column_names
    assert columns[:3] == ["node", "ts", "interval_s"]


def test_catalog_views_follow_writes(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1, 2, 3]), "a")
    catalog.refresh(lake)
    result = catalog.sql(lake, "SELECT day, sum(read_bytes) AS b FROM node_io GROUP BY day")
    assert result.to_pylist() == [{"day": datetime(2024, 3, 1).date(), "b": 600}]
    write_table(lake, "node_io", _io_rows("cn1", [4]), "a")
    catalog.refresh(lake)
    assert catalog.sql(lake, "SELECT sum(read_bytes) AS b FROM node_io").column(0)[0].as_py() == 400


def test_sql_command_prints_a_table(lake, capsys):
    from burstlake.cli import main

    write_table(lake, "node_io", _io_rows("cn7", [1, 2]), "a")
    catalog.refresh(lake)
    assert (
        main(["sql", "--lake", str(lake), "SELECT node, count(*) AS n FROM node_io GROUP BY 1"])
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["node", "n"]
    assert out[2].split() == ["cn7", "2"]


def test_sql_command_reports_bad_sql_in_one_line(lake, capsys):
    from burstlake.cli import main

    assert main(["sql", "--lake", str(lake), "SELEC nothing"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("burstlake sql:")


def test_newer_contribution_supersedes_same_keys_only_in_touched_days(lake):
    write_table(
        lake, "node_io", pa.concat_tables([_io_rows("cn1", [1, 2]), _io_rows("cn2", [1])]), "old"
    )
    write_table(lake, "node_io", _io_rows("cn1", [9], day=5), "other-day")
    with ContributionWriter(lake, "node_io", "new") as writer:
        writer.write(_io_rows("cn1", [2, 3]))  # (cn1, 02:00) overlaps 'old'
    assert writer.superseded == 1
    back = read_table(lake, "node_io").sort_by([("node", "ascending"), ("ts", "ascending")])
    assert [(r["node"], r["ts"].hour, r["ts"].day) for r in back.to_pylist()] == [
        ("cn1", 1, 1),
        ("cn1", 2, 1),
        ("cn1", 3, 1),
        ("cn1", 9, 5),
        ("cn2", 1, 1),
    ]
    assert sum(r["read_bytes"] for r in back.to_pylist()) == 100 + 200 + 300 + 900 + 100


def test_null_key_columns_match_each_other_when_superseding(lake):
    job = {"job_id": "7", "cluster": None, "state": "RUNNING"}
    write_table(lake, "jobs", pa.Table.from_pylist([job, {**job, "job_id": "8"}]), "monday")
    write_table(lake, "jobs", pa.Table.from_pylist([{**job, "state": "COMPLETED"}]), "tuesday")
    states = {r["job_id"]: r["state"] for r in read_table(lake, "jobs").to_pylist()}
    assert states == {"7": "COMPLETED", "8": "RUNNING"}
