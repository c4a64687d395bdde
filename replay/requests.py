"""What a contention model replays and what it gives back (docs/design.md, "Contention
models"): the contract both models share, so neither imports the other.

- :class:`Requests`: streams of requests over routes (paper 000 §3.2's traffic model: a
  client's next request issues after its previous one completes, plus an interval);
- :func:`issue_time`: the one rule for when a stream's next request issues;
- :class:`Timeline`: when each request started and ended;
- :class:`Network`: what a model reads of a topology (capacities, switch ports, virtual
  channels, per-packet routing and wire delays), so :mod:`burstlake.replay.models` names it
  without importing the topology.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numba import njit

from burstlake.replay.solver import Paths


@dataclass(frozen=True)
class Requests:
    """Requests in stream order: ``stream[k]`` issues ``size[k]`` bytes over ``paths`` row k."""

    stream: np.ndarray  # int, non-decreasing
    size: np.ndarray  # bytes
    gap: np.ndarray  # seconds: start time of a stream's first request, think time after
    paths: Paths
    kind: np.ndarray | None = None  # optional label per request ('io', 'mpi', ...)
    latency: np.ndarray | None = None  # seconds: the route's latency, paid before the transfer
    release: np.ndarray | None = None  # seconds: not issued before this (e.g. a resumed phase)
    window: np.ndarray | None = None  # seconds: not issued sooner than this after the previous
    # request of its stream was issued (a throttle window, paper 000 §5.3)

    def __post_init__(self) -> None:
        n = len(self.stream)
        if not (len(self.size) == len(self.gap) == self.paths.flows == n):
            raise ValueError("requests: stream, size, gap and paths must have one entry each")
        if self.latency is not None and len(self.latency) != n:
            raise ValueError("requests: latency must have one entry per request")
        if n and np.any(np.diff(self.stream) < 0):
            raise ValueError("requests must be grouped by stream, in issue order")
        if np.any(self.size < 0) or np.any(self.gap < 0):
            raise ValueError("request sizes and gaps must be non-negative")
        if self.latency is not None and np.any(self.latency < 0):
            raise ValueError("request latencies must be non-negative")
        if self.release is not None and len(self.release) != n:
            raise ValueError("requests: release must have one entry per request")
        if self.window is not None and (len(self.window) != n or np.any(self.window < 0)):
            raise ValueError("requests: window must have one non-negative entry per request")

    def first(self) -> np.ndarray:
        """The first request of each stream."""
        n = len(self.stream)
        if not n:
            return np.zeros(0, np.int64)
        return np.flatnonzero(np.r_[True, self.stream[1:] != self.stream[:-1]])


@njit(cache=True, inline="always", error_model="numpy")
def issue_time(end, gap, release, start, window):  # pragma: no cover - compiled
    """When a stream's next request issues (paper 000 §3.2; a throttle window, §5.3): ``gap``
    after the previous one completed at ``end``, never before its ``release`` and never
    sooner than ``window`` after the previous one issued at ``start``. A stream's first
    request is the case ``end = 0``, ``start = -inf``."""
    return max(end + gap, release, start + window)


@dataclass(frozen=True)
class Timeline:
    """When each request started and ended (seconds), the bytes the model moved for it
    (equal to its size: the conservation check), and the driver's event count."""

    start: np.ndarray
    end: np.ndarray
    delivered: np.ndarray
    events: int
    resolved: int = 0  # flow rates computed over all events (the incremental solver's work)

    @property
    def latency(self) -> np.ndarray:
        return self.end - self.start


class Capacities(Protocol):
    """The resources of a :class:`Network`."""

    @property
    def capacity(self) -> np.ndarray:
        """Bytes/s per resource."""
        ...

    @property
    def is_switch_port(self) -> np.ndarray:
        """Whether a switch sends on each resource (its packets pay a router delay)."""
        ...


class Network(Protocol):
    """What a contention model reads of a topology
    (:class:`~burstlake.replay.graph.Topology` is one)."""

    @property
    def resources(self) -> Capacities: ...

    def route_vcs(self, paths: Paths) -> np.ndarray:
        """The virtual channel of every entry of ``paths.indices``."""
        ...

    def route_adaptive(self, paths: Paths) -> Any:
        """Per-packet routing of ``paths`` (:class:`burstlake.replay.packet.Adaptive`), None
        where not modelled."""
        ...

    def link_delays(self) -> np.ndarray | None:
        """Seconds of propagation per resource, None where not modelled."""
        ...
