"""The bookkeeping of ``bench/packet_vs_codes.py`` and ``bench/packet_io_vs_codes.py`` (the
packet model against CODES, paper 000 §5.1): seed settings, the two studies of §5, CODES'
options, the figures over seeds and burstlake minus CODES seed by seed. The benchmarks
themselves run CODES and are never part of ``make test``."""

from __future__ import annotations

import pytest

from bench.packet_io_vs_codes import IO_WINDOW, figures
from bench.packet_vs_codes import codes_options, differences, goals, over_seeds, seed_list
from burstlake.replay import paper000 as paper


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


def test_the_two_studies_of_paper_000_section_5() -> None:
    """000 §5: MPI performance with 4 KB messages beside checkpoint I/O (requests back to back);
    I/O performance with 4 MB requests 128 ms apart beside 4 MB MPI messages every 500 µs."""
    mpi = paper.workload("random-node", 45, 16, study=paper.MPI_STUDY)["jobs"]
    io = paper.workload("random-node", 200, 2, study=paper.IO_STUDY)["jobs"]
    assert [(j["message_bytes"], j["interval_s"]) for j in mpi if j["kind"] == "mpi"] == [
        (4096, 5e-4)
    ]
    assert [(j["request_bytes"], j["interval_s"]) for j in mpi if j["kind"] == "io"] == [
        (4 * 2**20, 0.0)
    ]
    assert [(j["message_bytes"], j["interval_s"]) for j in io if j["kind"] == "mpi"] == [
        (4 * 2**20, 5e-4)
    ]
    assert [(j["request_bytes"], j["interval_s"]) for j in io if j["kind"] == "io"] == [
        (4 * 2**20, 0.128)
    ]


def test_codes_options_carry_the_study_and_window_in_nanoseconds() -> None:
    options = codes_options("random-node", ("mpi", "io"), 7, paper.IO_STUDY, IO_WINDOW)
    assert options == [
        "--synch=1",
        "--warmup=100000000",  # 100 ms
        "--end=150000000",
        "--mpi_size=4194304",
        "--mpi_interval=500000",
        "--io_size=4194304",
        "--io_interval=128000000",
        "--placement=0",
        "--mode=2",
        "--seed=7",
        "--server_leaves=34,35,70,71",
    ]
    # the MPI study keeps the driver's run.sh settings: 5 ms warm-up, 20 ms end, back to back I/O
    assert codes_options("random-switch", ("io",), 1)[1:9] == [
        "--warmup=5000000",
        "--end=20000000",
        "--mpi_size=4096",
        "--mpi_interval=500000",
        "--io_size=4194304",
        "--io_interval=0",
        "--placement=1",
        "--mode=1",
    ]


def test_io_study_figures_from_the_two_runs() -> None:
    io = {"n": 612, "mean_us": 400.0, "p99_us": 900.0}
    both_io = {"n": 610, "mean_us": 450.0, "p99_us": 1500.0}
    cases = {
        "rn-io": {"io": io},
        "rn-both": {"io": both_io, "mpi": {"n": 9000, "mean_us": 700.0}, "events": 123},
    }
    row = figures(cases)
    assert row["io_slowdown"] == pytest.approx(450.0 / 400.0)
    assert (row["alone_n"], row["both_n"], row["mpi_n"], row["events_both"]) == (
        612,
        610,
        9000,
        123,
    )
    assert (row["io_p99_alone_us"], row["io_p99_both_us"]) == (900.0, 1500.0)
