"""The replay DAG runs scenarios under Airflow (dag.test() on a SQLite metadata DB)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from burstlake.lake import read_table, write_table
from burstlake.presets import machine
from burstlake.schemas.metrics import INPUTS as METRICS_INPUTS
from burstlake.schemas.replay import INPUTS, TRIGGERS


def test_replay_dag_runs_after_the_metrics_it_reads(airflow_db):
    from airflow.dag_processing.dagbag import DagBag

    from tests.builders.paths import REPO

    dag = DagBag(dag_folder=str(REPO / "dags")).get_dag("replay")
    condition = dag.timetable.asset_condition  # any one updated input triggers a run
    assert type(condition).__name__ == "AssetAny"
    assert {asset.name for asset in condition.objects} == {"lake.job_io_metrics", "lake.io_phases"}
    # the replay's other inputs all trigger the metrics run, which then triggers the replay
    assert set(INPUTS) - set(TRIGGERS) <= set(METRICS_INPUTS)


def test_replay_dag_writes_scores_for_every_scenario(run_dag, lake, tmp_path, monkeypatch):
    tiny = machine("tiny")
    write_table(lake, "topology", tiny.topology(), "topo")
    t0 = dt.datetime(2018, 1, 1, tzinfo=dt.UTC)
    write_table(
        lake,
        "node_io",
        pa.table(
            {
                "node": ["cn00000", "cn00001"],
                "ts": [t0, t0],
                "interval_s": [10, 10],
                "write_bytes": [400, 600],
            }
        ),
        "io",
    )
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name in ("one", "two"):
        (scenarios / f"{name}.yaml").write_text(
            f"name: {name}\nworkload: {{source: lake}}\ntopology: lake\npolicies: [block, cyclic]\n"
        )
    monkeypatch.setenv("BURSTLAKE_SCENARIOS", str(scenarios))
    assert run_dag("replay").state == "success"
    scores = read_table(lake, "replay_scores")
    assert sorted(set(scores["scenario"].to_pylist())) == ["one", "two"]
    served = {
        (r["scenario"], r["policy"]): r["value"]
        for r in scores.to_pylist()
        if r["metric"] == "bytes_served"
    }
    assert served == {(s, p): 1000.0 for s in ("one", "two") for p in ("block", "cyclic")}
    assert run_dag("replay").state == "success"  # a re-run replaces, never duplicates
    assert read_table(lake, "replay_scores").num_rows == scores.num_rows


def test_replay_dag_fails_on_a_bad_scenario(run_dag, lake, tmp_path, monkeypatch):
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "bad.yaml").write_text("name: bad\n")
    monkeypatch.setenv("BURSTLAKE_SCENARIOS", str(scenarios))
    assert run_dag("replay").state == "failed"
