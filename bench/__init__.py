"""Benchmarks: speed goals live here, never in timed tests (run ``python -m bench [name...]``).

Each ``bench/<name>.py`` has ``main() -> Path``: it runs its measurement and returns the JSON
file it wrote under ``bench/results/`` (generated inputs go to a temporary directory, never
into the repository).
"""

import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

RESULTS = Path(__file__).resolve().parent / "results"


def write_result(name: str, result: dict) -> Path:
    """Save one benchmark's figures, with the machine's state, as ``bench/results/<name>.json``."""
    result = result | {
        "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 1),
        "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return path


# No benchmark step may run longer than this (seconds); override with $BURSTLAKE_BENCH_TIMEOUT.
STEP_TIMEOUT_S = float(os.environ.get("BURSTLAKE_BENCH_TIMEOUT", "3600"))


def measure(command: list[str], timeout_s: float = STEP_TIMEOUT_S) -> tuple[float, float, str]:
    """Run one command: (wall seconds, peak RSS MiB of its process tree, its stdout).

    Output goes to temporary files, not pipes, so a chatty step can never block on a full pipe
    while we poll it; a step over ``timeout_s`` is killed with its children and reported.
    """
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True)
        root, peak = psutil.Process(process.pid), 0
        while process.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree))
            except psutil.Error:
                pass
            if time.perf_counter() - started > timeout_s:
                os.killpg(process.pid, 9)
                process.wait()
                raise RuntimeError(f"benchmark step {command[:3]} ran over {timeout_s:.0f} s")
            time.sleep(0.2)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(errors="replace"), err.read().decode(errors="replace")
    if process.returncode:
        raise RuntimeError(f"benchmark step {command[:3]} failed:\n{stderr[-2000:]}")
    return time.perf_counter() - started, peak / 2**20, stdout
