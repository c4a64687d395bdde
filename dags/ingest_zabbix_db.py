"""Airflow DAG `ingest_zabbix_db`: runs every hour and lands the new history of each Zabbix
database `burstlake.yaml` declares (`zabbix_db`), from the lake's per-item watermarks.

Built by burstlake.orchestration.database_dag; this file only names the source.
"""

from burstlake.orchestration import database_dag

dag = database_dag("zabbix")
