"""The metrics DAG under Airflow (dag.test() on a SQLite metadata DB): it computes the metrics
tables of the test's lake (that a re-run replaces them is tests/metrics/test_metrics.py's
test_rerun_replaces_previous_output, without Airflow around it)."""

from __future__ import annotations

import pytest

from burstlake.lake import read_table
from burstlake.schemas.metrics import INPUTS
from burstlake.schemas.metrics import NAMES as TABLES
from tests.builders.hand_lake import build_hand_lake


def test_metrics_dag_is_scheduled_on_the_input_tables(airflow_db):
    from airflow.dag_processing.dagbag import DagBag

    from tests.builders.paths import REPO

    dag = DagBag(dag_folder=str(REPO / "dags")).get_dag("metrics")
    condition = dag.timetable.asset_condition  # any one updated input triggers a run
    assert type(condition).__name__ == "AssetAny"
    assert {asset.name for asset in condition.objects} == {f"lake.{t}" for t in INPUTS}
    [task] = dag.tasks
    assert {o.name for o in task.outlets} == {f"lake.{t}" for t in TABLES}


@pytest.mark.slow
def test_metrics_dag_writes_every_metrics_table(run_dag, lake, spark):
    build_hand_lake(lake)
    assert run_dag("metrics").state == "success"
    jobs = {r["job_id"]: r for r in read_table(lake, "job_io_metrics").to_pylist()}
    assert jobs["1"]["io_nud"] == pytest.approx(0.25)  # the hand-built lake's J1
    counts = {t: read_table(lake, t).num_rows for t in TABLES}
    assert counts["interval_metrics"] == 15 and counts["cabinet_load"] == 2
