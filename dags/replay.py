"""Airflow DAG `replay`: runs whenever a lake table the replay reads (node_io, jobs, job_nodes,
topology: burstlake.schemas.replay.INPUTS) is updated, replays every scenario in
``$BURSTLAKE_SCENARIOS`` (default: the examples shipped with the package) and writes
``replay_scores`` (docs/design.md, Replay)."""

from __future__ import annotations

from airflow.sdk import dag, task

from burstlake.orchestration import dag_arguments, lake_asset, on_update
from burstlake.schemas.replay import INPUTS


@dag(
    **dag_arguments(
        "replay",
        on_update(INPUTS),
        "When a replay input changes, replay the lake's traces under each scenario's what-if "
        "policies (docs/design.md, Replay).",
        "replay",
    )
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
