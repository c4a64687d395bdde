"""Airflow DAG `ingest_darshan`: land new darshan files from the drop directory.

The DAG is built by burstlake.orchestration.ingest_dag; this file only names the source.
"""

from burstlake.orchestration import ingest_dag

dag = ingest_dag("darshan")
