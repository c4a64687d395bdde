"""5-D torus with bridge nodes (IBM BG/Q, paper 003): compute nodes reach their I/O
node through a *bridge node*, a compute node with an extra link to the ION.

The family ``torus`` takes ``dims`` and ``nodes_per_bridge``; its preset ``mira512``: one
4×4×4×4×2 midplane, 512 nodes in A,B,C,D,E order (E fastest), one bridge node per
``nodes_per_bridge`` (64) compute nodes, 2 bridge nodes per ION (paper 003: "2 bridge nodes for
every 128 compute nodes"). At boot each bridge node gets an equal block of
nodes in rank order (bridge b serves nodes 64b..64b+63); the bridge nodes themselves sit spread
over the torus, evenly in E, D, C, B, A order (on the preset: A = B = C = 0, along D and E), so,
as on Mira (003: "a compute node is not always assigned its closest bridge node"), many nodes
have a closer bridge node than their default one and I/O routes pass through other bridge
nodes. Routing is dimension-ordered (A first), each dimension the short way round (ties go +).
Resources: every torus link in each direction, each bridge node's I/O link, each ION, the
storage as one aggregate; the torus and I/O links are switch ports (a node's on-chip router
sends on them: the packet model's ``router_delay``), the ION and the storage are not. The
bridge nodes are the forwarding targets a bridge-reassignment policy
(:mod:`burstlake.replay.policies.bridges`) remaps.

Virtual channels (:meth:`TorusRouter.vcs`, for a lossless packet model): dimension-ordered
routes on the rings of a torus can deadlock (a ring's channels wait on each other in a cycle),
so each link carries two virtual channels under the *dateline* rule of Dally & Seitz
("Deadlock-free message routing in multiprocessor interconnection networks", IEEE Trans.
Computers 36(5), 1987): a packet starts each dimension on VC 0 and moves to VC 1 after it has
crossed that dimension's wrap-around link (the link between coordinates size-1 and 0), which
breaks every ring's cycle. (CODES' torus model, src/networks/model-net/torus.c, keeps one VC per
link, ``num_vc = 1``, and has no dateline.)

The capacities are BG/Q's (checked in session 5): a torus link carries 2 GB/s raw in each
direction (IBM Redbook SG24-7872, "Blue Gene/Q Hardware Overview", §2.1; Chen et al., "The IBM
Blue Gene/Q interconnection fabric", IEEE Micro 32(1), 2012), the bridge node's eleventh link
to its ION is a link of the same speed (4 GB/s both directions: Prabhat & Koziol, "High
Performance Parallel I/O", CRC 2014, ch. 4 on Mira), an ION drives one PCIe QDR InfiniBand
card to the file system (32 Gb/s = 4 GB/s), and Mira's GPFS delivers about 240 GB/s (ALCF
machine overview: 4 IONs per midplane, 128 compute nodes per ION).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from burstlake.replay.graph import ResourceSet, Router, Topology, check_nodes
from burstlake.replay.topologies import Family, preset, register

DIMS = (4, 4, 4, 4, 2)
LINK = 2.0e9  # BG/Q torus link, bytes/s per direction
BRIDGE_LINK = 2.0e9  # the bridge node's 11th link to its ION
ION = 4.0e9  # one BG/Q I/O node's throughput to the file system
STORAGE = 240.0e9  # GPFS aggregate (Mira: ~240 GB/s)
NODES_PER_BRIDGE = 64  # the bridge-node ratio: compute nodes per bridge node (a setting)
BRIDGES_PER_ION = 2

CAPACITY_KEYS = ("link", "bridge_link", "ion", "storage")  # the capacities a scenario may set
LINK_KINDS = ("node_link", "switch_link")  # torus and bridge links: each pays link_latency


@dataclass(frozen=True)
class TorusRouter(Router):
    dims: tuple[int, ...]
    links: np.ndarray  # (nodes, dims, 2) resource id of the + / - link leaving each node
    bridge_node: np.ndarray  # node index of each bridge node
    bridge_link: np.ndarray
    ion: np.ndarray  # ION resource of each bridge node
    storage: int

    def coords(self, node: int) -> list[int]:
        return [int(c) for c in np.unravel_index(node, self.dims)]

    def _steps(self, src: int, dst: int) -> list[tuple[int, int, int]]:
        """(node, dimension, direction) of each hop of the dimension-ordered route."""
        here, there = self.coords(src), self.coords(dst)
        steps = []
        for dim, size in enumerate(self.dims):
            ahead = (there[dim] - here[dim]) % size
            step, direction = (1, 0) if ahead <= size - ahead else (-1, 1)
            for _ in range(min(ahead, size - ahead)):
                steps.append((int(np.ravel_multi_index(here, self.dims)), dim, direction))
                here[dim] = (here[dim] + step) % size
        return steps

    def route(self, src: int, dst: int) -> list[int]:
        return [int(self.links[node, dim, way]) for node, dim, way in self._steps(src, dst)]

    def passes(self, node: int, target: int) -> list[int]:
        """The nodes whose routers forward the I/O of ``node`` to bridge node ``target``:
        every node of the route but its two ends (003: bridge nodes also route traffic to
        other bridge nodes)."""
        return [here for here, _, _ in self._steps(node, int(self.bridge_node[target]))[1:]]

    def io_route(self, node: int, target: int) -> list[int]:
        tail = [int(self.bridge_link[target]), int(self.ion[target]), self.storage]
        return [*self.route(node, int(self.bridge_node[target])), *tail]

    def hops(self, node: int, target: int) -> int:
        return len(self.route(node, int(self.bridge_node[target])))

    def distance(self, node: int, target: int) -> int:
        """Hops from ``node`` to bridge node ``target`` (the torus distance, as :meth:`hops`)."""
        here, there = np.unravel_index(node, self.dims), self.coords(int(self.bridge_node[target]))
        ahead = [(t - int(h)) % size for h, t, size in zip(here, there, self.dims, strict=True)]
        return sum(min(a, size - a) for a, size in zip(ahead, self.dims, strict=True))

    @cached_property
    def _link_dims(self) -> dict[int, tuple[int, bool]]:
        """Each torus link's resource id → (its dimension, whether it is the wrap-around)."""
        out = {}
        for node in range(self.links.shape[0]):
            here = self.coords(node)
            for dim, size in enumerate(self.dims):
                plus, minus = (int(r) for r in self.links[node, dim])
                out[plus] = (dim, here[dim] == size - 1)
                out[minus] = (dim, here[dim] == 0)
        return out

    def vcs(self, route: list[int]) -> list[int]:
        """The virtual channel of each hop of ``route`` (the dateline rule, module docstring):
        VC 0 from the first hop in a dimension up to and including its wrap-around link, VC 1
        after it; 0 on resources that are not torus links (bridge link, ION, storage)."""
        links, out = self._link_dims, []
        dim, vc = -1, 0
        for resource in route:
            if resource not in links:
                out.append(0)
                continue
            here, wrap = links[resource]
            if here != dim:
                dim, vc = here, 0
            out.append(vc)
            if wrap:
                vc = 1
        return out

    def target_nodes(self) -> np.ndarray:
        """The node of each bridge node."""
        return self.bridge_node

    def through(self, target: int) -> list[int]:
        """The resources of bridge node ``target`` that carry the I/O it routes: its own I/O
        link and the torus links leaving it (traffic it forwards for other nodes, 003)."""
        links = self.links[int(self.bridge_node[target])].ravel().tolist()
        return [int(self.bridge_link[target]), *map(int, links)]


def shape(name: str, settings: Mapping[str, Any]) -> tuple[tuple[int, ...], int]:
    """A scenario's ``dims`` and ``nodes_per_bridge`` (defaults: the mira512 midplane), checked
    with one-line errors naming topology ``name``: dims a list of 1 to 6 integers ≥ 2,
    nodes_per_bridge dividing the node count."""
    dims = settings.get("dims", DIMS)
    if (
        not isinstance(dims, list | tuple)
        or not 1 <= len(dims) <= 6
        or any(isinstance(d, bool) or not isinstance(d, int) or d < 2 for d in dims)
    ):
        raise ValueError(
            f"topology {name}: dims must be a list of 1 to 6 integers ≥ 2, got {dims!r}"
        )
    ratio = settings.get("nodes_per_bridge", NODES_PER_BRIDGE)
    nodes = 1
    for size in dims:  # exact (np.prod wraps past 2^63)
        nodes *= size
    check_nodes(name, nodes)
    if isinstance(ratio, bool) or not isinstance(ratio, int) or ratio < 1 or nodes % ratio:
        raise ValueError(
            f"topology {name}: nodes_per_bridge must be a positive integer dividing the "
            f"{nodes} nodes, got {ratio!r}"
        )
    return tuple(dims), ratio


def bridge_nodes(dims: tuple[int, ...], bridges: int) -> np.ndarray:
    """Node index of each bridge node: spread evenly over the torus in reversed dimension
    order (the last dimension slowest), so blocks of rank order are not centred on them."""
    nodes = int(np.prod(dims))
    spread = np.arange(bridges) * nodes // bridges
    return np.ravel_multi_index(np.unravel_index(spread, dims[::-1])[::-1], dims)


def build(
    dims: tuple[int, ...] = DIMS,
    capacities: dict[str, float] | None = None,
    name: str = "mira512",
    nodes_per_bridge: int = NODES_PER_BRIDGE,
) -> Topology:
    """The torus; bridge node b serves the b-th block of ``nodes_per_bridge`` nodes at boot."""
    caps = {"link": LINK, "bridge_link": BRIDGE_LINK, "ion": ION, "storage": STORAGE}
    caps.update(capacities or {})
    if not dims or any(int(d) < 1 for d in dims):
        raise ValueError(f"torus dims must be positive integers, got {list(dims)}")
    nodes = int(np.prod(dims))
    if nodes_per_bridge < 1 or nodes % nodes_per_bridge:
        raise ValueError(
            f"torus of {nodes} nodes is not a whole number of {nodes_per_bridge}-node blocks"
            " (nodes_per_bridge must divide the node count)"
        )
    r = ResourceSet()
    links = np.array(
        [
            [
                [
                    r.add(f"t{n}{sign}{d}", "switch_link", caps["link"], switch_port=True)
                    for sign in "+-"
                ]
                for d in range(len(dims))
            ]
            for n in range(nodes)
        ]
    )
    bridges = nodes // nodes_per_bridge
    bridge_node = bridge_nodes(tuple(dims), bridges)
    bridge_link = np.array(
        [
            r.add(f"bridge:{b}", "node_link", caps["bridge_link"], switch_port=True)
            for b in range(bridges)
        ]
    )
    ion_res = [r.add(f"ion:{j}", "ion", caps["ion"]) for j in range(-(-bridges // BRIDGES_PER_ION))]
    ion = np.array([ion_res[b // BRIDGES_PER_ION] for b in range(bridges)])
    storage = r.add("storage", "storage", caps["storage"])
    router = TorusRouter(tuple(dims), links, bridge_node, bridge_link, ion, storage)
    return Topology(
        name,
        r,
        tuple(f"cn{n:05d}" for n in range(nodes)),
        tuple(f"bridge{b:02d}" for b in range(bridges)),
        np.arange(nodes) // nodes_per_bridge,
        router,
        {**caps, "dims": list(dims), "nodes_per_bridge": nodes_per_bridge},
    )


def _build(
    name: str, settings: dict[str, Any], capacities: dict[str, float] | None, _lake: Any
) -> Topology:
    dims, nodes_per_bridge = shape(name, settings)
    return build(dims, capacities, name, nodes_per_bridge)


register(
    "torus",
    Family(
        settings=frozenset({"dims", "nodes_per_bridge"}),
        capacities=CAPACITY_KEYS,
        check=shape,
        build=_build,
        link_kinds=LINK_KINDS,
    ),
)
preset("mira512", "torus", dims=list(DIMS), nodes_per_bridge=NODES_PER_BRIDGE)
