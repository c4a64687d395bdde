"""Airflow wiring shared by the DAG files in ``dags/`` (which stay one-liners).

Each lake table is an Airflow Asset named ``lake.<table>`` (one lake per Airflow deployment,
so the name alone identifies it): ingest tasks declare the tables they write as outlets, so
downstream DAGs (metrics, replay) are scheduled on data, not on the clock. The lake and drop
directories come from ``$BURSTLAKE_LAKE`` and ``$BURSTLAKE_DROP`` (defaults ``./lake``,
``./drop``).
"""

from __future__ import annotations

import pendulum
from airflow.sdk import DAG, Asset, dag, task

START = pendulum.datetime(2024, 1, 1, tz="UTC")


def lake_asset(table: str) -> Asset:
    """The Airflow Asset standing for one lake table."""
    return Asset(name=f"lake.{table}")


def ingest_dag(source: str, schedule: str = "@hourly") -> DAG:
    """DAG ``ingest_<source>``: land new files from ``<drop>/<source>/`` in the lake."""
    from burstlake.jobs.ingest import source_module

    tables = source_module(source).SOURCE.tables

    @dag(
        dag_id=f"ingest_{source}",
        schedule=schedule,
        start_date=START,
        catchup=False,
        max_active_runs=1,
        tags=["burstlake", "ingest"],
        doc_md=f"Land new `{source}` files from the drop directory in the lake (SPEC §2, §3).",
    )
    def pipeline() -> None:
        @task
        def find_new_files() -> list[str]:
            from burstlake.jobs.ingest.dropdir import pending_files

            return pending_files(source)

        @task(outlets=[lake_asset(t) for t in (*tables, "quarantine", "ingest_log")])
        def land(files: list[str]) -> dict:
            from burstlake.jobs.ingest.dropdir import land_files

            return land_files(source, files)

        land(find_new_files())

    return pipeline()
