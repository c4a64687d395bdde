"""Independent writes of given sizes from given compute nodes (papers 003 and 004 §7.2): the
request streams of the bridge-node write, the incremental benchmark and the I/O phase of the
all-to-all benchmark. Each node writes its bytes to its forwarding target in back-to-back
requests of at most ``request_bytes``."""

from __future__ import annotations

import numpy as np

from burstlake.replay import scores as sc
from burstlake.replay.graph import Topology
from burstlake.replay.requests import Requests
from burstlake.replay.workloads import Progress
from burstlake.replay.workloads.ior import requests_per_node


def write_requests(
    topology: Topology, nodes: np.ndarray, node_bytes: np.ndarray, request_bytes: float
) -> Requests:
    """Node ``nodes[k]`` writes ``node_bytes[k]`` (nodes with no bytes write nothing)."""
    if request_bytes <= 0:
        raise ValueError("writes: request_bytes must be positive")
    keep = np.asarray(node_bytes, dtype=np.float64) > 0
    nodes, sizes = np.asarray(nodes, dtype=np.int64)[keep], np.asarray(node_bytes, float)[keep]
    counts = np.array([requests_per_node(b, request_bytes) for b in sizes], dtype=np.int64)
    stream = np.repeat(np.arange(len(nodes)), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    piece = np.arange(len(stream)) - first  # request k of its node
    size = np.minimum(request_bytes, np.repeat(sizes, counts) - piece * request_bytes)
    return Requests(
        stream=stream,
        size=size,
        gap=np.zeros(len(stream)),
        paths=topology.io_paths().take(np.repeat(nodes, counts)),
    )


def write_time(
    topology: Topology,
    nodes: np.ndarray,
    node_bytes: np.ndarray,
    request_bytes: float,
    progress: Progress = None,
) -> float:
    """Seconds until the last node has written its bytes (the benchmark's I/O time)."""
    requests = write_requests(topology, nodes, node_bytes, request_bytes)
    if not len(requests.stream):
        return 0.0
    timeline = topology.simulate(requests, progress)
    return float(np.nanmax(timeline.end))


def target_scores(topology: Topology, nodes: np.ndarray, node_bytes: np.ndarray) -> list[sc.Score]:
    """Bytes per forwarding target of these writes: max over mean of the targets in use and
    the count in use (004 §7.2.3: the busiest ION sets the benchmark's time)."""
    load = np.bincount(
        topology.ion_of[np.asarray(nodes, dtype=np.int64)],
        weights=np.asarray(node_bytes, float),
        minlength=len(topology.ions),
    )
    used = load[load > 0]
    spread = float(used.max() / used.mean()) if len(used) else None
    return [
        sc.Score("ion_load_max_over_mean_used", spread, "x"),
        sc.Score("ions_used", float(len(used)), "IONs"),
    ]


def node_counts(source: str, value: object, high: int) -> list[int]:
    """A workload's ``nodes``: one count or a list of distinct counts in 2..``high``."""
    counts = value if isinstance(value, list) else [value]
    if not counts or any(
        isinstance(m, bool) or not isinstance(m, int) or not 2 <= m <= high for m in counts
    ):
        raise ValueError(
            f"workload {source}: nodes must be integers in 2..{high} (one or a list), got {value!r}"
        )
    if len(set(counts)) != len(counts):
        raise ValueError(f"workload {source}: nodes lists a count twice: {counts}")
    return counts
