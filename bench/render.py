"""``python -m bench.render``: write ``docs/benchmarks.md`` from ``bench/results/*.json``.

The page is generated, never edited: each result file becomes one section with its date, the
machine it ran on (CPUs, Python), the load while it ran, where the figures come from, its goals
as met or missed, its notes and every figure it holds. ``--check`` exits 1 when the committed
page differs from what the results render (``tests/bench/test_benchmarks_doc.py`` runs the same
comparison), so the page cannot drift from the results.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

from bench import RESULTS

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "benchmarks.md"
BENCH = Path(__file__).resolve().parent
MACHINE_KEYS = ("benchmark", "source", "date", "cpus", "load", "load_average_1min", "python")
TEXT_KEYS = ("goals", "notes")


def results(folder: Path = RESULTS) -> dict[str, dict]:
    """Every result file of ``folder``, by name (the file's stem), in name order."""
    found = {}
    for path in sorted(folder.glob("*.json")):
        try:
            found[path.stem] = json.loads(path.read_text())
        except json.JSONDecodeError as err:
            raise SystemExit(f"{path}: not JSON ({err})") from err
    return found


def module_of(name: str) -> str | None:
    """The benchmark module that writes result ``name`` (``synth_full_cs19`` is
    ``synth_full``'s): the longest module name that the result's name starts with."""
    modules = [p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_")]
    matches = [m for m in modules if name == m or name.startswith(m + "_")]
    return max(matches, key=len) if matches else None


def measures(module: str | None) -> str:
    """The first paragraph of the benchmark module's docstring: what it measures."""
    if module is None:
        return ""
    docstring = ast.get_docstring(ast.parse((BENCH / f"{module}.py").read_text())) or ""
    return " ".join(docstring.split("\n\n")[0].split())


def number(value: object) -> str:
    """A figure as the page shows it: floats to four significant digits, the rest as is."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "not recorded"
    return str(value)


def cell(text: object) -> str:
    return number(text).replace("|", "\\|").replace("\n", " ")


def flatten(value: object, prefix: str = "") -> list[tuple[str, object]]:
    """Scalar figures with dotted names; a list of scalars is one figure."""
    if isinstance(value, dict):
        rows = []
        for key, inner in value.items():
            rows += flatten(inner, f"{prefix}.{key}" if prefix else str(key))
        return rows
    if isinstance(value, list) and not any(isinstance(v, dict | list) for v in value):
        return [(prefix, ", ".join(number(v) for v in value))]
    if isinstance(value, list):
        rows = []
        for index, inner in enumerate(value):
            rows += flatten(inner, f"{prefix}[{index}]")
        return rows
    return [(prefix, value)]


def table(header: list[str], rows: list[list[object]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    return lines + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]


def load_of(result: dict) -> str:
    """The load the figures were measured at: the recorded text, else the 1-minute average."""
    if result.get("load"):
        return str(result["load"])
    return number(result.get("load_average_1min"))


def status(result: dict) -> str:
    goals = result.get("goals") or []
    if not goals:
        return "no goal"
    missed = sum(not g["met"] for g in goals)
    return f"{len(goals) - missed} met, {missed} missed" if missed else f"{len(goals)} met"


def section(name: str, result: dict) -> list[str]:
    module = module_of(name)
    command = f"`python -m bench {module}`" if module else "no benchmark module"
    lines = [f"## {name}", ""]
    if text := measures(module):
        lines += [text, ""]
    machine = f"{number(result.get('cpus'))} CPUs, Python {number(result.get('python'))}"
    lines += [
        f"- **Date:** {number(result.get('date'))}",
        f"- **Machine:** {machine}",
        f"- **Load (1-minute average):** {load_of(result)}",
        f"- **Source:** {result.get('source') or f'a run of {command}'}",
        "",
    ]
    if goals := result.get("goals"):
        rows = [[g["goal"], g["figure"], "**met**" if g["met"] else "**missed**"] for g in goals]
        lines += [*table(["goal", "figure", "status"], rows), ""]
    for note in result.get("notes") or []:
        lines += [note, ""]
    rest = {k: v for k, v in result.items() if k not in {*MACHINE_KEYS, *TEXT_KEYS}}
    tables = {k: v for k, v in rest.items() if is_table(v)}
    figures = flatten({k: v for k, v in rest.items() if k not in tables})
    if figures:
        lines += [*table(["figure", "value"], [[f"`{k}`", v] for k, v in figures]), ""]
    for key, rows in tables.items():
        columns = list(dict.fromkeys(c for row in rows for c in row))
        body = [[row.get(c, "") for c in columns] for row in rows]
        lines += [f"`{key}`:", "", *table(columns, body), ""]
    return lines


def is_table(value: object) -> bool:
    """A list of rows whose values are all scalars: shown as a table of its own."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(row, dict) for row in value)
        and not any(isinstance(v, dict | list) for row in value for v in row.values())
    )


def render(folder: Path = RESULTS) -> str:
    """The whole page for the result files of ``folder``."""
    found = results(folder)
    lines = [
        "# Benchmarks",
        "",
        "<!-- Generated by `python -m bench.render` from bench/results/*.json: do not edit. -->",
        "",
        "Every figure below is read from a committed result file `bench/results/<name>.json`,",
        "written by `python -m bench <name>` (`make bench` runs them all and renders this page).",
        "A file whose source says *transcribed* holds figures recorded by an earlier run and",
        "copied from the README of that time, not a fresh run. Loads are the machine's 1-minute",
        "load average while the benchmark ran; on a shared 2-core machine, wall times grow with",
        "it and CPU times much less. Every step runs in its own process through one measuring",
        "helper (`bench.measure`: wall and CPU time of the process tree, its peak memory sampled",
        "every 0.2 s, output to files so a chatty step cannot block, and a time limit of",
        "`$BURSTLAKE_BENCH_TIMEOUT`, 3600 s by default).",
        "",
    ]
    summary = [
        [f"[{name}](#{name})", number(r.get("date")), load_of(r), status(r)]
        for name, r in found.items()
    ]
    lines += [*table(["benchmark", "date", "load", "goals"], summary), ""]
    for name, result in found.items():
        lines += section(name, result)
    return "\n".join(lines).rstrip("\n") + "\n"


def write(folder: Path = RESULTS, page: Path = PAGE) -> Path:
    """Render the page into ``page``; returns its path."""
    page.write_text(render(folder))
    return page


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        if PAGE.exists() and PAGE.read_text() == render():
            return 0
        print(f"{PAGE} is not what bench/results renders: run python -m bench.render")
        return 1
    if argv:
        print("usage: python -m bench.render [--check]")
        return 2
    print(write())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
