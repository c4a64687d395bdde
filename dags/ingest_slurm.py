"""Airflow DAG `ingest_slurm`: runs every hour and lands the new slurm files of
`$BURSTLAKE_DROP/slurm/` in the lake (a no-op on files it has seen).

Built by burstlake.orchestration.ingest_dag; this file only names the source.
"""

from burstlake.orchestration import ingest_dag

dag = ingest_dag("slurm")
