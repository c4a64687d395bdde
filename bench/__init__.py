"""Benchmarks: speed goals live here, never in timed tests (run ``python -m bench [name...]``).

Each ``bench/<name>.py`` has ``main() -> Path``: it runs its measurement and returns the JSON
file it wrote under ``bench/results/`` (generated inputs go to a temporary directory, never
into the repository). The results are committed; ``docs/benchmarks.md`` is rendered from them
by ``python -m bench.render`` (``python -m bench`` renders it after its runs), never edited.
"""

import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import psutil

RESULTS = Path(__file__).resolve().parent / "results"


def load_average() -> float:
    """The machine's 1-minute load average, as every result records it (one decimal)."""
    return round(os.getloadavg()[0], 1)


class Goal(NamedTuple):
    """A goal a benchmark is held to: what it asks, the figure measured against it, whether it
    was met. A miss is written as missed, with the figure; never rounded into a pass."""

    goal: str
    figure: str
    met: bool


def write_result(name: str, result: dict, goals: list[Goal] | None = None) -> Path:
    """Save one benchmark's figures, with the machine's state, as ``bench/results/<name>.json``.

    ``goals`` go to the file's ``goals`` list (``goal``, ``figure``, ``met``), which
    ``docs/benchmarks.md`` shows as met or missed.
    """
    result = (
        {"benchmark": name, "goals": []}
        | result
        | {
            "cpus": os.cpu_count(),
            "load_average_1min": load_average(),
            "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    )
    if goals is not None:
        result["goals"] = [g._asdict() for g in goals]
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return path


# No benchmark step may run longer than this (seconds); override with $BURSTLAKE_BENCH_TIMEOUT.
STEP_TIMEOUT_S = float(os.environ.get("BURSTLAKE_BENCH_TIMEOUT", "3600"))


class Step(NamedTuple):
    """What one measured command took."""

    wall_s: float
    cpu_s: float  # user + system of the command's process tree: waiting for a core excluded
    peak_mb: float  # peak RSS of its process tree, sampled every 0.2 s
    stdout: str


def measure(
    command: list[str], timeout_s: float = STEP_TIMEOUT_S, cwd: str | os.PathLike | None = None
) -> Step:
    """Run one command in its own process tree and measure it; every benchmark step runs here.

    Output goes to temporary files, not pipes, so a chatty step can never block on a full pipe
    while we poll it; a step over ``timeout_s`` is killed with its children and reported.
    """
    started = time.perf_counter()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=out, stderr=err, start_new_session=True, cwd=cwd)
        root, peak = psutil.Process(process.pid), 0
        cpu_of: dict[int, float] = {}  # pid -> its last CPU seconds seen
        while process.poll() is None:
            try:
                tree = [root, *root.children(recursive=True)]
                peak = max(peak, sum(p.memory_info().rss for p in tree))
                for p in tree:
                    times = p.cpu_times()
                    cpu_of[p.pid] = times.user + times.system
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
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    # a descendant its parent never reaps (a Spark driver's JVM) is missing from the rusage; the
    # tree's own CPU as last sampled misses at most 0.2 s per process: the larger of the two
    sampled = sum(cpu_of.values())
    return Step(time.perf_counter() - started, max(cpu, sampled), peak / 2**20, stdout)


def python_step(code: str, timeout_s: float = STEP_TIMEOUT_S) -> dict:
    """Run Python ``code`` in its own process through :func:`measure`; the JSON object it
    prints as its last ``{...}`` line (empty if none), with the step's wall seconds and peak
    RSS (MiB) of its process tree as ``step_wall_s`` and ``step_peak_rss_mb``."""
    step = measure([sys.executable, "-c", code], timeout_s)
    printed = [line for line in step.stdout.splitlines() if line.startswith("{")]
    return (json.loads(printed[-1]) if printed else {}) | {
        "step_wall_s": step.wall_s,
        "step_cpu_s": step.cpu_s,
        "step_peak_rss_mb": step.peak_mb,
    }
