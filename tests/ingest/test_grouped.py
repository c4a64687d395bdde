"""Small files landed as groups (jobs/ingest/grouped.py, docs/design.md 'The lake'): one
validation and one commit per table for many files, each file still whole or not at all, with
its own accounting; a group killed between its commits is finished or undone by the next
ingest."""

from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from burstlake import lake as lakes
from burstlake.catalog import sql
from burstlake.jobs.ingest import darshan
from burstlake.jobs.ingest.landing import ingest
from tests.builders.darshan_lake import DARSHAN_TABLES, lake_state
from tests.builders.processes import cli, kill, paused

LOGS = (
    "mpi-io-test-x86_64-3.4.7.darshan",
    "generated/iogen_job4243_4r_fpp_posix_random.darshan",
    "generated/iogen_job4244_8r_rank0.darshan",
)


def _copies(shared: Path, folder: Path) -> list[Path]:
    folder.mkdir()
    paths = []
    for name in LOGS:
        paths.append(folder / Path(name).name)
        shutil.copy(shared / "darshan" / name, paths[-1])
    return paths


def test_a_group_accounts_each_file_as_alone(shared_data, tmp_path):
    """A group of a good log, a damaged one and a copy: the same reports and rows as landing
    each file by itself."""
    logs = _copies(shared_data, tmp_path / "logs")
    damaged = tmp_path / "logs" / "damaged.darshan"
    damaged.write_bytes(logs[1].read_bytes()[:3000])
    copy = tmp_path / "logs" / "copy.darshan"
    shutil.copy(logs[0], copy)
    files = [logs[0], damaged, logs[1], copy, logs[2]]
    grouped = ingest(darshan.SOURCE, files, tmp_path / "grouped")
    alone = [ingest(darshan.SOURCE, [f], tmp_path / "alone")[0] for f in files]
    lines = [(r.records_in, r.landed, r.quarantined, r.error, r.traffic) for r in grouped]
    assert lines == [(r.records_in, r.landed, r.quarantined, r.error, r.traffic) for r in alone]
    assert grouped[3].same_as == str(logs[0])
    assert "truncated or corrupt" in grouped[1].error
    assert lake_state(tmp_path / "grouped") == lake_state(tmp_path / "alone")
    versions = {t: lakes.latest_version(tmp_path / "grouped", t) for t in DARSHAN_TABLES}
    assert versions == dict.fromkeys(DARSHAN_TABLES, 1)  # created empty, then one commit


def test_the_same_log_under_two_names_waits_for_the_next_group(shared_data, tmp_path):
    """Different bytes, the same log (a trailing pad darshan-util ignores): the second waits
    for the next group and replaces the first, as when they land one after the other."""
    logs = _copies(shared_data, tmp_path / "logs")
    padded = tmp_path / "logs" / "padded.darshan"
    padded.write_bytes(logs[1].read_bytes() + b"\0" * 64)
    reports = ingest(darshan.SOURCE, [logs[1], padded, logs[2]], tmp_path / "lake")
    assert [r.error for r in reports] == [None, None, None]
    assert [Path(r.file).name for r in reports][-1] == "padded.darshan"  # landed after
    jobs = sql(tmp_path / "lake", "SELECT job_id FROM darshan_jobs ORDER BY 1").to_pylist()
    assert jobs == [{"job_id": "4243"}, {"job_id": "4244"}]
    segments = sql(tmp_path / "lake", "SELECT count(*) AS n FROM darshan_dxt").to_pylist()
    assert segments == [{"n": 400 + 100}]


@pytest.mark.slow
def test_a_group_killed_between_commits_is_finished_or_undone(shared_data, tmp_path):
    logs = _copies(shared_data, tmp_path / "logs")
    lake, clean = tmp_path / "lake", tmp_path / "clean"
    ingest(darshan.SOURCE, logs[:1], lake)
    before = lake_state(lake)
    args = cli("ingest", "darshan", *map(str, logs), "--lake", str(lake))
    kill(paused(args, "ingest-commit", tmp_path / "p"))
    assert lake_state(lake) == before  # readers see none of the group
    assert len(lakes.intents(lake)) == 1
    logs[2].unlink()  # a member vanished: the group is undone, the others land again
    ingest(darshan.SOURCE, logs[:2], lake)
    ingest(darshan.SOURCE, logs[:2], clean)
    assert lake_state(lake) == lake_state(clean)
    assert not lakes.intents(lake)


@pytest.mark.slow  # starts worker processes
def test_workers_land_the_same_rows_as_one_process(shared_data, tmp_path, capsys):
    from burstlake.cli import main

    logs = _copies(shared_data, tmp_path / "logs")
    shutil.copy(shared_data / "darshan" / "imbalanced-io.darshan", tmp_path / "logs")
    folder = str(tmp_path / "logs")
    assert main(["ingest", "darshan", folder, "--lake", str(tmp_path / "one")]) == 0
    one = capsys.readouterr().out
    two = ["ingest", "darshan", folder, "--lake", str(tmp_path / "two"), "--workers", "2"]
    assert main(two) == 0
    assert capsys.readouterr().out == one.replace(str(tmp_path / "one"), str(tmp_path / "two"))
    assert lake_state(tmp_path / "one") == lake_state(tmp_path / "two")
    assert len(logs) == 3
    with pytest.raises(SystemExit):
        main(["ingest", "darshan", folder, "--lake", str(tmp_path / "x"), "--workers", "0"])
    assert "--workers: must be 1 or more, not 0" in capsys.readouterr().err


@pytest.mark.slow  # starts and kills worker processes
def test_a_worker_that_dies_leaves_its_files_to_the_ingest_process(shared_data, tmp_path):
    """A worker killed while it parses (as when darshan-util crashes on a damaged log): the
    ingest process lands the files no commit took, and the lake is as after one process."""
    logs = _copies(shared_data, tmp_path / "logs")
    lake, clean, marker = tmp_path / "lake", tmp_path / "clean", tmp_path / "p"
    args = cli("ingest", "darshan", *map(str, logs), "--lake", str(lake), "--workers", "2")
    proc = paused(args, "ingest-parse", marker)
    while not marker.read_text().strip():  # being written
        time.sleep(0.01)
    worker = int(marker.read_text())
    assert worker != proc.pid  # a worker parses, not the ingest process
    os.kill(worker, signal.SIGKILL)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        marker.unlink(missing_ok=True)  # whoever else pauses there goes on
        time.sleep(0.05)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "darshan: 3 files, " in out
    ingest(darshan.SOURCE, logs, clean)
    assert lake_state(lake) == lake_state(clean)
    assert not lakes.intents(lake)
