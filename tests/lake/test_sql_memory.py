"""``burstlake sql`` within its memory limit (issue 41): 5,000 columns, 20 MB cells and a cross
join of 2e13 rows, each run in a subprocess whose address space is capped (``RLIMIT_AS``) at
what ``SELECT 1`` takes plus 1 GiB. Before, they needed 9.8 GB, 3.5 GB and hours of counting."""

from __future__ import annotations

import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.builders.paths import REPO

pytestmark = pytest.mark.slow
RUN = """import re, sys
from burstlake.cli import main
code = main(sys.argv[1:])
peak = re.search(r"VmPeak:\\s+(\\d+)", open("/proc/self/status").read()).group(1)
print("VmPeak", peak, file=sys.stderr)
sys.exit(code)
"""
WIDE = ", ".join(f"i AS c{k}" for k in range(5000))
CASES = {
    "5000-columns": (f"SELECT {WIDE} FROM range(1000000) t(i)", "c4999"),
    "20MB-cells": ("SELECT repeat('x', 20000000) || i AS w FROM range(200) t(i)", "x" * 999 + "…"),
    "cross-join": ("SELECT * FROM range(10000000) a, range(2000000) b", "(more rows than the 5"),
}


def _sql(lake: Path, query: str, limit: int | None) -> subprocess.CompletedProcess:
    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    argv = ["sql", "--lake", str(lake), "--memory-limit", "256MB", "--threads", "1"]
    return subprocess.run(
        [sys.executable, "-c", RUN, *argv, "--max-rows", "5", query],
        cwd=REPO, preexec_fn=cap, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory) -> Path:
    from burstlake.cli import main

    lake = tmp_path_factory.mktemp("sqlmem") / "lake"
    history = REPO / "tests" / "fixtures" / "zabbix" / "history-tags.ndjson"
    assert main(["ingest", "zabbix", str(history), "--lake", str(lake)]) == 0
    return lake


@pytest.mark.parametrize("name", list(CASES))
def test_sql_stays_within_its_limit(name: str, small_lake: Path) -> None:
    base = _sql(small_lake, "SELECT 1", None)
    assert base.returncode == 0, base.stderr
    baseline = int(re.search(r"VmPeak (\d+)", base.stderr).group(1)) << 10
    query, shown = CASES[name]
    done = _sql(small_lake, query, baseline + (1 << 30))
    assert done.returncode == 0, done.stderr[-500:]
    assert shown in done.stdout
    assert "(more rows than the 5 shown" in done.stdout
