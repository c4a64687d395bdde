"""docs/benchmarks.md is what ``python -m bench.render`` makes of the committed
``bench/results/*.json``, and every result says when, on what machine and at what load it was
measured, with its goals met or missed (issue 40: the README's figures link there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench
from bench import Goal, render, write_result
from bench.__main__ import available

RESULTS = sorted(bench.RESULTS.glob("*.json"))


def test_the_page_is_exactly_what_the_results_render() -> None:
    assert render.PAGE.read_text() == render.render(), (
        "docs/benchmarks.md differs from bench/results: run python -m bench.render"
    )
    assert render.main(["--check"]) == 0


def test_results_are_committed() -> None:
    assert RESULTS, "bench/results/ holds no result file"
    ignored = (render.ROOT / ".gitignore").read_text().splitlines()
    assert not any(line.strip("/") == "bench/results" for line in ignored)


@pytest.mark.parametrize("path", RESULTS, ids=lambda p: p.stem)
def test_every_result_says_when_where_and_at_what_load(path: Path) -> None:
    result = json.loads(path.read_text())
    assert result["benchmark"] == path.stem
    assert result["date"][:4].isdigit(), f"{path.name}: no date"
    assert isinstance(result["cpus"], int) and result["cpus"] > 0
    assert result.get("load") or isinstance(result.get("load_average_1min"), int | float)
    assert render.module_of(path.stem), f"{path.name}: no bench module writes it"
    for goal in result["goals"]:
        assert set(goal) == {"goal", "figure", "met"} and isinstance(goal["met"], bool), goal
    if result.get("source", "").startswith("transcribed"):  # never mistaken for a fresh run
        assert f"Source:** {result['source']}" in render.render()


def test_a_fresh_result_renders_its_machine_load_and_each_goal_met_or_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(bench, "RESULTS", tmp_path)
    goals = [Goal("under 60 s", "54.0 s", True), Goal("within 2x DuckDB", "2.42x", False)]
    path = write_result("replay_full", {"wall_s": 54.0, "sets": [{"set": "a", "s": 1.5}]}, goals)
    capsys.readouterr()
    written = json.loads(path.read_text())
    assert written["goals"][1] == {"goal": "within 2x DuckDB", "figure": "2.42x", "met": False}
    assert written["benchmark"] == "replay_full" and written["cpus"] > 0
    page = render.render(tmp_path)
    assert "| [replay_full](#replay_full) |" in page and "1 met, 1 missed" in page
    assert "| within 2x DuckDB | 2.42x | **missed** |" in page
    assert "| under 60 s | 54.0 s | **met** |" in page
    load = render.number(written["load_average_1min"])  # a load of 7.0 shows as 7
    assert f"- **Load (1-minute average):** {load}" in page
    assert "- **Source:** a run of `python -m bench replay_full`" in page
    assert "| `wall_s` | 54 |" in page and "| a | 1.5 |" in page  # a list of rows is a table
    # without goals, a result keeps the shape older benchmarks write: an empty goals list
    assert json.loads(write_result("lake_delta", {"rows": 1}).read_text())["goals"] == []


def test_the_renderer_is_not_run_as_a_benchmark() -> None:
    assert "render" not in available() and "engine_vs_simgrid" in available()
