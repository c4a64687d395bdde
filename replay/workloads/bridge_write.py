"""Independent writes through the bridge nodes of a BG/Q torus (paper 003, "Times for writing
4 GB", "64 KB independent writes", "2048 KB independent writes"): ``writers`` (a fraction) of
the compute nodes each write ``bytes_per_node`` to their bridge node's ION, either spread evenly
over the ranks (``writer_layout: spread``) or one job's nodes, the first ranks
(``writer_layout: job``). Each node runs ``ranks_per_node`` MPI ranks (003: 1-16 ranks per
node), each writing its share in back-to-back requests of at most ``request_bytes`` (003's
"data per rank", e.g. 64 KB). Scored by the write time, the bridge-node load (bytes routed
through each bridge node, and bytes each writes to its ION: max over mean, NUD), 003's network
counters (messages routed through a bridge node; the spread of messages bridge nodes send),
the busiest torus link and the mean hops from node to bridge node (all nodes, and per byte)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from burstlake.replay import scores as sc
from burstlake.replay.graph import Topology
from burstlake.replay.workloads import Kind, Progress, ScenarioLimits, Settings, number, register
from burstlake.replay.workloads.ior import requests_per_node
from burstlake.replay.workloads.writes import write_time

DEFAULTS = {
    "bytes_per_node": 4e9,
    "request_bytes": 1e9,
    "writers": 1.0,
    "writer_layout": "spread",
    "ranks_per_node": 1,
}
LAYOUTS = ("spread", "job")  # writers spread evenly over the ranks / the first ranks (one job)


@dataclass(frozen=True)
class NodeBytes:
    """Bytes each compute node writes (what the load-aware reassignment weighs)."""

    bytes: np.ndarray

    def node_bytes(self, _topology: Topology) -> np.ndarray:
        return self.bytes


def writer_mask(nodes: int, writers: float, layout: str = "spread") -> np.ndarray:
    """``writers`` × nodes ranks: spread evenly (rank i writes when ⌊(i+1)·f⌋ > ⌊i·f⌋) or,
    for ``job``, the first ⌊nodes·f⌋ ranks."""
    i = np.arange(nodes)
    if layout == "job":
        return i < np.floor(nodes * writers + 1e-9)
    return np.floor((i + 1) * writers + 1e-9) > np.floor(i * writers + 1e-9)


def settings(workload: dict) -> tuple[float, float, float, str, int]:
    """(bytes_per_node, request_bytes, writers, writer_layout, ranks_per_node), each checked
    with a one-line error."""
    spec = DEFAULTS | workload
    size, request = (
        number(f"workload bridge_write: {k}", spec[k], low=0, strict=True)
        for k in ("bytes_per_node", "request_bytes")
    )
    writers = number("workload bridge_write: writers", spec["writers"], low=0, strict=True)
    if not 0 < writers <= 1:
        raise ValueError(f"workload bridge_write: writers is a fraction in (0, 1], got {writers}")
    layout = spec["writer_layout"]
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(
            f"workload bridge_write: writer_layout is one of {', '.join(LAYOUTS)}, got {layout!r}"
        )
    ranks = number(
        "workload bridge_write: ranks_per_node", spec["ranks_per_node"], low=1, integer=True
    )
    return size, request, writers, layout, int(ranks)


def ranks_of(work: NodeBytes, ranks: int) -> tuple[np.ndarray, np.ndarray]:
    """The node of every rank and the bytes it writes (a ``ranks``-th of its node's): one
    request stream each."""
    nodes = np.repeat(np.arange(len(work.bytes)), ranks)
    return nodes, np.repeat(work.bytes / ranks, ranks)


def demand(spec: dict, topology: Topology, _lake: Any) -> NodeBytes:
    size, _request, writers, layout, _ranks = settings(spec)
    return NodeBytes(np.where(writer_mask(len(topology.nodes), writers, layout), size, 0.0))


def check(workload: dict, limits: ScenarioLimits) -> None:
    size, request, _writers, _layout, ranks = settings(workload)
    per_node = ranks * requests_per_node(size / ranks, request)
    if per_node > limits.requests // 512:
        raise ValueError(
            f"workload bridge_write: {per_node:,} requests per node is too many; "
            f"at most {limits.requests // 512:,} (a larger request_bytes)"
        )


def scores(given: Settings, topology: Topology, work: NodeBytes, progress: Progress) -> list:
    """Write time, bridge-node load, messages through and sent by bridge nodes, busiest link,
    mean hops (003)."""
    _size, request, _writers, _layout, ranks = settings(given.workload)
    nodes, rank_bytes = ranks_of(work, ranks)
    seconds = write_time(topology, nodes, rank_bytes, request, progress)
    messages = [requests_per_node(b, request) if b > 0 else 0 for b in rank_bytes.tolist()]
    return [
        sc.Score("write_time", seconds, "s"),
        *sc.bridge_scores(topology, work.bytes),
        *sc.bridge_io_scores(topology, work.bytes),
        *sc.bridge_message_scores(topology, nodes, np.asarray(messages, dtype=np.float64)),
        sc.hops_score(topology),
        sc.traffic_hops(topology, work.bytes),
    ]


KIND = register(
    "bridge_write",
    Kind(keys=frozenset(DEFAULTS), check=check, demand=demand, scores=scores),
)
