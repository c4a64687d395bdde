"""Bridge-node reassignment on a BG/Q torus (paper 003, Malakar et al.): which bridge node
carries each compute node's I/O.

At boot every bridge node gets an equal block of compute nodes (the topology's ``given``
mapping, the same as ``block``), and a node is not always assigned its closest bridge node.
The reassignment of 003 walks the trees of shortest routes grown from every bridge node level
by level (distance = hops) and moves a node to a bridge node at this level when that is closer
than its default one and the bridge node's weight (its new assignments) is still below the
average weight, so new assignments stay balanced:

- ``bridge-route`` (route-aware): each moved node weighs 1; the average is the number of nodes
  that have a closer bridge node, over the bridge nodes;
- ``bridge-load`` (load-aware): each node weighs its bytes in the replayed window (the
  workload's ``node_bytes``), so a bridge node takes at most the average moved bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, register

BALANCE_TOLERANCE = 1e-9  # relative slack on "at most the average weight" (float bytes)


def distances(topology: Topology) -> np.ndarray:
    """Hops from every bridge node (row) to every compute node (column)."""
    hops = [
        [topology.router.hops(i, b) for i in range(len(topology.nodes))]
        for b in range(len(topology.ions))
    ]
    if any(h is None for row in hops for h in row):
        raise ValueError(f"bridge reassignment needs a hop model; {topology.name} has none")
    return np.asarray(hops, dtype=np.int64)


def reassign(topology: Topology, weight: np.ndarray | None = None) -> np.ndarray:
    """003's reassignment of the boot mapping ``topology.ion_of``: nodes, level by level of
    distance from the bridge nodes, move to a closer bridge node whose new-assignment weight
    stays at most the average (``weight`` per node; None: every node weighs 1)."""
    hops = distances(topology)
    nodes = np.arange(len(topology.nodes))
    default = topology.ion_of
    mine = hops[default, nodes]
    movable = hops.min(axis=0) < mine
    w = np.ones(len(nodes)) if weight is None else np.asarray(weight, dtype=np.float64)
    if len(w) != len(nodes) or np.any(w < 0):
        raise ValueError("bridge reassignment: one non-negative weight per compute node")
    bridges = len(topology.ions)
    average = w[movable].sum() / bridges  # the new assignments, shared equally
    if weight is None:
        average = np.ceil(average)
    limit = average * (1 + BALANCE_TOLERANCE)
    load = np.zeros(bridges)  # each bridge node's weight: its new assignments
    b, i = np.nonzero(hops < mine[None, :])  # (bridge, node) pairs closer than the default
    order = np.lexsort((i, b, hops[b, i]))  # level by level, bridge by bridge, node order
    assigned = default.copy()
    moved = np.zeros(len(nodes), dtype=bool)
    for bridge, node in zip(b[order], i[order], strict=True):
        if not moved[node] and load[bridge] + w[node] <= limit:
            assigned[node], moved[node] = bridge, True
            load[bridge] += w[node]
    return assigned


def node_bytes(demand: Any, topology: Topology) -> np.ndarray:
    """Bytes each compute node moves in the workload's window (the load-aware weights)."""
    if not hasattr(demand, "node_bytes"):
        raise ValueError(
            "policy bridge-load weighs nodes by their bytes: use a workload with per-node "
            "traffic (bridge_write or lake)"
        )
    return np.asarray(demand.node_bytes(topology), dtype=np.float64)


@register("bridge-route")
def route_aware() -> Apply:
    """Route-aware bridge-node reassignment (003): equal new assignments per bridge node."""
    return lambda topology, demand: (topology.remapped(reassign(topology)), demand)


@register("bridge-load")
def load_aware() -> Apply:
    """Load-aware bridge-node reassignment (003): new assignments balanced by bytes."""

    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        return topology.remapped(reassign(topology, node_bytes(demand, topology))), demand

    return apply
