"""The flow model's event loop (docs/design.md, "Replay"; the traffic model of paper 000 §3.2;
SimGrid's flow model).

A *stream* is one client's sequence of requests (:class:`~burstlake.replay.requests.Requests`:
I/O requests to an ION or server, MPI messages to a peer, application I/O phases), issued by
the one rule of :func:`~burstlake.replay.requests.issue_time`. Flows share bandwidth max-min
fairly: the starts and ends at one instant are one change of the incremental
:class:`~burstlake.replay.solver.System` (SimGrid's ``lmm::System``), which re-solves only the
flows the change can alter. The loop is compiled (Numba) and resumable, so a long replay
reports progress between calls.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np
from numba import njit

from burstlake.replay.requests import Requests, Timeline, issue_time
from burstlake.replay.solver import (
    FSIZE,
    LOOP,
    SOLVED,
    System,
    begin,
    check,
    finish_first,
    heap_push,
    heap_remove,
    join,
    next_finish,
    update,
)

SAME_INSTANT = 1e-12  # events closer than this fraction of the clock happen together
EVENTS_PER_CALL = 50_000  # compiled events between two progress reports, at most
CALL_SECONDS = 0.25  # and fewer when they take longer than this (Ctrl-C within a second)
FIRST_CALL_EVENTS = 64  # the first call's budget: an event among a million flows takes ~1 ms
ASIZE, EVENTS = range(2)  # Streams.counters


class Streams(NamedTuple):
    """The streams' side of the loop: the issue rule's inputs (the transfer's start, after the
    route latency) and what the timeline records."""

    stream: np.ndarray  # per request
    gap: np.ndarray  # its gap plus its latency
    release: np.ndarray  # its release plus its latency (-inf: none)
    pace: np.ndarray  # its window plus the change of latency (-inf: none)
    start: np.ndarray  # the transfer's start (issue + latency)
    end: np.ndarray
    arrival: np.ndarray  # heap keys: start time of each pending request
    aheap: np.ndarray
    apos: np.ndarray
    counters: np.ndarray  # ASIZE, EVENTS


def simulate(requests: Requests, capacity: np.ndarray, progress=None) -> Timeline:
    """Run the streams to completion; each request's start and end time.

    A request with a route latency L issued at t starts its transfer at t + L (as in SimGrid's
    network model: latency, then bandwidth shared max-min); its ``start`` is t, so its latency
    in the timeline includes L."""
    n = len(requests.stream)
    latency = np.zeros(n) if requests.latency is None else np.asarray(requests.latency, dtype=float)
    capacity = np.asarray(capacity, dtype=np.float64)
    size = np.asarray(requests.size, dtype=np.float64)
    paths = requests.paths
    check(paths, capacity, np.where(size > 0, np.inf, 0.0))
    release = np.full(n, -np.inf) if requests.release is None else requests.release + latency
    # the kernel's start is the issue time plus the latency: the window between two issues is
    # the window between two kernel starts plus the change of latency
    pace = np.full(n, -np.inf)
    if requests.window is not None and n:
        pace = np.where(
            requests.window > 0, requests.window + latency - np.r_[0, latency[:-1]], pace
        )
    streams = Streams(
        stream=np.asarray(requests.stream, dtype=np.int64),
        gap=np.asarray(requests.gap, dtype=np.float64) + latency,  # issue, then the latency
        release=np.asarray(release, dtype=np.float64),
        pace=pace,
        start=np.full(n, np.nan),
        end=np.full(n, np.nan),
        arrival=np.full(n, np.inf),
        aheap=np.full(n, -1, np.int64),
        apos=np.full(n, -1, np.int64),
        counters=np.zeros(2, np.int64),
    )
    system = System.new(paths, capacity, size)
    for k in requests.first():
        streams.arrival[k] = issue_time(0.0, streams.gap[k], streams.release[k], -np.inf, 0.0)
        streams.counters[ASIZE] = heap_push(
            streams.aheap, streams.apos, streams.arrival, streams.counters[ASIZE], k
        )
    budget = FIRST_CALL_EVENTS  # then grown (or shrunk) to CALL_SECONDS a call
    while True:  # back in Python (Ctrl-C, progress) every CALL_SECONDS or so
        began = time.perf_counter()
        done = _advance(budget, streams, system)
        if done < 0:
            raise ValueError("a flow got no bandwidth: check the route's capacities")
        if progress is not None and done:
            progress(done)
        if done < budget:
            break
        took = max(time.perf_counter() - began, 1e-6)
        # at most 4x more a call: an event's cost grows as flows start (a million at once)
        budget = int(min(EVENTS_PER_CALL, 4 * budget, max(64, budget * CALL_SECONDS / took)))
    start = streams.start - latency
    events, resolved = int(streams.counters[EVENTS]), int(system.counters[SOLVED])
    return Timeline(start, streams.end, system.moved, events, resolved)


@njit(cache=True, inline="always", error_model="numpy")
def _issue_next(streams, k):  # pragma: no cover - compiled
    """Request ``k`` completed: queue its stream's next request, if any."""
    stream, nxt = streams.stream, k + 1
    if nxt < len(stream) and stream[nxt] == stream[k]:
        streams.arrival[nxt] = issue_time(
            streams.end[k], streams.gap[nxt], streams.release[nxt], streams.start[k],
            streams.pace[nxt],
        )  # fmt: skip
        streams.counters[ASIZE] = heap_push(
            streams.aheap, streams.apos, streams.arrival, streams.counters[ASIZE], nxt
        )


@njit(**LOOP)
def _advance(budget, streams, system):  # pragma: no cover - compiled
    """Process up to ``budget`` events; returns how many (-1: a flow got no bandwidth)."""
    arrival, aheap, apos, counters = streams.arrival, streams.aheap, streams.apos, streams.counters
    done = 0
    while done < budget and (system.counters[FSIZE] or counters[ASIZE]):
        now = min(next_finish(system), arrival[aheap[0]] if counters[ASIZE] else np.inf)
        horizon = now + SAME_INSTANT * now
        begin(system)
        while True:  # ends
            k = finish_first(system, horizon)
            if k < 0:
                break
            streams.end[k] = system.finish[k]
            _issue_next(streams, k)
        while counters[ASIZE] and arrival[aheap[0]] <= horizon:  # starts
            k = aheap[0]
            counters[ASIZE] = heap_remove(aheap, apos, arrival, counters[ASIZE], k)
            streams.start[k] = arrival[k]
            if system.size[k] == 0:  # an empty request completes at once
                streams.end[k] = streams.start[k]
                _issue_next(streams, k)
                continue
            join(system, k, now)
        if not update(system, now):
            return -1
        done += 1
    counters[EVENTS] += done
    return done
