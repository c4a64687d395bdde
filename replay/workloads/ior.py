"""IOR from m adjacent nodes (paper 004 §7.2.1, Fig. 13a): each node writes ``bytes_per_node``
to its forwarding target in back-to-back requests; scored by aggregate bandwidth per m."""

from __future__ import annotations

from typing import Any

import numpy as np

from burstlake.replay import scores as sc
from burstlake.replay.graph import Topology
from burstlake.replay.requests import Requests
from burstlake.replay.solver import Paths
from burstlake.replay.workloads import Kind, Progress, ScenarioLimits, Settings, number, register

# The settings where the scenario leaves them out (paper 004 §7.2.1).
DEFAULTS = {
    "nodes": [1, 2, 4, 8, 16],
    "bytes_per_node": 4e9,
    "request_bytes": 256e6,
    "gap_s": 0.0,
}


def requests_per_node(bytes_per_node: float, request_bytes: float) -> int:
    """Back-to-back requests that move ``bytes_per_node`` in ``request_bytes`` pieces."""
    return int(np.ceil(bytes_per_node / request_bytes))


def ior(
    topology: Topology,
    nodes: int,
    bytes_per_node: float,
    request_bytes: float,
    gap_s: float = 0.0,
) -> Requests:
    """IOR-like run on the first ``nodes`` compute nodes (adjacent, as Slurm allocates them):
    each node writes ``bytes_per_node`` to its forwarding target in back-to-back requests
    (paper 004 §7.2.1, Fig. 13a)."""
    if not 0 < nodes <= len(topology.nodes):
        raise ValueError(f"ior: nodes must be in 1..{len(topology.nodes)}, got {nodes}")
    if request_bytes <= 0 or bytes_per_node <= 0:
        raise ValueError("ior: bytes_per_node and request_bytes must be positive")
    per_node = requests_per_node(bytes_per_node, request_bytes)
    sizes = np.full(per_node, float(request_bytes))
    sizes[-1] = bytes_per_node - request_bytes * (per_node - 1)
    stream = np.repeat(np.arange(nodes), per_node)
    routes: Paths = topology.io_paths().take(stream)
    return Requests(
        stream=stream,
        size=np.tile(sizes, nodes),
        gap=np.full(len(stream), float(gap_s)),
        paths=routes,
    )


def spec_of(workload: dict) -> dict:
    """An ``ior`` workload with its defaults filled in and ``nodes`` always a list."""
    spec = DEFAULTS | workload
    return spec | {"nodes": spec["nodes"] if isinstance(spec["nodes"], list) else [spec["nodes"]]}


def request_count(workload: dict) -> int:
    """Requests an ``ior`` workload asks for: over its node counts m (one or a list, default
    1, 2, 4, 8, 16), m × ⌈bytes_per_node / request_bytes⌉."""
    spec = spec_of(workload)
    nodes = [
        int(number(f"workload ior: nodes[{i}]", m, low=1, integer=True))
        for i, m in enumerate(spec["nodes"])
    ]
    try:
        per_node = float(spec["bytes_per_node"]) / float(spec["request_bytes"])
    except (TypeError, ValueError, ZeroDivisionError) as err:
        raise ValueError(
            f"workload ior: nodes, bytes_per_node and request_bytes must be positive numbers "
            f"({err})"
        ) from None
    if not nodes or min(nodes) <= 0 or not 0 < per_node < float("inf"):
        raise ValueError("workload ior: nodes, bytes_per_node and request_bytes must be positive")
    return sum(nodes) * requests_per_node(
        float(spec["bytes_per_node"]), float(spec["request_bytes"])
    )


def check(workload: dict, limits: ScenarioLimits) -> None:
    requests = request_count(workload)
    if requests > limits.requests:
        raise ValueError(
            f"workload ior asks for {requests:,} requests; the limit is "
            f"{limits.requests:,} (a larger request_bytes or fewer nodes)"
        )


def scores(given: Settings, topology: Topology, _demand: Any, progress: Progress) -> list[sc.Score]:
    """Aggregate bandwidth and request latency for each node count m (Fig. 13a)."""
    spec = spec_of(given.workload)
    out = []
    for m in spec["nodes"]:
        requests = ior(
            topology,
            int(m),
            float(spec["bytes_per_node"]),
            float(spec["request_bytes"]),
            float(spec["gap_s"]),
        )
        timeline = topology.simulate(requests, progress)
        out += sc.stream_scores(timeline, requests.size, suffix=f"_m{int(m)}")
    return [*out, sc.hops_score(topology)]


KIND = register(
    "ior",
    Kind(
        keys=frozenset(DEFAULTS),
        check=check,
        demand=lambda _spec, _topology, _lake: None,
        scores=scores,
    ),
)
