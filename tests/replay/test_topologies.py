"""Topologies as data and the ION mapping policies (paper 004 §5, 000 §3, 003)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from burstlake.lake import write_table
from burstlake.presets import machine
from burstlake.replay.policies import policy
from burstlake.replay.policies.mapping import block, cyclic, read_mapping
from burstlake.replay.topologies import build, fattree, torus


def names(topology, route: list[int]) -> list[str]:
    return [topology.resources.names[r] for r in route]


def test_forwarding_preset_routes_node_ion_storage() -> None:
    t = build({"name": "tianhe1a", "capacities": {"ion": 2e9}})
    assert (len(t.nodes), len(t.ions)) == (5677, 89)
    assert names(t, t.router.io_route(130, int(t.ion_of[130]))) == [
        "tx:cn00130",
        "ion:ion002",
        "storage",
    ]
    assert t.resources.capacity[t.resources["ion:ion002"]] == 2e9
    assert t.route_hops() is None  # Tianhe-1A: no board geometry to count hops on


def test_cs19_hops_follow_the_board_grid() -> None:
    t = build({"name": "cs19"})
    # IONs on 6 boards in board row 0; ION j on board column j*6//89
    assert t.router.hops(0, 0) == 2  # node board (0,0), ION board (0,0)
    assert t.router.hops(64 * 17, 0) == 4  # board 17 = (1,1): other row and column
    assert t.router.hops(64 * 16, 0) == 2  # board 16 = (1,0): same column as ION board 0
    assert t.router.hops(64 * 33, 0) == 4  # board 33 = (2,1): other row and column
    # mean hops, block vs cyclic (paper, with its unpublished layout: 3.655 vs 3.634)
    original = policy("block").apply(t, None)[0].route_hops().mean()
    remapped = policy("cyclic").apply(t, None)[0].route_hops().mean()
    assert original == pytest.approx(330 / 89, rel=1e-12)  # 3.7079: same row or column 14.6 %
    assert 3.6 < remapped < 3.75
    assert abs(original - remapped) < 0.05  # remapping does not lengthen routes (004 §5.2)


def test_cs19_hop_model_by_hand_on_a_small_grid() -> None:
    # 3 board columns; ions on board row 0: hops 2 iff same row or column
    from burstlake.replay.topologies.forwarding import build as forwarding

    boards = np.array([[0, 0], [0, 2], [1, 1], [1, 0]])
    t = forwarding("grid", ["a", "b", "c", "d"], ["i0"], np.zeros(4, dtype=int), boards=boards)
    assert t.route_hops().tolist() == [2, 2, 4, 2]


def test_fat_tree_shape_and_dmodk_routes() -> None:
    t = build({"name": "cab1296"})
    assert len(t.nodes) == 1224 and len(t.ions) == 72  # 1,296 hosts, 72 I/O servers
    router = t.router
    # hosts 18..35 are leaf 1; host 36 is leaf 2 (same pod 0); host 400 is leaf 22 (pod 1)
    assert names(t, router._host_route(18, 19)) == ["up:h18", "down:h19"]
    assert names(t, router._host_route(18, 36)) == ["up:h18", "l1>a0.0", "a0.0>l2", "down:h36"]
    # D-mod-k: towards 400 go up through 400 mod 18 = 4, then core (400 div 18) mod 18 = 4
    assert names(t, router._host_route(18, 400)) == [
        "up:h18",
        "l1>a0.4",
        "a0.4>c4.4",
        "c4.4>a1.4",
        "a1.4>l22",
        "down:h400",
    ]
    assert router.hops(0, 0) == 4  # compute node 0 is host 18 (leaf 1), server 0 host 0 (leaf 0)
    assert t.resources.capacity[t.resources["a0.4>c4.4"]] == 12.5e9
    # every route is deterministic and uses each resource at most once
    for node in range(0, 1224, 97):
        route = router.io_route(node, int(t.ion_of[node]))
        assert len(route) == len(set(route))


def test_fat_tree_taper_thins_the_uplinks() -> None:
    t = fattree.build(fattree.FatTreeShape(radix=36, leaves=72, taper=0.5))
    assert t.router.shape.up == 9
    assert "l0>a0.8" in t.resources.index and "l0>a0.9" not in t.resources.index


def test_torus_dimension_order_routing() -> None:
    t = build({"name": "mira512"})
    assert (len(t.nodes), len(t.ions)) == (512, 8)
    r = t.router
    src = int(np.ravel_multi_index((0, 0, 0, 0, 0), torus.DIMS))
    dst = int(np.ravel_multi_index((3, 2, 1, 0, 1), torus.DIMS))
    # A: 0 -> 3 is one hop the short way (-), B: two hops (+, tie), C: one (+), E: one
    assert names(t, r.route(src, dst)) == [
        f"t{src}-0",
        f"t{np.ravel_multi_index((3, 0, 0, 0, 0), torus.DIMS)}+1",
        f"t{np.ravel_multi_index((3, 1, 0, 0, 0), torus.DIMS)}+1",
        f"t{np.ravel_multi_index((3, 2, 0, 0, 0), torus.DIMS)}+2",
        f"t{np.ravel_multi_index((3, 2, 1, 0, 0), torus.DIMS)}+4",
    ]
    # bridge b serves nodes 64b..64b+63 by default; bridge 1 sits at (0,0,0,1,0) = node 2
    bridge = int(np.ravel_multi_index((0, 0, 0, 1, 0), torus.DIMS))
    # node 64 = (0,2,0,0,0): B 2 + D 1 hops to bridge 1
    assert t.ion_of[64] == 1 and r.hops(bridge, 1) == 0 and r.hops(64, 1) == 3
    assert names(t, r.io_route(bridge, 1)) == ["bridge:1", "ion:0", "storage"]
    # mean hops to the default bridge; 3.0 to the closest one (B 1 + C 1 + A 1: every node
    # has a bridge with its D and E), so nodes are not always assigned their closest (003)
    assert t.route_hops().mean() == pytest.approx(4.5)


def test_block_and_cyclic_formulas() -> None:
    assert block(10, 4).tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 3, 3]  # ⌊i / (10/4)⌋
    assert cyclic(10, 4).tolist() == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]
    t = build({"name": "cs19"})
    assert np.array_equal(policy("block").apply(t, None)[0].ion_of, t.ion_of)  # 128 per ION


def test_mapping_policy_changes_routes_not_resources() -> None:
    t = build({"name": "tiny"})
    remapped, demand = policy("cyclic").apply(t, "demand")
    assert demand == "demand"
    assert remapped.resources is t.resources
    assert names(remapped, remapped.io_paths().indices[3:6].tolist()) == [
        "tx:cn00001",
        "ion:ion001",
        "storage",
    ]
    assert names(t, t.io_paths().indices[3:6].tolist())[1] == "ion:ion000"


def test_mapping_from_file(tmp_path) -> None:
    t = build({"name": "tiny"})
    path = tmp_path / "map.csv"
    rows = [f"{n},ion{(i * 5) % 16:03d}" for i, n in enumerate(t.nodes)]
    path.write_text("node,ion\n" + "\n".join(rows) + "\n")
    remapped = policy({"name": "file", "path": str(path), "label": "mine"}).apply(t, None)[0]
    assert remapped.ion_of.tolist() == [(i * 5) % 16 for i in range(256)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "header with columns node,ion"),
        ("node,target\ncn00000,ion000\n", "header with columns node,ion"),
        ("node,ion\ncn99999,ion000\n", "line 2: unknown node 'cn99999'"),
        ("node,ion\ncn00000,ion777\n", "line 2: unknown ion 'ion777'"),
        ("node,ion\ncn00000,ion000\ncn00000,ion001\n", "line 3: node cn00000 mapped twice"),
        ("node,ion\ncn00000,ion000\n", "255 compute nodes have no ion"),
    ],
)
def test_bad_mapping_files(tmp_path, text, message) -> None:
    path = tmp_path / "map.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_mapping(path, build({"name": "tiny"}))


def test_topology_from_the_lake(lake) -> None:
    tiny = machine("tiny")
    rows = tiny.topology().to_pylist()[::-1]  # out of order on purpose
    write_table(lake, "topology", pa.Table.from_pylist(rows), "topo")
    t = build({"name": "lake"}, lake)
    assert t.nodes[:3] == ("cn00000", "cn00001", "cn00002") and len(t.ions) == 16
    assert t.ion_of[17] == 1


def test_lake_topology_needs_rows_and_ions(lake) -> None:
    with pytest.raises(ValueError, match="no topology rows"):
        build({"name": "lake"}, lake)
    write_table(lake, "topology", pa.table({"node": ["a"], "cabinet": ["c"]}), "topo")
    with pytest.raises(ValueError, match="1 nodes have no ION"):
        build({"name": "lake"}, lake)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"name": "hypercube"}, "unknown topology 'hypercube'"),
        ({"name": "cab1296", "radiks": 36}, "unknown settings"),
        ({"name": "cs19", "capacities": {"ion": "fast"}}, "must be numbers"),
        ({"name": "cs19", "capacities": {"ion": 0}}, "capacity must be positive"),
        ({"name": "cab1296", "server_leaves": [99]}, "server leaves must be in"),
    ],
)
def test_bad_topology_settings(settings, message) -> None:
    with pytest.raises(ValueError, match=message):
        build(settings)
