"""Bridge-node reassignment on a BG/Q torus (paper 003, Malakar et al.): which bridge node
carries each compute node's I/O.

At boot every bridge node gets an equal block of compute nodes (the topology's ``given``
mapping, the same as ``block``), and a node is not always assigned its closest bridge node.
The reassignment of 003 walks the trees of shortest routes grown from every bridge node level
by level (distance = hops) and moves a node to a bridge node at this level when that is closer
than its default one and the bridge node's weight is still below the average weight:

- ``bridge-route`` (route-aware, as 003's slides): the weight is the number of new assignments;
  the average is the number of nodes that have a closer bridge node, over the bridge nodes;
- ``bridge-load`` (load-aware, 003's "network load-aware and route-aware" algorithm): each node
  weighs its bytes in the replayed window (the workload's ``node_bytes``) and a bridge node's
  weight counts every node it serves, kept and new, so a node moves only while the bridge node
  stays at or below the mean bytes; a node no closer bridge node could take stays with its boot
  one. Nodes with no bytes move freely to a closer bridge node that is not above the mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from burstlake.replay.demands import Weighed
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


def reassign(topology: Topology) -> np.ndarray:
    """003's route-aware reassignment of the boot mapping ``topology.ion_of``: nodes, level by
    level of distance from the bridge nodes, move to a closer bridge node while its weight (new
    assignments, one per node) is below the average (the closer-node count over the bridge
    nodes, rounded up: "weight < average weight" before the assignment)."""
    hops, default, mine = _levels(topology)
    movable = hops.min(axis=0) < mine
    limit = np.ceil(movable.sum() / len(topology.ions))
    new = np.zeros(len(topology.ions))  # each bridge node's weight: its new assignments
    assigned = default.copy()
    b, i = np.nonzero(hops < mine[None, :])  # (bridge, node) pairs closer than the boot one
    order = np.lexsort((i, b, hops[b, i]))  # level by level, bridge by bridge, node order
    for bridge, node in zip(b[order].tolist(), i[order].tolist(), strict=True):
        if assigned[node] == default[node] and new[bridge] < limit:
            assigned[node] = bridge
            new[bridge] += 1
    return assigned


def rebalance(topology: Topology, weight: np.ndarray) -> np.ndarray:
    """003's load-aware reassignment. A bridge node's weight is the bytes of every node it
    serves: the nodes it keeps (no bridge node is closer to them) and those it takes. Level by
    level of distance, a node moves to a closer bridge node only while that bridge node stays
    at or below the mean weight (total bytes over the bridge nodes); a node no closer bridge
    node took stays with its boot bridge node when the traversal reaches that one's level.
    Within a level, the nodes of the bridge nodes loaded most at boot go first, and moves go
    before the fall-backs."""
    hops, default, mine = _levels(topology)
    w = np.asarray(weight, dtype=np.float64)
    if len(w) != len(default) or np.any(w < 0):
        raise ValueError("bridge reassignment: one non-negative weight per compute node")
    movable = hops.min(axis=0) < mine
    load = np.bincount(default[~movable], weights=w[~movable], minlength=len(topology.ions))
    limit = w.sum() / len(topology.ions) * (1 + BALANCE_TOLERANCE)
    boot = np.bincount(default, weights=w, minlength=len(topology.ions))
    assigned = np.where(movable, -1, default)
    b, i = np.nonzero(hops <= mine[None, :])
    keep = movable[i]
    b, i = b[keep], i[keep]
    fallback = hops[b, i] == mine[i]
    keep = ~fallback | (b == default[i])
    b, i, fallback = b[keep], i[keep], fallback[keep]
    order = np.lexsort((i, b, -boot[default[i]], fallback, hops[b, i]))
    for bridge, node, last in zip(b[order], i[order], fallback[order], strict=True):
        if assigned[node] < 0 and (last or load[bridge] + w[node] <= limit):
            assigned[node] = bridge
            load[bridge] += w[node]
    return assigned


def _levels(topology: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hops (bridge × node), the boot mapping and each node's hops to its boot bridge node."""
    hops = distances(topology)
    default = topology.ion_of
    return hops, default, hops[default, np.arange(len(default))]


def node_bytes(demand: Any, topology: Topology) -> np.ndarray:
    """Bytes each compute node moves in the workload's window (the load-aware weights)."""
    if not isinstance(demand, Weighed):
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
        return topology.remapped(rebalance(topology, node_bytes(demand, topology))), demand

    return apply
