"""Shared fixtures: one SparkSession per test run, a fresh lake per test, the real samples,
and an Airflow home with a SQLite metadata DB created for the run."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

# Airflow and GX read their settings at import: set them before anything imports either.
_AIRFLOW_HOME = Path(tempfile.mkdtemp(prefix="burstlake-airflow-"))
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
    """The real input samples beside the checkout (../shared/data)."""
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
