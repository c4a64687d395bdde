"""Airflow DAG `replay`: runs whenever the metrics run publishes the tables the replay reads from
it (job_io_metrics, io_phases: burstlake.schemas.replay.TRIGGERS; the metrics run follows every
change of the replay's other inputs, node_io, jobs, job_nodes and topology), replays every
scenario the deployment file names (its ``replay:`` list; else those in
``$BURSTLAKE_SCENARIOS``; else none) and writes ``replay_scores`` (docs/design.md, Replay)."""

from __future__ import annotations

from airflow.sdk import dag, task

from burstlake.orchestration import dag_arguments, lake_asset, on_update
from burstlake.schemas.replay import TRIGGERS


@dag(
    **dag_arguments(
        "replay",
        on_update(TRIGGERS),
        "When the metrics are recomputed, replay the lake's traces under each scenario's what-if "
        "policies (docs/design.md, Replay).",
        "replay",
    )
)
def replay() -> None:
    @task
    def find_scenarios() -> list[str]:
        from burstlake.config import load as deployment
        from burstlake.replay.scenario import scheduled

        return scheduled(deployment().scenarios)

    @task(outlets=[lake_asset("replay_scores")])
    def run_scenario(path: str) -> dict:
        from burstlake.lake import lake_path
        from burstlake.replay.scenario import load, run

        scenario = load(path)
        table = run(scenario, lake_path())
        return {"scenario": scenario.name, "scores": table.num_rows}

    run_scenario.expand(path=find_scenarios())


dag = replay()
