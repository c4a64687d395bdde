"""The metrics recover the synthesizer's truth on a synthesized `tiny` lake (synth_truth holds
the labels each job's I/O was generated with), and agree with the DuckDB implementation."""

from __future__ import annotations

import pytest

from burstlake import catalog
from burstlake.jobs.metrics.headline_sql import headline

pytestmark = pytest.mark.slow  # synthesizes a machine and runs every metric on it


@pytest.fixture(scope="module")
def tiny(tiny_metrics_lake):
    return tiny_metrics_lake


def agreement(lake, metric: str, truth: str) -> tuple[int, float]:
    """(jobs compared, share of them where the metric's flag equals the truth's)."""
    table = catalog.sql(
        lake,
        f"SELECT count(*) AS n, avg((m.{metric} = t.{truth})::DOUBLE) AS agree "
        "FROM job_io_metrics m JOIN synth_truth t USING (job_id) "
        f"WHERE t.{truth} IS NOT NULL",
    ).to_pylist()[0]
    return table["n"], table["agree"]


@pytest.mark.parametrize(
    ("metric", "truth"),
    [
        ("rank0", "rank0"),
        ("uneven_io", "uneven"),
        ("data_intensive", "data_intensive"),
        ("low_comm", "low_comm"),
        ("optimizable", "optimizable"),
    ],
)
def test_job_labels_recover_the_truth(tiny, metric, truth):
    # Tolerance: the synthesizer puts every job's bytes on its own nodes inside its run, so
    # the labels must come back exactly (a mislabelled job means a metrics or synth bug).
    n, agree = agreement(tiny, metric, truth)
    assert n > 100
    assert agree == 1.0


def test_bytes_and_nud_recover_the_truth(tiny):
    [row] = catalog.sql(
        tiny,
        "SELECT count(*) AS n, avg((m.io_bytes = t.io_bytes)::DOUBLE) AS bytes, "
        "avg((m.comm_bytes = t.comm_bytes)::DOUBLE) AS comm, "
        "max(abs(m.io_nud - t.io_nud)) AS nud_error "
        "FROM job_io_metrics m JOIN synth_truth t USING (job_id)",
    ).to_pylist()
    assert row["n"] == catalog.sql(tiny, "SELECT count(*) AS n FROM synth_truth")["n"][0].as_py()
    assert row["bytes"] == 1.0 and row["comm"] == 1.0
    assert row["nud_error"] < 1e-4  # the truth's NUD is of the intended (unrounded) shares


def test_platform_summary_matches_truth_and_duckdb(tiny):
    figures = {
        r["figure"]: r["value"]
        for r in catalog.sql(tiny, "SELECT figure, value FROM platform_summary").to_pylist()
    }
    [truth] = catalog.sql(
        tiny,
        "SELECT avg(rank0::DOUBLE) FILTER (WHERE rank0 IS NOT NULL AND io_bytes > 0) AS rank0, "
        "avg(data_intensive::DOUBLE) AS di, avg(optimizable::DOUBLE) AS opt FROM synth_truth",
    ).to_pylist()
    assert figures["rank0_jobs"] == pytest.approx(truth["rank0"], abs=1e-12)
    assert figures["data_intensive_jobs"] == pytest.approx(truth["di"], abs=1e-12)
    assert figures["optimizable_jobs"] == pytest.approx(truth["opt"], abs=1e-12)
    for name, value in headline(tiny).items():
        assert figures[name] == pytest.approx(value, abs=1e-9), name


def test_reallocation_lowers_the_top_ion_share(tiny):
    """004 §6.4, §7.4 on this synthesized lake and its job_io_metrics (the shared fixture):
    the lake's jobs replayed in start order; jobs predicted optimizable from their
    application's earlier ended jobs get more I/O nodes (4 compute nodes per ION: tiny's jobs
    are small). The busiest 10 % of IONs carry less than under Slurm's placement (synthesized:
    87.5 %) and a fresh Slurm best fit (86.5 %): 85.8 %, the ION loads more even."""
    from burstlake.replay.policies import policy
    from burstlake.replay.topologies import build
    from burstlake.replay.workloads import Settings
    from burstlake.replay.workloads.lake import interval_scores, lake_demand

    t = build({"name": "tiny"})
    demand = lake_demand(tiny, t)
    s = {}
    for entry in ("given", "best-fit", {"name": "even-traffic", "min_nodes_per_ion": 4}):
        machine, work = policy(entry).apply(t, demand)
        scored = interval_scores(Settings({}, job_scores=False), machine, work, None)
        s[policy(entry).label] = {x.metric: x.value for x in scored}
    given, best, realloc = s["given"], s["best-fit"], s["even-traffic"]
    assert realloc["top10_ion_share"] < best["top10_ion_share"] < given["top10_ion_share"]
    assert realloc["ion_load_nud"] < best["ion_load_nud"]
    assert realloc["bytes_served"] == pytest.approx(given["bytes_served"], rel=1e-12)
