"""The lake's writer, reader and DuckDB catalog (docs/design.md, 'The lake'; issue 17)."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.compute
import pytest

from burstlake import catalog
from burstlake import lake as lakes
from burstlake.lake import (
    ContributionWriter,
    contribution_ids,
    read_table,
    table_files,
    write_table,
)
from burstlake.schemas import spec
from tests.builders.sacct import write_sacct


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
    assert columns[:3] == ["node", "cluster", "ts"]


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


# --- Delta: commits, snapshots, runs, catalog, housekeeping, migration (issue 17) -------------


def _nodes(lake) -> list[tuple[str, int]]:
    rows = read_table(lake, "node_io", ["node", "read_bytes"]).to_pylist()
    return sorted((r["node"], r["read_bytes"]) for r in rows)


def test_every_write_is_one_delta_commit_with_its_source_id(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1, 2]), "a")
    write_table(lake, "node_io", _io_rows("cn2", [1]), "b")
    write_table(lake, "node_io", _io_rows("cn1", [4]), "a")  # replaces 'a' in one commit
    assert lakes.latest_version(lake, "node_io") == 3  # 0 creates the table
    info = lakes.commit_metadata(lake, "node_io", 3)
    assert info["burstlake.source_id"] == "a"
    assert info["operationParameters"]["predicate"] == "_source_id IN ('a')"  # replaces 'a'
    assert "remove" in (lake / "node_io" / "_delta_log" / f"{3:020d}.json").read_text()
    assert _nodes(lake) == [("cn1", 400), ("cn2", 100)]
    assert contribution_ids(lake, "node_io") == {"a", "b"}
    assert lakes.delete_contribution(lake, "b") == 1
    assert _nodes(lake) == [("cn1", 400)]


def test_replaces_removes_other_contributions_in_the_same_commit(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1]), "v1")
    version = lakes.latest_version(lake, "node_io")
    write_table(lake, "node_io", _io_rows("cn1", [7]), "v2", replaces=["v1"])
    assert lakes.latest_version(lake, "node_io") == version + 1
    assert _nodes(lake) == [("cn1", 700)]


def test_snapshot_pins_one_version_while_writers_go_on(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1]), "a")
    held = lakes.snapshot(lake, ["node_io"])
    write_table(lake, "node_io", _io_rows("cn2", [1]), "b")
    assert _nodes(held) == [("cn1", 100)]  # the reader given the snapshot reads its version
    assert table_files(held, "node_io") == table_files(lake, "node_io", held.versions["node_io"])
    assert _nodes(lake) == [("cn1", 100), ("cn2", 100)]  # the lake's path reads the newest
    assert [c.lake for c in lakes.clusters(held)] == [held]  # its machines read it too


def test_a_run_publishes_its_tables_together_or_not_at_all(lake):
    jobs = pa.Table.from_pylist([{"job_id": "1", "state": "COMPLETED"}])
    write_table(lake, "jobs", jobs, "in")
    with lakes.run(lake, "two", ["jobs"], publish=True) as run:
        write_table(run, "ion_load", _load_rows("ion", 1.0), "metrics")
        write_table(run, "cabinet_load", _load_rows("cabinet", 1.0), "metrics")
    assert set(run.written) == {"ion_load", "cabinet_load"}
    first = lakes.published_run(lake, "two")
    assert first["inputs"] == {"jobs": lakes.latest_version(lake, "jobs")}
    info = lakes.commit_metadata(lake, "ion_load", first["tables"]["ion_load"])
    assert info["burstlake.run"] == f"two:{run.id}"
    assert json.loads(info["burstlake.inputs"]) == first["inputs"]
    with pytest.raises(RuntimeError), lakes.run(lake, "two", ["jobs"], publish=True) as again:
        write_table(again, "ion_load", _load_rows("ion", 2.0), "metrics")
        raise RuntimeError("killed after the first table")
    # the half-written run is invisible: both tables still come from the first run
    assert read_table(lake, "ion_load").column("share").to_pylist() == [1.0]
    assert lakes.published_run(lake, "two") == first
    assert catalog.sql(lake, "SELECT share FROM ion_load").column(0).to_pylist() == [1.0]


def _load_rows(level: str, share: float) -> pa.Table:
    counts = dict.fromkeys(
        ["nodes", "read_bytes", "write_bytes", "io_bytes", "active_intervals", "peak_bytes"], 1
    )
    return pa.Table.from_pylist([{level: f"{level}0", **counts, "share": share}])


def test_a_landing_in_progress_is_invisible_in_every_table(lake):
    write_table(lake, "jobs", pa.Table.from_pylist([{"job_id": "1"}]), "old")
    with lakes.landing(lake, "new", {"file": "f"}):
        write_table(lake, "jobs", pa.Table.from_pylist([{"job_id": "2"}]), "new")
        write_table(lake, "job_nodes", _job_node("2"), "new")
        write_table(lake, "job_nodes", _job_node("3"), "finished-meanwhile")
        assert read_table(lake, "jobs").column("job_id").to_pylist() == ["1"]
        # a landing that committed after the one in progress is cut with it: never half seen
        assert read_table(lake, "job_nodes").num_rows == 0
    assert sorted(read_table(lake, "jobs").column("job_id").to_pylist()) == ["1", "2"]
    assert read_table(lake, "job_nodes").num_rows == 2


def _job_node(job: str) -> pa.Table:
    return pa.Table.from_pylist([{"job_id": job, "node": "cn1", "node_index": 0}])


def test_corrupt_catalog_is_rebuilt_by_the_next_command(lake, capsys):
    from burstlake.cli import main

    write_table(lake, "node_io", _io_rows("cn1", [1, 2]), "a")
    catalog.refresh(lake)
    (lake / "catalog.duckdb").write_bytes(b"not a database" * 100)
    assert main(["sql", "--lake", str(lake), "SELECT count(*) AS n FROM node_io"]) == 0
    assert capsys.readouterr().out.split()[-1] == "2"
    (lake / "catalog.duckdb").unlink()
    assert catalog.sql(lake, "SELECT count(*) FROM node_io").column(0).to_pylist() == [2]


def test_catalog_left_by_a_killed_build_and_staging_leftovers_are_cleaned(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1]), "a")
    dead = lake / ".catalog-999999999-deadbeef.duckdb"
    dead.write_bytes(b"half")
    staged = lake / "_staging" / "node_io-killed"
    staged.mkdir(parents=True)
    (staged / "part-0000.parquet").write_bytes(b"partial")
    catalog.refresh(lake)
    assert not dead.exists() and not staged.exists()


def test_reader_holding_the_catalog_does_not_make_it_stale(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1]), "a")
    catalog.refresh(lake)
    hold = (
        "import duckdb, sys, time\n"
        f"con = duckdb.connect({str(lake / 'catalog.duckdb')!r}, read_only=True)\n"
        'con.execute("SET file_search_path = \'" + sys.argv[1] + "\'")\n'
        "print(con.execute('SELECT count(*) FROM node_io').fetchone()[0], flush=True)\n"
        "time.sleep(120)\n"
    )
    reader = subprocess.Popen(
        [sys.executable, "-c", hold, str(lake)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert reader.stdout.readline().strip() == "1"  # the other process holds it open
        write_table(lake, "node_io", _io_rows("cn2", [1, 2]), "b")
        catalog.refresh(lake)
        assert catalog.is_current(lake)
        assert catalog.sql(lake, "SELECT count(*) FROM node_io").column(0).to_pylist() == [3]
    finally:
        reader.kill()
        reader.wait()


def test_stale_catalog_is_rebuilt_before_a_query(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1]), "a")
    catalog.refresh(lake)
    write_table(lake, "node_io", _io_rows("cn2", [1]), "b")  # no refresh
    assert not catalog.is_current(lake)
    assert catalog.sql(lake, "SELECT count(*) FROM node_io").column(0).to_pylist() == [2]


def test_moved_and_copied_lakes_read_their_own_files(lake, tmp_path):
    write_table(lake, "node_io", _io_rows("cn1", [1, 2]), "a")
    catalog.refresh(lake)
    copy = tmp_path / "copy"
    shutil.copytree(lake, copy)
    write_table(copy, "node_io", _io_rows("cn9", [3]), "z")  # the copy diverges
    moved = tmp_path / "moved"
    lake.rename(moved)
    assert catalog.sql(moved, "SELECT count(*) FROM node_io").column(0).to_pylist() == [2]
    assert catalog.sql(copy, "SELECT count(*) FROM node_io").column(0).to_pylist() == [3]
    # the plain duckdb command, run in the lake folder, answers from the latest version
    duckdb_cli = Path(sys.executable).with_name("duckdb")
    out = subprocess.run(
        [str(duckdb_cli), "-csv", "-noheader", "catalog.duckdb", "SELECT count(*) FROM node_io"],
        cwd=copy,
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "3"


def test_duckdb_delta_extension_reads_the_same_rows(lake):
    write_table(lake, "node_io", _io_rows("cn1", [1, 2, 3]), "a")
    write_table(lake, "node_io", _io_rows("cn1", [5]), "a")
    con = catalog.delta_connection()
    try:
        scan = f"delta_scan('{lake / 'node_io'}')"
        total = con.execute(f"SELECT sum(read_bytes) FROM {scan}").fetchone()[0]
    finally:
        con.close()
    assert total == 500 == catalog.sql(lake, "SELECT sum(read_bytes) FROM node_io")[0][0].as_py()


def test_vacuum_deletes_old_versions_files_and_keeps_the_rows(lake, capsys):
    from burstlake.cli import main

    for hour in (1, 2, 3):
        write_table(lake, "node_io", _io_rows("cn1", [hour]), "a")
    before = len(list((lake / "node_io").rglob("*.parquet")))
    assert before == 3
    assert main(["lake", "vacuum", "--retention-hours", "0", "--lake", str(lake)]) == 0
    assert "node_io: 2 files removed" in capsys.readouterr().out
    assert len(list((lake / "node_io").rglob("*.parquet"))) == 1
    assert _nodes(lake) == [("cn1", 300)]


def _legacy_lake(root: Path) -> dict[str, int]:
    """A lake in the pre-Delta layout: src-<id>-<n>.parquet files, day= folders."""
    import pyarrow.parquet as pq

    from burstlake.schemas import conform

    io = conform(
        pa.concat_tables([_io_rows("cn1", [1, 2], 1), _io_rows("cn2", [5], 2)]), spec("node_io")
    )
    for day in ("2024-03-01", "2024-03-02"):
        part = root / "node_io" / f"day={day}"
        part.mkdir(parents=True)
        rows = io.filter(pa.compute.equal(pa.compute.strftime(io["ts"], "%Y-%m-%d"), day))
        pq.write_table(rows, part / "src-abc123-0000.parquet")
    jobs = conform(pa.Table.from_pylist([{"job_id": "1"}, {"job_id": "2"}]), spec("jobs"))
    (root / "jobs").mkdir()
    pq.write_table(jobs.slice(0, 1), root / "jobs" / "src-f1-0000.parquet")
    pq.write_table(jobs.slice(1, 1), root / "jobs" / "src-f2-0000.parquet")
    (root / "catalog.duckdb").write_bytes(b"old catalog")
    return {"node_io": 3, "jobs": 2}


def test_migrate_converts_a_legacy_lake_once_every_row_kept(lake, capsys):
    from burstlake.cli import main

    expected = _legacy_lake(lake)
    assert lakes.legacy_tables(lake) == ["jobs", "node_io"]
    assert main(["lake", "migrate", "--lake", str(lake)]) == 0
    out = capsys.readouterr().out
    assert "jobs: 2 rows converted" in out and "node_io: 3 rows converted" in out
    assert lakes.legacy_tables(lake) == []
    assert {t: read_table(lake, t).num_rows for t in expected} == expected
    assert contribution_ids(lake, "jobs") == {"f1", "f2"}
    assert contribution_ids(lake, "node_io") == {"abc123"}
    assert _nodes(lake) == [("cn1", 100), ("cn1", 200), ("cn2", 500)]
    assert catalog.sql(lake, "SELECT count(*) FROM node_io").column(0).to_pylist() == [3]
    assert main(["lake", "migrate", "--lake", str(lake)]) == 0  # a second run changes nothing
    assert "nothing to convert" in capsys.readouterr().out
    write_table(lake, "jobs", pa.Table.from_pylist([{"job_id": "3"}]), "f2")  # lands normally
    assert sorted(read_table(lake, "jobs").column("job_id").to_pylist()) == ["1", "3"]


def test_full_disk_and_read_only_lake_give_one_line_and_change_nothing(
    small_disk, tmp_path, capsys
):
    from burstlake.cli import main

    lake = small_disk / "lake"
    first = write_sacct(tmp_path / "first.sacct", range(1, 6))
    assert main(["ingest", "slurm", str(first), "--lake", str(lake)]) == 0
    capsys.readouterr()
    second = write_sacct(tmp_path / "second.sacct", range(100, 3000))
    filler = small_disk / "filler"
    with filler.open("wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * (1 << 20))
            out.flush()
    with contextlib.suppress(OSError):
        filler.with_name("filler-tail").write_bytes(b"\0" * 65536)
    assert main(["ingest", "slurm", str(second), "--lake", str(lake)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no space left on device" in err[0], err
    filler.unlink()
    filler.with_name("filler-tail").unlink(missing_ok=True)
    assert read_table(lake, "jobs").num_rows == 5
    assert read_table(lake, "ingest_log").num_rows == 1

    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    assert main(["ingest", "slurm", str(second), "--lake", str(lake)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "read-only file system" in err[0].lower(), err
    assert read_table(lake, "jobs").num_rows == 5
    subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert main(["ingest", "slurm", str(second), "--lake", str(lake)]) == 0
    assert read_table(lake, "jobs").num_rows == 5 + 2900


@pytest.mark.slow  # reads the lake through Spark's Delta reader
def test_a_lake_from_an_older_release_reads_newer_columns_as_nulls(lake, spark):
    """jobs written before ``job_id_raw`` existed (a Delta table without the column): the
    catalog, the Arrow readers and Spark give the column as nulls, and the next write adds
    it without touching the old rows."""
    from deltalake import write_deltalake

    jobs = spec("jobs").schema
    old = jobs.remove(jobs.get_field_index("job_id_raw")).append(
        pa.field(lakes.SOURCE, pa.string())
    )
    rows = pa.Table.from_pylist([{"job_id": "1", lakes.SOURCE: "old"}], schema=old)
    write_deltalake(str(lakes.table_dir(lake, "jobs")), rows)
    catalog.refresh(lake)
    assert catalog.sql(lake, "SELECT job_id, job_id_raw FROM jobs").to_pylist() == [
        {"job_id": "1", "job_id_raw": None}
    ]
    assert read_table(lake, "jobs", columns=["job_id_raw"]).to_pylist() == [{"job_id_raw": None}]
    frame = lakes.spark_frame(spark, lake, "jobs")
    assert [(r.job_id, r.job_id_raw) for r in frame.collect()] == [("1", None)]
    write_table(lake, "jobs", pa.table({"job_id": ["2"], "job_id_raw": ["2"]}), "new")
    got = catalog.sql(lake, "SELECT job_id, job_id_raw FROM jobs ORDER BY 1").to_pylist()
    assert got == [{"job_id": "1", "job_id_raw": None}, {"job_id": "2", "job_id_raw": "2"}]
