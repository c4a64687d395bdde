"""Metrics on the whole Tianhe-1A month (paper 004 §3, §4, §6): Spark vs the DuckDB headline.

1. Synthesize a ``tianhe1a`` lake (``BURSTLAKE_BENCH_DAYS``, default the preset's 24 days).
2. ``burstlake metrics`` on it (Spark local mode, every metrics table): wall and CPU time,
   node_io rows/s, peak memory of the process tree (driver + JVM).
3. The DuckDB headline figures (``jobs/metrics/headline_sql.py``) on the same lake: wall and
   CPU time, rows/s, peak memory; and whether both paths agree.

The goals (issue 26): Spark within 3 minutes and within 2× the DuckDB headline. The machine is
shared, so the 1-minute load average is recorded before and after each measured step.

Each step runs in its own process tree, sampled every 0.2 s for its peak RSS.
Results: ``bench/results/metrics_full.json``.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from pathlib import Path

from bench import Goal, load_average, measure, write_result

SYNTH = """
from burstlake.jobs.synth.run import synthesize
synthesize("tianhe1a", lake={lake!r}, days={days}, seed=1)
"""

HEADLINE = """
import json
from burstlake.jobs.metrics.headline_sql import headline
print(json.dumps(headline({lake!r})))
"""

GOAL_S = 180
GOAL_RATIO = 2.0


def main() -> Path:
    days = float(os.environ.get("BURSTLAKE_BENCH_DAYS", "24"))
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-metrics-") as tmp:
        lake = str(Path(tmp) / "lake")
        synth_s, *_ = measure([sys.executable, "-c", SYNTH.format(lake=lake, days=days)])
        from burstlake.catalog import sql

        node_io = sql(lake, "SELECT count(*) AS n FROM node_io")["n"][0].as_py()
        cli = str(Path(sys.executable).parent / "burstlake")
        spark_load = [load_average()]
        spark_s, spark_cpu, spark_mb, _ = measure([cli, "metrics", "--lake", lake])
        spark_load.append(load_average())
        duck_s, duck_cpu, duck_mb, out = measure([sys.executable, "-c", HEADLINE.format(lake=lake)])
        duck_load = [spark_load[1], load_average()]
        duck = json.loads(out.strip().splitlines()[-1])
        summary = sql(lake, "SELECT figure, value FROM platform_summary").to_pylist()
    spark_figures = {r["figure"]: r["value"] for r in summary}
    agree = all(
        (v is None and spark_figures[k] is None) or abs(spark_figures[k] - v) < 1e-9
        for k, v in duck.items()
    )
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "tianhe1a_days": days,
        "node_io_rows": node_io,
        "synth_s": synth_s,
        "spark": {
            "wall_s": spark_s,
            "cpu_s": spark_cpu,
            "rows_per_s": node_io / spark_s,
            "peak_rss_mb": spark_mb,
            "load_before_after": spark_load,
        },
        "duckdb_headline": {
            "wall_s": duck_s,
            "cpu_s": duck_cpu,
            "rows_per_s": node_io / duck_s,
            "peak_rss_mb": duck_mb,
            "load_before_after": duck_load,
        },
        "spark_over_duckdb": spark_s / duck_s,
        "spark_over_duckdb_cpu": spark_cpu / duck_cpu,
        "headline_agrees": agree,
        "headline": duck,
        "goal_spark_within_3_min": spark_s <= GOAL_S,
        "goal_spark_within_2x_duckdb": spark_s <= GOAL_RATIO * duck_s,
    }
    goals = [
        Goal("Spark within 3 minutes (issue 26)", f"{spark_s:.1f} s wall", spark_s <= GOAL_S),
        Goal(
            "Spark within 2× DuckDB's headline (issue 26)",
            f"{spark_s / duck_s:.2f}× wall, {spark_cpu / duck_cpu:.2f}× CPU",
            spark_s <= GOAL_RATIO * duck_s,
        ),
        Goal("Spark's tables and DuckDB's headline agree", "agree" if agree else "differ", agree),
    ]
    return write_result("metrics_full", result, goals)


if __name__ == "__main__":
    print(main())
