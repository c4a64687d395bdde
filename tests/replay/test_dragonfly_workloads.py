"""Workloads and policies on the dragonfly: the synthetic workload's traffic and scores by
hand, its refusals, placement by router and by group, the routing policy, server placement,
and the placement_dragonfly scenario."""

from __future__ import annotations

import numpy as np
import pytest

from burstlake.replay import models
from burstlake.replay.policies import policy
from burstlake.replay.scenario import load, scores
from burstlake.replay.topologies import build
from burstlake.replay.workloads import ScenarioLimits, kind
from burstlake.replay.workloads import jobs as jw
from burstlake.replay.workloads import synthetic as sy
from tests.builders.paths import REPO

SMALL = {"name": "dragonfly", "groups": 3, "routers": 2, "hosts": 2, "global_links": 1}


def test_patterns_by_hand() -> None:
    t = build(SMALL)  # 12 nodes, 4 per group
    rng = np.random.default_rng(0)
    assert sy.destinations(t, "nearest-group", 2, rng)[:, 0].tolist() == [
        4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3
    ]  # fmt: skip
    assert sy.destinations(t, "nearest-neighbour", 1, rng)[:, 0].tolist() == [
        *range(1, 12), 0
    ]  # fmt: skip
    uniform = sy.destinations(t, "uniform", 50, rng)
    assert (uniform != np.arange(12)[:, None]).all() and set(uniform.ravel()) == set(range(12))
    perm = sy.destinations(t, "random-permutation", 3, rng)
    assert sorted(perm[:, 0].tolist()) == list(range(12)) and (perm == perm[:, :1]).all()


def test_offered_load_sets_the_interval() -> None:
    t = build(SMALL)  # 2 GiB/s injection
    work = sy.demand({"pattern": "uniform", "load": 0.25, "messages": 3}, t)
    assert work.interval == pytest.approx(2048 / (0.25 * 2 * 2**30))
    assert work.at[:3].tolist() == pytest.approx([work.interval * k for k in (1, 2, 3)])
    fixed = sy.demand({"interval": 4e-6, "messages": 2}, t)
    assert fixed.interval == 4e-6


def test_one_message_latency_and_hops_by_hand() -> None:
    """One 2 KiB message from host 0 to host 2 (router 0 → router 1, one local hop): under the
    packet model it crosses the NIC link, the local link and the ejection link, store and
    forward, each 2048 B at 2 GiB/s, plus 100 ns at each of the two routers; 2 router hops."""
    t = build(SMALL | {"link_latency": 0}).with_contention(
        models.parse({"name": "packet", "nic_delay": 0.0, "router_delay": 1e-7})
    )
    work = sy.Synthetic(
        np.array([0]), np.array([2]), np.array([1e-6]), 2048.0, 1e-6, 2 * 2**30, 0.0
    )
    got = sy.measure(t, work)
    hop = 2048 / (2 * 2**30)
    assert got["packet_latency_mean"] == pytest.approx(3 * hop + 2e-7)
    assert got["mean_hops"] == 2.0
    flow = sy.measure(build(SMALL | {"link_latency": 0}), work)
    assert flow["packet_latency_mean"] == pytest.approx(hop)  # fluid: one link time
    assert flow["mean_hops"] == 2.0


def test_a_synthetic_scenario_scores_and_records_the_routing(tmp_path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: syn\ntopology: {name: dfdally_72, routing: par}\nmodel: packet\n"
        "workload: {source: synthetic, pattern: nearest-group, load: 0.2, messages: 5}\n"
        "policies: [given, {name: routing, routing: minimal}]\n"
    )
    got = scores(load(path))
    assert got["given"]["routing_par"] == 1.0 and got["routing"]["routing_minimal"] == 1.0
    assert set(got["given"]) >= {
        "packet_latency_mean", "packet_latency_p99", "packet_latency_max", "mean_hops",
        "accepted_throughput", "offered_load", "accepted_share", "observed_load",
    }  # fmt: skip
    assert got["given"]["offered_load"] == pytest.approx(0.2)


def test_light_uniform_load_is_all_accepted() -> None:
    t = build({"name": "dfdally_72", "routing": "par"}).with_contention(models.parse("packet"))
    work = sy.demand({"pattern": "uniform", "load": 0.1, "messages": 20, "warmup": 2e-6}, t)
    got = sy.measure(t, work)
    assert got["observed_load"] == pytest.approx(got["offered_load"], rel=0.06)  # M / (M - 1)
    assert 0.85 <= got["accepted_share"] <= 1.0  # the last message's latency counts too
    assert 1 <= got["mean_hops"] <= 5
    assert got["packet_latency_mean"] <= got["packet_latency_p99"] <= got["packet_latency_max"]


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"pattern": "tornado"}, "pattern must be one of"),
        ({"load": 0}, "load must be a number > 0"),
        ({"load": "x"}, "load must be a number > 0"),
        ({"interval": -1}, "interval must be a number > 0"),
        ({"messages": 0}, "messages must be an integer >= 1"),
        ({"messages": 2.5}, "messages must be an integer"),
        ({"message_bytes": None}, "message_bytes must be a number > 0"),
        ({"warmup": -1e-6}, "warmup must be a number >= 0"),
        ({"messages": 10_000_000}, "the limit is"),
    ],
)
def test_bad_synthetic_settings_are_refused_in_one_line(workload, message) -> None:
    with pytest.raises(ValueError, match=message) as err:
        kind("synthetic").check({"source": "synthetic", **workload}, ScenarioLimits())
    assert "\n" not in str(err.value)


def test_random_router_and_random_group_place_whole_routers_and_groups() -> None:
    t = build({"name": "dfdally_72"})
    spec = {"jobs": [{"name": "a", "kind": "mpi", "nodes": 8, "messages": 1, "warmup": 0}]}
    demand = jw.demand(spec, t)
    _, by_router = policy({"name": "random-router", "seed": 3}).apply(t, demand)
    routers = t.router.routers()[by_router.jobs[0].nodes]
    assert len(set(routers.tolist())) == 4  # 4 whole routers of 2 hosts
    _, by_group = policy({"name": "random-group", "seed": 3}).apply(t, demand)
    assert len(set(t.router.groups()[by_group.jobs[0].nodes].tolist())) == 1  # one group of 8
    with pytest.raises(ValueError, match="policy random-group places jobs by dragonfly groups"):
        policy("random-group").apply(build({"name": "tiny"}), demand)


def test_routing_policy_and_server_placement() -> None:
    t = build({"name": "dfdally_72", "servers": 8})
    assert t.ions[0] == "srv00064" and len(t.nodes) == 64
    ugal, _ = policy({"name": "routing", "routing": "ugal"}).apply(t, None)
    assert ugal.router.routing == "ugal" and ugal.settings["routing"] == "ugal"
    spread, _ = policy("spread-target").apply(ugal, None)
    groups = {int(h[3:]) // 8 for h in spread.ions}
    assert len(groups) == 8 and spread.router.routing == "ugal"
    with pytest.raises(ValueError, match="routing must be one of"):
        policy({"name": "routing", "routing": "adaptive"})
    with pytest.raises(ValueError, match="on a dragonfly use isolated-target or spread-target"):
        policy("random-target").apply(t, None)
    with pytest.raises(ValueError, match="topology tiny has no routing setting"):
        policy({"name": "routing", "routing": "ugal"}).apply(build({"name": "tiny"}), None)
    with pytest.raises(ValueError, match="no I/O servers to place"):
        policy("spread-target").apply(build({"name": "dfdally_72"}), None)


def test_placement_dragonfly_scenario_runs() -> None:
    """Every placement under both routings gives a score per job. By hand: the 32-node MPI
    job placed on whole groups fills 4 groups the I/O job has no node in and the servers' group
    is not among them, so under minimal routing it shares no link with the I/O (its local
    links and the global links between its groups carry only MPI): no slowdown."""
    got = scores(load(REPO / "replay/scenarios/placement_dragonfly.yaml"))
    assert len(got) == 8
    assert got["given"]["routing_minimal"] == 1.0 and got["given+ugal"]["routing_ugal"] == 1.0
    for table in got.values():
        assert table["mpi_slowdown"] >= 0.95 and table["io_slowdown"] > 0
    assert got["random-group"]["mpi_slowdown"] == pytest.approx(1.0, abs=0.02)
    assert got["given"]["mpi_slowdown"] > 1.1  # random-node: MPI beside I/O on shared links


def test_seeds_reseed_the_routing_draws(tmp_path) -> None:
    """With ``seeds:``, each run draws the dragonfly's ``routing_seed`` from its seed (as the
    packet model's ``tie_seed``): two seeds route the same messages through different
    gateways and intermediate groups, one seed always through the same."""
    from burstlake.replay import spread
    from burstlake.replay.scenario import drawn, seeded
    from burstlake.replay.topologies import build as build_spec

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: syn\ntopology: {name: dfdally_72, routing: par, routing_seed: 5}\n"
        "model: packet\nseeds: 2\n"
        "workload: {source: synthetic, pattern: uniform, load: 0.2, messages: 5}\n"
        "policies: [given]\n"
    )
    scenario = load(path)
    assert "topology routing_seed" in drawn(scenario)
    one, two = seeded(scenario, 0), seeded(scenario, 1)
    assert one.topology["routing_seed"] == spread.derived_seed(0, 5)
    assert two.topology["routing_seed"] == spread.derived_seed(1, 5) != one.topology["routing_seed"]
    assert seeded(scenario, 1).topology == two.topology
    assert scenario.topology["routing_seed"] == 5  # the scenario itself is left as given

    def draws(spec: dict) -> np.ndarray:
        t = build_spec(spec)
        work = sy.demand({"pattern": "uniform", "messages": 20, "seed": 0}, t)
        return t.route_adaptive(sy.requests(t, work).paths).routes.indices

    assert not np.array_equal(draws(one.topology), draws(two.topology))
    assert np.array_equal(draws(two.topology), draws(seeded(scenario, 1).topology))
    plain = tmp_path / "p.yaml"
    plain.write_text(path.read_text().replace(", routing_seed: 5", ""))
    assert seeded(load(plain), 3).topology["routing_seed"] == 3  # the run's own seed


@pytest.mark.slow  # runs a notebook kernel
def test_the_dragonfly_notebook_draws_its_figures(lake, tmp_path) -> None:
    """notebooks/dragonfly.ipynb runs top to bottom: placement_dragonfly's table and bars, the
    synthetic latency-against-load curves, the benchmark's goals (or where to get them)."""
    import json
    from importlib.resources import files

    import nbformat

    from burstlake.jobs.metrics.notebook import render_notebook

    text = files("burstlake.notebooks").joinpath("dragonfly.ipynb").read_text()
    assert all(cell.get("id") for cell in json.loads(text)["cells"])
    nbformat.validate(nbformat.reads(text, as_version=4))
    out = render_notebook(lake, tmp_path / "nb.ipynb", name="dragonfly.ipynb")
    cells = nbformat.read(out, as_version=4).cells
    outputs = [o for c in cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 2
    printed = "".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    rows = {line.split()[0]: line.split() for line in printed.splitlines() if line.strip()}
    assert rows["random-group"][1] == "minimal" and rows["random-group"][2] == "1.00x"
    assert "nearest-group" in rows and ("met" in printed or "no benchmark result" in printed)
