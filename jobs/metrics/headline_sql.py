"""The headline figures of paper 004 (§3.2, §3.3, §4.1, §6.2) from the raw lake tables, in DuckDB
SQL.

Deliberately a second, independent implementation of what the Spark jobs compute: the same
definitions and thresholds (:class:`MetricSettings`), but another engine and other formulas
(entropy from shares instead of the one-pass Σ x ln x of :mod:`.nud`), so that a mistake in
either shows up as a disagreement. It must not import the Spark path. It cross-checks the
metrics in the tests and is the fast path of ``bench/metrics_full.py``. Figure names match
``platform_summary.figure`` (docs/design.md, "Metrics"). Like the Spark path, it computes one
machine (``cluster``) at a time, as if it were alone in the lake.
"""

from __future__ import annotations

import os

from burstlake.catalog import connect
from burstlake.lake import Cluster, cluster_of, clusters

from .settings import MetricSettings, top_count

JOBS_SQL = """
WITH ran AS (
    SELECT job_id, cluster, run, epoch_us(start) / 1e6 AS s, epoch_us("end") / 1e6 AS e
    FROM jobs WHERE start IS NOT NULL AND "end" > start
), alloc AS (
    SELECT DISTINCT jn.job_id, jn.cluster, jn.run, jn.node, t.cabinet, r.s, r.e
    FROM job_nodes jn
    JOIN ran r ON jn.job_id = r.job_id AND jn.cluster IS NOT DISTINCT FROM r.cluster
        AND jn.run IS NOT DISTINCT FROM r.run
    LEFT JOIN topology t ON t.node = jn.node
), io AS (
    SELECT node, epoch_us(ts) / 1e6 + interval_s / 2.0 AS mid,
           coalesce(read_bytes, 0) + coalesce(write_bytes, 0) AS b,
           CASE WHEN net_rx_bytes IS NULL AND net_tx_bytes IS NULL THEN NULL
                ELSE coalesce(net_rx_bytes, 0) + coalesce(net_tx_bytes, 0) END AS net
    FROM node_io
), per_node AS (
    SELECT a.job_id, a.cluster, a.run, a.node, any_value(a.cabinet) AS cabinet,
           coalesce(sum(io.b), 0)::DOUBLE AS b, sum(io.net)::DOUBLE AS net
    FROM alloc a LEFT JOIN io ON io.node = a.node AND io.mid >= a.s AND io.mid < a.e
    GROUP BY a.job_id, a.cluster, a.run, a.node
), totals AS (
    SELECT job_id, cluster, run, count(*) AS n, sum(b) AS total, max(b) AS top, sum(net) AS net
    FROM per_node GROUP BY job_id, cluster, run
), entropy AS (
    SELECT p.job_id, p.cluster, p.run,
           sum(CASE WHEN p.b > 0 THEN -(p.b / t.total) * ln(p.b / t.total) ELSE 0 END) AS h
    FROM per_node p JOIN totals t
      ON p.job_id = t.job_id AND p.cluster IS NOT DISTINCT FROM t.cluster
        AND p.run IS NOT DISTINCT FROM t.run
    WHERE t.total > 0 GROUP BY p.job_id, p.cluster, p.run
), cabinet_nodes AS (
    SELECT job_id, cluster, run, cabinet, count(*)::DOUBLE AS k
    FROM per_node WHERE cabinet IS NOT NULL GROUP BY ALL
), cabinet_shares AS (
    SELECT job_id, cluster, run, k / sum(k) OVER (PARTITION BY job_id, cluster, run) AS p
    FROM cabinet_nodes
), cabinets AS (
    SELECT job_id, cluster, run, count(*) AS spanned, ln(count(*)) AS log_n, -sum(p * ln(p)) AS h
    FROM cabinet_shares GROUP BY job_id, cluster, run
), job AS (
    SELECT t.n, t.total,
           CASE WHEN t.n > 1 AND t.total > 0 THEN t.top / t.total > $rank0 END AS rank0,
           CASE WHEN t.n > 1 AND t.total > 0 THEN 1 - e.h / ln(t.n) END AS io_nud,
           coalesce(c.spanned, 0) AS spanned,
           ceil(t.n / $per_cabinet) AS min_cabinets,
           CASE WHEN c.spanned > 1 THEN 1 - c.h / c.log_n END AS cabinet_nud,
           t.total > $data_intensive AS data_intensive,
           CASE WHEN t.net IS NOT NULL THEN t.total > greatest(t.net - t.total, 0) END AS low_comm
    FROM totals t
    LEFT JOIN entropy e ON e.job_id = t.job_id AND e.cluster IS NOT DISTINCT FROM t.cluster
        AND e.run IS NOT DISTINCT FROM t.run
    LEFT JOIN cabinets c ON c.job_id = t.job_id AND c.cluster IS NOT DISTINCT FROM t.cluster
        AND c.run IS NOT DISTINCT FROM t.run
), flagged AS (
    SELECT *, coalesce(NOT rank0, false) AS all_rank FROM job
)
SELECT
    avg(rank0::DOUBLE) AS rank0_jobs,
    avg(CASE WHEN all_rank THEN (io_nud <= $uneven)::DOUBLE END) AS even_io_all_rank,
    avg(CASE WHEN n > 1 THEN (spanned = min_cabinets)::DOUBLE END) AS in_min_cabinets,
    avg((cabinet_nud > $uneven)::DOUBLE) AS uneven_nodes,
    avg(data_intensive::DOUBLE) AS data_intensive_jobs,
    sum(CASE WHEN data_intensive THEN total ELSE 0 END) / sum(total) AS data_intensive_traffic,
    avg(all_rank::DOUBLE) AS all_rank_jobs,
    avg(low_comm::DOUBLE) AS low_comm_jobs,
    avg((data_intensive AND all_rank AND coalesce(low_comm, false))::DOUBLE) AS optimizable_jobs
FROM flagged
"""

INTERVALS_SQL = """
WITH active AS (
    SELECT io.ts, io.node, t.cabinet, t.ion,
           (coalesce(read_bytes, 0) + coalesce(write_bytes, 0))::DOUBLE AS b
    FROM node_io io LEFT JOIN topology t ON t.node = io.node
    WHERE coalesce(read_bytes, 0) + coalesce(write_bytes, 0) > 0
), system AS (
    SELECT ts, sum(b) AS total FROM active GROUP BY ts
), top_nodes AS (
    SELECT ts, sum(b) AS top FROM (
        SELECT ts, b, row_number() OVER (PARTITION BY ts ORDER BY b DESC) AS r FROM active
    ) WHERE r <= $k_nodes GROUP BY ts
), top_cabinets AS (
    SELECT ts, sum(b) AS top FROM (
        SELECT ts, b, row_number() OVER (PARTITION BY ts ORDER BY b DESC) AS r
        FROM (SELECT ts, cabinet, sum(b) AS b FROM active WHERE cabinet IS NOT NULL GROUP BY ALL)
    ) WHERE r <= $k_cabinets GROUP BY ts
), top_ions AS (
    SELECT ts, sum(b) AS top FROM (
        SELECT ts, b, row_number() OVER (PARTITION BY ts ORDER BY b DESC) AS r
        FROM (SELECT ts, ion, sum(b) AS b FROM active WHERE ion IS NOT NULL GROUP BY ALL)
    ) WHERE r <= $k_ions GROUP BY ts
)
SELECT
    sum(n.top) / sum(s.total) AS top_node_share,
    quantile_cont(n.top / s.total, 0.5) AS top_node_share_median,
    sum(c.top) / sum(CASE WHEN c.top IS NOT NULL THEN s.total END) AS top_cabinet_share,
    quantile_cont(c.top / s.total, 0.5) AS top_cabinet_share_median,
    sum(i.top) / sum(CASE WHEN i.top IS NOT NULL THEN s.total END) AS top_ion_share,
    quantile_cont(i.top / s.total, 0.5) AS top_ion_share_median
FROM system s
LEFT JOIN top_nodes n USING (ts)
LEFT JOIN top_cabinets c USING (ts)
LEFT JOIN top_ions i USING (ts)
"""

SIZE_SQL = """
SELECT count(DISTINCT node), count(DISTINCT cabinet), count(DISTINCT ion),
       (SELECT max(c) FROM (SELECT count(*) AS c FROM topology GROUP BY cabinet))
FROM topology
"""


def headlines(
    lake: str | os.PathLike | None, settings: MetricSettings | None = None
) -> dict[str | None, dict]:
    """Machine -> its headline figures, each machine computed alone."""
    return {machine.name: headline(lake, settings, machine) for machine in clusters(lake)}


def headline(
    lake: str | os.PathLike | None,
    settings: MetricSettings | None = None,
    cluster: str | Cluster | None = None,
) -> dict:
    """Figure name -> value of the paper 004 headline figures of one machine (``cluster``;
    default: the lake's only one, a ValueError if it holds several), from the raw tables."""
    settings = settings or MetricSettings()
    machine = cluster if isinstance(cluster, Cluster) else cluster_of(lake, cluster)
    con = connect(lake, cluster=machine)  # every table shows this machine's rows only
    try:
        nodes, cabinets, ions, per_cabinet = con.execute(SIZE_SQL).fetchone()
        if not nodes:
            nodes = con.execute("SELECT count(DISTINCT node) FROM node_io").fetchone()[0]
        jobs = con.execute(
            JOBS_SQL,
            {
                "rank0": settings.rank0_share,
                "uneven": settings.uneven_nud,
                "data_intensive": settings.data_intensive_bytes,
                "per_cabinet": settings.nodes_per_cabinet or per_cabinet,
            },
        )
        figures = dict(zip([d[0] for d in jobs.description], jobs.fetchone(), strict=True))
        intervals = con.execute(
            INTERVALS_SQL,
            {
                "k_nodes": top_count(settings.top_node_fraction, nodes),
                "k_cabinets": top_count(settings.top_cabinet_fraction, cabinets),
                "k_ions": top_count(settings.top_ion_fraction, ions),
            },
        )
        names = [d[0] for d in intervals.description]
        figures |= dict(zip(names, intervals.fetchone(), strict=True))
    finally:
        con.close()
    return figures
