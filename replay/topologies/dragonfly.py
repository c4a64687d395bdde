"""Dragonfly (Kim, Dally, Scott and Abts, "Technology-driven, highly-scalable dragonfly
topology", ISCA 2008): ``groups`` groups of ``routers`` routers, all-to-all local links inside
a group, ``hosts`` hosts and ``global_links`` global links per router.

The global links are arranged as CODES builds its ``dragonfly-dally`` connection files
(codes-org/codes, scripts/dragonfly-dally/dragonfly-dally-topo-gen.py, ``writeInter``; the
``consecutive`` arrangement of ISCA 2008 §3.1 with routers paired end to end): group ``g``
numbers its ``routers × global_links`` global ports in router order, port ``i`` leads to the
``(i mod (groups - 1))``-th other group counted from ``g + 1`` upwards, from local router
``i div global_links`` to local router ``routers - 1 - i div global_links`` there. Each pair of
groups then gets ``routers × global_links / (groups - 1)`` links, a whole number or the shape
is refused, and every link has its way back (each link is two resources, one per direction).
This rebuilds CODES' ``dfdally-72-inter`` and ``dfdally-3k-inter`` files exactly
(tests/replay/test_dragonfly.py reads them when a CODES checkout is at hand).

Resources: each host's NIC link to its router (``terminal``, the NIC sends) and its router's
link back (a switch port), every local link and every global link (kind ``global_link``) in
each direction (switch ports), each I/O server's storage; ``latencies`` gives the propagation
delay of a terminal, local and global link (seconds; the router's ``link_delays`` hook: the
packet model adds it to every hop, as CODES' ``cn_delay``, ``local_delay`` and
``global_delay``; presets: CODES' default, one 4 KiB chunk at
the link's bandwidth). Routing is a router setting (``routing``: ``minimal``,
``valiant``, ``par``, ``ugal``; :mod:`.dragonfly_routing`): the packet model decides per
packet from buffer occupancy (:class:`burstlake.replay.packet.Adaptive`); the flow model routes
minimally, Valiant, or for ``par``/``ugal`` Valiant on a fixed ``valiant_share`` of the host
pairs. Virtual channels: the global links crossed so far (:mod:`.dragonfly_routing`).

I/O servers (``servers``, default none): that many hosts serve I/O instead of computing,
``isolated`` (the last hosts of the last group, the fat-tree's isolated placement of paper 000
§5.2) or ``spread`` (round robin over the groups, last router first). Without servers every
node writes to one storage resource straight from its NIC.

Presets (bandwidths in GiB/s as CODES reads them, ``bytes_to_ns``):

- ``dfdally_72``: CODES' src/network-workloads/conf/dragonfly-dally/dfdally_72.conf: 9 groups
  of 4 routers, 2 hosts and 2 global links per router, every link 2 GiB/s;
- ``dfdally_3k``: dfdally_3k.conf: 19 groups of 18 routers, 9 hosts and 9 global links per
  router (3,078 hosts), terminal 6.25, local 12.5, global 25 GiB/s, 90 ns router delay;
- ``slingshot``: the HPE Slingshot group of De Sensi et al., "An in-depth analysis of the
  Slingshot interconnect", SC20, §II: 64-port Rosetta switches at 200 Gb/s (25 GB/s), 16
  hosts, 31 local and 17 global ports per switch, 32 switches per group; here 18 groups (32
  global links between each pair) instead of a full machine's hundreds, so it replays.

The packet model's buffers and router delay are its own settings (``packet:``): CODES' 72
node config has 16 KiB local/global and 32 KiB terminal VC buffers and a 100 ns router delay
(its default), the 3k one 64 KiB buffers and 90 ns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import numpy as np

from burstlake.replay.graph import ResourceSet, Router, Topology, check_nodes
from burstlake.replay.packet import Adaptive
from burstlake.replay.solver import Paths
from burstlake.replay.topologies import Family, preset, register
from burstlake.replay.topologies import dragonfly_routing as dr

GIB = 2.0**30
CAPACITY_KEYS = ("terminal", "local", "global", "server")
CAPACITIES = {"terminal": 2 * GIB, "local": 2 * GIB, "global": 2 * GIB, "server": 2 * GIB}
LINK_KINDS = ("node_link", "switch_link", "global_link")  # each pays link_latency when crossed
LINK_LATENCY = 100e-9  # seconds per link crossed: CODES dragonfly-dally's default router_delay
ARRANGEMENTS = ("consecutive",)
PLACEMENTS = ("isolated", "spread")
SHAPE = ("groups", "routers", "hosts", "global_links")
DEFAULTS: dict[str, Any] = {
    "groups": 9,
    "routers": 4,
    "hosts": 2,
    "global_links": 2,
    "arrangement": "consecutive",
    "routing": "minimal",
    "valiant_share": 0.5,  # the flow model's share of Valiant routes under par/ugal
    "ugal_bias": 0.0,  # bytes (CODES' adaptive_threshold, there in chunks: 0 in dfdally_3k)
    "routing_seed": 0,
    "servers": 0,
    "server_placement": "isolated",
    "latencies": {},  # seconds of propagation per link class (terminal, local, global)
}
LATENCY_KEYS = ("terminal", "local", "global")


@dataclass(frozen=True)
class DragonflyShape:
    groups: int
    routers: int  # per group
    hosts: int  # per router
    global_links: int  # per router

    @property
    def host_count(self) -> int:
        return self.groups * self.routers * self.hosts

    @property
    def router_count(self) -> int:
        return self.groups * self.routers

    @property
    def links_per_pair(self) -> int:
        return self.routers * self.global_links // (self.groups - 1)


def global_links(shape: DragonflyShape) -> np.ndarray:
    """(source router, destination router) of every global link, in CODES' order
    (module docstring); one row per direction."""
    a, h, g = shape.routers, shape.global_links, shape.groups
    rows = []
    for group in range(g):
        others = [(group + k) % g for k in range(1, g)]
        for port in range(a * h):
            local = port // h
            rows.append((group * a + local, others[port % (g - 1)] * a + a - 1 - local))
    return np.asarray(rows, dtype=np.int64).reshape(-1, 2)


def shape_of(name: str, settings: Mapping[str, Any]) -> DragonflyShape:
    """The shape, refused in one line naming the topology and setting: whole numbers, at least
    two groups, a global link per router, and a whole number of links per pair of groups."""
    values = {}
    for key, low in zip(SHAPE, (2, 1, 1, 1), strict=True):
        value = settings.get(key, DEFAULTS[key])
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"topology {name}: {key} must be an integer >= {low}, got {value!r}")
        values[key] = value
    shape = DragonflyShape(**values)
    check_nodes(name, shape.host_count)
    ports = shape.routers * shape.global_links
    if ports % (shape.groups - 1):
        raise ValueError(
            f"topology {name}: routers × global_links ({ports}) global ports per group cannot "
            f"wire {shape.groups} groups evenly (a multiple of groups - 1 = {shape.groups - 1} "
            "is needed)"
        )
    return shape


def check(name: str, settings: Mapping[str, Any]) -> DragonflyShape:
    """Refuse bad settings in one line (what :class:`Family` ``check`` does)."""
    shape = shape_of(name, settings)
    spec = DEFAULTS | dict(settings)
    choices = {
        "arrangement": ARRANGEMENTS,
        "routing": dr.ROUTINGS,
        "server_placement": PLACEMENTS,
    }
    for key, allowed in choices.items():
        if spec[key] not in allowed:
            raise ValueError(
                f"topology {name}: {key} must be one of {list(allowed)}, got {spec[key]!r}"
            )
    share = spec["valiant_share"]
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 <= share <= 1:
        raise ValueError(
            f"topology {name}: valiant_share must be a number in [0, 1], got {share!r}"
        )
    bias = spec["ugal_bias"]
    if isinstance(bias, bool) or not isinstance(bias, int | float) or not 0 <= bias < np.inf:
        raise ValueError(f"topology {name}: ugal_bias must be bytes >= 0, got {bias!r}")
    for key in ("routing_seed", "servers"):
        value = spec[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"topology {name}: {key} must be an integer >= 0, got {value!r}")
    delays = spec["latencies"]
    if not isinstance(delays, Mapping) or set(delays) - set(LATENCY_KEYS):
        raise ValueError(
            f"topology {name}: latencies must map {list(LATENCY_KEYS)} to seconds, got {delays!r}"
        )
    for key, value in delays.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
            raise ValueError(
                f"topology {name}: latencies {key} must be seconds >= 0 (e.g. 1e-7), got {value!r}"
            )
    if spec["servers"] >= shape.host_count:
        raise ValueError(
            f"topology {name}: servers ({spec['servers']}) must leave compute nodes among the "
            f"{shape.host_count} hosts"
        )
    return shape


def server_hosts(shape: DragonflyShape, count: int, placement: str) -> np.ndarray:
    """The hosts that serve I/O (module docstring)."""
    if placement == "isolated":
        return np.arange(shape.host_count - count, shape.host_count, dtype=np.int64)
    per_group = shape.routers * shape.hosts
    out = [(i % shape.groups) * per_group + per_group - 1 - i // shape.groups for i in range(count)]
    return np.asarray(out, dtype=np.int64)


@dataclass(frozen=True)
class DragonflyRouter(Router):
    """Routes between compute nodes and to their I/O servers, under one routing."""

    wiring: dr.Wiring
    host: np.ndarray  # compute node → host
    server: np.ndarray  # server → host (empty: one storage resource)
    storage: np.ndarray  # each server's storage resource (or the one storage)
    routing: str = "minimal"
    valiant_share: float = 0.5
    ugal_bias: float = 0.0
    routing_seed: int = 0
    delays: np.ndarray | None = None  # seconds of propagation per resource

    def link_delays(self) -> np.ndarray | None:
        """Each resource's propagation delay (the ``latencies`` setting; 0 on servers)."""
        return self.delays

    def _hosts_route(self, src: int, dst: int) -> list[int]:
        w = self.wiring
        hops = dr.flow_route(w, src, dst, self.routing, self.valiant_share, self.routing_seed)
        return [int(w.inj[src]), *hops, int(w.ej[dst])]

    def route(self, src: int, dst: int) -> list[int]:
        return self._hosts_route(int(self.host[src]), int(self.host[dst]))

    def io_route(self, node: int, target: int) -> list[int]:
        if not len(self.server):
            return [int(self.wiring.inj[self.host[node]]), int(self.storage[0])]
        path = self._hosts_route(int(self.host[node]), int(self.server[target]))
        return [*path, int(self.storage[target])]

    def hops(self, node: int, target: int) -> int:
        """Router hops (CODES' ``my_N_hop``: every router the packet leaves) of the I/O route."""
        if not len(self.server):
            return 0
        return len(self._hosts_route(int(self.host[node]), int(self.server[target]))) - 1

    def groups(self) -> np.ndarray:
        """The dragonfly group of every compute node (placement's ``random-group``)."""
        w = self.wiring
        return self.host // (w.hosts * w.routers)

    def routers(self) -> np.ndarray:
        """The router of every compute node (placement's ``random-router``)."""
        return self.host // self.wiring.hosts

    def vcs(self, route: list[int]) -> list[int]:
        return self.wiring.vcs(route)

    @cached_property
    def tables(self) -> dr.Tables:
        return dr.Tables.of(self.wiring)

    @cached_property
    def _host_at(self) -> tuple[np.ndarray, np.ndarray]:
        """Resource id → the host whose NIC link (first) or ejection link (second) it is."""
        w = self.wiring
        size = int(max(w.inj.max(), w.ej.max(), self.storage.max())) + 1
        nic, eject = np.full(size, -1, np.int64), np.full(size, -1, np.int64)
        nic[w.inj] = np.arange(len(w.inj))
        eject[w.ej] = np.arange(len(w.ej))
        return nic, eject

    def route_arrays(self, src: np.ndarray, dst: np.ndarray, seed: int = 0) -> Paths:
        """The routes of many compute-node pairs at once (the flow model's rule, as
        :meth:`route`, with the gateways and intermediate groups drawn from ``seed``)."""
        rng = np.random.default_rng([self.routing_seed, seed])
        indptr, indices = dr.route_arrays(
            self.wiring,
            self.tables,
            self.host[np.asarray(src, np.int64)],
            self.host[np.asarray(dst, np.int64)],
            self.routing,
            self.valiant_share,
            rng,
        )
        return Paths(indptr, indices)

    def adaptive(self, paths: Paths) -> Adaptive:
        """The packet model's per-packet routing of ``paths`` (one row per request):
        :class:`burstlake.replay.packet.Adaptive`, drawn with ``routing_seed``. A row that does
        not run from a NIC to an ejection link (and perhaps a server) is kept as it is."""
        w, n = self.wiring, paths.flows
        rng = np.random.default_rng(self.routing_seed)
        nic, eject = self._host_at
        lengths, idx = paths.lengths, paths.indices
        ends = paths.indptr[1:]

        def at(rows: np.ndarray) -> np.ndarray:
            inside = (rows >= 0) & (rows < len(idx))
            out = np.full(len(rows), -1, np.int64)
            got = idx[rows[inside]]
            out[inside] = np.where(got < len(nic), got, -1)
            return out

        first, last, before = at(paths.indptr[:-1]), at(ends - 1), at(ends - 2)
        first = np.where(lengths >= 2, first, -1)
        src = np.where(first >= 0, nic[np.maximum(first, 0)], -1)
        to_last = np.where(last >= 0, eject[np.maximum(last, 0)], -1)
        to_before = np.where((before >= 0) & (lengths >= 3), eject[np.maximum(before, 0)], -1)
        dst = np.where(to_last >= 0, to_last, to_before)
        tail = np.where(to_last >= 0, -1, idx[np.maximum(ends - 1, 0)] if len(idx) else -1)
        sel = np.flatnonzero((src >= 0) & (dst >= 0))
        indptr, indices, at1, at2 = dr.adaptive_arrays(
            w, self.tables, src[sel], dst[sel], tail[sel], self.routing, rng
        )
        m = len(sel)
        fresh = Paths(indptr, indices)
        if m == n:  # every row re-routed (synthetic traffic): the fresh rows, as they come
            return self._adaptive_rows(fresh, n, sel, at1, at2)
        both = Paths(
            np.concatenate([paths.indptr, indptr[1:] + paths.indptr[-1]]),
            np.concatenate([idx, indices]),
        )
        primary = np.arange(n, dtype=np.int64)
        primary[sel] = n + np.arange(m)
        rows = both.take(np.concatenate([primary, n + np.arange(m, fresh.flows)]))
        return self._adaptive_rows(rows, n, sel, at1, at2)

    def _adaptive_rows(self, rows: Paths, n: int, sel, at1, at2) -> Adaptive:
        """:meth:`adaptive`'s result from its rows: ``n`` primary rows (those of ``sel``
        re-routed), then the detour rows of the ``sel`` requests at ``at1``/``at2``."""
        m = len(sel)
        detour = np.full(len(rows.indices), -1, np.int64)
        for hop, table in ((1, at1), (2, at2)):
            has = table >= 0
            mine = rows.indptr[sel[has]] + hop
            theirs = rows.indptr[n + table[has] - m] + hop
            detour[mine] = theirs
        vcs = dr.vcs_of(self.wiring, rows.indptr, rows.indices)
        return Adaptive(rows, vcs, detour, dr.UGAL_FACTOR, float(self.ugal_bias))


def build(
    shape: DragonflyShape,
    capacities: dict[str, float] | None = None,
    name: str = "dragonfly",
    **settings: Any,
) -> Topology:
    """The dragonfly of ``shape`` with the routing and servers of ``settings``."""
    spec = DEFAULTS | settings
    caps = CAPACITIES | (capacities or {})
    pairs = global_links(shape)
    there = {(int(s), int(d)) for s, d in pairs}
    counts: dict[tuple[int, int], int] = {}
    for s, d in pairs.tolist():
        counts[s, d] = counts.get((s, d), 0) + 1
    if any(counts.get((d, s)) != n for (s, d), n in counts.items()) or not there:
        raise ValueError(
            f"topology {name}: the {spec['arrangement']} arrangement cannot wire "
            f"{shape.groups} groups of {shape.routers} routers with {shape.global_links} global "
            "links each (a link without its way back)"
        )
    r = ResourceSet()
    hosts, routers, a = shape.host_count, shape.router_count, shape.routers
    inj = np.array(
        [r.add(f"nic:{h}", "node_link", caps["terminal"]) for h in range(hosts)], np.int64
    )
    ej = np.array(
        [
            r.add(f"eject:{h}", "node_link", caps["terminal"], switch_port=True)
            for h in range(hosts)
        ],
        np.int64,
    )
    local = np.full((routers, a), -1, np.int64)
    for src in range(routers):
        base = src // a * a
        for j in range(a):
            if base + j != src:
                local[src, j] = r.add(
                    f"local:{src}-{base + j}", "switch_link", caps["local"], switch_port=True
                )
    res = np.array(
        [
            r.add(f"global:{s}-{d}#{i}", "global_link", caps["global"], switch_port=True)
            for i, (s, d) in enumerate(pairs.tolist())
        ],
        np.int64,
    )
    servers = server_hosts(shape, int(spec["servers"]), str(spec["server_placement"]))
    if len(servers):
        storage = np.array(
            [r.add(f"server:{int(h)}", "storage", caps["server"]) for h in servers], np.int64
        )
        ions = tuple(f"srv{int(h):05d}" for h in servers)
    else:
        storage = np.array([r.add("storage", "storage", caps["server"])], np.int64)
        ions = ("storage",)
    compute = np.setdiff1d(np.arange(hosts, dtype=np.int64), servers)
    wiring = dr.Wiring(
        shape.groups, a, shape.hosts, inj, ej, local, pairs[:, 0].copy(), pairs[:, 1].copy(), res
    )
    given = {k: float(v) for k, v in dict(spec["latencies"]).items()}
    delays = np.zeros(len(r.names))
    delays[np.r_[inj, ej]] = given.get("terminal", 0.0)
    delays[local[local >= 0]] = given.get("local", 0.0)
    delays[res] = given.get("global", 0.0)
    router = DragonflyRouter(
        wiring,
        compute,
        servers,
        storage,
        str(spec["routing"]),
        float(spec["valiant_share"]),
        float(spec["ugal_bias"]),
        int(spec["routing_seed"]),
        delays,
    )
    ion_of = np.arange(len(compute), dtype=np.int64) * len(ions) // max(len(compute), 1)
    return Topology(
        name,
        r,
        tuple(f"cn{int(h):05d}" for h in compute),
        ions,
        ion_of,
        router,
        {
            **caps,
            **{k: getattr(shape, k) for k in SHAPE},
            **{k: spec[k] for k in DEFAULTS if k not in SHAPE},
        },
    )


def with_servers(topology: Topology, placement: str) -> Topology:
    """The same dragonfly (shape, capacities, latency, routing, model) with its I/O servers
    placed ``isolated`` or ``spread`` (module docstring); the compute nodes keep their
    indices, on the hosts the servers left."""
    given = topology.settings
    if not given.get("servers"):
        raise ValueError(f"{topology.name}: no I/O servers to place (set servers: N)")
    shape = DragonflyShape(*(int(given[k]) for k in SHAPE))
    rest = {k: given[k] for k in DEFAULTS if k not in SHAPE} | {"server_placement": placement}
    caps = {k: given[k] for k in CAPACITY_KEYS}
    moved = build(shape, caps, topology.name, **rest)
    settings = {**moved.settings, "link_latency": given.get("link_latency", LINK_LATENCY)}
    return replace(
        moved,
        settings=settings,
        contention=topology.contention,
        link_kinds=topology.link_kinds,
        _cache={},
    )


def _build(
    name: str, settings: dict[str, Any], capacities: dict[str, float] | None, _lake: Any
) -> Topology:
    shape = check(name, settings)
    rest = {k: v for k, v in settings.items() if k not in SHAPE}
    return build(shape, capacities, name, **rest)


FAMILY = register(
    "dragonfly",
    Family(
        settings=frozenset(DEFAULTS),
        capacities=CAPACITY_KEYS,
        check=check,
        build=_build,
        link_kinds=LINK_KINDS,
        link_latency=LINK_LATENCY,
    ),
)


def chunk_time(bytes_per_s: float) -> float:
    """CODES' default propagation delay of a link: one 4,096-byte chunk at its bandwidth
    (``dragonfly-dally.cxx``: ``cn_delay``, ``local_delay``, ``global_delay`` default to
    ``bytes_to_ns(chunk_size, bandwidth)``), which its dfdally configs leave unset."""
    return 4096 / bytes_per_s


preset(
    "dfdally_72",
    "dragonfly",
    groups=9,
    routers=4,
    hosts=2,
    global_links=2,
    latencies=dict.fromkeys(LATENCY_KEYS, chunk_time(2 * GIB)),
)
preset(
    "dfdally_3k",
    "dragonfly",
    groups=19,
    routers=18,
    hosts=9,
    global_links=9,
    link_latency=90e-9,
    capacities={"terminal": 6.25 * GIB, "local": 12.5 * GIB, "global": 25 * GIB},
    latencies={
        "terminal": chunk_time(6.25 * GIB),
        "local": chunk_time(12.5 * GIB),
        "global": chunk_time(25 * GIB),
    },
)
preset(
    "slingshot",
    "dragonfly",
    groups=18,
    routers=32,
    hosts=16,
    global_links=17,
    capacities={"terminal": 25e9, "local": 25e9, "global": 25e9, "server": 25e9},
)
