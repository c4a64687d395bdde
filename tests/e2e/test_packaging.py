"""The wheel is a complete package (docs/design.md, "Packaging"): built from the checkout,
installed (not editable) into a fresh virtual environment, it runs from a directory outside the
checkout and finds its package data through importlib.resources.

The fresh environment takes burstlake's dependencies from the test's own environment (a path
entry, not an install), so the test needs no network and stays within seconds of the build;
`pip install .` with the dependencies from PyPI and `burstlake demo` were checked by hand
(report of issue 16)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.builders.paths import REPO

PACKAGE_DATA = (
    "burstlake/notebooks/spatial_burstiness.ipynb",
    "burstlake/notebooks/coordination.ipynb",
    "burstlake/replay/scenarios/calciom_pair.yaml",
    "burstlake/replay/scenarios/ion_remap.yaml",
    "burstlake/jobs/ingest/zabbix/zabbix_mapping.yaml",
)


def _run(*args: str | Path, cwd: Path, env: dict | None = None) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{args}: {done.stderr[-2000:]}"
    return done.stdout


@pytest.mark.slow
def test_wheel_installs_and_runs_outside_the_checkout(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, REPO, cwd=tmp_path)
    [wheel] = wheels.glob("burstlake-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(PACKAGE_DATA) <= names
    assert "burstlake/jobs/metrics/nud.py" in names and "burstlake/cli/__init__.py" in names
    assert not [n for n in names if n.startswith(("jobs/", "replay/", "schemas/", "tests/"))]

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=tmp_path)
    purelib = "import sysconfig; print(sysconfig.get_path('purelib'))"
    site = _run(python, "-c", purelib, cwd=tmp_path)
    (Path(site.strip()) / "dev-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BURSTLAKE_SAMPLES")}
    where = _run(
        python,
        "-c",
        "import burstlake.jobs.metrics.notebook as nb, burstlake.replay.scenario as sc\n"
        "print(nb.__file__); print(nb.NOTEBOOK.is_file(), sc.SCENARIOS.joinpath('ion_remap.yaml')"
        ".is_file())",
        cwd=outside,
        env=env,
    ).splitlines()
    assert where[0].startswith(str(venv)), where
    assert where[1] == "True True"
    lake = tmp_path / "lake"
    small = REPO / "tests" / "fixtures" / "topology" / "small.csv"
    _run(venv / "bin" / "burstlake", "ingest", "topology", small, "--lake", lake, cwd=outside)
    query = "SELECT count(*) AS n FROM topology"
    out = _run(venv / "bin" / "burstlake", "sql", "--lake", lake, query, cwd=outside)
    assert out.split() == ["n", "-", "4"]
    help_text = _run(venv / "bin" / "burstlake", "metrics", "--help", cwd=outside, env=env)
    assert "docs/design.md" in help_text and "SPEC" not in help_text
