"""Seeds as an axis of a scenario (docs/design.md, "Seeds and spread"): every policy on each
seed, every run's scores kept, their mean, standard deviation and 95 % interval, and paired
differences against the first policy marked within noise when their interval holds 0."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from burstlake.catalog import sql
from burstlake.cli import main
from burstlake.lake import read_table
from burstlake.replay import spread
from burstlake.replay.scenario import comparison, drawn, load, run, runs, seeded

SMALL = """name: seeds_small
workload:
  source: jobs
  placement: random-node
  jobs:
    - {{name: mpi, kind: mpi, nodes: 16, message_bytes: 65536, messages: 4, warmup: 1}}
    - {{name: io, kind: io, nodes: 16, requests: 3, warmup: 1}}
topology: {{name: fattree, radix: 8, leaves: 16}}
policies:
  - {{name: random-node, label: a}}
  - {{name: random-node, label: b, seed: 1}}
  - random-switch
{seeds}
"""


def small(tmp_path: Path, seeds: str = "seeds: 5") -> Path:
    path = tmp_path / "seeds_small.yaml"
    path.write_text(SMALL.format(seeds=seeds))
    return path


def values(table: pa.Table, policy: str, metric: str) -> dict[int, float]:
    return {
        r["seed"]: r["value"]
        for r in table.to_pylist()
        if r["policy"] == policy and r["metric"] == metric
    }


def spread_row(summary: pa.Table, policy: str, metric: str, against: str | None) -> dict:
    (row,) = [
        r
        for r in summary.to_pylist()
        if (r["policy"], r["metric"], r["against"]) == (policy, metric, against)
    ]
    return row


@pytest.fixture(scope="module")
def five(tmp_path_factory) -> tuple[pa.Table, pa.Table]:
    """The small scenario on seeds 0-4: its runs and their spread."""
    table = runs(load(small(tmp_path_factory.mktemp("seeds"))))
    return table, spread.summary(table)


def test_every_policy_runs_on_every_seed(five) -> None:
    table, _ = five
    for policy in ("a", "b", "random-switch"):
        assert sorted(values(table, policy, "mpi_slowdown")) == [0, 1, 2, 3, 4]
    # the seeds move the answer: five placements, five MPI slowdowns under random-node
    assert len(set(values(table, "a", "mpi_slowdown").values())) == 5


def test_the_interval_is_students_t_on_the_per_seed_values(five) -> None:
    table, summary = five
    x = np.array(list(values(table, "a", "mpi_slowdown").values()))
    mean, std = x.mean(), x.std(ddof=1)
    half = stats.t.ppf(0.975, df=4) * std / math.sqrt(5)  # 2.776 × s / √5
    row = spread_row(summary, "a", "mpi_slowdown", None)
    assert row["runs"] == 5 and row["interval"] == "t"
    assert row["mean"] == pytest.approx(mean, rel=1e-12)
    assert row["std"] == pytest.approx(std, rel=1e-12)
    assert row["low"] == pytest.approx(mean - half, rel=1e-12)
    assert row["high"] == pytest.approx(mean + half, rel=1e-12)
    assert stats.t.ppf(0.975, df=4) == pytest.approx(2.7764451, rel=1e-7)


def test_two_policies_built_equal_are_within_noise(five) -> None:
    table, summary = five
    # a and b place with random-node, each with its own seeds: different draws, one law
    a, b = values(table, "a", "mpi_slowdown"), values(table, "b", "mpi_slowdown")
    assert a != b
    diff = np.array([b[s] - a[s] for s in a])
    half = stats.t.ppf(0.975, df=4) * diff.std(ddof=1) / math.sqrt(5)
    row = spread_row(summary, "b", "mpi_slowdown", "a")
    assert row["mean"] == pytest.approx(diff.mean(), rel=1e-12)
    assert row["low"] == pytest.approx(diff.mean() - half, rel=1e-12)
    assert row["low"] <= 0 <= row["high"] and row["within_noise"] is True
    # random-switch keeps each job in its own leaves: MPI never meets the I/O, significant
    switch = spread_row(summary, "random-switch", "mpi_slowdown", "a")
    assert switch["high"] < 0 and switch["within_noise"] is False
    alone = spread_row(summary, "random-switch", "mpi_slowdown", None)
    assert alone["interval"] == "identical" and alone["std"] == 0.0


def test_a_list_of_seeds_and_how_each_seed_reaches_the_parts(tmp_path) -> None:
    scenario = load(small(tmp_path, "seeds: [7, 3]"))
    assert scenario.seeds == (7, 3)
    assert drawn(scenario) == ["workload seed", "policy a", "policy b", "policy random-switch"]
    run7 = seeded(scenario, 7)
    assert run7.workload["seed"] == 7  # the run's seed where the scenario gives none
    seeds = [e["seed"] for e in run7.entries if isinstance(e, dict)]
    assert seeds[0] == 7 and seeds[1] == spread.derived_seed(7, 1) != 7
    assert [p.label for p in run7.policies] == ["a", "b", "random-switch"]
    table = runs(scenario)
    assert sorted(set(table["seed"].to_pylist())) == [3, 7]


def test_the_packet_models_tie_seed_follows_the_run(tmp_path) -> None:
    path = small(tmp_path, "seeds: 2\nmodel: {name: packet, tie_seed: 0}")
    scenario = load(path)
    assert "packet model tie_seed" in drawn(scenario)
    assert seeded(scenario, 1).model.settings.tie_seed == 1


def test_a_combination_reseeds_its_policies(tmp_path) -> None:
    path = small(tmp_path, "seeds: 2")
    path.write_text(
        path.read_text().replace(
            "  - random-switch\n",
            "  - {name: combine, label: c, policies: [spread-target, random-switch]}\n",
        )
    )
    scenario = load(path)
    entry = seeded(scenario, 1).entries[2]
    assert entry["policies"] == [{"name": "spread-target"}, {"name": "random-switch", "seed": 1}]


def test_a_scenario_with_seeds_writes_every_run_and_the_spread(lake, tmp_path, capsys) -> None:
    path = small(tmp_path, "seeds: 3")
    assert main(["replay", "--scenario", str(path), "--lake", str(lake)]) == 0
    printed = capsys.readouterr().out
    assert "±" in printed  # mean ± half-width of the interval
    scores = read_table(lake, "replay_scores")
    assert sorted(set(scores["seed"].to_pylist())) == [0, 1, 2]
    kept = read_table(lake, "replay_spread").to_pylist()
    row = [r for r in kept if (r["policy"], r["metric"]) == ("a", "mpi_slowdown")]
    assert [r["runs"] for r in row] == [3]
    got = sql(lake, "SELECT count(*) AS n FROM replay_spread WHERE against = 'a'").to_pylist()
    assert got[0]["n"] > 0
    # a re-run replaces both tables' rows of the scenario
    run(load(path), lake)
    assert read_table(lake, "replay_scores").num_rows == scores.num_rows
    assert len(read_table(lake, "replay_spread")) == len(kept)


def test_comparison_prints_mean_and_half_width(five) -> None:
    table, summary = five
    columns, rows = comparison(table)
    assert columns[-3:] == ["a", "b", "random-switch"]
    line = next(r for r in rows if r[0] == "mpi_slowdown")
    row = spread_row(summary, "a", "mpi_slowdown", None)
    assert line[2] == f"{row['mean']:.6g} ± {(row['high'] - row['low']) / 2:.3g}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("seeds: 0", r"seeds: a count of runs from 1 to 1000, got 0"),
        ("seeds: -3", r"seeds: a count of runs from 1 to 1000, got -3"),
        ("seeds: 2.5", r"seeds: a count >= 1 or a non-empty list of integers, got 2.5"),
        ("seeds: five", r"seeds: a count >= 1 or a non-empty list of integers, got 'five'"),
        ("seeds: true", r"seeds: a count >= 1 or a list of integers >= 0, got True"),
        ("seeds:", r"seeds: a count >= 1 or a list of integers >= 0, got None"),
        ("seeds: []", r"seeds: a count >= 1 or a non-empty list of integers, got \[\]"),
        ("seeds: [1, 2, 1]", r"seeds: seeds given twice: \[1\]"),
        ("seeds: [1, -2]", r"seeds\[1\]: a seed is an integer >= 0, got -2"),
        ("seeds: [1, 2.0]", r"seeds\[1\]: a seed is an integer >= 0, got 2.0"),
        ("seeds: 100000", r"seeds: a count of runs from 1 to 1000, got 100000"),
    ],
)
def test_bad_seeds_are_refused_in_one_line(tmp_path, text, message) -> None:
    with pytest.raises(ValueError, match=message) as err:
        load(small(tmp_path, text))
    assert "\n" not in str(err.value) and "seeds_small.yaml" in str(err.value)


def test_seeds_on_a_workload_with_nothing_random_replay_once_with_a_note(
    tmp_path, lake, capsys
) -> None:
    path = tmp_path / "ior.yaml"
    path.write_text(
        "name: ior_seeds\nworkload: {source: ior, nodes: [4], bytes_per_node: 1.0e9}\n"
        "topology: cs19\npolicies: [block, cyclic]\nseeds: 4\n"
    )
    scenario = load(path)
    assert drawn(scenario) == []
    assert scenario.seeds == (0,)
    (note,) = scenario.notes
    assert "seeds: nothing in this scenario draws random numbers" in note
    assert "the runs are identical" in note
    assert main(["replay", "--scenario", str(path), "--lake", str(lake)]) == 0
    assert f"note: {note}" in capsys.readouterr().err
    assert set(read_table(lake, "replay_scores")["seed"].to_pylist()) == {0}
    assert set(read_table(lake, "replay_spread")["interval"].to_pylist()) == {"none"}


def test_the_interval_is_bootstrapped_where_skewed() -> None:
    skewed = [1.0] * 9 + [10.0]  # one heavy run: skewness 3.16
    got = spread.interval(skewed)
    assert got.method == "bootstrap" and got.runs == 10
    assert got.mean == pytest.approx(1.9)
    # the percentile bootstrap of the mean: between the all-light and the heavy-twice means
    assert 1.0 <= got.low < got.mean < got.high <= 1.0 + 9.0 * 4 / 10
    even = list(np.linspace(0.0, 1.0, 10))
    assert spread.interval(even).method == "t"
    assert spread.interval([2.0] * 4).method == "identical"
    assert spread.interval([2.0]).method == "none"
    assert spread.interval([None, math.nan]).runs == 0


def test_a_paired_difference_uses_only_the_seeds_both_have() -> None:
    got = spread.paired({0: 1.0, 1: 2.0, 2: None}, {0: 2.0, 1: 4.0, 3: 9.0})
    assert got.runs == 2 and got.mean == pytest.approx(1.5)


def test_the_report_draws_error_bars_and_marks_what_is_within_noise(lake, tmp_path) -> None:
    from burstlake import report

    run(load(small(tmp_path)), lake)
    text = report.render(lake)
    section = text[text.index('<section id="replay-seeds_small">') :]
    section = section[: section.index("</section>")]
    assert 'data-figure="replay-seeds_small"' in section
    assert "Over 5 seeds: bars are the mean with its 95 % interval" in section
    # the table: a's mean [interval] as replay_spread holds it, b's difference within noise
    kept = {
        (r["policy"], r["metric"], r["against"]): r
        for r in read_table(lake, "replay_spread").to_pylist()
    }
    a = kept["a", "mpi_slowdown", None]
    assert f"{a['mean']:.4g} [{a['low']:.4g}, {a['high']:.4g}]" in section
    b = kept["b", "mpi_slowdown", "a"]
    row = section[section.index("<i>mpi_slowdown: − a</i>") :].split("</tr>")[0]
    cells = row.split("<td>")[2:]  # b, random-switch
    assert cells[0].startswith(f"{b['mean']:.4g} [{b['low']:.4g}, {b['high']:.4g}]")
    assert "<b>within noise</b>" in cells[0] and "<b>significant</b>" in cells[1]
    # the answers say it in words, on the scenario's first score
    first = read_table(lake, "replay_scores")["metric"][0].as_py()
    answers = text[: text.index("</section>")]
    for policy in ("b", "random-switch"):
        got = kept[policy, first, "a"]
        verdict = "within noise" if got["within_noise"] else "significant"
        assert f"{policy} against a, {first}" in answers
        line = answers[answers.index(f"{policy} against a, {first}") :].split("</li>")[0]
        assert "mean over 5 seeds; difference" in line and f"(95 %, t): {verdict} (" in line
