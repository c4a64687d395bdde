"""``burstlake replay`` on a lake it cannot write says so before simulating (issue 41: it ran
the whole simulation first)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.builders.paths import REPO

RUN = "import sys; from burstlake.cli import main; sys.exit(main())"
SCENARIO = """name: slow
workload: {source: ior, nodes: [1, 2, 4, 8, 16, 32, 64], bytes_per_node: 4.0e+9,
           request_bytes: 1.0e+6}
topology: cs19
policies: [block]
"""


def test_a_replay_on_a_lake_it_cannot_write_stops_before_simulating(tmp_path: Path) -> None:
    scenario = tmp_path / "slow.yaml"
    scenario.write_text(SCENARIO)
    if os.geteuid() == 0:  # root writes anywhere but in sysfs
        lake = Path("/sys/burstlake-test-lake")
    else:
        (tmp_path / "ro").mkdir(mode=0o555)
        lake = tmp_path / "ro" / "lake"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", RUN, "replay", "--scenario", str(scenario), "--lake", str(lake)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(f"burstlake replay: lake {lake}: permission denied: "), line
    assert "replay slow's scores would have nowhere to land" in line
    assert time.monotonic() - started < 60  # the simulation takes minutes
    assert not lake.exists()
