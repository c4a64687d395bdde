"""5-D torus with bridge nodes (IBM BG/Q, paper 003): compute nodes reach their I/O
node through a *bridge node*, a compute node with an extra link to the ION.

Preset ``mira512``: one 4×4×4×4×2 midplane, 512 nodes in A,B,C,D,E order (E fastest), 8
bridge nodes each serving a block of 64 nodes by default, 2 bridge nodes per ION (paper 003:
"2 bridge nodes for every 128 compute nodes"). Routing is dimension-ordered (A first), each
dimension the short way round (ties go +). Resources: every torus link in each direction, each
bridge node's I/O link, each ION, the storage as one aggregate. The bridge nodes are the
forwarding targets a bridge-reassignment policy remaps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from burstlake.replay.graph import ResourceSet, Topology

DIMS = (4, 4, 4, 4, 2)
LINK = 2.0e9  # BG/Q torus link, bytes/s per direction
BRIDGE_LINK = 2.0e9  # the bridge node's 11th link to its ION
ION = 4.0e9  # one BG/Q I/O node's throughput to the file system
STORAGE = 240.0e9  # GPFS aggregate (Mira: ~240 GB/s)
NODES_PER_BRIDGE = 64
BRIDGES_PER_ION = 2

CAPACITY_KEYS = ("link", "bridge_link", "ion", "storage")  # the capacities a scenario may set


@dataclass(frozen=True)
class TorusRouter:
    dims: tuple[int, ...]
    links: np.ndarray  # (nodes, dims, 2) resource id of the + / - link leaving each node
    bridge_node: np.ndarray  # node index of each bridge node
    bridge_link: np.ndarray
    ion: np.ndarray  # ION resource of each bridge node
    storage: int

    def coords(self, node: int) -> list[int]:
        return [int(c) for c in np.unravel_index(node, self.dims)]

    def route(self, src: int, dst: int) -> list[int]:
        here, there = self.coords(src), self.coords(dst)
        route = []
        for dim, size in enumerate(self.dims):
            ahead = (there[dim] - here[dim]) % size
            step, direction = (1, 0) if ahead <= size - ahead else (-1, 1)
            for _ in range(min(ahead, size - ahead)):
                route.append(int(self.links[np.ravel_multi_index(here, self.dims), dim, direction]))
                here[dim] = (here[dim] + step) % size
        return route

    def io_route(self, node: int, target: int) -> list[int]:
        tail = [int(self.bridge_link[target]), int(self.ion[target]), self.storage]
        return [*self.route(node, int(self.bridge_node[target])), *tail]

    def hops(self, node: int, target: int) -> int:
        return len(self.route(node, int(self.bridge_node[target])))


def build(
    dims: tuple[int, ...] = DIMS,
    capacities: dict[str, float] | None = None,
    name: str = "mira512",
) -> Topology:
    """The torus; bridge node b is the first node of block b, serving that block by default."""
    caps = {"link": LINK, "bridge_link": BRIDGE_LINK, "ion": ION, "storage": STORAGE}
    caps.update(capacities or {})
    nodes = int(np.prod(dims))
    if nodes % NODES_PER_BRIDGE:
        raise ValueError(f"torus of {nodes} nodes is not a whole number of 64-node blocks")
    r = ResourceSet()
    links = np.array(
        [
            [
                [r.add(f"t{n}{sign}{d}", "switch_link", caps["link"]) for sign in "+-"]
                for d in range(len(dims))
            ]
            for n in range(nodes)
        ]
    )
    bridges = nodes // NODES_PER_BRIDGE
    bridge_node = np.arange(bridges) * NODES_PER_BRIDGE
    bridge_link = np.array(
        [r.add(f"bridge:{b}", "node_link", caps["bridge_link"]) for b in range(bridges)]
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
        np.arange(nodes) // NODES_PER_BRIDGE,
        router,
        {**caps, "dims": list(dims)},
    )
