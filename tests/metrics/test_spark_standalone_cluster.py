"""The metrics run unchanged on a real Spark standalone cluster (a master and a one-core worker
on loopback, started from the installed pyspark by infra/spark-standalone.sh) and give the
local-mode results.

The test session already holds a local SparkContext (one per JVM), so the cluster run goes
through the CLI in a subprocess: ``burstlake metrics --spark-master spark://...``.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from burstlake.jobs.metrics.run import TABLES, run
from burstlake.lake import read_table
from tests.builders.hand_lake import SETTINGS, build_hand_lake


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


@pytest.mark.slow
def test_cluster_run_matches_local_mode(standalone, spark, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "remote"
    build_hand_lake(local)
    build_hand_lake(remote)
    run(local, spark=spark, settings=SETTINGS)
    overrides = ["--set", "data_intensive_bytes=5000", "--set", "io_phase_bytes_per_s=1"]
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "burstlake"),
            "metrics",
            "--lake",
            str(remote),
            "--spark-master",
            standalone,
            *overrides,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env=os.environ | {"PYSPARK_PYTHON": sys.executable, "BURSTLAKE_SPARK_DRIVER_MEMORY": "1g"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "job_io_metrics: 13 rows" in done.stdout
    for table in TABLES:
        mine, theirs = read_table(local, table).to_pylist(), read_table(remote, table).to_pylist()
        assert len(mine) == len(theirs), table
        for a, b in zip(mine, theirs, strict=True):
            assert all(same(a[k], b[k]) for k in a), (table, a, b)
