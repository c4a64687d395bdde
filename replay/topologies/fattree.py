"""Three-level fat-tree of fixed-radix switches with deterministic D-mod-k routing (paper 000
§2.3, §3.1).

Each leaf switch has ``radix/2`` host ports and ``radix/2 · taper`` uplinks; ``radix/2`` leaves
form a pod whose aggregation switch ``u`` takes uplink ``u`` of every leaf; core switch
``(u, c)`` links aggregation switch ``u`` of every pod. Every link is two resources, one per
direction. D-mod-k: towards destination host ``d`` a leaf goes up through uplink
``d mod U`` and an aggregation switch through uplink ``(d div U) mod C``.
The preset ``cab1296`` (paper 000 §3.1): radix 36, 72 leaves, 1,296 hosts, 12.5 GB/s links,
72 I/O servers on four leaves, one per pod (the "isolated" placement, two leaves in each half).
The I/O servers are the forwarding targets: each compute node sends its I/O to one server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from burstlake.replay.graph import ResourceSet, Topology

LINK = 12.5e9  # bytes/s per link and direction (paper 000 §3.1)
SERVER = 12.5e9  # one I/O server's service rate (bytes/s)

CAPACITY_KEYS = ("link", "server")  # the capacities a scenario may set


@dataclass(frozen=True)
class FatTreeShape:
    radix: int = 36
    leaves: int = 72
    taper: float = 1.0  # uplinks per leaf / host ports per leaf

    @property
    def down(self) -> int:
        return self.radix // 2

    @property
    def up(self) -> int:
        return max(1, round(self.down * self.taper))

    @property
    def pods(self) -> int:
        return math.ceil(self.leaves / self.down)

    @property
    def hosts(self) -> int:
        return self.leaves * self.down


class FatTreeRouter:
    """D-mod-k routes between hosts; I/O routes end at the server's service resource."""

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
            pod_s, pod_d = leaf_s // s.down, leaf_d // s.down
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


def build(
    shape: FatTreeShape | None = None,
    server_leaves: list[int] | None = None,
    capacities: dict[str, float] | None = None,
    name: str = "cab1296",
) -> Topology:
    """The fat-tree; hosts on ``server_leaves`` are I/O servers, the rest compute nodes.

    Compute nodes map to servers in blocks by default (node i → server ⌊i / (m/n)⌋).
    """
    shape = shape or FatTreeShape()
    caps = {"link": LINK, "server": SERVER, **(capacities or {})}
    if server_leaves is None:
        server_leaves = [pod * shape.down for pod in range(min(4, shape.pods))]
    if any(not 0 <= leaf < shape.leaves for leaf in server_leaves):
        raise ValueError(f"server leaves must be in 0..{shape.leaves - 1}, got {server_leaves}")
    resources = _links(shape, caps["link"])
    hosts = np.arange(shape.hosts)
    is_server = np.isin(hosts // shape.down, server_leaves)
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
        {**caps, "radix": shape.radix, "leaves": shape.leaves, "taper": shape.taper},
    )


def _links(shape: FatTreeShape, link: float) -> ResourceSet:
    """Both directions of every host, leaf-aggregation and aggregation-core link."""
    r = ResourceSet()
    for h in range(shape.hosts):
        r.add(f"up:h{h}", "node_link", link)
        r.add(f"down:h{h}", "node_link", link)
    for leaf in range(shape.leaves):
        pod = leaf // shape.down
        for u in range(shape.up):
            r.add(f"l{leaf}>a{pod}.{u}", "switch_link", link)
            r.add(f"a{pod}.{u}>l{leaf}", "switch_link", link)
    if shape.pods > 1:
        for pod in range(shape.pods):
            for u in range(shape.up):
                for c in range(shape.up):
                    r.add(f"a{pod}.{u}>c{u}.{c}", "switch_link", link)
                    r.add(f"c{u}.{c}>a{pod}.{u}", "switch_link", link)
    return r
