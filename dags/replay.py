"""Airflow DAG `replay`: after the metrics jobs update the lake, replay every scenario in
``$BURSTLAKE_SCENARIOS`` (default: the shipped examples) and write ``replay_scores`` (SPEC §5)."""

from __future__ import annotations

from airflow.sdk import dag, task

from burstlake.orchestration import START, lake_asset
from burstlake.schemas import metrics


@dag(
    dag_id="replay",
    schedule=[lake_asset(spec.name) for spec in metrics.TABLES] or None,
    start_date=START,
    catchup=False,
    max_active_runs=1,
    tags=["burstlake", "replay"],
    doc_md="Replay the lake's traces under each scenario's what-if policies (SPEC §5).",
)
def replay() -> None:
    @task
    def find_scenarios() -> list[str]:
        from burstlake.replay.scenario import scenario_files

        return scenario_files()

    @task(outlets=[lake_asset("replay_scores")])
    def run_scenario(path: str) -> dict:
        from burstlake.lake import lake_path
        from burstlake.replay.scenario import load, run

        scenario = load(path)
        table = run(scenario, lake_path())
        return {"scenario": scenario.name, "scores": table.num_rows}

    run_scenario.expand(path=find_scenarios())


dag = replay()
