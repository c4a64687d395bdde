"""Fixtures of the lake's failure tests: a disk that can fill up, and Slurm dumps to land on it."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 16 MB tmpfs: a disk that can fill up (skipped where mounting needs root)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def write_sacct(path: Path, jobs: range) -> Path:
    """A pipe-separated ``sacct`` dump of one-node jobs numbered ``jobs``, all completed."""
    header = (
        "JobIDRaw|JobName|User|UID|Account|Partition|Submit|Eligible|Start|End|ReqCPUS"
        "|AllocCPUS|NNodes|NodeList|State|ExitCode|Cluster"
    )
    lines = [
        f"{j}|a|u|1|x|w|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T00:10:00|"
        f"2024-03-01T01:00:00|8|8|1|cn001|COMPLETED|0:0|th"
        for j in jobs
    ]
    path.write_text("\n".join([header, *lines]) + "\n")
    return path
