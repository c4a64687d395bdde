"""The bookkeeping of ``bench/packet_vs_codes.py`` (the packet model against CODES, paper 000
§5.1): its seed settings, the figures over seeds and burstlake minus CODES seed by seed. The
benchmark itself runs CODES and is never part of ``make test``."""

from __future__ import annotations

import pytest

from bench.packet_vs_codes import differences, goals, over_seeds, seed_list


def test_seed_list_reads_comma_separated_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BURSTLAKE_CODES_SEEDS", " 12345, 3 ,4,")
    assert seed_list("BURSTLAKE_CODES_SEEDS", "1") == [12345, 3, 4]
    monkeypatch.delenv("BURSTLAKE_CODES_SEEDS")
    assert seed_list("BURSTLAKE_CODES_SEEDS", "1,2") == [1, 2]  # unset: the default
    monkeypatch.setenv("BURSTLAKE_BENCH_TIE_SEEDS", "")
    assert seed_list("BURSTLAKE_BENCH_TIE_SEEDS", "101") == []  # empty: none


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("1,x", "comma-separated integers >= 0"),
        ("1;2", "comma-separated integers >= 0"),
        ("-1", "comma-separated integers >= 0"),
        ("2.5", "comma-separated integers >= 0"),
        ("3,1,3", "a seed is named twice"),
    ],
)
def test_seed_list_refuses_bad_seeds_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, text: str, says: str
) -> None:
    monkeypatch.setenv("BURSTLAKE_CODES_SEEDS", text)
    with pytest.raises(SystemExit, match=f"BURSTLAKE_CODES_SEEDS=.*{says}"):
        seed_list("BURSTLAKE_CODES_SEEDS", "1")


def test_differences_are_per_seed_on_the_seeds_both_ran() -> None:
    ours = {12345: {"io_slowdown": 1.0}, 1: {"io_slowdown": 0.98}, 2: {"io_slowdown": 1.01}}
    theirs = {12345: {"io_slowdown": 1.006}, 1: {"io_slowdown": 1.024}}  # CODES skipped seed 2
    out = differences(ours, theirs)
    assert list(out["per_seed"]) == ["12345", "1"]
    assert out["per_seed"]["12345"]["io_slowdown"] == pytest.approx(1.0 - 1.006)
    assert out["per_seed"]["1"]["io_slowdown"] == pytest.approx(0.98 - 1.024)
    # the mean difference: (-0.006 - 0.044) / 2
    assert out["mean"]["io_slowdown"] == pytest.approx(-0.025)


def test_over_seeds_and_goals_on_the_means() -> None:
    shapes = {
        1: {
            "random_node_mpi_slowdown": 10.0,
            "random_switch_mpi_slowdown": 1.2,
            "io_slowdown": 0.99,
            "max_mpi_latency_over_alone_mean": 400.0,
        },
        2: {
            "random_node_mpi_slowdown": 14.0,
            "random_switch_mpi_slowdown": 1.6,
            "io_slowdown": 1.0,
            "max_mpi_latency_over_alone_mean": 600.0,
        },
    }
    spread = over_seeds(shapes)
    assert spread["random_node_mpi_slowdown"] == {"mean": 12.0, "min": 10.0, "max": 14.0}
    means = {figure: value["mean"] for figure, value in spread.items()}
    # CODES' mean random-node slowdown 9.0: 12 / 9 - 1 = 33 % (within 35 %); I/O mean 0.995
    codes = means | {"random_node_mpi_slowdown": 9.0}
    assert goals(means, codes) == {
        "random_node_within_35pct_of_codes": True,
        "random_switch_at_most_2x": True,
        "io_slowdown_1_to_1_15": False,
        "max_mpi_at_least_100x_alone": True,
    }
    # 12 / 8.8 - 1 = 36 %: missed
    codes["random_node_mpi_slowdown"] = 8.8
    assert not goals(means, codes)["random_node_within_35pct_of_codes"]
