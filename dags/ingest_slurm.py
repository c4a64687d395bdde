"""Airflow DAG `ingest_slurm`: land new slurm files from the drop directory.

The DAG is built by burstlake.orchestration.ingest_dag; this file only names the source.
"""

from burstlake.orchestration import ingest_dag

dag = ingest_dag("slurm")
