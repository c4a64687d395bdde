"""``python -m bench [name...]``: run every benchmark module (or the named ones) in bench/, then
render ``docs/benchmarks.md`` from the results (``bench/render.py``)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from bench import render

NOT_BENCHMARKS = {"render"}  # modules of bench/ that measure nothing


def available() -> list[str]:
    """Names of the benchmark modules next to this file."""
    here = Path(__file__).resolve().parent
    names = (p.stem for p in here.glob("*.py") if not p.stem.startswith("_"))
    return sorted(n for n in names if n not in NOT_BENCHMARKS)


def run(names: list[str]) -> int:
    known = available()
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"unknown benchmark {', '.join(unknown)}; available: {', '.join(known)}")
        return 2
    for name in names or known:
        print(f"bench {name}: running", flush=True)
        result = importlib.import_module(f"bench.{name}").main()
        print(f"bench {name}: results in {result}", flush=True)
    print(f"bench: rendered {render.write()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
