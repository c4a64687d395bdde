"""Benchmark runs as jobs that placement and reallocation policies can move (paper 004 §7.2):
run k has ``m_k`` processes, one per compute node, process i moving ``io_bytes[i]``. Runs are
placed one after the other on an empty machine (run k from k to k + 1), each first on ``m_k``
adjacent available nodes, as Slurm allocates them. The benchmark's processes are its history:
an optimizable application with a consistent traffic distribution (§6.2, §6.3)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from burstlake.allocation import JobRequest, Placements
from burstlake.replay.demands import History
from burstlake.replay.graph import Topology


@dataclass(frozen=True)
class Run:
    nodes: np.ndarray  # node of each process (node_index order)
    io_bytes: np.ndarray  # bytes each process writes
    available: np.ndarray | None = None  # nodes the scheduler may use for this run


@dataclass(frozen=True)
class BenchmarkRuns:
    """Placeable (``placement_jobs``, ``placed``) and Reallocatable (``io_history``)."""

    runs: tuple[Run, ...]

    @classmethod
    def adjacent(
        cls, io_bytes: list[np.ndarray], available: list[np.ndarray | None], nodes: int
    ) -> BenchmarkRuns:
        """Each run on the first available nodes (Slurm's adjacent allocation)."""
        runs = []
        for size, mask in zip(io_bytes, available, strict=True):
            free = np.flatnonzero(np.ones(nodes, dtype=bool) if mask is None else mask)
            if len(free) < len(size):
                raise ValueError(f"benchmark: {len(size)} processes, {len(free)} nodes available")
            runs.append(Run(free[: len(size)], np.asarray(size, dtype=np.float64), mask))
        return cls(tuple(runs))

    def placement_jobs(self, topology: Topology) -> list[JobRequest]:
        return [
            JobRequest(k, len(r.nodes), float(k), float(k + 1)) for k, r in enumerate(self.runs)
        ]

    def placed(self, topology: Topology, placements: Placements) -> BenchmarkRuns:
        return BenchmarkRuns(
            tuple(
                replace(r, nodes=np.asarray(n))
                for r, n in zip(self.runs, placements.nodes, strict=True)
            )
        )

    def io_history(self, topology: Topology, requests: list[JobRequest]) -> History:
        shares = [
            r.io_bytes / r.io_bytes.sum() if r.io_bytes.sum() > 0 else None for r in self.runs
        ]
        return History(
            np.ones(len(self.runs), dtype=bool), shares, [r.available for r in self.runs]
        )

    def node_bytes(self, topology: Topology) -> np.ndarray:
        out = np.zeros(len(topology.nodes))
        for r in self.runs:
            np.add.at(out, r.nodes, r.io_bytes)
        return out


def first_ions(topology: Topology, ions: int) -> np.ndarray:
    """The nodes served by the first ``ions`` I/O nodes (004 §7.2.3: m/2 I/O nodes available)."""
    return topology.ion_of < ions
