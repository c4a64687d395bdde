"""The ingest DAGs run under Airflow (dag.test() on a SQLite metadata DB) and are idempotent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from burstlake.lake import read_table
from tests.builders.paths import FIXTURES
from tests.builders.zabbix import zabbix_export, zabbix_line


def _drop(tmp_path, source: str, *files):
    folder = tmp_path / "drop" / source
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy(f, folder / f.name)
    return folder


def test_ingest_slurm_dag_lands_the_edison_allocation(run_dag, lake, tmp_path, shared_data):
    _drop(tmp_path, "topology", shared_data / "topology" / "edison.xtdb2proc.gz")
    _drop(tmp_path, "slurm", shared_data / "slurm" / "edison_job4478544.sacct")
    assert run_dag("ingest_topology").state == "success"
    assert run_dag("ingest_slurm").state == "success"
    assert read_table(lake, "jobs").column("job_id").to_pylist() == ["4478544"]
    assert read_table(lake, "job_steps").num_rows == 10
    assert read_table(lake, "job_nodes").num_rows == 128


def test_ingest_topology_dag_lands_the_drop_directory_once(run_dag, lake, tmp_path, shared_data):
    _drop(tmp_path, "topology", shared_data / "topology" / "edison.xtdb2proc.gz")
    assert run_dag("ingest_topology").state == "success"
    assert read_table(lake, "topology").num_rows == 499
    rerun = run_dag("ingest_topology")  # nothing new to land: no asset event downstream
    assert rerun.state == "success"
    assert rerun.get_task_instance("land").state == "skipped"
    assert read_table(lake, "topology").num_rows == 499
    assert read_table(lake, "ingest_log").num_rows == 1


def test_ingest_dag_fails_on_an_unusable_file_but_keeps_the_good_ones(run_dag, lake, tmp_path):
    folder = _drop(tmp_path, "topology")
    (folder / "good.csv").write_text("node,cabinet,ion\ncn1,cab0,ion0\n")
    (folder / "junk.csv").write_text("this is not a topology\n")
    assert run_dag("ingest_topology").state == "failed"
    assert read_table(lake, "topology").column("node").to_pylist() == ["cn1"]
    [row] = read_table(lake, "quarantine").to_pylist()
    assert row["file"].endswith("junk.csv") and row["location"] == "whole file"


def test_ingest_zabbix_dag_lands_an_export_with_its_accounting(run_dag, lake, tmp_path):
    _drop(tmp_path, "zabbix", FIXTURES / "zabbix" / "history-tags.ndjson")
    assert run_dag("ingest_zabbix").state == "success"
    [log] = read_table(lake, "ingest_log").to_pylist()
    assert (log["records_in"], log["landed"], log["quarantined"]) == (31, 25, 6)
    assert set(read_table(lake, "node_io").column("node").to_pylist()) == {"cn00001"}
    assert read_table(lake, "quarantine").num_rows == 6


def test_ingest_darshan_dag_lands_the_edison_logs(run_dag, lake, tmp_path, shared_data):
    logs = sorted((shared_data / "darshan").glob("edison_*.darshan"))
    _drop(tmp_path, "darshan", *logs)
    assert run_dag("ingest_darshan").state == "success"
    jobs = read_table(lake, "darshan_jobs").column("job_id").to_pylist()
    assert jobs == ["4478544", "4478544"]
    assert run_dag("ingest_darshan").state == "success"  # nothing new: no change
    assert read_table(lake, "darshan_jobs").num_rows == 2


def _history(path: Path, host: str, values: list[int], start: int = 0, every: int = 30) -> None:
    """A one-item export of a read counter sampled every ``every`` s."""
    lines = [
        zabbix_line(host, 1700000000 + start + i * every, v, host_name=False)
        for i, v in enumerate(values)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(zabbix_export(lines))


@pytest.mark.slow  # about a minute of dag.test()
def test_two_machines_from_the_deployment_file(run_dag, lake, tmp_path):
    """burstlake.yaml at the lake's root: each machine's drop folder lands under its machine
    with its options (host-name rewrite, grid), the same node name kept apart by machine."""
    lake.mkdir(parents=True, exist_ok=True)
    (lake / "burstlake.yaml").write_text(
        "machines:\n"
        "  alpha:\n"
        "    sources:\n"
        "      zabbix: {host_prefix: [nid=cn]}\n"
        "  beta: {}\n"
        "drops:\n"
        "  - {path: ../drops/alpha, source: zabbix, machine: alpha}\n"
        "  - {path: ../drops/beta, source: zabbix, machine: beta, options: {interval: 30}}\n"
    )
    _history(tmp_path / "drops" / "alpha" / "syncer-1.ndjson", "nid001", [0, 300, 600])
    _history(tmp_path / "drops" / "beta" / "syncer-1.ndjson", "cn001", [0, 90, 90, 120], start=10)
    assert run_dag("ingest_zabbix").state == "success"
    rows = read_table(lake, "node_io", ["cluster", "node", "ts", "interval_s", "read_bytes"])
    got = sorted(
        (
            r["cluster"],
            r["node"],
            int(r["ts"].timestamp()) - 1700000000,
            r["interval_s"],
            r["read_bytes"],
        )
        for r in rows.to_pylist()
    )
    # alpha: 300 per 30 s on the 10 s grid; beta: its own 30 s grid (the 90 -> 90 step is flat)
    alpha = [("alpha", "cn001", t, 10, 100) for t in range(0, 60, 10)]
    beta = [("beta", "cn001", 10, 30, 90), ("beta", "cn001", 70, 30, 30)]
    assert got == sorted(alpha + beta)
    assert run_dag("ingest_zabbix").get_task_instance("land").state == "skipped"
