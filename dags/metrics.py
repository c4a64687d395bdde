"""Airflow DAG `metrics`: whenever ingest (or the synthesizer) updates a lake table the metrics
read, recompute every metrics table with Spark (SPEC §4) and mark them updated for `replay`.

Spark runs in local mode unless ``$BURSTLAKE_SPARK_MASTER`` names a cluster."""

from __future__ import annotations

from airflow.sdk import AssetAny, dag, task

from burstlake.orchestration import START, lake_asset
from burstlake.schemas import metrics

INPUTS = ("jobs", "job_nodes", "node_io", "topology", "darshan_jobs", "darshan_rank_io")


@dag(
    dag_id="metrics",
    schedule=AssetAny(*[lake_asset(table) for table in INPUTS]),
    start_date=START,
    catchup=False,
    max_active_runs=1,
    tags=["burstlake", "metrics"],
    doc_md="Recompute the burstiness metrics of the lake (SPEC §4, paper 004 §3, §4, §6).",
)
def metrics_dag() -> None:
    @task(outlets=[lake_asset(spec.name) for spec in metrics.TABLES])
    def compute_metrics() -> dict[str, int]:
        import os

        from burstlake.jobs.metrics.run import run

        return run(master=os.environ.get("BURSTLAKE_SPARK_MASTER"), progress=False)

    compute_metrics()


dag = metrics_dag()
