"""I/O followed by all-to-all communication (paper 004 §7.2.2, Fig. 13b): each of m processes,
one per node, writes ``io_bytes`` to its forwarding target, then the m nodes exchange
``message_bytes`` per node pair and round for ``rounds`` rounds (the all-to-all generator of
:mod:`burstlake.replay.traffic`, flows paying their route's latency). The I/O time and the
communication time are replayed one after the other, as the paper's bars show them.

On a fat-tree (``cab1296``) the run starts on adjacent nodes under one leaf switch: remapping
the I/O servers keeps its communication inside the leaf, reallocation spreads its nodes over
more servers and so over more leaves, lengthening its communication routes. The reallocation
pays that for the I/O it gains; when communication dominates, remapping wins (Fig. 13b)."""

from __future__ import annotations

from typing import Any

import numpy as np

from burstlake.replay import scores as sc
from burstlake.replay import traffic as tr
from burstlake.replay.graph import Topology
from burstlake.replay.workloads import Kind, Progress, ScenarioLimits, Settings, number, register
from burstlake.replay.workloads.benchmark import BenchmarkRuns
from burstlake.replay.workloads.writes import node_counts, write_time

DEFAULTS = {
    "nodes": [4, 8, 16],
    "io_bytes": 1e9,  # per process (004 §7.2.2: 1 GB)
    "request_bytes": 1e9,
    "message_bytes": 32768,  # per node pair and round
    "rounds": 20,
    "seed": 0,  # the generator's ±5 % jitter of the (zero) interval
}
FLOATS = ("io_bytes", "request_bytes", "message_bytes")
MAX_NODES = 256  # processes of one run: the exchange has m (m - 1) streams


def settings(workload: dict) -> dict[str, Any]:
    """The workload's settings with defaults, each checked with a one-line error."""
    spec = DEFAULTS | workload
    nodes = node_counts("io_alltoall", spec["nodes"], MAX_NODES)
    values = {
        key: number(f"workload io_alltoall: {key}", spec[key], low=0, strict=True) for key in FLOATS
    }
    values["rounds"] = int(
        number("workload io_alltoall: rounds", spec["rounds"], low=0, strict=True, integer=True)
    )
    values["seed"] = int(number("workload io_alltoall: seed", spec["seed"], low=0, integer=True))
    return spec | values | {"nodes": nodes}


def demand(spec: dict, topology: Topology, _lake: Any) -> BenchmarkRuns:
    spec = settings(spec)
    return BenchmarkRuns.adjacent(
        [np.full(m, float(spec["io_bytes"])) for m in spec["nodes"]],
        [None] * len(spec["nodes"]),
        len(topology.nodes),
    )


def check(workload: dict, limits: ScenarioLimits) -> None:
    spec = settings(workload)
    per_io = int(np.ceil(spec["io_bytes"] / spec["request_bytes"]))
    requests = sum(m * per_io + m * (m - 1) * spec["rounds"] for m in spec["nodes"])
    if requests > limits.requests:
        raise ValueError(
            f"workload io_alltoall asks for {requests:,} requests; the limit is "
            f"{limits.requests:,} (fewer rounds or nodes)"
        )


def comm_time(topology: Topology, nodes: np.ndarray, spec: dict, progress: Progress) -> float:
    """Seconds of the all-to-all phase on ``nodes`` (one task per node, back to back)."""
    rng = np.random.default_rng(int(spec["seed"]))
    exchange = tr.Exchange(
        len(nodes), message_bytes=float(spec["message_bytes"]), rounds=int(spec["rounds"])
    )
    traffic = tr.all_to_all(exchange, rng)
    routed = tr.requests(topology, [(traffic, nodes)])
    timeline = topology.simulate(routed.requests, progress)
    return float(np.nanmax(timeline.end))


def scores(given: Settings, topology: Topology, work: BenchmarkRuns, progress: Progress) -> list:
    """Per run of m processes: I/O time, communication time, their sum, and the mean hops
    between the run's nodes."""
    spec = settings(given.workload)
    out = []
    for run in work.runs:
        m = len(run.nodes)
        io = write_time(topology, run.nodes, run.io_bytes, float(spec["request_bytes"]), progress)
        comm = comm_time(topology, run.nodes, spec, progress)
        out += [
            sc.Score(f"io_time_m{m}", io, "s"),
            sc.Score(f"comm_time_m{m}", comm, "s"),
            sc.Score(f"total_time_m{m}", io + comm, "s"),
            sc.Score(f"job_pair_hops_m{m}", sc.pair_hops(topology, run.nodes), "hops"),
        ]
    return out


KIND = register(
    "io_alltoall",
    Kind(keys=frozenset(DEFAULTS), check=check, demand=demand, scores=scores),
)
