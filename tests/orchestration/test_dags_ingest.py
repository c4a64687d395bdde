"""The ingest DAGs run under Airflow (dag.test() on a SQLite metadata DB) and are idempotent."""

from __future__ import annotations

import shutil

from burstlake.lake import read_table
from tests.conftest import FIXTURES


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
