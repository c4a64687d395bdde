"""The dragonfly family (replay/topologies/dragonfly.py): CODES' global-link arrangement, the
routes of each routing by hand on a tiny dragonfly, the deadlock freedom of every routing's VC
rule, the refusals of bad shapes, and minimal routing saturating at one global link under
all-to-next-group traffic where Valiant and UGAL spread it."""

from __future__ import annotations

import subprocess
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from burstlake.replay import models, topologies
from burstlake.replay.topologies import build
from burstlake.replay.topologies import dragonfly as df
from burstlake.replay.topologies import dragonfly_routing as dr
from burstlake.replay.workloads import synthetic as sy
from tests.builders.graphs import cyclic

CODES_GIT = Path("/work/.mirror/codes-org+codes/repo")
CONF = "src/network-workloads/conf/dragonfly-dally"
TINY = {"name": "dragonfly", "groups": 3, "routers": 2, "hosts": 1, "global_links": 1}
SATURATE = {"name": "dragonfly", "groups": 5, "routers": 2, "hosts": 2, "global_links": 2}


def names(t, route):
    return [t.resources.names[r] for r in route]


def test_presets_are_codes_shapes() -> None:
    small, big = build({"name": "dfdally_72"}), build({"name": "dfdally_3k"})
    assert len(small.nodes) == 72 and len(big.nodes) == 3078
    assert big.settings["global"] == 25 * 2**30 and big.settings["terminal"] == 6.25 * 2**30
    assert big.settings["link_latency"] == 90e-9
    # CODES' default propagation delay: one 4 KiB chunk at the link's bandwidth
    delays = big.router.link_delays()
    assert delays[big.router.wiring.inj[0]] == pytest.approx(4096 / (6.25 * 2**30))
    assert delays[big.router.wiring.global_res[0]] == pytest.approx(4096 / (25 * 2**30))
    # 36 routers × 2 global ports = 72 global links (one per direction) in dfdally_72
    assert len(small.resources.of_kind("switch_link")) == 9 * 4 * 3  # local, each direction
    assert len(small.resources.of_kind("global_link")) == 72
    assert "global_link" in small.link_kinds  # global links pay link_latency too
    sling = build({"name": "slingshot"})
    assert len(sling.nodes) == 18 * 32 * 16
    assert df.DragonflyShape(18, 32, 16, 17).links_per_pair == 32


@pytest.mark.parametrize(
    ("inter", "shape"),
    [("dfdally-72-inter", (9, 4, 2, 2)), ("dfdally-3k-inter", (19, 18, 9, 9))],
)
def test_global_links_rebuild_codes_connection_files(inter, shape) -> None:
    """The arrangement is CODES' file, link by link (read from a CODES checkout)."""
    if not CODES_GIT.exists():
        pytest.skip("no CODES checkout at /work/.mirror (fetch github:codes-org/codes)")
    raw = subprocess.run(
        ["git", f"--git-dir={CODES_GIT}", "show", f"HEAD:{CONF}/{inter}"],
        capture_output=True,
        check=True,
    ).stdout
    codes = np.frombuffer(raw, np.int32).reshape(-1, 2)
    assert np.array_equal(codes, df.global_links(df.DragonflyShape(*shape)))


def test_the_arrangement_by_hand() -> None:
    """3 groups of 2 routers, 1 global link each: group g's port i goes to the i-th group
    after g, from local router i to local router 1 - i."""
    links = df.global_links(df.DragonflyShape(3, 2, 1, 1)).tolist()
    assert links == [[0, 3], [1, 4], [2, 5], [3, 0], [4, 1], [5, 2]]


def test_minimal_and_valiant_routes_by_hand() -> None:
    t = build(TINY)
    r = t.router
    assert names(t, r.route(0, 1)) == ["nic:0", "local:0-1", "eject:1"]
    assert names(t, r.route(0, 3)) == ["nic:0", "global:0-3#0", "eject:3"]
    assert names(t, r.route(0, 5)) == [
        "nic:0", "local:0-1", "global:1-4#1", "local:4-5", "eject:5"
    ]  # fmt: skip
    assert r.hops(0, 0) == 0  # no servers: I/O leaves from the NIC
    v = build(TINY | {"routing": "valiant"})
    route = v.router.route(0, 3)  # group 0 → 1 through group 2
    assert names(v, route) == [
        "nic:0", "local:0-1", "global:1-4#1", "local:4-5", "global:5-2#5", "local:2-3", "eject:3"
    ]  # fmt: skip
    assert v.router.vcs(route) == [0, 0, 0, 1, 1, 2, 2]
    assert names(v, v.router.route(0, 1)) == ["nic:0", "local:0-1", "eject:1"]  # within a group


def test_adaptive_rows_by_hand() -> None:
    """ugal: the source router chooses between the minimal and the Valiant first hop; par
    also at the next router of the source group; minimal and valiant have no detour."""
    t = build(TINY)
    w = t.router.wiring
    pick = dr.drawn(np.random.default_rng(0))
    minimal = t.router.route(0, 5)  # group 0 → 2: the intermediate group can only be 1
    for routing in ("ugal", "par"):
        primary, detours = dr.adaptive_rows(w, minimal, routing, pick)
        assert primary == minimal
        assert [(at, names(t, d)) for at, d in detours] == [
            (1, ["nic:0", "global:0-3#0", "local:3-2", "global:2-5#2", "eject:5"])
        ]  # router 1 (minimal's next router) has no global link but the one to group 2
    for routing in ("minimal", "valiant"):
        assert dr.adaptive_rows(w, minimal, routing, pick)[1] == []
    # 5 groups of 2 routers × 2 global links: router 0 links to groups 1 and 2, router 1 to
    # groups 3 and 4. Host 0 → group 3 goes minimally through router 1; par re-decides at
    # router 1, whose other global link (to group 4) is its non-minimal way out
    five = build(SATURATE | {"hosts": 1})
    w = five.router.wiring
    seen = set()
    for _ in range(12):
        primary, detours = dr.adaptive_rows(w, five.router.route(0, 6), "par", pick)
        assert names(five, primary) == ["nic:0", "local:0-1", "global:1-6#2", "eject:6"]
        at = dict(detours)
        assert names(five, at[2])[:3] == ["nic:0", "local:0-1", "global:1-8#3"]
        if 1 in at:  # via group 1 or 2: router 0's own global link
            assert names(five, at[1])[1] in ("global:0-3#0", "global:0-5#1")
        seen.add(tuple(sorted(at)))
    assert seen == {(1, 2), (2,)}


@pytest.mark.parametrize("routing", dr.ROUTINGS)
def test_every_routings_vc_rule_is_deadlock_free(routing) -> None:
    """Over every route a packet may take (primaries and detours, many draws), the graph of
    (link, VC) → next (link, VC) has no cycle under the VC rule, and has one when every hop is
    on one VC (ISCA 2008 §4.3: even minimal routes need a VC per global hop)."""
    t = build({"name": "dragonfly", "groups": 5, "routers": 2, "hosts": 1, "global_links": 2})
    w, n = t.router.wiring, len(t.nodes)
    pick = dr.drawn(np.random.default_rng(1))
    plain, ruled = defaultdict(set), defaultdict(set)
    for _ in range(4):
        for src in range(n):
            for dst in range(n):
                primary, detours = dr.adaptive_rows(w, t.router.route(src, dst), routing, pick)
                for route in [primary] + [d for _, d in detours]:
                    vcs = w.vcs(route)
                    for k in range(len(route) - 1):
                        plain[route[k], 0].add((route[k + 1], 0))
                        ruled[route[k], vcs[k]].add((route[k + 1], vcs[k + 1]))
    assert not cyclic(ruled)
    assert cyclic(plain)  # local → global → local → global back: minimal needs 2 VCs too


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (TINY | {"groups": 4}, "cannot wire 4 groups evenly"),
        (TINY | {"global_links": 0}, "global_links must be an integer >= 1"),
        (TINY | {"routers": 1.5}, "routers must be an integer >= 1"),
        (TINY | {"groups": 1}, "groups must be an integer >= 2"),
        (TINY | {"hosts": "2"}, "hosts must be an integer >= 1"),
        (TINY | {"routing": "adaptive"}, "routing must be one of"),
        (TINY | {"arrangement": "absolute"}, "arrangement must be one of"),
        (TINY | {"valiant_share": 1.5}, "valiant_share must be a number in"),
        (TINY | {"servers": 6}, "servers \\(6\\) must leave compute nodes"),
        (TINY | {"ugal_bias": -1}, "ugal_bias must be bytes"),
        (TINY | {"latencies": {"wire": 1e-7}}, "latencies must map"),
        (TINY | {"latencies": {"local": -1}}, "latencies local must be seconds >= 0"),
        (TINY | {"latencies": [1e-7]}, "latencies must map"),
        ({"name": "dfdally_72", "capacities": {"link": 1e9}}, "unknown capacities"),
    ],
)
def test_bad_shapes_are_refused_in_one_line(settings, message) -> None:
    with pytest.raises(ValueError, match=message) as err:
        topologies.check(settings)
    assert "\n" not in str(err.value)


def test_servers_isolated_and_spread() -> None:
    shape = df.DragonflyShape(3, 2, 2, 1)
    assert df.server_hosts(shape, 2, "isolated").tolist() == [10, 11]
    assert df.server_hosts(shape, 4, "spread").tolist() == [3, 7, 11, 2]
    t = build(TINY | {"hosts": 2, "servers": 2, "server_placement": "spread"})
    assert t.ions == ("srv00003", "srv00007") and len(t.nodes) == 10
    route = t.router.io_route(0, 1)  # host 0 to server host 7 (router 3, group 1), storage
    assert names(t, route) == ["nic:0", "global:0-3#0", "eject:7", "server:7"]
    assert t.router.hops(0, 1) == 2
    assert t.groups().tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 2]


def accepted(routing: str, model: str) -> float:
    t = build({"name": "dfdally_72", "routing": routing, "valiant_share": 1.0, "link_latency": 0})
    if model == "packet":
        t = t.with_contention(models.parse({"name": "packet", "nic_delay": 0.0}))
    work = sy.demand({"pattern": "nearest-group", "load": 0.5, "messages": 30}, t)
    return sy.measure(t, work)["accepted_throughput"]


def test_minimal_saturates_at_one_global_link_where_valiant_and_ugal_spread() -> None:
    """Nearest-group traffic on dfdally_72 (9 groups of 4 routers × 2 hosts, one global link
    between two groups, every link B = 2 GiB/s) offered at half the injection bandwidth: a
    group's 8 nodes share the one link to the next group, so minimal routing accepts B / 8
    per node, 0.125 of injection, in both models. Valiant spreads each group's traffic over
    the 7 other groups' links, so it accepts at least twice that, and so does par, which
    re-decides at the gateway router where the full global link's queue is. UGAL-L decides
    only at the source router, from that router's own queues: a source router that is not the
    gateway sees an idle local link to it and stays minimal (the weakness PAR answers, Jiang,
    Kim and Dally, ISCA 2009), so ugal spreads less, though still well above minimal."""
    assert accepted("minimal", "flow") == pytest.approx(0.125, rel=0.02)
    assert accepted("minimal", "packet") == pytest.approx(0.125, rel=0.05)
    assert accepted("valiant", "flow") > 0.25
    for routing in ("valiant", "par"):
        assert accepted(routing, "packet") > 0.25, routing
    assert accepted("ugal", "packet") > 1.5 * 0.125


@pytest.mark.parametrize("routing", dr.ROUTINGS)
def test_vectorised_routes_are_the_reference_routes(routing) -> None:
    """The numpy routing (route_arrays, adaptive) draws from the same routes, detours and
    positions as the Python reference (flow_route, adaptive_rows): over 30 draws per pair on
    five groups every (primary, detour position, detour) the numpy routing makes is one the
    reference makes, and it makes most of them; the detours share the entries before them,
    and the (link, VC) dependencies stay acyclic."""
    t = build(SATURATE | {"hosts": 1, "routing": routing})
    r, n = t.router, len(t.nodes)
    src, dst = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    pick = dr.drawn(np.random.default_rng(2))
    reference, vectorised = set(), set()
    ruled = defaultdict(set)
    for round_ in range(30):
        for s, d in zip(src.tolist(), dst.tolist(), strict=True):
            primary, detours = dr.adaptive_rows(r.wiring, r.route(s, d), routing, pick)
            reference |= {(tuple(primary), at, tuple(x)) for at, x in detours}
            reference.add((tuple(primary), 0, ()))
        drawn = replace(r, routing_seed=round_)  # the packet model's draws: one per seed
        adaptive = drawn.adaptive(drawn.route_arrays(src, dst))
        rows = adaptive.routes
        for k in range(len(src)):
            a, b = rows.indptr[k], rows.indptr[k + 1]
            primary = tuple(rows.indices[a:b].tolist())
            vectorised.add((primary, 0, ()))
            for at in (1, 2):
                other = adaptive.detour[a + at] if a + at < b else -1
                if other >= 0:
                    row = np.searchsorted(rows.indptr, other, side="right") - 1
                    detour = rows.indices[rows.indptr[row] : rows.indptr[row + 1]]
                    assert rows.indices[other - 1] == rows.indices[a + at - 1]
                    vectorised.add((primary, at, tuple(detour.tolist())))
        for k in range(rows.flows):
            a, b = rows.indptr[k], rows.indptr[k + 1]
            for e in range(a, b - 1):
                ruled[rows.indices[e], adaptive.vcs[e]].add(
                    (rows.indices[e + 1], adaptive.vcs[e + 1])
                )
    assert vectorised <= reference  # no route, detour or position the reference cannot make
    assert len(vectorised) >= 0.9 * len(reference)  # and most of them within 30 draws
    assert not cyclic(ruled)


def test_the_router_hooks_reach_the_packet_model_and_default_to_not_modelled() -> None:
    """``adaptive`` and ``link_delays`` are declared hooks of graph.Router: None on a router
    that does not model them (a fat-tree's), the dragonfly's own otherwise; the packet model
    (``per_packet``) receives them through Contention.simulate exactly as a direct
    packet.simulate call with the router's hooks, and the flow model never does."""
    from burstlake.replay import packet
    from burstlake.replay.graph import Router

    tree = build({"name": "cab1296"})
    assert type(tree.router).adaptive is Router.adaptive
    assert tree.router.adaptive(tree.io_paths()) is None and tree.link_delays() is None
    assert tree.router.routing is None
    assert models.PACKET.per_packet and not models.FLOW.per_packet

    t = build({**SATURATE, "routing": "par", "latencies": {"global": 1e-6}})
    assert t.router.routing == "par"
    delays = t.link_delays()
    assert len(delays) == len(t.resources.names)
    assert delays[t.router.wiring.global_res].tolist() == [1e-6] * len(t.router.wiring.global_res)
    contention = models.parse({"name": "packet", "nic_delay": 0.0})
    t = t.with_contention(contention)
    work = sy.requests(t, sy.demand({"pattern": "nearest-group", "load": 0.5, "messages": 5}, t))
    got = t.simulate(work)
    direct = packet.simulate(
        work,
        t.resources.capacity,
        contention.settings,
        None,
        switch_port=t.resources.is_switch_port,
        adaptive=t.router.adaptive(work.paths),
        link_delay=delays,
    )
    assert np.array_equal(got.end, direct.end) and got.events == direct.events
    zero = replace(t, router=replace(t.router, delays=np.zeros_like(delays)))
    assert np.nanmax(zero.simulate(work).end) < np.nanmax(got.end)  # the wires' µs count
