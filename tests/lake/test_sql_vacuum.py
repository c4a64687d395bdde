"""A vacuum never deletes a file a running `burstlake sql` reads (issue 41: `lake vacuum
--retention-hours 0` under a running query failed it with a raw IO error). Real processes: the
query is paused through ``BURSTLAKE_PAUSE_AT`` once it has named its files, a writer replaces
them, and a vacuum started then waits for the query, saying so in one line."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from burstlake import catalog
from burstlake.cli import main
from burstlake.lake import read_table, table_files, write_table
from tests.builders.node_io import node_io_rows
from tests.builders.processes import cli

pytestmark = pytest.mark.slow  # real processes, a paused query
WAIT_S = 300


def _paused_query(lake: Path, query: str, marker: Path) -> subprocess.Popen:
    env = {**os.environ, "BURSTLAKE_PAUSE_AT": f"sql-query:{marker}"}
    proc = subprocess.Popen(
        cli("sql", "--lake", str(lake), query),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + WAIT_S
    while not marker.exists():
        if proc.poll() is not None:
            pytest.fail(f"sql ended before its pause: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("sql never reached its pause")
        time.sleep(0.05)
    return proc


def test_vacuum_waits_for_a_running_query_then_deletes(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    write_table(lake, "node_io", node_io_rows(1), "a")
    catalog.refresh(lake)
    old_files = table_files(lake, "node_io")
    query = "SELECT count(*) AS n, sum(read_bytes) AS s FROM node_io"

    marker = tmp_path / "paused"
    reader = _paused_query(lake, query, marker)
    write_table(
        lake, "node_io", node_io_rows(2), "a"
    )  # the query's files now belong to an old version
    assert set(table_files(lake, "node_io")).isdisjoint(old_files)
    vacuum = subprocess.Popen(
        cli("lake", "vacuum", "--retention-hours", "0", "--lake", str(lake)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        waiting = vacuum.stderr.readline()  # said before it waits: no sleep needed
        assert waiting.startswith("burstlake lake vacuum: waiting for the queries running on")
        assert vacuum.poll() is None and all(Path(f).exists() for f in old_files)
    finally:
        marker.unlink()  # the query goes on
    out, err = reader.communicate(timeout=WAIT_S)
    assert reader.returncode == 0, err
    assert err == ""
    n, s = out.splitlines()[2].split()
    assert (int(n), int(s)) == (200, 200)  # the version it started on, whole

    out, err = vacuum.communicate(timeout=WAIT_S)
    assert vacuum.returncode == 0, err
    assert err == "" and out.splitlines() == ["node_io: 1 files removed"]
    assert not any(Path(f).exists() for f in old_files)
    rows = read_table(lake, "node_io")
    assert rows.num_rows == 200 and set(rows.column("read_bytes").to_pylist()) == {2}
    assert catalog.sql(lake, query).to_pylist() == [{"n": 200, "s": 400}]


def test_vacuum_with_no_query_running_says_nothing_and_a_query_after_it_reads(tmp_path, capsys):
    lake = tmp_path / "lake"
    lake.mkdir()
    write_table(lake, "node_io", node_io_rows(1), "a")
    write_table(lake, "node_io", node_io_rows(3), "a")
    assert main(["lake", "vacuum", "--retention-hours", "0", "--lake", str(lake)]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out.splitlines() == ["node_io: 1 files removed"]
    query = "SELECT count(*) AS n, sum(read_bytes) AS s FROM node_io"
    assert catalog.sql(lake, query).to_pylist() == [{"n": 200, "s": 600}]


def test_a_query_on_a_lake_it_cannot_write_still_answers(small_disk, capsys):
    """The readers' lock file cannot be made on a read-only lake: the query runs without it."""
    lake = small_disk / "lake"
    lake.mkdir()
    write_table(lake, "node_io", node_io_rows(1), "a")
    catalog.refresh(lake)
    for lock in (lake / "_locks").glob("*"):
        lock.unlink()
    (lake / "_locks").rmdir()
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        query = "SELECT count(*) AS n, sum(read_bytes) AS s FROM node_io"
        assert main(["sql", "--lake", str(lake), query]) == 0
        assert capsys.readouterr().out.splitlines()[2].split() == ["200", "200"]
        assert not (lake / "_locks").exists()
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
