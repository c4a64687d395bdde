"""Shared fixtures: one SparkSession per test run, a fresh lake per test, the real samples,
and an Airflow home with a SQLite metadata DB created for the run. The inputs tests build
(export lines, sacct text, the hand lake) are in :mod:`tests.builders`."""

from __future__ import annotations

import atexit
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.builders.paths import REPO, SHARED_DATA

STANDALONE_SCRIPT = REPO / "infra" / "spark-standalone.sh"

# Airflow and GX read their settings at import: set them before anything imports either.
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="burstlake-airflow-"))
atexit.register(shutil.rmtree, _AIRFLOW_HOME, ignore_errors=True)  # the run's own, gone after it
os.environ.setdefault("AIRFLOW_HOME", str(_AIRFLOW_HOME))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(REPO / "dags"))
os.environ.setdefault(
    "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", f"sqlite:///{_AIRFLOW_HOME / 'airflow.db'}"
)
os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    """An empty lake directory for one test."""
    path = tmp_path / "lake"
    path.mkdir()
    return path


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real input samples (``$BURSTLAKE_SAMPLES``, else ../shared/data beside the checkout)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real samples not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run (local, 2 cores, small shuffles)."""
    from burstlake.spark import session

    spark = session("local[2]", app_name="burstlake-tests", shuffle_partitions=4)
    yield spark
    spark.stop()


@pytest.fixture(scope="session")
def tiny_metrics_lake(spark, tmp_path_factory) -> Path:
    """One synthesized ``tiny`` day (seed 1) with its metrics, shared by the tests that only
    read it (the metrics against the synthesizer's truth, the notebook, the report): a test
    that writes into it works on its own copy (:func:`shutil.copytree`)."""
    from burstlake.jobs.metrics.run import run
    from burstlake.jobs.synth.run import synthesize

    lake = tmp_path_factory.mktemp("tiny") / "lake"
    synthesize("tiny", lake=lake, seed=1)
    run(lake, spark=spark)
    return lake


@pytest.fixture(scope="session")
def airflow_db() -> Path:
    """An Airflow metadata DB (SQLite) created for this test run."""
    from airflow.utils import db

    db.initdb()
    return _AIRFLOW_HOME


@pytest.fixture
def run_dag(airflow_db, lake, tmp_path, monkeypatch):
    """Run a DAG from ``dags/`` with ``dag.test()`` against this test's lake and drop dir.

    Returns a function ``run(dag_id) -> DagRun``; the drop directory is ``tmp_path / 'drop'``.
    """
    monkeypatch.setenv("BURSTLAKE_LAKE", str(lake))
    monkeypatch.setenv("BURSTLAKE_DROP", str(tmp_path / "drop"))

    def run(dag_id: str):
        from airflow.dag_processing.dagbag import DagBag

        bag = DagBag(dag_folder=str(REPO / "dags"))
        dag = bag.get_dag(dag_id)
        assert dag is not None, f"DAG {dag_id} not found; import errors: {bag.import_errors}"
        return dag.test()

    return run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def standalone(tmp_path):
    """spark://127.0.0.1:<port> with one 1-core worker, started and stopped by the operator's
    script in infra/ (from the installed pyspark)."""
    env = os.environ | {"PYTHON": sys.executable, "BURSTLAKE_SPARK_DIR": str(tmp_path / "spark")}
    command = [
        str(STANDALONE_SCRIPT),
        "start",
        "--port",
        str(free_port()),
        "--cores",
        "1",
        "--memory",
        "1g",
    ]
    try:
        started = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert started.returncode == 0, started.stderr
        yield started.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run([str(STANDALONE_SCRIPT), "stop"], env=env, timeout=60, check=False)
