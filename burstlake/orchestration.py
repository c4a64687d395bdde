"""Airflow wiring shared by the DAG files in ``dags/`` (docs/design.md, "Orchestration").

The DAG files are small: each ingest DAG is one call to :func:`ingest_dag`; the ``metrics`` and
``replay`` DAGs define their few tasks in their own file and take the arguments every burstlake
DAG shares from :func:`dag_arguments`. Each lake table is an Airflow Asset named
``lake.<table>`` (one lake per Airflow deployment, so the name alone identifies it): a task
declares the tables it writes as outlets, and downstream DAGs (metrics, replay) are scheduled
on the tables they read, not on the clock. The lake and drop directories come from
``$BURSTLAKE_LAKE`` and ``$BURSTLAKE_DROP`` (defaults ``./lake``, ``./drop``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pendulum
from airflow.sdk import DAG, Asset, AssetAny, dag, task

START = pendulum.datetime(2024, 1, 1, tz="UTC")


def lake_asset(table: str) -> Asset:
    """The Airflow Asset standing for one lake table."""
    return Asset(name=f"lake.{table}")


def on_update(tables: Iterable[str]) -> AssetAny:
    """A schedule: run when any one of these lake tables is updated."""
    return AssetAny(*[lake_asset(table) for table in tables])


def dag_arguments(dag_id: str, schedule: Any, doc_md: str, *tags: str) -> dict[str, Any]:
    """The ``@dag`` arguments every burstlake DAG shares: no backfill, one run at a time."""
    return {
        "dag_id": dag_id,
        "schedule": schedule,
        "start_date": START,
        "catchup": False,
        "max_active_runs": 1,
        "tags": ["burstlake", *tags],
        "doc_md": doc_md,
    }


def ingest_dag(source: str, schedule: str = "@hourly") -> DAG:
    """DAG ``ingest_<source>``: land new files from the source's drop folders (the deployment
    file's, with their machine and options; else ``<drop>/<source>/``) in the lake."""
    from burstlake.jobs.ingest import source_module

    tables = source_module(source).SOURCE.tables

    @dag(
        **dag_arguments(
            f"ingest_{source}",
            schedule,
            f"Every hour, land new `{source}` files from its drop folders in the lake, with "
            "the options burstlake.yaml gives each folder (docs/design.md, Ingest).",
            "ingest",
        )
    )
    def pipeline() -> None:
        # Nothing new to land: `land` is skipped, so no asset event wakes metrics and replay.
        @task.short_circuit
        def find_new_files() -> list[dict]:
            from burstlake.jobs.ingest.dropdir import drop_folders, pending_files

            found = []
            for folder, options in drop_folders(source):
                files = pending_files(source, folder)
                if files:
                    found.append({"folder": str(folder), "files": files, "options": options})
            return found

        @task(outlets=[lake_asset(t) for t in (*tables, "quarantine", "ingest_log")])
        def land(drops: list[dict]) -> list[dict]:
            from burstlake.jobs.ingest.dropdir import land_files

            return [
                {"folder": d["folder"], **land_files(source, d["files"], options=d["options"])}
                for d in drops
            ]

        land(find_new_files())

    return pipeline()


def database_dag(source: str, schedule: str = "@hourly") -> DAG:
    """DAG ``ingest_<source>_db``: every hour, read each database the deployment file declares
    for the source (``zabbix_db``), each in its own task, and land what the lake lacks."""
    from burstlake.jobs.ingest import source_module

    tables = source_module(source).SOURCE.tables

    @dag(
        **dag_arguments(
            f"ingest_{source}_db",
            schedule,
            f"Every hour, land the new `{source}` history of each database burstlake.yaml "
            "declares (docs/design.md, Deployment).",
            "ingest",
        )
    )
    def pipeline() -> None:
        @task
        def machines() -> list[str]:
            from burstlake.config import load

            return [db.machine for db in load().databases]

        # One task instance per database (dynamic task mapping): one database down fails its
        # own instance only; the others land.
        @task(outlets=[lake_asset(t) for t in (*tables, "quarantine", "ingest_log")])
        def land(machine: str) -> dict:
            from burstlake.config import load
            from burstlake.jobs.ingest.dropdir import land_pulled

            deployment = load()
            (db,) = [db for db in deployment.databases if db.machine == machine]
            options = {**deployment.options(source, db.machine), "db": db.url}
            options["password_env"] = _password_env(db)
            return {"machine": db.machine, **land_pulled(source, options)}

        land.expand(machine=machines())

    return pipeline()


def _password_env(db: Any) -> str | None:
    """The environment variable holding a database's password: the one the deployment file
    names, or one filled from the Airflow connection it names."""
    if db.airflow_conn_id is None:
        return db.password_env
    import os

    from airflow.sdk import Connection

    name = f"BURSTLAKE_DB_PASSWORD_{db.machine.upper()}"
    os.environ[name] = Connection.get(db.airflow_conn_id).password or ""
    return name
