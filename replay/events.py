"""Event-driven replay of request streams (SPEC §5; the traffic model of paper 000 §3.2).

A *stream* is one client's sequence of requests (I/O requests to an ION or server, MPI messages
to a peer, application I/O phases). Its first request starts at its ``gap``; every later one
starts ``gap`` seconds after the previous one completes ("next request after the previous
completes plus an interval"). Flows share bandwidth max-min fairly, recomputed by the one solver
whenever a flow starts or ends.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from burstlake.replay.solver import Paths, max_min_rates

DONE_TOLERANCE = 1e-9  # a flow with less than this fraction of its bytes left is complete


@dataclass(frozen=True)
class Requests:
    """Requests in stream order: ``stream[k]`` issues ``size[k]`` bytes over ``paths`` row k."""

    stream: np.ndarray  # int, non-decreasing
    size: np.ndarray  # bytes
    gap: np.ndarray  # seconds: start time of a stream's first request, think time after
    paths: Paths
    kind: np.ndarray | None = None  # optional label per request ('io', 'mpi', ...)

    def __post_init__(self) -> None:
        n = len(self.stream)
        if not (len(self.size) == len(self.gap) == self.paths.flows == n):
            raise ValueError("requests: stream, size, gap and paths must have one entry each")
        if n and np.any(np.diff(self.stream) < 0):
            raise ValueError("requests must be grouped by stream, in issue order")
        if np.any(self.size < 0) or np.any(self.gap < 0):
            raise ValueError("request sizes and gaps must be non-negative")


@dataclass(frozen=True)
class Timeline:
    """When each request started and ended (seconds), the bytes the fluid model moved for it
    (equal to its size: the conservation check), and the driver's event count."""

    start: np.ndarray
    end: np.ndarray
    delivered: np.ndarray
    events: int

    @property
    def latency(self) -> np.ndarray:
        return self.end - self.start


def simulate(requests: Requests, capacity: np.ndarray, progress=None) -> Timeline:
    """Run the streams to completion; each request's start and end time."""
    n = len(requests.stream)
    start, end, delivered = np.full(n, np.nan), np.full(n, np.nan), np.zeros(n)
    first = np.flatnonzero(np.r_[True, requests.stream[1:] != requests.stream[:-1]]) if n else []
    pending = [(float(requests.gap[k]), int(k)) for k in first]
    heapq.heapify(pending)
    active = np.zeros(0, dtype=np.int64)
    left = np.zeros(0)
    now, events = 0.0, 0

    def complete(k: int) -> None:
        end[k] = now
        if k + 1 < n and requests.stream[k + 1] == requests.stream[k]:
            heapq.heappush(pending, (now + float(requests.gap[k + 1]), k + 1))

    while pending or len(active):
        rate = _rates(requests.paths, capacity, active)
        finish = now + np.min(left / rate) if len(active) else np.inf
        arrival = pending[0][0] if pending else np.inf
        step_to = min(finish, arrival)
        moved = rate * (step_to - now)
        delivered[active] += moved
        left = left - moved
        now = step_to
        done = left <= DONE_TOLERANCE * requests.size[active]
        for k in active[done]:
            complete(int(k))
        active, left = active[~done], left[~done]
        started = []
        while pending and pending[0][0] <= now:
            started.append(heapq.heappop(pending)[1])
        for k in started:
            start[k] = now
        if started:
            new = np.asarray(started, dtype=np.int64)
            empty = requests.size[new] == 0
            for k in new[empty]:  # an empty request completes at once
                complete(int(k))
            active = np.concatenate([active, new[~empty]])
            left = np.concatenate([left, requests.size[new[~empty]].astype(float)])
        events += 1
        if progress is not None:
            progress(1)
    return Timeline(start, end, delivered, events)


def _rates(paths: Paths, capacity: np.ndarray, active: np.ndarray) -> np.ndarray:
    if not len(active):
        return np.zeros(0)
    rate = max_min_rates(paths.take(active), capacity)
    if np.any(rate <= 0):
        raise ValueError("a flow got no bandwidth: check the route's capacities")
    return rate
