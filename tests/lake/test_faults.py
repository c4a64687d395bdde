"""Fault tests of the Delta lake (docs/design.md, 'The lake'; issue 17): real processes, kills.

A process is stopped at a named phase through ``BURSTLAKE_PAUSE_AT`` (see
:func:`burstlake.lake.checkpoint`) and killed there with SIGKILL, or let go on; row counts and
row contents are then compared with a clean run of the same inputs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from burstlake import catalog
from burstlake import lake as lakes
from burstlake.jobs.ingest import slurm, topology
from burstlake.jobs.ingest.landing import ingest
from burstlake.lake import delete_contribution, read_table
from tests.builders.processes import WAIT_S, cli, kill, paused
from tests.builders.sacct import write_sacct_with_steps
from tests.builders.zabbix import zabbix_export, zabbix_line

pytestmark = pytest.mark.slow  # kill tests: real processes killed at each phase

INGEST_TABLES = ("jobs", "job_steps", "job_nodes", "topology", "quarantine", "ingest_log")


def _topology(path: Path) -> Path:
    """The nodes of machine ``th``, the sacct exports' Cluster (node checks are per machine)."""
    rows = [f"cn{n:03d},th,cab{n // 4},ion{n // 2},sw0,0,{n},r{n}" for n in range(1, 9)]
    header = "node,cluster,cabinet,ion,switch,row,col,rack_label\n"
    path.write_text(header + "\n".join(rows) + "\n")
    return path


def _state(lake: Path) -> dict[str, list[tuple]]:
    """Every ingest table's rows (ingest times left out), sorted: equal means same contents."""
    out = {}
    for table in INGEST_TABLES:
        rows = read_table(lake, table).to_pylist()
        out[table] = sorted(
            tuple(sorted((k, str(v)) for k, v in r.items() if k != "ingested_at")) for r in rows
        )
    return out


@pytest.mark.parametrize("phase", ["ingest-parse", "ingest-stage", "ingest-commit"])
def test_ingest_killed_at_each_phase_then_rerun_equals_a_clean_run(tmp_path, phase):
    lake, clean = tmp_path / "lake", tmp_path / "clean"
    sacct = write_sacct_with_steps(tmp_path / "jobs.sacct", range(1, 21))
    ingest(slurm.SOURCE, [sacct], lake)
    before = _state(lake)
    assert [len(before[t]) for t in ("jobs", "job_steps", "job_nodes")] == [20, 20, 40]

    write_sacct_with_steps(sacct, range(1, 26), state="FAILED")  # the same path with new content
    proc = paused(cli("ingest", "slurm", str(sacct), "--lake", str(lake)), phase, tmp_path / "p")
    kill(proc)
    # the previous version stays whole and readable, through the lake and the catalog
    assert _state(lake) == before
    assert catalog.sql(lake, "SELECT count(*) FROM jobs").column(0).to_pylist() == [20]

    ingest(slurm.SOURCE, [sacct], lake)  # the re-run
    ingest(slurm.SOURCE, [sacct], clean)
    after = _state(lake)
    assert after == _state(clean)
    assert [len(after[t]) for t in ("jobs", "job_steps", "job_nodes", "ingest_log")] == [
        25,
        25,
        50,
        1,
    ]
    assert not lakes.intents(lake)
    assert not (lake / lakes.STAGING).exists() or not any((lake / lakes.STAGING).iterdir())


def test_next_ingest_finishes_or_undoes_a_landing_killed_between_commits(tmp_path):
    lake = tmp_path / "lake"
    first = write_sacct_with_steps(tmp_path / "first.sacct", range(1, 11))
    other = write_sacct_with_steps(tmp_path / "other.sacct", range(100, 105))
    proc = paused(
        cli("ingest", "slurm", str(first), "--lake", str(lake)), "ingest-commit", tmp_path / "p"
    )
    kill(proc)
    assert read_table(lake, "jobs").num_rows == 0  # jobs committed, but the landing is not
    assert [r["file"] for r in lakes.intents(lake, abandoned=True)] == [str(first)]

    ingest(slurm.SOURCE, [other], lake)  # rolls the unchanged file forward
    reference = tmp_path / "reference"
    ingest(slurm.SOURCE, [first, other], reference)
    assert _state(lake) == _state(reference)
    assert not lakes.intents(lake)

    # a file that changed after its landing was killed: everything it wrote is removed
    third = write_sacct_with_steps(tmp_path / "third.sacct", range(200, 210))
    proc = paused(
        cli("ingest", "slurm", str(third), "--lake", str(lake)), "ingest-commit", tmp_path / "q"
    )
    kill(proc)
    write_sacct_with_steps(third, range(200, 212), state="FAILED")
    ingest(slurm.SOURCE, [other], lake)
    assert _state(lake) == _state(reference)  # as if the killed landing never happened
    assert not lakes.intents(lake)


def test_four_ingests_at_once_match_a_sequential_run(tmp_path):
    lake, sequential = tmp_path / "lake", tmp_path / "sequential"
    files = [
        write_sacct_with_steps(tmp_path / f"{k}.sacct", range(100 * k + 1, 100 * k + 16))
        for k in range(3)
    ]
    topo = _topology(tmp_path / "topology.csv")
    procs = [
        subprocess.Popen(
            cli("ingest", "slurm", str(f), "--lake", str(lake)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in files
    ]
    procs.append(
        subprocess.Popen(
            cli("ingest", "topology", str(topo), "--lake", str(lake)),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    )
    for proc in procs:
        _, err = proc.communicate(timeout=WAIT_S)
        assert proc.returncode == 0, err[-2000:]
    ingest(topology.SOURCE, [topo], sequential)
    ingest(slurm.SOURCE, files, sequential)
    state = _state(lake)
    assert state == _state(sequential)
    assert [len(state[t]) for t in ("jobs", "job_nodes", "topology", "ingest_log")] == [
        45,
        90,
        8,
        4,
    ]
    assert catalog.sql(lake, "SELECT count(*) FROM jobs").column(0).to_pylist() == [45]


# --- metrics -----------------------------------------------------------------------------------


def _metrics(lake: Path) -> dict[str, list]:
    from burstlake.jobs.metrics.run import TABLES

    return {t: sorted(map(str, read_table(lake, t).to_pylist())) for t in TABLES}


def test_metrics_killed_mid_run_then_rerun_beside_an_ingest(spark, tmp_path):
    """A killed metrics run leaves the previous run in view; the re-run, made while an ingest
    is stopped between its commits, reads the state before the ingest, never a mix."""
    from burstlake.jobs.metrics.run import INPUTS, run
    from tests.builders.hand_lake import build_hand_lake

    lake = tmp_path / "lake"
    build_hand_lake(lake)
    run(lake, spark=spark)
    before = _metrics(lake)
    published = lakes.published_run(lake, "metrics")
    assert before["darshan_job_metrics"] and before["dxt_job_series"]
    delete_contribution(lake, "hand", ["darshan_jobs", "darshan_rank_io", "darshan_dxt"])

    proc = paused(cli("metrics", "--lake", str(lake)), "metrics-commit", tmp_path / "p")
    kill(proc)
    first = "job_io_metrics"
    assert lakes.latest_version(lake, first) > published["tables"][first]  # it did commit
    assert _metrics(lake) == before  # but readers still see the whole previous run
    assert lakes.published_run(lake, "metrics") == published

    versions = lakes.read_versions(lake, INPUTS)
    # nodes of the hand lake's topology, on its machine (--cluster over the file's Cluster):
    # a job on unknown nodes is quarantined whole
    sacct = write_sacct_with_steps(tmp_path / "jobs.sacct", range(1, 31), digits=5)
    marker = tmp_path / "q"
    ingest_cli = cli("ingest", "slurm", str(sacct), "--lake", str(lake), "--cluster", "hand")
    proc = paused(ingest_cli, "ingest-commit", marker)
    try:
        assert lakes.latest_version(lake, "jobs") > versions["jobs"]  # jobs is committed
        run(lake, spark=spark)  # the re-run, beside the ingest
    finally:
        marker.unlink()  # let the ingest finish
    _, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, err[-2000:]

    record = lakes.published_run(lake, "metrics")
    assert record["inputs"] == versions  # the state before the ingest, in every input
    after = _metrics(lake)
    assert after["darshan_job_metrics"] == after["dxt_job_series"] == []  # as without the logs
    for table in ("job_io_metrics", "interval_metrics", "cabinet_load", "ion_load", "app_metrics"):
        assert after[table] == before[table], table  # unchanged inputs, same rows
    info = lakes.commit_metadata(lake, first, record["tables"][first])
    assert info["burstlake.run"] == f"metrics:{record['run']}"
    assert lakes.read_version(lake, "jobs") > versions["jobs"]  # the ingest is visible now
    query = f"SELECT records_in FROM ingest_log WHERE file = '{sacct}'"  # 30 jobs + 30 steps
    assert catalog.sql(lake, query).column(0).to_pylist() == [60]
    landed = catalog.sql(lake, "SELECT count(*) FROM jobs WHERE cluster = 'hand' AND uid > 5000")
    assert landed[0][0].as_py() == 30


def _zabbix(path: Path, start: int, samples: int, offset: int = 0) -> Path:
    """A real-time export: read-byte counters of two nodes every 10 s from ``start``."""
    lines = [
        zabbix_line(node, start + 10 * k, 1000 * (k + 1) * (n + 1) + offset, itemid=100 + n)
        for n, node in enumerate(("cn001", "cn002"))
        for k in range(samples)
    ]
    path.write_text(zabbix_export(lines))
    return path


def _zabbix_state(lake: Path) -> dict[str, list[tuple]]:
    """The rows a Zabbix ingest writes (ingest times and stream positions left out), sorted."""
    out = {}
    for table in ("node_io", "zabbix_samples", "quarantine", "ingest_log"):
        rows = read_table(lake, table).to_pylist()
        skip = {"ingested_at", "seq", "traffic"}
        out[table] = sorted(
            tuple(sorted((k, str(v)) for k, v in r.items() if k not in skip)) for r in rows
        )
    return out


def test_killed_zabbix_landing_of_a_changed_file_is_undone_in_shared_node_io(tmp_path):
    """A Zabbix file rewrites node_io parts shared with the other files of the export; a landing
    killed after that commit, whose file then changed, is undone: the lake is as before it."""
    from burstlake.jobs.ingest import zabbix

    lake, t0 = tmp_path / "lake", 1700000000
    first = _zabbix(tmp_path / "history-syncer-1.ndjson", t0, 30)
    ingest(zabbix.SOURCE, [first], lake)
    before = _zabbix_state(lake)
    assert before["node_io"] and before["zabbix_samples"]
    node_io = lakes.latest_version(lake, "node_io")

    second = _zabbix(tmp_path / "history-syncer-2.ndjson", t0 + 300, 30, offset=30_000)
    args = cli("ingest", "zabbix", str(second), "--lake", str(lake))
    kill(paused(args, "ingest-commit", tmp_path / "p"))
    assert lakes.latest_version(lake, "node_io") == node_io + 1  # the shared parts committed
    assert _zabbix_state(lake) == before  # but readers do not see them
    _zabbix(second, t0 + 300, 31, offset=30_000)  # the file changed (it grew)

    ingest(zabbix.SOURCE, [first], lake)  # a no-op that reconciles the killed landing
    assert _zabbix_state(lake) == before
    assert lakes.latest_version(lake, "node_io") > node_io + 1  # undone by a new commit
    assert not lakes.intents(lake)

    ingest(zabbix.SOURCE, [second], lake)  # its current content lands as a clean run gives it
    clean = tmp_path / "clean"
    ingest(zabbix.SOURCE, [first, second], clean)
    assert _zabbix_state(lake) == _zabbix_state(clean)
