"""The metrics run unchanged on a real Spark standalone cluster (a master and a one-core worker
on loopback, started from the installed pyspark) and give the local-mode results.

The test session already holds a local SparkContext (one per JVM), so the cluster run goes
through the CLI in a subprocess: ``burstlake metrics --spark-master spark://...``.
"""

from __future__ import annotations

import math
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pyspark
import pytest

from burstlake.jobs.metrics.run import TABLES, run
from burstlake.lake import read_table
from tests.test_metrics import SETTINGS, build_hand_lake

SPARK_HOME = Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_log(path: Path, text: str, process: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not in {path}:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.fixture
def standalone(tmp_path):
    """spark://127.0.0.1:<port> with one 1-core worker; both killed afterwards."""
    env = os.environ | {"SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable}
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    commands = {
        "master": [
            spark_class,
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
        ],
        "worker": [
            spark_class,
            "org.apache.spark.deploy.worker.Worker",
            url,
            "--host",
            "127.0.0.1",
            "--cores",
            "1",
            "--memory",
            "1g",
            "--webui-port",
            str(free_port()),
            "--work-dir",
            str(tmp_path / "work"),
        ],
    }
    processes = []
    try:
        for name, command in commands.items():
            log = tmp_path / f"{name}.log"
            with log.open("w") as out:
                processes.append(
                    subprocess.Popen(
                        command,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        env=env,
                        start_new_session=True,
                    )
                )
            ready = "Starting Spark master" if name == "master" else "Successfully registered"
            wait_for_log(log, ready, processes[-1], timeout_s=120)
        yield url
    finally:
        for process in reversed(processes):
            os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


@pytest.mark.slow
def test_cluster_run_matches_local_mode(standalone, spark, tmp_path):
    local, remote = tmp_path / "local", tmp_path / "remote"
    build_hand_lake(local)
    build_hand_lake(remote)
    run(local, spark=spark, settings=SETTINGS, progress=False)
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
