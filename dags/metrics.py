"""Airflow DAG `metrics`: runs whenever ingest (or the synthesizer) updates a lake table the
metrics read (burstlake.schemas.metrics.INPUTS), recomputes every metrics table with Spark
(paper 004 §3, §4, §6) and marks them updated.

Spark runs in local mode unless ``$BURSTLAKE_SPARK_MASTER`` names a cluster."""

from __future__ import annotations

from airflow.sdk import dag, task

from burstlake.orchestration import dag_arguments, lake_asset, on_update
from burstlake.schemas.metrics import INPUTS, NAMES


@dag(
    **dag_arguments(
        "metrics",
        on_update(INPUTS),
        "When an input table changes, recompute the burstiness metrics of the lake "
        "(paper 004 §3, §4, §6; docs/design.md, Metrics).",
        "metrics",
    )
)
def metrics_dag() -> None:
    @task(outlets=[lake_asset(table) for table in NAMES])
    def compute_metrics() -> dict[str, int]:
        import os

        from burstlake.jobs.metrics.run import run

        return run(master=os.environ.get("BURSTLAKE_SPARK_MASTER"))

    compute_metrics()


dag = metrics_dag()
