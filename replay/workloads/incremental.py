"""The incremental benchmark of paper 004 §7.2.3 (Fig. 13c): process i of n (1-based) writes
i/n of ``bytes_max``, one process per compute node, with the available I/O nodes limited to
m/2 for m processes (2 compute nodes per I/O node). The benchmark's time is the slowest
process's; even-traffic reallocation beats even-node because the busiest processes no longer
share an I/O node."""

from __future__ import annotations

from typing import Any

import numpy as np

from burstlake.replay import scores as sc
from burstlake.replay.graph import Topology
from burstlake.replay.workloads import Kind, Progress, ScenarioLimits, Settings, number, register
from burstlake.replay.workloads.benchmark import BenchmarkRuns, first_ions
from burstlake.replay.workloads.writes import node_counts, target_scores, write_time

DEFAULTS = {"nodes": [4, 8, 16], "bytes_max": 4e9, "request_bytes": 1e9}
MAX_NODES = 4096  # processes of one run (004 §7.2: at most 64 on the testbed)


def settings(workload: dict) -> tuple[list[int], float, float]:
    """(node counts m, bytes_max, request_bytes), checked with one-line errors."""
    spec = DEFAULTS | workload
    nodes = node_counts("incremental", spec["nodes"], MAX_NODES)
    sizes = [
        number(f"workload incremental: {key}", spec[key], low=0, strict=True)
        for key in ("bytes_max", "request_bytes")
    ]
    return nodes, sizes[0], sizes[1]


def incremental_bytes(m: int, bytes_max: float) -> np.ndarray:
    """Process i of m (1-based) moves i/m of the maximum."""
    return np.arange(1, m + 1) * bytes_max / m


def demand(spec: dict, topology: Topology, _lake: Any) -> BenchmarkRuns:
    nodes, bytes_max, _ = settings(spec)
    for m in nodes:
        if -(-m // 2) > len(topology.ions) or m > len(topology.nodes):
            raise ValueError(
                f"workload incremental: {m} processes need {-(-m // 2)} I/O nodes; "
                f"topology {topology.name} has {len(topology.ions)}"
            )
    return BenchmarkRuns.adjacent(
        [incremental_bytes(m, bytes_max) for m in nodes],
        [first_ions(topology, -(-m // 2)) for m in nodes],
        len(topology.nodes),
    )


def check(workload: dict, limits: ScenarioLimits) -> None:
    nodes, bytes_max, request = settings(workload)
    requests = sum(nodes) * int(np.ceil(bytes_max / request))
    if requests > limits.requests:
        raise ValueError(
            f"workload incremental asks for {requests:,} requests; the limit is "
            f"{limits.requests:,} (a larger request_bytes)"
        )


def scores(given: Settings, topology: Topology, work: BenchmarkRuns, progress: Progress) -> list:
    """Per run of m processes: the benchmark time and the load of the I/O nodes it used."""
    _, _, request = settings(given.workload)
    out = []
    for run in work.runs:
        m = len(run.nodes)
        seconds = write_time(topology, run.nodes, run.io_bytes, request, progress)
        out.append(sc.Score(f"io_time_m{m}", seconds, "s"))
        out += [
            sc.Score(f"{s.metric}_m{m}", s.value, s.unit)
            for s in target_scores(topology, run.nodes, run.io_bytes)
        ]
    return out


KIND = register(
    "incremental",
    Kind(keys=frozenset(DEFAULTS), check=check, demand=demand, scores=scores),
)
