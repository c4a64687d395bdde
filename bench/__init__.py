"""Benchmarks: speed goals live here, never in timed tests (run ``python -m bench [name...]``).

Each ``bench/<name>.py`` has ``main() -> Path``: it runs its measurement and returns the JSON
file it wrote under ``bench/results/`` (generated inputs go to a temporary directory, never
into the repository).
"""

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
