"""Real ``burstlake`` processes stopped at a named phase and killed there (the fault tests):
a phase is a :func:`burstlake.lake.checkpoint` name, reached through ``BURSTLAKE_PAUSE_AT``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

WAIT_S = 900  # a loaded 2-core machine starts Spark slowly


def cli(*args: str) -> list[str]:
    """The argv of the installed ``burstlake`` command with ``args``."""
    return [str(Path(sys.executable).with_name("burstlake")), *args]


def paused(args: list[str], phase: str, marker: Path) -> subprocess.Popen:
    """Start ``args`` and return once it waits at ``phase`` (it wrote ``marker``)."""
    env = {**os.environ, "BURSTLAKE_PAUSE_AT": f"{phase}:{marker}"}
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + WAIT_S
    while not marker.exists():
        if proc.poll() is not None:
            pytest.fail(f"{args} ended before {phase}: {proc.stderr.read()[-2000:]}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"{args} never reached {phase}")
        time.sleep(0.05)
    return proc


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL ``proc`` and check it died of it."""
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=60) == -signal.SIGKILL
