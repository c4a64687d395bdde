"""A vacuum never deletes a file a running `burstlake report` reads (issue 41: the report took
no readers lock, so `lake vacuum` during a long report could delete the files it reads). Real
processes, as tests/lake/test_sql_vacuum.py: the report is paused through
``BURSTLAKE_PAUSE_AT`` once its heat map has named ``node_io``'s files, a writer replaces them,
and a vacuum started then waits for the report, saying so in one line."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from burstlake.lake import read_table, table_files, write_table
from tests.builders.node_io import node_io_rows
from tests.builders.processes import cli

pytestmark = pytest.mark.slow  # real processes, a paused report
WAIT_S = 300


def _paused_report(lake: Path, out: Path, marker: Path) -> subprocess.Popen:
    env = {**os.environ, "BURSTLAKE_PAUSE_AT": f"report-heatmap:{marker}"}
    proc = subprocess.Popen(
        cli("report", "--lake", str(lake), "--out", str(out)),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + WAIT_S
    while not marker.exists():
        if proc.poll() is not None:
            pytest.fail(f"report ended before its pause: {proc.stderr.read()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("report never reached its pause")
        time.sleep(0.05)
    return proc


def test_vacuum_waits_for_a_running_report_then_deletes(tmp_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    write_table(lake, "node_io", node_io_rows(1), "a")
    old_files = table_files(lake, "node_io")
    out = tmp_path / "report.html"

    marker = tmp_path / "paused"
    reader = _paused_report(lake, out, marker)
    write_table(
        lake, "node_io", node_io_rows(2), "a"
    )  # the report's files now belong to an old version
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
        marker.unlink()  # the report goes on, reading the files it named
    printed, err = reader.communicate(timeout=WAIT_S)
    assert reader.returncode == 0, err
    assert "Traceback" not in err and "No such file" not in err, err
    assert printed.strip() == str(out)
    page = out.read_text()
    assert 'data-figure="heatmap"' in page  # the heat map drawn from the files it named

    done, err = vacuum.communicate(timeout=WAIT_S)
    assert vacuum.returncode == 0, err
    assert err == "" and done.splitlines() == ["node_io: 1 files removed"]
    assert not any(Path(f).exists() for f in old_files)
    rows = read_table(lake, "node_io")
    assert rows.num_rows == 200 and set(rows.column("read_bytes").to_pylist()) == {2}
