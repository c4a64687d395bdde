"""Topologies as a registry (docs/design.md, "Topologies"): families with parameters, presets
as parameter sets of a family, and each family's virtual-channel rule (the torus dateline)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from burstlake.replay import topologies
from burstlake.replay.graph import ResourceSet, Router, Topology
from burstlake.replay.scenario import load
from burstlake.replay.solver import Paths
from burstlake.replay.topologies import Family, build, fattree
from tests.builders.graphs import cyclic


def same_machine(a: Topology, b: Topology) -> None:
    assert a.resources.names == b.resources.names
    assert a.resources.capacities == b.resources.capacities
    assert (a.nodes, a.ions) == (b.nodes, b.ions)
    assert a.ion_of.tolist() == b.ion_of.tolist()
    assert a.settings == b.settings
    assert np.array_equal(a.io_paths().indices, b.io_paths().indices)


@pytest.mark.parametrize(
    ("preset", "family"),
    [
        ("cab1296", {"name": "fattree", "radix": 36, "leaves": 72, "taper": 1.0}),
        (
            "quartz186",
            {
                "name": "fattree",
                "radix": 48,
                "leaves": 6,
                "taper": 0.5,
                "hosts_per_leaf": 32,
                "service_nodes": 6,
            },
        ),
        ("mira512", {"name": "torus", "dims": [4, 4, 4, 4, 2], "nodes_per_bridge": 64}),
        ("tiny", {"name": "forwarding", "nodes": 256, "nodes_per_ion": 16}),
        (
            "cs19",
            {
                "name": "forwarding",
                "nodes": 11392,
                "nodes_per_ion": 128,
                "board_size": 64,
                "board_columns": 16,
            },
        ),
    ],
)
def test_a_preset_is_its_family_with_its_parameters(preset, family) -> None:
    named, given = build({"name": preset}), build(family)
    assert (named.name, given.name) == (preset, family["name"])
    same_machine(named, given)
    hops = named.route_hops()
    assert (hops is None) == (given.route_hops() is None)
    if hops is not None:
        assert hops.tolist() == given.route_hops().tolist()


def test_quartz186_is_002s_partition() -> None:
    """002 §2.2: 48-port leaves with 31 compute nodes, 1 service node and 16 uplinks (2:1
    taper), the 6 leaves sharing the same second-level switches (one pod: no core links),
    100 Gb/s = 12.5 GB/s links."""
    q = build({"name": "quartz186"})
    shape = fattree.shape_of(q)
    assert (shape.down, shape.up, shape.leaves, shape.pods) == (32, 16, 6, 1)
    assert len(q.nodes) == 186 and len(q.ions) == 6
    assert np.bincount(q.groups()).tolist() == [31] * 6  # compute nodes per leaf
    assert q.router.server_host.tolist() == [31, 63, 95, 127, 159, 191]  # each leaf's last port
    uplinks = [n for n in q.resources.names if n.startswith("l0>")]
    assert len(uplinks) == 16 and not any(n.startswith("a0.0>c") for n in q.resources.names)
    assert set(q.resources.capacity.tolist()) == {12.5e9}
    # across leaves: host up, leaf up, aggregation down, host down (D-mod-k: uplink d mod 16)
    route = q.router.route(0, 31)  # compute node 31 is host 32, the first of leaf 1
    assert [q.resources.names[r] for r in route] == ["up:h0", "l0>a0.0", "a0.0>l1", "down:h32"]


def test_a_family_with_parameters_by_hand() -> None:
    """radix 4, 8 leaves: 2 host ports per leaf (16 hosts), pods of 2 leaves; the servers
    fill the first leaf of the first four pods (leaves 0, 2, 4, 6: hosts 0, 1, 4, 5, ...)."""
    t = build({"name": "fattree", "radix": 4, "leaves": 8})
    assert (len(t.nodes), len(t.ions)) == (8, 8)
    assert t.nodes[:3] == ("cn00002", "cn00003", "cn00006")
    assert t.settings["link_latency"] == fattree.LINK_LATENCY  # the family's default
    # a preset's parameters are overridden by the scenario's, as before
    assert len(build({"name": "cab1296", "radix": 4, "leaves": 8}).nodes) == 8
    assert build({"name": "torus", "dims": [4, 2], "nodes_per_bridge": 4}).ions == (
        "bridge00",
        "bridge01",
    )


def test_names_list_families_and_presets() -> None:
    assert {"fattree", "torus", "forwarding", "lake"} <= set(topologies.names())
    assert {"cab1296", "quartz186", "mira512", "tianhe1a", "cs19", "tiny"} <= set(
        topologies.names()
    )
    assert topologies.reads_lake({"name": "lake"})
    assert not topologies.reads_lake({"name": "tianhe1a"})


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"name": "fattree", "radix": 5}, "topology fattree: radix must be an even integer"),
        ({"name": "fattree", "leaves": 0}, "leaves must be an integer ≥ 1, got 0"),
        ({"name": "cab1296", "taper": 0}, "topology cab1296: taper must be a number > 0"),
        ({"name": "cab1296", "taper": "half"}, "taper must be a number > 0"),
        ({"name": "fattree", "server_leaves": []}, "server_leaves must be a list of leaf numbers"),
        ({"name": "fattree", "server_leaves": "0"}, "server_leaves must be a list of leaf numbers"),
        ({"name": "fattree", "hosts_per_leaf": 0}, "hosts_per_leaf must be an integer ≥ 1, got 0"),
        ({"name": "fattree", "hosts_per_leaf": 2.5}, "hosts_per_leaf must be an integer ≥ 1"),
        ({"name": "fattree", "hosts_per_leaf": True}, "hosts_per_leaf must be an integer ≥ 1"),
        (
            {"name": "quartz186", "hosts_per_leaf": 40},
            "topology quartz186: 40 host ports and 20 uplinks .* do not fit a 48-port leaf",
        ),
        ({"name": "quartz186", "taper": 1.0}, "32 host ports and 32 uplinks"),
        ({"name": "quartz186", "service_nodes": 0}, "service_nodes must be an integer in 1..191"),
        ({"name": "quartz186", "service_nodes": "6"}, "service_nodes must be an integer"),
        ({"name": "quartz186", "service_nodes": 192}, "service_nodes must be an integer in 1..191"),
        (
            {"name": "quartz186", "server_leaves": [0]},
            "give server_leaves or service_nodes, not both",
        ),
        ({"name": "forwarding"}, "topology forwarding: nodes must be an integer ≥ 1, got None"),
        ({"name": "forwarding", "nodes": 8, "nodes_per_ion": True}, "nodes_per_ion must be"),
        (
            {"name": "forwarding", "nodes": 8, "nodes_per_ion": 2, "board_size": 4},
            "give board_size and board_columns together",
        ),
        ({"name": "torus", "dims": [1]}, "topology torus: dims must be a list"),
        ({"name": "lake", "nodes": 4}, "topology lake: unknown settings 'nodes'"),
        ({"name": "tiny", "radix": 4}, "unknown settings 'radix'"),
        ({"name": "fattree", "capacities": {"ion": 1e9}}, "unknown capacities 'ion'"),
        ({"name": "fattree", "link_latency": -1}, "link_latency must be a number of seconds"),
        ({}, "unknown topology None; allowed: cab1296, cs19, dfdally_3k, dfdally_72, dragonfly"),
    ],
)
def test_bad_family_parameters_are_refused_in_one_line(settings, message) -> None:
    with pytest.raises(ValueError, match=message):
        topologies.check(settings)


def test_a_scenario_names_a_family_with_parameters(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\nworkload: {source: ior}\n"
        "topology: {name: fattree, radix: 4, leaves: 8, link_latency: 0}\npolicies: [block]\n"
    )
    assert load(path).topology == {"name": "fattree", "radix": 4, "leaves": 8, "link_latency": 0}
    path.write_text(path.read_text().replace("leaves: 8", "leaves: -1"))
    with pytest.raises(ValueError, match=r"s\.yaml: topology fattree: leaves must be"):
        load(path)


class LineRouter(Router):
    """Nodes 0..n-1 on a line of links, all I/O to one storage at the end."""

    def __init__(self, links: list[int], storage: int) -> None:
        self.links, self.storage = links, storage

    def route(self, src: int, dst: int) -> list[int]:
        return self.links[min(src, dst) : max(src, dst)]

    def io_route(self, node: int, target: int) -> list[int]:
        return [*self.links[node:], self.storage]

    def hops(self, node: int, target: int) -> int:
        return len(self.links) - node


def line(name: str, settings: dict, capacities: dict | None, _lake: object) -> Topology:
    n = settings.get("nodes", 3)
    r = ResourceSet()
    links = [r.add(f"l{i}", "switch_link", (capacities or {}).get("link", 1.0)) for i in range(n)]
    storage = r.add("storage", "storage", 1.0)
    nodes = tuple(f"n{i}" for i in range(n))
    return Topology(name, r, nodes, ("s",), np.zeros(n, dtype=np.int64), LineRouter(links, storage))


def test_a_new_family_needs_only_its_registration(monkeypatch, tmp_path: Path) -> None:
    """The recipe of docs/design.md: register a family; scenarios name it, nothing else
    changes (every hop on VC 0 without a ``vcs`` rule)."""
    topologies.names()  # the shipped families are registered before the registry is copied
    monkeypatch.setattr(topologies, "FAMILIES", topologies.FAMILIES.copy())
    monkeypatch.setattr(topologies, "PRESETS", dict(topologies.PRESETS))
    topologies.register(
        "line",
        Family(frozenset({"nodes"}), ("link",), lambda n, s: None, line, ("switch_link",), 1e-6),
    )
    topologies.preset("line4", "line", nodes=4)
    t = build({"name": "line4", "capacities": {"link": 2.0}})
    assert (t.name, len(t.nodes), t.settings["link_latency"]) == ("line4", 4, 1e-6)
    assert t.resources.capacity.tolist() == [2.0] * 4 + [1.0]
    assert t.route_latency(t.io_paths()).tolist() == pytest.approx([4e-6, 3e-6, 2e-6, 1e-6])
    assert t.route_vcs(t.io_paths()).tolist() == [0] * 14
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nworkload: {source: ior}\ntopology: line\npolicies: [block]\n")
    assert load(path).topology == {"name": "line"}


# --- virtual channels -------------------------------------------------------------------------


def ring(size: int = 8):
    return build({"name": "torus", "dims": [size], "nodes_per_bridge": size})


def link_names(t: Topology, route: list[int]) -> list[str]:
    return [t.resources.names[r] for r in route]


def test_dateline_on_a_ring_by_hand() -> None:
    """Ring of 8 (link t<i>+0 from node i to i+1, t<i>-0 from i to i-1; the wrap links are
    t7+0 and t0-0). 6 → 1 goes + through 7 and the wrap to 0, then to 1: VC 0 on 6→7 and on
    the wrap hop 7→0, VC 1 after it. 1 → 6 goes - the same way round. 2 → 4 crosses no wrap:
    VC 0 throughout. 7 → 0 is the wrap hop alone: VC 0."""
    t = ring()
    r = t.router
    assert link_names(t, r.route(6, 1)) == ["t6+0", "t7+0", "t0+0"]
    assert r.vcs(r.route(6, 1)) == [0, 0, 1]
    assert link_names(t, r.route(1, 6)) == ["t1-0", "t0-0", "t7-0"]
    assert r.vcs(r.route(1, 6)) == [0, 0, 1]
    assert r.vcs(r.route(2, 4)) == [0, 0]
    assert r.vcs(r.route(7, 0)) == [0]
    assert r.vcs(r.route(5, 1)) == [0, 0, 0, 1]  # 5→6→7, wrap 7→0, 0→1


def test_dateline_starts_each_dimension_on_vc0() -> None:
    """4×4 torus (node = 4·a + b): (3,0) → (1,1) crosses dimension a's wrap (node 12 → 0),
    moves a 0→1 (node 0 → 4) on VC 1, then dimension b (node 4 → 5) starts again on VC 0.
    The I/O route's bridge link, ION and storage are on VC 0."""
    t = build({"name": "torus", "dims": [4, 4], "nodes_per_bridge": 16})
    r = t.router
    route = r.route(12, 5)
    assert link_names(t, route) == ["t12+0", "t0+0", "t4+1"]
    assert r.vcs(route) == [0, 1, 0]
    assert r.vcs([*route, *r.io_route(0, 0)[-3:]]) == [0, 1, 0, 0, 0, 0]


def test_route_vcs_is_aligned_with_the_paths() -> None:
    t = ring()
    paths = Paths.from_lists([t.router.route(6, 1), t.router.route(2, 4), []])
    vcs = t.route_vcs(paths)
    assert vcs.dtype == np.int8 and len(vcs) == len(paths.indices)
    assert vcs.tolist() == [0, 0, 1, 0, 0]
    tree = build({"name": "fattree", "radix": 4, "leaves": 8})
    assert tree.route_vcs(tree.io_paths()).tolist() == [0] * len(tree.io_paths().indices)
    assert t.route_vcs(Paths.from_lists([])).tolist() == []


@pytest.mark.parametrize("dims", [[5], [4], [3, 4], [2, 3, 2]])
def test_the_dateline_breaks_every_channel_dependency_cycle(dims) -> None:
    """Deadlock freedom (Dally & Seitz 1987): over every route between two nodes, the graph
    of (link, VC) → next (link, VC) has a cycle when every hop is on VC 0 (on rings of 4 or
    more; a shorter ring's routes take one hop per dimension) and none under the dateline
    rule."""
    t = build({"name": "torus", "dims": dims, "nodes_per_bridge": int(np.prod(dims))})
    r, n = t.router, len(t.nodes)
    plain, dated = defaultdict(set), defaultdict(set)
    for src in range(n):
        for dst in range(n):
            route = r.route(src, dst)
            vcs = r.vcs(route)
            for k in range(len(route) - 1):
                plain[route[k], 0].add((route[k + 1], 0))
                dated[route[k], vcs[k]].add((route[k + 1], vcs[k + 1]))
    assert cyclic(plain) == any(d >= 4 for d in dims)
    assert not cyclic(dated)
