"""Bridge-node reassignment (paper 003) on hand-checkable rings and on the mira512 midplane."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from burstlake.replay import scores as sc
from burstlake.replay.policies import policy
from burstlake.replay.policies.bridges import reassign
from burstlake.replay.topologies import build, torus
from burstlake.replay.workloads import bridge_write
from burstlake.replay.workloads.bridge_write import NodeBytes

GB = 1e9


def ring() -> torus.Topology:
    """8 nodes in a ring, 2 bridge nodes (at nodes 0 and 4), blocks 0-3 and 4-7 at boot."""
    return torus.build((8,), nodes_per_bridge=4, name="ring8")


def test_route_aware_moves_nodes_to_a_closer_bridge_within_the_average() -> None:
    t = ring()
    assert t.router.bridge_node.tolist() == [0, 4]
    assert t.ion_of.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # node 3 is 3 hops from bridge 0 but 1 from bridge 4; node 7 likewise the other way;
    # nodes 2 and 6 are 2 hops from both (not closer: they stay). Two nodes can move: the
    # average weight (new assignments) is 2/2 = 1, each bridge takes one.
    assert reassign(t).tolist() == [0, 0, 0, 1, 1, 1, 1, 0]
    remapped, _ = policy("bridge-route").apply(t, None)
    # mean hops: default (0+1+2+3)·2/8 = 1.5; after (0+1+2+1)·2/8 = 1.0
    assert t.route_hops().mean() == pytest.approx(1.5)
    assert remapped.route_hops().mean() == pytest.approx(1.0)


def test_load_aware_keeps_the_moved_bytes_under_the_average() -> None:
    t = ring()
    w = np.array([1, 1, 1, 10, 1, 1, 1, 0], dtype=float)
    # the movable nodes 3 and 7 weigh 10 + 0: average 5 per bridge; bridge 0 takes node 7
    # (0 bytes), bridge 4 would take 10 > 5 with node 3: refused, node 3 stays.
    assert reassign(t, w).tolist() == [0, 0, 0, 0, 1, 1, 1, 0]
    remapped, _ = policy("bridge-load").apply(t, NodeBytes(w))
    assert remapped.ion_of.tolist() == [0, 0, 0, 0, 1, 1, 1, 0]
    with pytest.raises(ValueError, match="bridge-load weighs nodes by their bytes"):
        policy("bridge-load").apply(t, None)


def test_bridge_scores_on_the_ring() -> None:
    t = ring()
    one = np.full(8, GB)
    before = {s.metric: s.value for s in sc.bridge_scores(t, one)}
    # default: each bridge carries its block's 4 GB; the link 1→0 carries nodes 1, 2, 3
    assert before["bridge_load_max_over_mean"] == pytest.approx(1.0)
    assert before["max_link_load"] == pytest.approx(3 * GB)
    after = {s.metric: s.value for s in sc.bridge_scores(t.remapped(reassign(t)), one)}
    # after: node 3 goes 3→4 and node 7 goes 7→0, so link 1→0 carries nodes 1 and 2
    assert after["max_link_load"] == pytest.approx(2 * GB)
    assert after["bridge_load_nud"] == pytest.approx(0.0)


def scores(topology, workload: dict, label: str) -> dict[str, float]:
    demand = bridge_write.demand(workload, topology, None)
    machine, work = policy(label).apply(topology, demand)
    run = bridge_write.scores(SimpleNamespace(workload=workload), machine, work, None)
    return {s.metric: s.value for s in run}


def test_reassignment_on_mira512_shortens_routes_and_writes() -> None:
    """003's shape on the midplane: every node writes 4 GB. Reassignment lowers the mean hops
    (4.5 → 3.0), the busiest torus link (192 → 128 GB) and, with I/O links fast enough that the
    torus is the bottleneck, the write time (96 → 64 s: 192 GB vs 128 GB over a 2 GB/s link);
    the bridge loads stay balanced. With the preset's 2 GB/s bridge links those links bound
    every assignment alike (64 nodes × 4 GB / 2 GB/s = 128 s)."""
    fast = build({"name": "mira512", "capacities": {"bridge_link": 8e9, "ion": 16e9}})
    work = {"bytes_per_node": 4 * GB, "request_bytes": 4 * GB}
    given, route = scores(fast, work, "given"), scores(fast, work, "bridge-route")
    assert given["mean_hops"] == pytest.approx(4.5) and route["mean_hops"] == pytest.approx(3.0)
    assert given["max_link_load"] == pytest.approx(192 * GB)
    assert route["max_link_load"] == pytest.approx(128 * GB)
    assert given["write_time"] == pytest.approx(96.0) and route["write_time"] == pytest.approx(64.0)
    assert route["bridge_load_max_over_mean"] <= given["bridge_load_max_over_mean"] + 1e-12
    preset = build({"name": "mira512"})
    assert scores(preset, work, "given")["write_time"] == pytest.approx(128.0)
    assert scores(preset, work, "bridge-route")["write_time"] == pytest.approx(128.0)


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"writers": 0}, "writers must be a number > 0"),
        ({"writers": 1.5}, "writers is a fraction in"),
        ({"writers": "half"}, "writers must be a number > 0, got 'half'"),
        ({"bytes_per_node": -1}, "bytes_per_node must be a number > 0"),
        ({"request_bytes": None}, "request_bytes must be a number > 0, got None"),
        ({"bytes_per_node": 1e12, "request_bytes": 1}, "requests per node is too many"),
    ],
)
def test_bridge_write_settings_are_checked(workload, message) -> None:
    from burstlake.replay.workloads import ScenarioLimits

    with pytest.raises(ValueError, match=message):
        bridge_write.check(workload, ScenarioLimits())


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"dims": []}, "dims must be a list of 1 to 6 integers"),
        ({"dims": "4x4"}, "dims must be a list"),
        ({"dims": [4, 1]}, "integers ≥ 2"),
        ({"dims": [4, 4], "nodes_per_bridge": 3}, "nodes_per_bridge must be a positive integer"),
        ({"nodes_per_bridge": 0}, "nodes_per_bridge must be"),
        ({"nodes_per_bridge": True}, "nodes_per_bridge must be"),
    ],
)
def test_torus_settings_are_checked(settings, message) -> None:
    with pytest.raises(ValueError, match=message):
        build({"name": "mira512", **settings})
