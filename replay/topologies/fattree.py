"""Three-level fat-tree of fixed-radix switches with deterministic D-mod-k routing (paper 000
§2.3, §3.1).

Each leaf switch has ``hosts_per_leaf`` host ports (default ``radix/2``) and
``hosts_per_leaf · taper`` uplinks; ``radix/2`` leaves form a pod whose aggregation switch
``u`` takes uplink ``u`` of every leaf; core switch
``(u, c)`` links aggregation switch ``u`` of every pod. Every link is two resources, one per
direction. D-mod-k: towards destination host ``d`` a leaf goes up through uplink
``d mod U`` and an aggregation switch through uplink ``(d div U) mod C``.
The family ``fattree`` takes ``radix``, ``leaves``, ``taper``, ``hosts_per_leaf``,
``server_leaves`` and ``service_nodes``. Presets: ``cab1296`` (paper 000 §3.1): radix 36, 72
leaves, 1,296 hosts, 12.5 GB/s links, 72 I/O servers on four leaves, one per pod (the
"isolated" placement, two leaves in each half); ``quartz186`` (paper 002 §2.2, the partition
of Quartz): 48-port leaves with 32 host ports (31 compute nodes and 1 service node) and 16
uplinks (2:1 taper), 6 leaves in one pod, so they share the same 16 second-level switches,
100 Gb/s (12.5 GB/s) links; the service nodes are the servers (``service_nodes: 6``, one per
leaf on its last port), 186 compute nodes.
The I/O servers are the forwarding targets: each compute node sends its I/O to one server.
Where the servers sit is a setting (000 §5.2): ``isolated`` (the default above),
``spread`` (one per leaf, on the same port, round robin over the leaves) or any host list
(``random_servers``). Every route pays ``link_latency`` per link it crosses. Every
resource but a host's link up to its leaf (its NIC sends) and a server's storage is a switch
port (the packet model's ``router_delay``).
Virtual channels: none needed (every hop on VC 0): up/down routing never climbs after it has
gone down, so its channel dependencies have no cycle.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from burstlake.replay.graph import ResourceSet, Router, Topology, check_nodes
from burstlake.replay.topologies import Family, preset, register

LINK = 12.5e9  # bytes/s per link and direction (paper 000 §3.1)
SERVER = 12.5e9  # one I/O server's service rate (bytes/s)
# Seconds per link crossed (router + wire): the 90 ns router_delay of the CODES fat-tree model
# (the simulator of paper 000 §2.5) in codes-org/codes
# src/network-workloads/conf/modelnet-mpi-test-fattree.conf (radix-8 tree of 12.5 GB/s links).
LINK_LATENCY = 90e-9
ISOLATED_LEAVES = 4  # 000 §3.1: the I/O servers fill four leaves, one per pod (two per half)

CAPACITY_KEYS = ("link", "server")  # the capacities a scenario may set
LINK_KINDS = ("node_link", "switch_link")  # the resources that pay link_latency when crossed


@dataclass(frozen=True)
class FatTreeShape:
    radix: int = 36
    leaves: int = 72
    taper: float = 1.0  # uplinks per leaf / host ports per leaf
    hosts_per_leaf: int = 0  # host ports per leaf; 0: radix/2

    @property
    def down(self) -> int:
        """Host ports per leaf."""
        return self.hosts_per_leaf or self.radix // 2

    @property
    def up(self) -> int:
        """Uplinks per leaf (one per aggregation switch of its pod)."""
        return max(1, round(self.down * self.taper))

    @property
    def pod_leaves(self) -> int:
        """Leaves per pod: the down ports of an aggregation switch."""
        return self.radix // 2

    @property
    def pods(self) -> int:
        return math.ceil(self.leaves / self.pod_leaves)

    @property
    def hosts(self) -> int:
        return self.leaves * self.down


class FatTreeRouter(Router):
    """D-mod-k routes between hosts; I/O routes end at the server's service resource."""

    striped = True  # the I/O servers are storage servers, striped over (000 §3.1)

    def __init__(
        self, shape: FatTreeShape, resources: ResourceSet, hosts: np.ndarray, servers: np.ndarray
    ) -> None:
        self.shape, self.r = shape, resources
        self.host_of_node, self.server_host = hosts, servers

    def _host_route(self, src: int, dst: int) -> list[int]:
        s = self.shape
        leaf_s, leaf_d = src // s.down, dst // s.down
        route = [self.r[f"up:h{src}"]]
        if leaf_s != leaf_d:
            u = dst % s.up
            pod_s, pod_d = leaf_s // s.pod_leaves, leaf_d // s.pod_leaves
            route.append(self.r[f"l{leaf_s}>a{pod_s}.{u}"])
            if pod_s != pod_d:
                c = (dst // s.up) % s.up
                route += [self.r[f"a{pod_s}.{u}>c{u}.{c}"], self.r[f"c{u}.{c}>a{pod_d}.{u}"]]
            route.append(self.r[f"a{pod_d}.{u}>l{leaf_d}"])
        route.append(self.r[f"down:h{dst}"])
        return route

    def io_route(self, node: int, target: int) -> list[int]:
        server = int(self.server_host[target])
        return [*self._host_route(int(self.host_of_node[node]), server), self.r[f"ios:h{server}"]]

    def route(self, src: int, dst: int) -> list[int]:
        return self._host_route(int(self.host_of_node[src]), int(self.host_of_node[dst]))

    def hops(self, node: int, target: int) -> int:
        return len(self.io_route(node, target)) - 1

    def groups(self) -> np.ndarray:
        """The leaf switch of every compute node (the groups of job placement)."""
        return self.host_of_node // self.shape.down


def isolated_servers(shape: FatTreeShape, leaves: list[int] | None = None) -> np.ndarray:
    """Hosts of whole leaves given to I/O servers: by default the first leaf of each of the
    first four pods (000 §3.1, "isolated-target")."""
    if leaves is None:
        leaves = [pod * shape.pod_leaves for pod in range(min(ISOLATED_LEAVES, shape.pods))]
    if any(not 0 <= leaf < shape.leaves for leaf in leaves):
        raise ValueError(f"server leaves must be in 0..{shape.leaves - 1}, got {leaves}")
    hosts = np.arange(shape.hosts)
    return hosts[np.isin(hosts // shape.down, leaves)]


def spread_servers(shape: FatTreeShape, count: int) -> np.ndarray:
    """``count`` servers round robin over all leaves, each on the leaf's last host port
    (000 §5.2 "spread-target": port 18 of every leaf; D-mod-k then sends all their traffic
    through one aggregation switch per pod). More servers than leaves take the next-to-last
    port, and so on."""
    j = np.arange(count)
    return np.sort((j % shape.leaves) * shape.down + shape.down - 1 - j // shape.leaves)


def random_servers(shape: FatTreeShape, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` servers on hosts drawn at random (000 §5.2 "random-target")."""
    return np.sort(rng.choice(shape.hosts, count, replace=False))


def shape_of(topology: Topology) -> FatTreeShape:
    """The shape a fat-tree topology was built with (its settings)."""
    if not isinstance(topology.router, FatTreeRouter):
        raise ValueError(
            f"I/O server placement moves servers on a fat-tree (cab1296); "
            f"topology {topology.name} is not one"
        )
    return topology.router.shape


def with_servers(topology: Topology, servers: np.ndarray) -> Topology:
    """The same fat-tree (shape, capacities, latency) with its I/O servers on ``servers``."""
    shape = shape_of(topology)
    if len(servers) != len(topology.ions):
        raise ValueError(f"{topology.name}: {len(topology.ions)} servers, got {len(servers)}")
    caps = {k: topology.settings[k] for k in CAPACITY_KEYS}
    return build(shape, caps, servers, topology.name, topology.settings["link_latency"])


def build(
    shape: FatTreeShape | None = None,
    capacities: dict[str, float] | None = None,
    servers: np.ndarray | None = None,
    name: str = "cab1296",
    link_latency: float = LINK_LATENCY,
) -> Topology:
    """The fat-tree; hosts in ``servers`` (default :func:`isolated_servers`) are I/O servers,
    the rest compute nodes.

    Compute nodes map to servers in blocks by default (node i → server ⌊i / (m/n)⌋).
    """
    shape = shape or FatTreeShape()
    caps = {"link": LINK, "server": SERVER, **(capacities or {})}
    if not 0 <= link_latency < float("inf"):
        raise ValueError(f"link_latency must be >= 0 seconds, got {link_latency}")
    servers = isolated_servers(shape) if servers is None else np.asarray(servers, dtype=np.int64)
    resources = _links(shape, caps["link"])
    hosts = np.arange(shape.hosts)
    is_server = np.isin(hosts, servers)
    servers, compute = hosts[is_server], hosts[~is_server]
    for h in servers:
        resources.add(f"ios:h{h}", "storage", caps["server"])
    ion_of = np.arange(len(compute)) * len(servers) // len(compute)
    router = FatTreeRouter(shape, resources, compute, servers)
    return Topology(
        name,
        resources,
        tuple(f"cn{h:05d}" for h in compute),
        tuple(f"ios{j:03d}" for j in range(len(servers))),
        ion_of,
        router,
        {
            **caps,
            "radix": shape.radix,
            "leaves": shape.leaves,
            "taper": shape.taper,
            "hosts_per_leaf": shape.down,
            "link_latency": float(link_latency),
        },
    )


def _links(shape: FatTreeShape, link: float) -> ResourceSet:
    """Both directions of every host, leaf-aggregation and aggregation-core link: all switch
    ports (:class:`ResourceSet`) but a host's NIC link up to its leaf."""
    r = ResourceSet()
    for h in range(shape.hosts):
        r.add(f"up:h{h}", "node_link", link)
        r.add(f"down:h{h}", "node_link", link, switch_port=True)
    for leaf in range(shape.leaves):
        pod = leaf // shape.pod_leaves
        for u in range(shape.up):
            r.add(f"l{leaf}>a{pod}.{u}", "switch_link", link, switch_port=True)
            r.add(f"a{pod}.{u}>l{leaf}", "switch_link", link, switch_port=True)
    if shape.pods > 1:
        for pod in range(shape.pods):
            for u in range(shape.up):
                for c in range(shape.up):
                    r.add(f"a{pod}.{u}>c{u}.{c}", "switch_link", link, switch_port=True)
                    r.add(f"c{u}.{c}>a{pod}.{u}", "switch_link", link, switch_port=True)
    return r


def shape_from(name: str, settings: Mapping[str, Any]) -> FatTreeShape:
    """A scenario's ``radix``, ``leaves``, ``taper`` and ``hosts_per_leaf`` (defaults:
    cab1296's), checked with one-line errors: radix an even integer ≥ 2, leaves an integer ≥ 1,
    taper a number > 0, hosts_per_leaf an integer ≥ 1 whose ports and uplinks fit the radix."""
    radix, leaves = settings.get("radix", 36), settings.get("leaves", 72)
    taper = settings.get("taper", 1.0)
    if isinstance(radix, bool) or not isinstance(radix, int) or radix < 2 or radix % 2:
        raise ValueError(f"topology {name}: radix must be an even integer ≥ 2, got {radix!r}")
    if isinstance(leaves, bool) or not isinstance(leaves, int) or leaves < 1:
        raise ValueError(f"topology {name}: leaves must be an integer ≥ 1, got {leaves!r}")
    if isinstance(taper, bool) or not isinstance(taper, int | float) or not 0 < taper < math.inf:
        raise ValueError(f"topology {name}: taper must be a number > 0, got {taper!r}")
    hosts = settings.get("hosts_per_leaf", radix // 2)
    if isinstance(hosts, bool) or not isinstance(hosts, int) or hosts < 1:
        raise ValueError(f"topology {name}: hosts_per_leaf must be an integer ≥ 1, got {hosts!r}")
    shape = FatTreeShape(radix, leaves, float(taper), hosts)
    check_nodes(name, leaves * hosts)
    if shape.down + shape.up > radix:
        raise ValueError(
            f"topology {name}: {shape.down} host ports and {shape.up} uplinks (hosts_per_leaf "
            f"× taper) do not fit a {radix}-port leaf switch"
        )
    return shape


def service_node_count(name: str, settings: Mapping[str, Any], shape: FatTreeShape) -> int | None:
    """A scenario's ``service_nodes``: absent, or an integer from 1 to all but one host of
    the tree, and not with ``server_leaves`` (one-line errors naming topology ``name``)."""
    count = settings.get("service_nodes")
    if count is None:
        return None
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count < shape.hosts:
        raise ValueError(
            f"topology {name}: service_nodes must be an integer in 1..{shape.hosts - 1}, "
            f"got {count!r}"
        )
    if settings.get("server_leaves") is not None:
        raise ValueError(
            f"topology {name}: give server_leaves or service_nodes, not both "
            f"(servers fill whole leaves, or sit one per leaf)"
        )
    return count


def leaf_list(where: str, leaves: Any) -> list[int] | None:
    """A setting naming leaves for the I/O servers: absent, or a non-empty list of leaf
    numbers (one-line error naming ``where``, e.g. ``policy isolated-target: leaves``)."""
    if leaves is not None and (
        not isinstance(leaves, list)
        or not leaves
        or any(isinstance(x, bool) or not isinstance(x, int) for x in leaves)
    ):
        raise ValueError(f"{where} must be a list of leaf numbers, got {leaves!r}")
    return leaves


def _servers(name: str, settings: Mapping[str, Any]) -> tuple[FatTreeShape, np.ndarray]:
    """The shape and the server hosts: ``service_nodes`` spread one per leaf (002 §2.2: a
    service node on every leaf), else whole ``server_leaves`` (000 §3.1)."""
    shape = shape_from(name, settings)
    count = service_node_count(name, settings, shape)
    if count is not None:
        return shape, spread_servers(shape, count)
    leaves = leaf_list(f"topology {name}: server_leaves", settings.get("server_leaves"))
    try:
        return shape, isolated_servers(shape, leaves)
    except ValueError as err:
        raise ValueError(f"topology {name}: {err}") from None


def _check(name: str, settings: Mapping[str, Any]) -> None:
    _servers(name, settings)


def _build(
    name: str, settings: dict[str, Any], capacities: dict[str, float] | None, _lake: Any
) -> Topology:
    shape, servers = _servers(name, settings)
    return build(shape, capacities, servers, name)


FAMILY = Family(
    settings=frozenset(
        {"radix", "leaves", "taper", "hosts_per_leaf", "server_leaves", "service_nodes"}
    ),
    capacities=CAPACITY_KEYS,
    check=_check,
    build=_build,
    link_kinds=LINK_KINDS,
    link_latency=LINK_LATENCY,
)
register("fattree", FAMILY)
preset("cab1296", "fattree", radix=36, leaves=72, taper=1.0)
preset("quartz186", "fattree", radix=48, leaves=6, taper=0.5, hosts_per_leaf=32, service_nodes=6)
