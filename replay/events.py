"""Event-driven replay of request streams (docs/design.md, "Replay"; the traffic model of
paper 000 §3.2).

A *stream* is one client's sequence of requests (I/O requests to an ION or server, MPI messages
to a peer, application I/O phases). Its first request starts at its ``gap``; every later one
starts ``gap`` seconds after the previous one completes ("next request after the previous
completes plus an interval"). Flows share bandwidth max-min fairly.

The loop is compiled (Numba) and incremental, beyond SimGrid's lmm "selective update"
(``src/kernel/lmm/System.cpp``, which re-solves the connected component an action touches):
the starts and ends at one instant are one event; flows slower than the level t* where the
event first changes the progressive filling keep their rate exactly, so the event re-solves
only the flows at or above t* reachable from the touched resources (on a resource a start
joins, those at or above the level the start saturates it at; elsewhere its fastest); each
flow keeps the bytes it has moved, so only flows whose rate changed get a new finish time in
the heap. Each resource holds its flows in flight and their rates side by side (slots), so a
walk over a resource's flows is a scan of one array.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from burstlake.replay.solver import (
    Paths,
    check,
    fill_into,
    heap_push,
    heap_remove,
    heap_update,
    scratch,
    sift_down,
)

SAME_INSTANT = 1e-12  # events closer than this fraction of the clock happen together
RATE_CHANGE = 1e-13  # a re-solved rate closer than this (relative) to the old one is kept
SETTLED_MARGIN = 1e-9  # rounding guard on the level below which rates are known not to change
SATURATED = 1e-9  # a resource loaded within this fraction of its capacity counts as saturated
EVENTS_PER_CALL = 50_000  # compiled events between two progress reports, at most
CALL_SECONDS = 0.25  # and fewer when they take longer than this (Ctrl-C within a second)
REBUILD_SHARE = 4  # the finish heap is rebuilt when an event re-solves over 1/4 of its size


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


@dataclass(frozen=True)
class Timeline:
    """When each request started and ended (seconds), the bytes the fluid model moved for it
    (equal to its size: the conservation check), and the driver's event count."""

    start: np.ndarray
    end: np.ndarray
    delivered: np.ndarray
    events: int
    resolved: int = 0  # flow rates computed over all events (the incremental solver's work)

    @property
    def latency(self) -> np.ndarray:
        return self.end - self.start


def simulate(requests: Requests, capacity: np.ndarray, progress=None) -> Timeline:
    """Run the streams to completion; each request's start and end time.

    A request is issued ``gap`` after the previous one of its stream completes (its stream's
    first at ``gap``), never before its ``release`` time and never sooner than its ``window``
    after the previous one was issued.

    A request with a route latency L issued at t starts its transfer at t + L (as in SimGrid's
    network model: latency, then bandwidth shared max-min); its ``start`` is t, so its latency
    in the timeline includes L."""
    n = len(requests.stream)
    latency = np.zeros(n) if requests.latency is None else np.asarray(requests.latency, dtype=float)
    capacity = np.asarray(capacity, dtype=np.float64)
    size = np.asarray(requests.size, dtype=np.float64)
    paths = requests.paths
    check(paths, capacity, np.where(size > 0, np.inf, 0.0))
    state = _State.new(requests, len(capacity))
    first = np.flatnonzero(np.r_[True, requests.stream[1:] != requests.stream[:-1]]) if n else []
    gap = np.asarray(requests.gap, dtype=np.float64) + latency  # issue, then the latency
    release = np.full(n, -np.inf) if requests.release is None else requests.release + latency
    # the kernel's start is the issue time plus the latency: the window between two issues is
    # the window between two kernel starts plus the change of latency
    pace = np.full(n, -np.inf)
    if requests.window is not None and n:
        pace = np.where(
            requests.window > 0, requests.window + latency - np.r_[0, latency[:-1]], pace
        )
    for k in first:
        state.arrival[k] = max(gap[k], release[k])
        state.counters[1] = heap_push(state.aheap, state.apos, state.arrival, state.counters[1], k)
    stream = np.asarray(requests.stream, dtype=np.int64)
    inputs = (
        stream,
        size,
        gap,
        release,
        pace,
        paths.indptr,
        paths.indices,
        capacity,
        slots(paths.indices, len(capacity)),
    )
    budget = EVENTS_PER_CALL
    while True:  # back in Python (Ctrl-C, progress) every CALL_SECONDS or so
        began = time.perf_counter()
        done = _advance(budget, *inputs, *state.arrays())
        if done < 0:
            raise ValueError("a flow got no bandwidth: check the route's capacities")
        if progress is not None and done:
            progress(done)
        if done < budget:
            break
        took = max(time.perf_counter() - began, 1e-6)
        budget = int(min(EVENTS_PER_CALL, max(64, budget * CALL_SECONDS / took)))
    start = state.start - latency
    return Timeline(start, state.end, state.moved, *map(int, state.counters[2:4]))


@dataclass
class _State:
    """The compiled loop's state between calls (all arrays, so the loop can resume)."""

    start: np.ndarray
    end: np.ndarray
    moved: np.ndarray  # bytes moved up to ``since``
    rate: np.ndarray
    since: np.ndarray  # when the rate last changed
    finish: np.ndarray  # heap keys: finish time of each flow in flight
    fheap: np.ndarray
    fpos: np.ndarray
    arrival: np.ndarray  # heap keys: start time of each pending request
    aheap: np.ndarray
    apos: np.ndarray
    count: np.ndarray  # per resource: flows in flight crossing it, in its slots from ``first``
    slot: np.ndarray  # per route entry: its slot while its flow is in flight
    holder: np.ndarray  # per slot: the flow, its rate and its route entry
    held: np.ndarray
    entry: np.ndarray
    local: np.ndarray  # scratch of the solver, -1
    seen: np.ndarray  # per resource: stamp of the last event whose component holds it
    queue: np.ndarray  # resources of the component, in discovery order
    residual: np.ndarray  # per resource: capacity less the flows that keep their rate
    load: np.ndarray  # per resource: the rates of the flows in flight on it, summed
    froze: np.ndarray  # per resource: the level at which it froze flows in the last solve
    joined: np.ndarray  # per resource: the level at which this event's starts saturate it
    wide: np.ndarray  # per resource: stamp of the last event that took all its fast flows
    walked: np.ndarray  # per resource: stamp of the last event that walked its flows
    left: np.ndarray  # per resource: the fastest flow its last walk left out
    redo: np.ndarray  # resources to walk again
    reached: np.ndarray  # per flow: stamp of the last event whose component holds it
    component: np.ndarray
    solved: np.ndarray  # the component's new rates
    counters: np.ndarray  # finish heap size, arrival heap size, events, flows solved, stamp

    @classmethod
    def new(cls, requests: Requests, resources: int) -> _State:
        n, entries = len(requests.stream), len(requests.paths.indices)

        def empty(count: int, value, dtype=np.int64) -> np.ndarray:
            return np.full(count, value, dtype=dtype)

        return cls(
            start=empty(n, np.nan, float),
            end=empty(n, np.nan, float),
            moved=empty(n, 0.0, float),
            rate=empty(n, 0.0, float),
            since=empty(n, 0.0, float),
            finish=empty(n, np.inf, float),
            fheap=empty(n, -1),
            fpos=empty(n, -1),
            arrival=empty(n, np.inf, float),
            aheap=empty(n, -1),
            apos=empty(n, -1),
            count=empty(resources, 0),
            slot=empty(entries, -1),
            holder=empty(entries, -1),
            held=empty(entries, 0.0, float),
            entry=empty(entries, -1),
            local=empty(resources, -1),
            seen=empty(resources, 0),
            queue=empty(resources, -1),
            residual=empty(resources, 0.0, float),
            load=empty(resources, 0.0, float),
            froze=empty(resources, -1.0, float),
            joined=empty(resources, np.inf, float),
            wide=empty(resources, 0),
            walked=empty(resources, 0),
            left=empty(resources, 0.0, float),
            redo=empty(resources, -1),
            reached=empty(n, 0),
            component=empty(n, -1),
            solved=empty(n, 0.0, float),
            counters=np.zeros(5, dtype=np.int64),
        )

    def arrays(self) -> tuple[np.ndarray, ...]:
        return tuple(self.__dict__.values())


@njit(cache=True, error_model="numpy")
def _advance(  # pragma: no cover - compiled
    budget, stream, size, gap, release, pace, indptr, indices, capacity, first,
    start, end, moved, rate, since, finish, fheap, fpos, arrival, aheap, apos,
    count, slot, holder, held, entry, local, seen, queue, residual, load, froze, joined, wide,
    walked, left, redo, reached, component, solved, counters,
):  # fmt: skip
    """Process up to ``budget`` events; returns how many (-1: a flow got no bandwidth)."""
    n = len(stream)
    fsize, asize, stamp = counters[0], counters[1], counters[4]
    unbounded = np.full(n, np.inf)
    work = scratch(len(indices), n)
    done = 0
    while done < budget and (fsize or asize):
        now = min(finish[fheap[0]] if fsize else np.inf, arrival[aheap[0]] if asize else np.inf)
        horizon = now + SAME_INSTANT * now
        stamp += 1
        queued = 0
        flows = 0
        settled = np.inf  # flows slower than this keep their rate: the filling is the same below
        while fsize and finish[fheap[0]] <= horizon:  # ends
            k = fheap[0]
            fsize = heap_remove(fheap, fpos, finish, fsize, k)
            end[k] = finish[k]
            moved[k] += rate[k] * (finish[k] - since[k])
            for e in range(indptr[k], indptr[k + 1]):
                link = indices[e]
                load[link] -= rate[k]
                count[link] -= 1  # the link's last slot moves into this entry's
                s, last = slot[e], first[link] + count[link]
                holder[s], held[s], entry[s] = holder[last], held[last], entry[last]
                slot[entry[s]] = s
                if seen[link] != stamp:
                    seen[link] = stamp
                    queue[queued] = link
                    queued += 1
                    joined[link] = np.inf
                level = _leave_level(rate[k], held[first[link] : first[link] + count[link]])
                settled = min(settled, level)
            if k + 1 < n and stream[k + 1] == stream[k]:
                arrival[k + 1] = max(end[k] + gap[k + 1], release[k + 1], start[k] + pace[k + 1])
                asize = heap_push(aheap, apos, arrival, asize, k + 1)
        while asize and arrival[aheap[0]] <= horizon:  # starts
            k = aheap[0]
            asize = heap_remove(aheap, apos, arrival, asize, k)
            start[k] = arrival[k]
            if size[k] == 0:  # an empty request completes at once
                end[k] = start[k]
                if k + 1 < n and stream[k + 1] == stream[k]:
                    arrival[k + 1] = max(
                        end[k] + gap[k + 1], release[k + 1], start[k] + pace[k + 1]
                    )
                    asize = heap_push(aheap, apos, arrival, asize, k + 1)
                continue
            since[k] = now
            rate[k] = 0.0
            reached[k] = stamp
            component[flows] = k
            flows += 1
            for e in range(indptr[k], indptr[k + 1]):
                link = indices[e]
                s = first[link] + count[link]
                count[link] += 1
                slot[e], holder[s], held[s], entry[s] = s, k, 0.0, e
                if seen[link] != stamp:
                    seen[link] = stamp
                    queue[queued] = link
                    queued += 1
                    joined[link] = np.inf
        for i in range(flows):  # a start saturates its resources no lower than this
            for e in range(indptr[component[i]], indptr[component[i] + 1]):
                link = indices[e]
                level = _join_level(capacity[link], held[first[link] : first[link] + count[link]])
                joined[link] = level
                settled = min(settled, level)
        settled *= 1 - SETTLED_MARGIN
        # the component: flows in flight at or above ``settled`` reachable from the touched
        # resources through saturated ones; the slower flows they meet keep their rate and
        # their bandwidth. An unsaturated resource passes no change on unless the new rates
        # saturate it: it is then walked too and the component solved again.
        touched = queued  # the resources of the flows that end or start: always walked
        q = 0
        nredo = 0
        while True:
            for i in range(nredo):  # walked again, every flow at or above settled
                link = redo[i]
                flows, queued = _walk(link, settled, 0.0, stamp, first, count, holder, held,
                                      reached, component, flows, indptr, indices, seen, queue,
                                      queued, load, left, walked)  # fmt: skip
                wide[link] = stamp
            nredo = 0
            while q < queued:
                link = queue[q]
                q += 1
                if q > touched and load[link] < capacity[link] * (1 - SATURATED):
                    continue  # closed: walked only if the new rates fill it
                ceiling = joined[link] if q <= touched else np.inf
                flows, queued = _walk(link, settled, ceiling, stamp, first, count, holder, held,
                                      reached, component, flows, indptr, indices, seen, queue,
                                      queued, load, left, walked)  # fmt: skip
            for i in range(queued):  # each resource: its capacity less the other flows
                residual[queue[i]] = capacity[queue[i]] - load[queue[i]]
                froze[queue[i]] = -1.0
            for i in range(flows):
                f = component[i]
                for e in range(indptr[f], indptr[f + 1]):
                    residual[indices[e]] += rate[f]
            part = component[:flows]
            counters[3] += flows
            fill_into(part, indptr, indices, residual, unbounded, solved, local, froze, work)
            for i in range(queued):
                link = queue[i]
                if wide[link] == stamp or froze[link] < 0:
                    continue
                if walked[link] == stamp and left[link] < froze[link] * (1 - SATURATED):
                    continue  # no flow left out on it when walked was as fast
                # the resource froze flows of the component at a level: max-min if no flow left
                # out there is faster, else walk every flow at or above settled on it
                bar = froze[link] * (1 - SATURATED)
                for s in range(first[link], first[link] + count[link]):
                    if held[s] >= bar and reached[holder[s]] != stamp:
                        redo[nredo] = link
                        nredo += 1
                        break
            if not nredo:
                break
        # only flows whose rate changed get a new finish time; when they are many, the heap is
        # rebuilt once (O(heap)) instead of sifting each (O(changes · log heap))
        rebuild = flows * REBUILD_SHARE > fsize
        for f in part:
            r = solved[f]
            if r <= 0:
                return -1
            if abs(r - rate[f]) <= RATE_CHANGE * r:
                continue
            moved[f] += rate[f] * (now - since[f])
            since[f] = now
            for e in range(indptr[f], indptr[f + 1]):
                load[indices[e]] += r - rate[f]
                held[slot[e]] = r
            rate[f] = r
            finish[f] = now + (size[f] - moved[f]) / r
            if rebuild and fpos[f] < 0:
                fheap[fsize] = f
                fpos[f] = fsize
                fsize += 1
            elif not rebuild and fpos[f] >= 0:
                heap_update(fheap, fpos, finish, fsize, f)
            elif not rebuild:
                fsize = heap_push(fheap, fpos, finish, fsize, f)
        if rebuild:
            for i in range(fsize // 2 - 1, -1, -1):
                sift_down(fheap, fpos, finish, i, fsize)
        done += 1
    counters[0], counters[1], counters[4] = fsize, asize, stamp
    counters[2] += done
    return done


@njit(cache=True, inline="always", error_model="numpy")
def _walk(  # pragma: no cover - compiled
    link, settled, ceiling, stamp, first, count, holder, held, reached, component, flows,
    indptr, indices, seen, queue, queued, load, left, walked,
):  # fmt: skip
    """Add the flows on ``link`` at or above ``settled`` and, within the margin, at or above
    the slower of its fastest flow and ``ceiling`` (0: every flow at or above ``settled``)
    to the component, queueing their resources; the others keep their rate. Records the
    link's exact load and the fastest flow it leaves out."""
    a, z = first[link], first[link] + count[link]
    total = 0.0
    top = 0.0
    for s in range(a, z):
        total += held[s]
        top = max(top, held[s])
    load[link] = total  # exact again (no drift of the running sums)
    bar = max(settled, min(top, ceiling) * (1 - SETTLED_MARGIN))
    out = 0.0
    for s in range(a, z):
        r = held[s]
        if r < bar:
            if r > out and reached[holder[s]] != stamp:
                out = r
            continue
        f = holder[s]
        if reached[f] == stamp:
            continue
        reached[f] = stamp
        component[flows] = f
        flows += 1
        for e2 in range(indptr[f], indptr[f + 1]):
            other = indices[e2]
            if seen[other] != stamp:
                seen[other] = stamp
                queue[queued] = other
                queued += 1
    left[link] = out
    walked[link] = stamp
    return flows, queued


def slots(indices: np.ndarray, resources: int) -> np.ndarray:
    """Per resource, where its slots begin: one per route entry crossing it (CSR offsets), so
    the flows in flight on a resource and their rates lie side by side."""
    first = np.zeros(resources + 1, dtype=np.int64)
    np.cumsum(np.bincount(indices, minlength=resources), out=first[1:])
    return first


@njit(cache=True, inline="always", error_model="numpy")
def _leave_level(left, rates):  # pragma: no cover - compiled
    """The lowest level at which a resource's filling changes when a flow of rate ``left``
    leaves it (``rates``: its other flows): the slowest of them at ``left`` or above (the
    resource saturated at ``left`` froze only flows of that rate; below it nothing froze
    there), inf if none."""
    level = np.inf
    floor = left * (1 - SETTLED_MARGIN)
    for r in rates:
        if floor <= r < level:
            level = r
    return level


@njit(cache=True, inline="always", error_model="numpy")
def _join_level(capacity, rates):  # pragma: no cover - compiled
    """The fill level at which a resource saturates once this event's new flows (rate 0 in
    ``rates``; a flow in flight has a positive rate) join its flows of known rates: t with
    sum(min(rate, t)) + new * t = capacity, from below (each pass moves the flows under t to
    their rate)."""
    level = 0.0
    for _ in range(64):
        held, growing = 0.0, 0
        for r in rates:
            if 0 < r < level:
                held += r
            else:
                growing += 1
        nxt = (capacity - held) / growing
        if nxt <= level:
            return level
        level = nxt
    return level
