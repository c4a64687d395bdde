"""The demands workloads produce and policies consume (docs/design.md, "Demands"): what a
policy's ``apply(topology, demand)`` may ask of a demand, and the demand types more than one
side reads. Workloads (:mod:`burstlake.replay.workloads`) build them, policies
(:mod:`burstlake.replay.policies`) transform them, and neither imports the other.

- contracts a demand may meet: :class:`Placeable` (job placement, 000 §5.1, 002 §2.3),
  :class:`Reallocatable` with its :class:`History` (I/O-aware reallocation, 004 §6),
  :class:`Weighed` (per-node bytes: load-aware bridge reassignment, 003) and
  :class:`Throttleable` (a throttle window, 000 §5.3);
- :class:`NodeDemand`: bytes per node and interval, with the jobs holding the nodes
  (:class:`JobIndex`), replayed by the interval driver (004 §7.4);
- :class:`PhaseDemand`: I/O phases (:class:`Phase`, :class:`Phases`), the unit of the
  coordination strategies (001 §II-C, §IV).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from typing import Any, Protocol, Self, runtime_checkable

import numpy as np
from numba import njit

from burstlake.allocation import JobRequest, Placements
from burstlake.lake import Cluster
from burstlake.replay.efficiency import ServerEfficiency
from burstlake.replay.graph import Topology
from burstlake.replay.intervals import Rows
from burstlake.replay.requests import Requests, Timeline

Progress = Callable[[int], None] | None  # called with the work done since the last call

# --- contracts --------------------------------------------------------------------------------


@runtime_checkable
class Placeable(Protocol):
    """A demand whose jobs a placement policy can move."""

    def placement_jobs(self, topology: Topology) -> list[JobRequest]:
        """The jobs to place: node counts, start and end times."""
        ...

    def placed(self, topology: Topology, placements: Placements) -> Self:
        """The same demand with job i's traffic moved to ``placements.nodes[i]`` (by node
        index), and later by the time it waited for them (``placements.start[i]``)."""
        ...


@dataclass(frozen=True)
class History:
    """What the allocator knows of each job (index = position in ``placement_jobs``) from
    jobs that ended before it starts (004 §6.1-§6.3): optimizable (§6.2) and, for
    applications with a consistent distribution (§6.3), the predicted traffic share of each
    node_index."""

    optimizable: np.ndarray
    shares: list[np.ndarray | None]
    available: list[np.ndarray | None] | None = None  # per job, nodes it may use (None: all)


@runtime_checkable
class Reallocatable(Placeable, Protocol):
    """A demand whose jobs can be placed (the placement contract) and predicted."""

    def io_history(self, topology: Topology, requests: list[JobRequest]) -> History:
        """What the allocator may know of each job (index = position in ``requests``)."""
        ...


@runtime_checkable
class Weighed(Protocol):
    """A demand that knows the bytes each compute node moves in the replayed window."""

    def node_bytes(self, topology: Topology) -> np.ndarray:
        """Bytes per compute node of ``topology`` (index = node index)."""
        ...


@runtime_checkable
class Throttleable(Protocol):
    """A demand whose I/O clients a throttle window can pace (000 §5.3)."""

    def throttled(self, window: float) -> Self:
        """The same demand with its I/O clients' requests at least ``window`` s apart."""
        ...


# --- node-interval demand ---------------------------------------------------------------------


@dataclass(frozen=True)
class NodeDemand:
    """Bytes (read + write) per node and interval; interval t starts at ``start + t·interval_s``
    (the lake's ``node_io``, 004 §7.4). Weighed (``node_bytes``); the lake workload's demand
    (:class:`burstlake.replay.workloads.lake_jobs.LakeDemand`) is also placeable.

    ``job[r]`` is the index in ``jobs.job_ids`` of the job holding row r's node then, or -1.
    """

    rows: Rows
    interval_s: float
    start: datetime
    job: np.ndarray
    jobs: JobIndex
    lake: Cluster | None = field(default=None, compare=False, repr=False)  # the machine read

    @property
    def intervals(self) -> int:
        return int(self.rows.t.max()) + 1 if len(self.rows) else 0

    def node_bytes(self, topology: Topology) -> np.ndarray:
        return np.bincount(self.rows.node, weights=self.rows.bytes, minlength=len(topology.nodes))


@dataclass(frozen=True)
class JobIndex:
    """Which job held a node in an interval: allocations sorted by (node, first interval)."""

    node: np.ndarray
    begin: np.ndarray  # first interval of the allocation
    end: np.ndarray  # first interval after it
    job: np.ndarray
    job_ids: tuple[str, ...]
    node_index: np.ndarray | None = None  # the node's position in the job's allocation

    def lookup(self, node: np.ndarray, t: np.ndarray, after_end: bool = False) -> np.ndarray:
        """Index into ``job_ids`` per (node, interval), -1 if none. With ``after_end`` an
        interval after the job's end still counts as the job's (its backlog drains then)."""
        if not len(self.node) or not len(node):
            return np.full(len(node), -1, dtype=np.int64)
        first = np.searchsorted(self.node, np.arange(max(self.node[-1], node.max()) + 2))
        return _lookup(first, self.begin, self.end, self.job, node, t, after_end)


@njit(cache=True)
def _lookup(first, begin, end, job, node, t, after_end):  # pragma: no cover - compiled
    """:meth:`JobIndex.lookup`: per row, the last allocation of its node begun by ``t``
    (the node's allocations are ``first[node]:first[node + 1]``, by begin)."""
    out = np.full(len(node), -1, np.int64)
    for i in range(len(node)):
        lo, hi = first[node[i]], first[node[i] + 1]
        at = lo + np.searchsorted(begin[lo:hi], t[i], side="right") - 1
        if at >= lo and (after_end or t[i] < end[at]):
            out[i] = job[at]
    return out


# --- I/O phases -------------------------------------------------------------------------------

REQUEST_BYTES = 64.0e6  # one request of one node (an MPI-IO collective buffer, 001 §IV-B)


@dataclass(frozen=True)
class Phase:
    """One application's I/O phase: N = ``len(nodes)`` compute nodes (indices on the topology)
    each write ``bytes_per_node`` in ``files`` equal files from ``start`` (seconds)."""

    app: str
    nodes: np.ndarray
    bytes_per_node: float
    start: float = 0.0
    files: int = 1

    @property
    def n(self) -> int:
        return len(self.nodes)


@dataclass(frozen=True)
class Phases:
    """Phases meeting on one machine (a scenario, one point of a sweep, a window of the lake),
    with the strategy's schedule once a policy gave one: ``release[i][r]`` is the time before
    which round r of phase i is not issued (-inf: no constraint)."""

    phases: tuple[Phase, ...]
    request_bytes: float = REQUEST_BYTES
    release: tuple[np.ndarray, ...] | None = None
    alone: np.ndarray | None = None  # T_alone per phase, when a policy already replayed them
    dt: float | None = None  # the sweep point, if any
    efficiency: ServerEfficiency | None = None  # the servers' efficiency curve (001), or off
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def rounds(self, i: int) -> np.ndarray:
        """Request size of each round of phase i: each file cut in ``request_bytes`` pieces."""
        phase = self.phases[i]
        per_file = phase.bytes_per_node / phase.files
        pieces = max(1, math.ceil(per_file / self.request_bytes - 1e-9))
        sizes = np.full(pieces, min(self.request_bytes, per_file))
        sizes[-1] = per_file - sizes[0] * (pieces - 1)
        return np.tile(sizes, phase.files)

    def file_ends(self, i: int) -> np.ndarray:
        """Whether round r of phase i ends a file (where a file-grained phase may pause)."""
        per_file = len(self.rounds(i)) // self.phases[i].files
        return (np.arange(len(self.rounds(i))) + 1) % per_file == 0

    def requests(
        self, topology: Topology, only: int | None = None
    ) -> tuple[Requests, np.ndarray, np.ndarray]:
        """Every phase's requests on ``topology`` (or phase ``only``, from time 0, without
        releases: the phase alone); the phase and the node of each request. Node j of a phase
        is one stream of its rounds."""
        chosen = range(len(self.phases)) if only is None else [only]
        parts: list[tuple[np.ndarray, ...]] = []
        streams = 0
        for i in chosen:
            phase, rounds = self.phases[i], self.rounds(i)
            count, n = len(rounds), phase.n
            gap = np.zeros(count)
            gap[0] = 0.0 if only is not None else phase.start
            release = np.full(count, -np.inf)
            if only is None and self.release is not None:
                release = np.asarray(self.release[i], dtype=float)
            parts.append(
                (
                    streams + np.repeat(np.arange(n), count),
                    np.tile(rounds, n),
                    np.tile(gap, n),
                    np.tile(release, n),
                    np.full(n * count, i),
                    np.repeat(phase.nodes, count),
                )
            )
            streams += n
        stream, size, gap, release, owner, node = (
            np.concatenate(c) for c in zip(*parts, strict=True)
        )
        requests = Requests(
            stream=stream.astype(np.int64),
            size=size,
            gap=gap,
            paths=topology.io_paths().take(node.astype(np.int64)),
            release=release,
        )
        return requests, owner.astype(np.int64), node.astype(np.int64)

    def simulate(
        self, topology: Topology, only: int | None = None, progress: Progress = None
    ) -> tuple[Timeline, np.ndarray]:
        """:meth:`requests` replayed under the machine's contention model, through the
        servers' efficiency curve when the workload sets one; the timeline and the phase of
        each request."""
        requests, owner, node = self.requests(topology, only)
        if self.efficiency is None:
            return topology.simulate(requests, progress), owner
        server = topology.ion_of[node]
        run = partial(topology.simulate, progress=progress)
        return self.efficiency.simulate(run, requests, server), owner

    def alone_times(self, topology: Topology) -> np.ndarray:
        """T_alone of each phase: the phase replayed alone on the machine (001 §II-C);
        computed once per machine."""
        if self.alone is not None:
            return self.alone
        known = self.memo.get(id(topology))
        if known is not None and known[0] is topology:
            return known[1]
        times = []
        for i in range(len(self.phases)):
            timeline, _ = self.simulate(topology, only=i)
            times.append(float(np.max(timeline.end)))
        self.memo[id(topology)] = (topology, np.asarray(times))
        return self.memo[id(topology)][1]

    def io_times(self, topology: Topology, progress: Progress = None) -> np.ndarray:
        """T of each phase replayed together: from its start to its last byte."""
        timeline, owner = self.simulate(topology, progress=progress)
        end = timeline.end
        last = np.full(len(self.phases), -np.inf)
        np.maximum.at(last, owner, end)
        return last - np.asarray([p.start for p in self.phases])

    @property
    def weights(self) -> np.ndarray:
        return np.asarray([p.n for p in self.phases], dtype=float)


@dataclass(frozen=True)
class PhaseDemand:
    """What the coordination policies transform: one :class:`Phases` per case (one, or one per
    dt of a sweep), the cores behind each node (for CPU-hours), and the I/O times of the
    phases as they ran (lake phases only)."""

    cases: tuple[Phases, ...]
    cores_per_node: float = 1.0
    as_ran: np.ndarray | None = None
    sweep: bool = False

    def map(self, change: Callable[[Phases], Phases]) -> PhaseDemand:
        return replace(self, cases=tuple(change(case) for case in self.cases))


def require(demand: Any, user: str) -> PhaseDemand:
    """``demand`` as phases, or a one-line error for ``user`` (e.g. ``policy fcfs``)."""
    if not isinstance(demand, PhaseDemand):
        raise ValueError(
            f"{user} works on I/O phases: use it with workload source phases or lake_phases"
        )
    return demand
