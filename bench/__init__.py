"""Benchmarks: speed goals live here, never in timed tests (run ``python -m bench [name...]``).

Each ``bench/<name>.py`` has ``main() -> Path``: it runs its measurement and returns the JSON
file it wrote under ``bench/results/`` (generated inputs go to a temporary directory, never
into the repository).
"""

import json
import os
import platform
import time
from pathlib import Path

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
