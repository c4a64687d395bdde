"""Bridge-node reassignment (paper 003) on hand-checkable rings and on the mira512 midplane."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from burstlake.replay import scores as sc
from burstlake.replay.models import parse
from burstlake.replay.policies import policy
from burstlake.replay.policies.bridges import reassign, rebalance
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


def test_load_aware_weighs_kept_and_new_bytes_on_the_ring() -> None:
    t = ring()
    w = np.array([1, 1, 1, 10, 1, 1, 1, 0], dtype=float)
    # mean weight 16/2 = 8; kept (no closer bridge): bridge 0 nodes 0-2 = 3, bridge 1 nodes
    # 4-6 = 3. Level 1: node 3 (boot bridge 0, loaded 13, goes first) to bridge 1: 3 + 10 > 8,
    # refused; node 7 to bridge 0: 3 + 0 ≤ 8, moves. Level 3: node 3 falls back to bridge 0.
    assert rebalance(t, w).tolist() == [0, 0, 0, 0, 1, 1, 1, 0]
    remapped, _ = policy("bridge-load").apply(t, NodeBytes(w))
    assert remapped.ion_of.tolist() == [0, 0, 0, 0, 1, 1, 1, 0]
    with pytest.raises(ValueError, match="bridge-load weighs nodes by their bytes"):
        policy("bridge-load").apply(t, None)
    with pytest.raises(ValueError, match="one non-negative weight per compute node"):
        rebalance(t, -w)


def torus44() -> torus.Topology:
    """4×4 torus, 2 bridge nodes at (0,0) = node 0 and (0,2) = node 2 (spread in reversed
    dimension order: index 8 of (4,4) reversed is (2,0)); boot blocks nodes 0-7 (A = 0, 1) and
    8-15 (A = 2, 3); one ION for both bridge nodes (4 GB/s), bridge links 2 GB/s."""
    return torus.build((4, 4), nodes_per_bridge=8, name="torus44")


def test_load_aware_balances_the_bytes_route_aware_swaps_on_a_4x4_torus() -> None:
    """Hops to (0,0) are ring(a) + ring(b), to (0,2) ring(a) + ring(b-2), ring = 0,1,2,1.
    Closer than the boot bridge: nodes 2 = (0,2) and 6 = (1,2) to bridge 1 (0 and 1 hops
    instead of 2 and 3), nodes 8 = (2,0) and 12 = (3,0) to bridge 0 (2 and 1 hops instead of 4
    and 3). Nodes 2 and 6 write 3 GB, nodes 8 and 12 nothing, the others 1 GB: 18 GB, mean 9.
    Boot: bridge 0 serves 6·1 + 2·3 = 12 GB, bridge 1 6 GB (max/mean 12/9).
    Route-aware (003: average weight ⌈4/2⌉ = 2 new nodes each): all four move, 6 / 12 GB: the
    same spread mirrored. Load-aware: kept 6 and 6 GB. Level 0: node 2 to bridge 1, 6 + 3 = 9
    ≤ 9. Level 1: node 6 (boot bridge loaded 12, first) to bridge 1, 12 > 9, refused; node 12
    to bridge 0, 6 + 0. Level 2: node 8 to bridge 0. Level 3: node 6 falls back to bridge 0:
    9 / 9 GB. Mean hops: boot (0+1+2+1 + 1+2+3+2 + 4+3+2+3 + 3+2+1+2)/16 = 32/16 = 2.0; route
    32 − 4·2 = 24 → 1.5; load 32 − 3·2 = 26 → 1.625. Write time: the bridge links (2 GB/s) bind,
    12 GB → 6 s at boot and route-aware, 9 GB each → 4.5 s load-aware (the 4 GB/s ION carries
    18 GB in 4.5 s too)."""
    t = torus44()
    assert t.router.bridge_node.tolist() == [0, 2]
    w = np.ones(16)
    w[[2, 6]], w[[8, 12]] = 3.0, 0.0
    route, load = reassign(t), rebalance(t, w)
    assert route.tolist() == [0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 1, 1, 0, 1, 1, 1]
    assert load.tolist() == [0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1]
    expect = {"given": (2.0, 12 / 9, 6.0), "bridge-route": (1.5, 12 / 9, 6.0)}
    expect["bridge-load"] = (1.625, 1.0, 4.5)
    spec = SimpleNamespace(workload={"request_bytes": GB})
    for label, (hops, spread, seconds) in expect.items():
        machine, work = policy(label).apply(t, NodeBytes(w * GB))
        got = {s.metric: s.value for s in bridge_write.scores(spec, machine, work, None)}
        assert got["mean_hops"] == pytest.approx(hops), label
        assert got["bridge_io_max_over_mean"] == pytest.approx(spread), label
        assert got["write_time"] == pytest.approx(seconds), label


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


def test_reassignment_on_mira512_speeds_one_jobs_write_with_bgq_links() -> None:
    """003's shape on the midplane with BG/Q's own capacities (2 GB/s torus and bridge links,
    4 GB/s IONs). One job's 128 nodes (ranks 0-127, A = 0) write 4 GB each: at boot they are
    the blocks of bridge nodes 0 and 1, 256 GB each over a 2 GB/s bridge link = 128 s, and
    bridge nodes 2-7 idle (bytes per bridge node max/mean 4.0). Every other bridge node sits at
    (0,0,0,d,e) too, so each job node whose (d,e) is not its boot bridge node's is closer to
    another one: both reassignments give each bridge node 16 of them, 64 GB = 32 s (the ION
    pair carries 128 GB at 4 GB/s = 32 s too); max/mean 1.0, hops per byte 3.5 → 2.0."""
    preset = build({"name": "mira512"})
    job = {"bytes_per_node": 4 * GB, "request_bytes": 4 * GB, "writers": 0.25}
    job["writer_layout"] = "job"
    given = scores(preset, job, "given")
    assert given["write_time"] == pytest.approx(128.0)
    assert given["bridge_io_max_over_mean"] == pytest.approx(4.0)
    assert given["io_hops_mean"] == pytest.approx(3.5)
    for label in ("bridge-route", "bridge-load"):
        moved = scores(preset, job, label)
        assert moved["write_time"] == pytest.approx(32.0), label
        assert moved["bridge_io_max_over_mean"] == pytest.approx(1.0), label
        assert moved["bridge_load_max_over_mean"] < given["bridge_load_max_over_mean"], label
        assert moved["io_hops_mean"] == pytest.approx(2.0), label
        assert moved["mean_hops"] == pytest.approx(3.0), label


def test_with_every_node_writing_the_flow_model_shows_only_the_torus_gain() -> None:
    """Under the flow model (no buffers), every node writes 4 GB. Reassignment lowers the mean
    hops (4.5 → 3.0) and the busiest torus link (192 → 128 GB), but the 64 nodes of each bridge
    node still send 256 GB over its 2 GB/s bridge link: 128 s either way (the spread of
    bridge-node load is 1.0 either way). The
    torus sets the time only with I/O links above BG/Q's (bridge links 8 GB/s, IONs 16 GB/s:
    192 GB vs 128 GB over a 2 GB/s torus link = 96 → 64 s)."""
    every = {"bytes_per_node": 4 * GB, "request_bytes": 4 * GB}
    preset = build({"name": "mira512"})
    given, load = scores(preset, every, "given"), scores(preset, every, "bridge-load")
    assert given["mean_hops"] == pytest.approx(4.5) and load["mean_hops"] == pytest.approx(3.0)
    assert given["max_link_load"] == pytest.approx(192 * GB)
    assert load["max_link_load"] == pytest.approx(128 * GB)
    assert given["write_time"] == load["write_time"] == pytest.approx(128.0)
    assert given["bridge_io_max_over_mean"] == load["bridge_io_max_over_mean"] == 1.0
    fast = build({"name": "mira512", "capacities": {"bridge_link": 8e9, "ion": 16e9}})
    assert scores(fast, every, "given")["write_time"] == pytest.approx(96.0)
    assert scores(fast, every, "bridge-route")["write_time"] == pytest.approx(64.0)


KB, MB = 1024, 1024 * 1024


@pytest.mark.parametrize("rank_bytes", [64 * KB, 2 * MB])
def test_whole_partition_write_gains_under_the_packet_model(rank_bytes) -> None:
    """003's whole-partition case at its sizes (512 nodes, 1 rank per node, 64 KB and 2 MB
    independent writes; its network-counter table) under the packet model. At boot bridge node
    b serves ranks 64b..64b+63, whose routes end along D and E through the other bridge nodes
    (all at (0,0,0,d,e)): packets for a saturated bridge link fill the torus buffers into its
    node and hold up those passing through to other bridge nodes. Reassigned, every node goes
    to the bridge node with its own (d,e): no route passes another bridge node. 003: 60 %
    average gain; messages through a bridge node 12.7 → 8.5; sd of messages sent from bridge
    nodes 0.09 → 0.02. Measured: 3.55 → 2.10 ms (64 KB), 128.5 → 67.1 ms (2 MB); through
    95.1 → 0; sd 0.0021 → 0."""
    workload = {"bytes_per_node": rank_bytes, "request_bytes": rank_bytes}
    preset = build({"name": "mira512"}).with_contention(parse("packet"))
    given = scores(preset, workload, "given")
    # the bridge links bind after reassignment: 64 nodes' bytes at 2 GB/s, plus the hops
    assert given["write_time"] > 1.5 * 64 * rank_bytes / 2e9
    for label in ("bridge-route", "bridge-load"):
        moved = scores(preset, workload, label)
        assert moved["write_time"] <= 0.7 * given["write_time"], label
        assert moved["write_time"] == pytest.approx(64 * rank_bytes / 2e9, rel=0.01), label
        assert moved["bridge_messages_sent_sd"] < given["bridge_messages_sent_sd"], label
        assert moved["bridge_messages_through_mean"] < given["bridge_messages_through_mean"]
    # the flow model, on the same writes, cannot tell the assignments apart
    flow = build({"name": "mira512"})
    assert scores(flow, workload, "given")["write_time"] == pytest.approx(
        scores(flow, workload, "bridge-route")["write_time"], rel=1e-6
    )


def test_bridge_message_counters_on_a_ring() -> None:
    """Ring of 6, bridge nodes at 0, 2, 4 serving nodes 0-1, 2-3, 4-5 at boot, one message
    per node. Node 1 moved to bridge node 4: 3 hops either way, ties go +, 1→2→3→4, so bridge
    node 2 routes its message. Through = [0, 1, 0] (mean 1/3); sent = served [1, 2, 3] +
    through = [1, 3, 3], sd over mean = std([1, 3, 3]) / (7/3)."""
    t = torus.build((6,), nodes_per_bridge=2, name="ring6")
    assert t.router.bridge_node.tolist() == [0, 2, 4]
    ion_of = t.ion_of.copy()
    ion_of[1] = 2
    moved = t.remapped(ion_of)
    assert moved.router.passes(1, 2) == [2, 3]
    got = {s.metric: s.value for s in sc.bridge_message_scores(moved, np.arange(6), np.ones(6))}
    assert got["bridge_messages_through_mean"] == pytest.approx(1 / 3)
    assert got["bridge_messages_sent_sd"] == pytest.approx(np.std([1, 3, 3]) / (7 / 3))


@pytest.mark.parametrize(
    ("workload", "message"),
    [
        ({"writers": 0}, "writers must be a number > 0"),
        ({"writers": 1.5}, "writers is a fraction in"),
        ({"writers": "half"}, "writers must be a number > 0, got 'half'"),
        ({"writer_layout": "block"}, "writer_layout is one of spread, job, got 'block'"),
        ({"writer_layout": ""}, "writer_layout is one of spread, job"),
        ({"writer_layout": ["job"]}, "writer_layout is one of spread, job"),
        ({"bytes_per_node": -1}, "bytes_per_node must be a number > 0"),
        ({"request_bytes": None}, "request_bytes must be a number > 0, got None"),
        ({"bytes_per_node": 1e12, "request_bytes": 1}, "requests per node is too many"),
        ({"ranks_per_node": 0}, "ranks_per_node must be an integer >= 1, got 0"),
        ({"ranks_per_node": 2.5}, "ranks_per_node must be an integer >= 1, got 2.5"),
        ({"ranks_per_node": True}, "ranks_per_node must be an integer >= 1, got True"),
        ({"ranks_per_node": "eight"}, "ranks_per_node must be an integer >= 1"),
        ({"ranks_per_node": 1e6, "request_bytes": 1}, "requests per node is too many"),
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
