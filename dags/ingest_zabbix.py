"""Airflow DAG `ingest_zabbix`: runs every hour and lands the new zabbix files of
`$BURSTLAKE_DROP/zabbix/` in the lake (a no-op on files it has seen).

Built by burstlake.orchestration.ingest_dag; this file only names the source.
"""

from burstlake.orchestration import ingest_dag

dag = ingest_dag("zabbix")
