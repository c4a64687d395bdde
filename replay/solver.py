"""Max-min fair bandwidth sharing by progressive filling (docs/design.md, "Replay"; SimGrid's flow
model, as used for the fat-tree study of paper 000 §3 at flow level).

Every flow crosses a set of capacitated resources; all unfrozen flows grow at the same pace until
a resource saturates or a flow reaches its own rate cap; the flows held by that constraint are
frozen and the others keep growing. The result is the unique max-min fair allocation.

The kernel follows SimGrid's lmm solver (``src/kernel/lmm/maxmin.cpp``: a resource's level is
``remaining / usage``, the lowest level saturates next, a flow whose bound is below it is fixed
at its bound first). A resource whose level starts above every limit of its flows (cap, or
the capacity of a resource crossed) cannot saturate and is left out; the others are scanned
for the lowest level while few (``SCAN_LIMIT``), else kept in a binary heap in place of
SimGrid's rescans of the saturated-constraint set, so one solve costs O(entries + resources ·
log resources). It is
compiled with Numba (``cache=True``: compiled once per machine) and shared by both drivers:
:func:`max_min_rates` solves a batch of independent problems (each ``group`` sees its own copy
of every resource); :class:`System` keeps the flows in flight between the event driver's
changes and re-solves only the flows a change can alter (its selective update, :func:`update`,
as SimGrid's ``lmm::System``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numba.core.cpu
import numpy as np
from numba import njit


@dataclass(frozen=True)
class Paths:
    """Flow routes as CSR rows: flow ``f`` crosses ``indices[indptr[f]:indptr[f + 1]]``."""

    indptr: np.ndarray  # int64, len = flows + 1
    indices: np.ndarray  # int64 resource ids

    @property
    def flows(self) -> int:
        return len(self.indptr) - 1

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.indptr)

    @classmethod
    def from_lists(cls, routes: list[list[int]]) -> Paths:
        lengths = np.fromiter((len(r) for r in routes), dtype=np.int64, count=len(routes))
        indptr = np.zeros(len(routes) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        flat = [r for route in routes for r in route]
        return cls(indptr, np.asarray(flat, dtype=np.int64))

    def take(self, rows: np.ndarray) -> Paths:
        """The routes of ``rows`` (a flow per row, rows may repeat), vectorised."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        indptr = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lengths, out=indptr[1:])
        starts = np.repeat(self.indptr[rows] - indptr[:-1], lengths)
        return Paths(indptr, self.indices[starts + np.arange(indptr[-1], dtype=np.int64)])

    def flow_of_entry(self) -> np.ndarray:
        return np.repeat(np.arange(self.flows, dtype=np.int64), self.lengths)


def max_min_rates(
    paths: Paths,
    capacity: np.ndarray,
    cap: np.ndarray | None = None,
    group: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rates of the flows in ``paths`` over resources of ``capacity`` (bytes/s).

    ``cap`` bounds each flow's rate (its demand; inf = none); ``group`` (ints) separates
    independent problems solved together. A flow with no resource needs a finite cap.

    Within a group, a resource whose flows' caps sum to at most ``capacity · (1 −
    SATURABLE_MARGIN)`` can never saturate: a flow crossing only such resources gets its cap
    (what the filling gives it too), and only the other flows are filled, over the resources
    that may saturate (:func:`saturable`).
    """
    flows = paths.flows
    capacity = np.asarray(capacity, dtype=np.float64)
    cap = np.full(flows, np.inf) if cap is None else np.asarray(cap, dtype=np.float64)
    if flows == 0:
        return np.zeros(0)
    check(paths, capacity, cap)
    group = np.zeros(flows, np.int64) if group is None else np.asarray(group, dtype=np.int64)
    order = np.arange(flows, dtype=np.int64)
    if np.any(group[1:] < group[:-1]):
        order = np.argsort(group, kind="stable")
    rate = np.zeros(flows)
    _solve_groups(order, group, paths.indptr, paths.indices, capacity, cap, rate)
    return rate


SATURABLE_MARGIN = 1e-6  # caps summing within this fraction of a capacity may saturate it


@njit(cache=True, inline="always", error_model="numpy")
def _group_end(order, group, a):  # pragma: no cover - compiled
    """End of the run of ``order`` positions from ``a`` holding one group."""
    z = a
    while z < len(order) and group[order[z]] == group[order[a]]:
        z += 1
    return z


@njit(cache=True, inline="always", error_model="numpy")
def _group_load(order, a, z, route, indptr, indices, cap, load, stamp, b):  # pragma: no cover
    """Sum the caps of the flows at ``order[a:z]`` (one group, stamp ``b``) per resource."""
    for i in range(a, z):
        f = order[i]
        for e in range(indptr[route[f]], indptr[route[f] + 1]):
            r = indices[e]
            if stamp[r] != b:
                stamp[r] = b
                load[r] = 0.0
            load[r] += max(cap[f], 0.0)


@njit(cache=True, error_model="numpy")
def saturable(order, group, route, indptr, indices, capacity, cap):  # pragma: no cover
    """Per flow, whether a resource it crosses may saturate in its group: the caps of the
    group's flows on it sum above ``capacity · (1 − SATURABLE_MARGIN)``. Flow ``f`` crosses
    route ``route[f]`` of (indptr, indices); ``order`` lists the flows group by group."""
    hot = np.zeros(len(group), np.bool_)
    load = np.zeros(len(capacity))
    stamp = np.full(len(capacity), -1, np.int64)
    a = 0
    b = 0
    while a < len(order):
        z = _group_end(order, group, a)
        _group_load(order, a, z, route, indptr, indices, cap, load, stamp, b)
        for i in range(a, z):
            f = order[i]
            for e in range(indptr[route[f]], indptr[route[f] + 1]):
                if load[indices[e]] > capacity[indices[e]] * (1 - SATURABLE_MARGIN):
                    hot[f] = True
        a = z
        b += 1
    return hot


@njit(cache=True, error_model="numpy")
def _solve_groups(order, group, indptr, indices, capacity, cap, rate):  # pragma: no cover
    """:func:`max_min_rates` on flows listed group by group in ``order``: flows on resources
    that cannot saturate get their cap; the others are filled in one :func:`fill` over a
    private copy per group of each resource that may saturate (the others never bind)."""
    flows = len(group)
    route = np.arange(flows)
    hot = saturable(order, group, route, indptr, indices, capacity, cap)
    load = np.zeros(len(capacity))
    stamp = np.full(len(capacity), -1, np.int64)
    copy = np.empty(len(capacity), np.int64)  # resource -> its copy in the current group
    hard = np.empty(flows, np.int64)
    hindptr = np.zeros(flows + 1, np.int64)
    hindices = np.empty(len(indices), np.int64)
    hcapacity = np.empty(len(indices))
    nh = 0
    ne = 0
    nc = 0
    a = 0
    b = 0
    while a < flows:
        z = _group_end(order, group, a)
        _group_load(order, a, z, route, indptr, indices, cap, load, stamp, b)
        for i in range(a, z):
            f = order[i]
            if not hot[f]:
                rate[f] = max(cap[f], 0.0)
                continue
            for e in range(indptr[f], indptr[f + 1]):
                r = indices[e]
                if load[r] <= capacity[r] * (1 - SATURABLE_MARGIN):
                    continue
                if stamp[r] != -2 - b:  # first flow of this group on r: a new copy
                    stamp[r] = -2 - b
                    copy[r] = nc
                    hcapacity[nc] = capacity[r]
                    nc += 1
                hindices[ne] = copy[r]
                ne += 1
            hard[nh] = f
            nh += 1
            hindptr[nh] = ne
        a = z
        b += 1
    if nh:
        part = np.arange(nh)
        hrate = np.zeros(nh)
        hcap = np.empty(nh)
        for i in range(nh):
            hcap[i] = cap[hard[i]]
        scratch = np.full(nc, -1, np.int64)
        fill(part, hindptr, hindices, hcapacity[:nc], hcap, hrate, scratch, np.zeros(nc))
        for i in range(nh):
            rate[hard[i]] = hrate[i]


def check(paths: Paths, capacity: np.ndarray, cap: np.ndarray) -> None:
    """Refuse a problem the solver cannot share: one line naming what is wrong."""
    if len(cap) != paths.flows:
        raise ValueError(f"{len(cap)} rate caps for {paths.flows} flows")
    if np.any(capacity <= 0):
        raise ValueError("every resource needs a positive capacity (bytes/s)")
    if len(paths.indices) and (paths.indices.min() < 0 or paths.indices.max() >= len(capacity)):
        raise ValueError("a flow route names a resource that does not exist")
    if np.any((paths.lengths == 0) & ~np.isfinite(cap)):
        raise ValueError("a flow crossing no resource needs a finite rate cap")


SCAN_LIMIT = 256  # fill scans up to this many resources that may saturate for the lowest, else
# keeps them in a heap
UNBOUND_MARGIN = 1e-9  # a resource whose level starts this much above its bound stays unheaped


class Scratch(NamedTuple):
    """Work arrays of :func:`fill`, allocated once for many calls (an event loop's)."""

    links: np.ndarray  # per entry: int64
    remaining: np.ndarray  # per entry: float64
    usage: np.ndarray  # per entry: int64
    start: np.ndarray  # per entry + 1: int64
    member: np.ndarray  # per entry: int64
    frozen: np.ndarray  # per flow: bool
    capped: np.ndarray  # per flow: int64
    level: np.ndarray  # per entry: float64
    heap: np.ndarray  # per entry: int64
    pos: np.ndarray  # per entry: int64
    entry: np.ndarray  # per entry: int64
    offset: np.ndarray  # per flow + 1: int64
    spare: np.ndarray  # per flow: int64 (the merge sort's other half)


@njit(cache=True, error_model="numpy")
def scratch(entries, flows):  # pragma: no cover - compiled
    """Work arrays for :func:`fill_into` on up to ``flows`` flows crossing ``entries`` entries."""
    return Scratch(
        np.empty(entries, np.int64),
        np.empty(entries),
        np.empty(entries, np.int64),
        np.empty(entries + 1, np.int64),
        np.empty(entries, np.int64),
        np.empty(flows, np.bool_),
        np.empty(flows, np.int64),
        np.empty(entries),
        np.empty(entries, np.int64),
        np.empty(entries, np.int64),
        np.empty(entries, np.int64),
        np.empty(flows + 1, np.int64),
        np.empty(flows, np.int64),
    )


@njit(cache=True, error_model="numpy")
def fill(flows, indptr, indices, capacity, cap, rate, local, froze):  # pragma: no cover
    """Write the max-min fair rate of each flow in ``flows`` into ``rate[flow]``, and into
    ``froze[resource]`` the level of each resource that saturated holding unfrozen flows
    (untouched for the others).

    Only the resources these flows cross take part: the event driver passes the flows an event
    can change, over the capacity the others leave. ``local`` is scratch, -1 for every resource
    on entry and on exit.
    """
    entries = 0
    for f in flows:
        entries += indptr[f + 1] - indptr[f]
    work = scratch(entries, len(flows))
    fill_into(flows, indptr, indices, capacity, cap, rate, local, froze, work)


@njit(cache=True, error_model="numpy")
def fill_into(flows, indptr, indices, capacity, cap, rate, local, froze, work):  # pragma: no cover
    """:func:`fill` with its work arrays given (:func:`scratch`, large enough for ``flows``)."""
    links, remaining, usage = work.links, work.remaining, work.usage
    # the flows' routes over local resource numbers, side by side: flow ``flows[i]`` crosses
    # ``entry[offset[i]:offset[i + 1]]``
    entry, offset = work.entry, work.offset
    nl = 0
    ne = 0
    offset[0] = 0
    for i in range(len(flows)):
        f = flows[i]
        if cap[f] > 0:
            for e in range(indptr[f], indptr[f + 1]):
                j = local[indices[e]]
                if j < 0:
                    j = nl
                    local[indices[e]] = j
                    links[j] = indices[e]
                    remaining[j] = capacity[indices[e]]
                    usage[j] = 0
                    nl += 1
                usage[j] += 1
                entry[ne] = j
                ne += 1
        offset[i + 1] = ne
    # resource -> positions in ``flows`` (CSR), and the capped flows in order of their cap
    start, member, frozen, capped = work.start, work.member, work.frozen, work.capped
    start[0] = 0
    for j in range(nl):
        start[j + 1] = start[j] + usage[j]
    cursor = work.heap  # the heap is built after the members: its array serves as cursor first
    for j in range(nl):
        cursor[j] = start[j]
    frozen[: len(flows)] = False
    # a flow's rate is at most its cap and the capacity of each resource it crosses, so a
    # resource saturates at no level above ``bound``: the largest such limit of its flows
    level, heap, pos = work.level, work.heap, work.pos
    bound = level  # per resource, until the levels are set
    bound[:nl] = 0.0
    ncapped = 0
    for i in range(len(flows)):
        f = flows[i]
        if cap[f] <= 0 or indptr[f] == indptr[f + 1]:
            rate[f] = max(cap[f], 0.0)
            frozen[i] = True
            continue
        limit = cap[f]
        for e in range(offset[i], offset[i + 1]):
            limit = min(limit, remaining[entry[e]])
        for e in range(offset[i], offset[i + 1]):
            j = entry[e]
            member[cursor[j]] = i
            cursor[j] += 1
            bound[j] = max(bound[j], limit)
        if cap[f] < np.inf:
            capped[ncapped] = i
            ncapped += 1
    if ncapped:
        _sort_capped(capped, ncapped, cap, flows, work.spare)
    # a resource's level only rises as flows freeze below it, so a stale key in the heap is a
    # lower bound: refreshed when it reaches the top (lazy), not on every freeze. A resource
    # whose level starts above its bound never saturates: it stays out of the heap.
    size = 0
    for j in range(nl):
        start_level = remaining[j] / usage[j]
        if start_level > bound[j] * (1 + UNBOUND_MARGIN):
            continue
        level[j] = start_level
        heap[size] = j
        pos[j] = size
        size += 1
    scan = size <= SCAN_LIMIT  # few resources: a scan for the lowest beats the heap's upkeep
    if not scan:
        for i in range(size // 2 - 1, -1, -1):
            sift_down(heap, pos, level, i, size)
    c = 0
    while True:
        link_level, at, size = _lowest(heap, pos, level, size, remaining, usage, scan)
        while c < ncapped and frozen[capped[c]]:
            c += 1
        cap_level = cap[flows[capped[c]]] if c < ncapped else np.inf
        if cap_level == np.inf and size == 0:
            break
        by_cap = cap_level <= link_level  # a flow reaches its bound before any resource
        if by_cap:
            lo, hi = c, c + 1
            fix = cap_level
        else:  # the lowest resource saturates: every unfrozen flow on it is fixed at its level
            j = heap[at]
            if scan:
                size -= 1
                heap[at] = heap[size]
            else:
                size = heap_remove(heap, pos, level, size, j)
            lo, hi = start[j], start[j + 1]
            fix = link_level
            froze[links[j]] = fix
        for h in range(lo, hi):
            i = capped[h] if by_cap else member[h]
            if frozen[i]:
                continue
            frozen[i] = True
            f = flows[i]
            rate[f] = fix
            for e in range(offset[i], offset[i + 1]):
                j = entry[e]
                usage[j] -= 1
                remaining[j] = max(remaining[j] - fix, 0.0)
    for j in range(nl):
        local[links[j]] = -1


@njit(cache=True, inline="always", error_model="numpy")
def _before(a, b):  # pragma: no cover - compiled
    """Whether cap ``a`` sorts before cap ``b`` (NaN last, as NumPy sorts)."""
    return a < b or (b != b and a == a)


@njit(cache=True, error_model="numpy")
def _sort_capped(capped, n, cap, flows, spare):  # pragma: no cover - compiled
    """Sort ``capped[:n]`` (positions in ``flows``) by their flows' caps, stably (ties keep
    their order: the order of NumPy's stable argsort), without allocating: a bottom-up merge
    sort through ``spare``."""
    src, dst = capped, spare
    swapped = False
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j, o = lo, mid, lo
            while i < mid and j < hi:
                if _before(cap[flows[src[j]]], cap[flows[src[i]]]):
                    dst[o] = src[j]
                    j += 1
                else:
                    dst[o] = src[i]
                    i += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        swapped = not swapped
        width *= 2
    if swapped:
        for i in range(n):
            capped[i] = spare[i]


@njit(cache=True, inline="always", error_model="numpy")
def _lowest(heap, pos, level, size, remaining, usage, scan):  # pragma: no cover - compiled
    """The lowest level of the resources in ``heap[:size]`` that still hold unfrozen flows, its
    slot there, and the size once the others are dropped: by a scan of them (``scan``), or from
    the heap, whose stale keys (lower bounds) are refreshed as they reach the top."""
    if scan:
        lowest, at = np.inf, -1
        k = 0
        while k < size:
            j = heap[k]
            if usage[j] == 0:
                size -= 1
                heap[k] = heap[size]
                continue
            current = remaining[j] / usage[j]
            if current < lowest:
                lowest, at = current, k
            k += 1
        return lowest, at, size
    while size:
        j = heap[0]
        if usage[j] == 0:
            size = heap_remove(heap, pos, level, size, j)
            continue
        current = remaining[j] / usage[j]
        if current > level[j]:
            level[j] = current
            sift_down(heap, pos, level, 0, size)
            continue
        return current, 0, size
    return np.inf, -1, size


# Indexed binary min-heap: ``heap[:size]`` holds items ordered by ``key[item]``; ``pos[item]`` is
# the item's slot, -1 when absent. The solver keeps resource levels in one, the event driver
# finish and arrival times.


@njit(cache=True, inline="always", error_model="numpy")
def sift_up(heap, pos, key, i):  # pragma: no cover - compiled
    item = heap[i]
    while i > 0:
        parent = (i - 1) >> 1
        if key[heap[parent]] <= key[item]:
            break
        heap[i] = heap[parent]
        pos[heap[i]] = i
        i = parent
    heap[i] = item
    pos[item] = i


@njit(cache=True, inline="always", error_model="numpy")
def sift_down(heap, pos, key, i, size):  # pragma: no cover - compiled
    item = heap[i]
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and key[heap[child + 1]] < key[heap[child]]:
            child += 1
        if key[item] <= key[heap[child]]:
            break
        heap[i] = heap[child]
        pos[heap[i]] = i
        i = child
    heap[i] = item
    pos[item] = i


@njit(cache=True, inline="always", error_model="numpy")
def heap_push(heap, pos, key, size, item):  # pragma: no cover - compiled
    heap[size] = item
    pos[item] = size
    sift_up(heap, pos, key, size)
    return size + 1


@njit(cache=True, inline="always", error_model="numpy")
def heap_update(heap, pos, key, size, item):  # pragma: no cover - compiled
    """Restore the order after ``key[item]`` changed."""
    i = pos[item]
    sift_up(heap, pos, key, i)
    sift_down(heap, pos, key, pos[item], size)


@njit(cache=True, inline="always", error_model="numpy")
def heap_remove(heap, pos, key, size, item):  # pragma: no cover - compiled
    i = pos[item]
    pos[item] = -1
    size -= 1
    if i < size:
        heap[i] = heap[size]
        pos[heap[i]] = i
        heap_update(heap, pos, key, size, heap[i])
    return size


# --- the incremental system -------------------------------------------------------------------
# SimGrid's ``lmm::System`` (``src/kernel/lmm/System.cpp``) keeps the variables and constraints
# between solves and re-solves, on a change, only the connected component the change touches
# (its "selective update"). :class:`System` does the same for the event driver
# (:mod:`burstlake.replay.events`), and goes further: the starts and ends at one instant are one
# change; flows slower than the level t* where the change first alters the progressive filling
# keep their rate exactly, so the update re-solves only the flows at or above t* reachable from
# the touched resources (on a resource a start joins, those at or above the level the start
# saturates it at; elsewhere its fastest); each flow keeps the bytes it has moved, so only
# flows whose rate changed get a new finish time in the heap. Each resource holds its flows in
# flight and their rates side by side (slots), so a walk over a resource's flows is a scan of
# one array.

RATE_CHANGE = 1e-13  # a re-solved rate closer than this (relative) to the old one is kept
SETTLED_MARGIN = 1e-9  # rounding guard on the level below which rates are known not to change
SATURATED = 1e-9  # a resource loaded within this fraction of its capacity counts as saturated
REBUILD_SHARE = 4  # the finish heap is rebuilt when an update re-solves over 1/4 of its size
FSIZE, SOLVED, STAMP, QUEUED, FLOWS = range(5)  # System.counters
# The update and the event loop allocate nothing, so they run without Numba's reference
# counting (``_nrt=False``, as the packet model's loop: :data:`burstlake.replay.packet.COMPILED`):
# otherwise every array read from the system costs atomic increments and decrements (a third
# of the loop's time). ``_nrt`` is Numba's own (not public) option: where a Numba lacks it the
# loop keeps the reference counting, slower, with the same results.
LOOP = {"cache": True, "error_model": "numpy"} | (
    {"_nrt": False} if hasattr(numba.core.cpu.CPUTargetOptions, "_nrt") else {}
)


class System(NamedTuple):
    """The flows in flight over capacitated resources, their max-min rates and finish times,
    kept between changes (SimGrid's ``lmm::System``); changed by :func:`begin`,
    :func:`finish_first` (a flow ends), :func:`join` (a flow starts) and :func:`update` (the
    selective re-solve), by name."""

    indptr: np.ndarray  # the flows' routes (Paths)
    indices: np.ndarray
    capacity: np.ndarray  # per resource, bytes/s
    first: np.ndarray  # per resource: where its slots begin (:func:`slots`)
    size: np.ndarray  # per flow: bytes to move
    rate: np.ndarray  # per flow
    moved: np.ndarray  # bytes moved up to ``since``
    since: np.ndarray  # when the rate last changed
    finish: np.ndarray  # heap keys: finish time of each flow in flight
    fheap: np.ndarray
    fpos: np.ndarray
    reached: np.ndarray  # per flow: stamp of the last change whose component holds it
    component: np.ndarray  # the flows the update re-solves
    solved: np.ndarray  # the component's new rates
    unbounded: np.ndarray  # per flow: no rate cap (inf)
    slot: np.ndarray  # per route entry: its slot while its flow is in flight
    holder: np.ndarray  # per slot: the flow, its rate and its route entry
    held: np.ndarray
    entry: np.ndarray
    count: np.ndarray  # per resource: flows in flight crossing it, in its slots from ``first``
    local: np.ndarray  # scratch of the solver, -1
    seen: np.ndarray  # per resource: stamp of the last change whose component holds it
    queue: np.ndarray  # resources of the component, in discovery order
    residual: np.ndarray  # per resource: capacity less the flows that keep their rate
    load: np.ndarray  # per resource: the rates of the flows in flight on it, summed
    froze: np.ndarray  # per resource: the level at which it froze flows in the last solve
    joined: np.ndarray  # per resource: the level at which this change's starts saturate it
    wide: np.ndarray  # per resource: stamp of the last change that took all its fast flows
    walked: np.ndarray  # per resource: stamp of the last change that walked its flows
    left: np.ndarray  # per resource: the fastest flow its last walk left out
    redo: np.ndarray  # resources to walk again
    work: Scratch  # fill's work arrays
    settled: np.ndarray  # [0]: flows slower than this keep their rate in this change
    counters: np.ndarray  # FSIZE, SOLVED, STAMP, QUEUED, FLOWS

    @classmethod
    def new(cls, paths: Paths, capacity: np.ndarray, size: np.ndarray) -> System:
        """An empty system of ``paths.flows`` flows (none in flight) over ``capacity``."""
        n, entries, resources = paths.flows, len(paths.indices), len(capacity)

        def empty(count: int, value, dtype=np.int64) -> np.ndarray:
            return np.full(count, value, dtype=dtype)

        return cls(
            indptr=paths.indptr,
            indices=paths.indices,
            capacity=capacity,
            first=slots(paths.indices, resources),
            size=size,
            rate=empty(n, 0.0, float),
            moved=empty(n, 0.0, float),
            since=empty(n, 0.0, float),
            finish=empty(n, np.inf, float),
            fheap=empty(n, -1),
            fpos=empty(n, -1),
            reached=empty(n, 0),
            component=empty(n, -1),
            solved=empty(n, 0.0, float),
            unbounded=empty(n, np.inf, float),
            slot=empty(entries, -1),
            holder=empty(entries, -1),
            held=empty(entries, 0.0, float),
            entry=empty(entries, -1),
            count=empty(resources, 0),
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
            work=scratch(entries, n),
            settled=np.full(1, np.inf),
            counters=np.zeros(5, dtype=np.int64),
        )


def slots(indices: np.ndarray, resources: int) -> np.ndarray:
    """Per resource, where its slots begin: one per route entry crossing it (CSR offsets), so
    the flows in flight on a resource and their rates lie side by side."""
    first = np.zeros(resources + 1, dtype=np.int64)
    np.cumsum(np.bincount(indices, minlength=resources), out=first[1:])
    return first


@njit(cache=True, inline="always", error_model="numpy")
def next_finish(system):  # pragma: no cover - compiled
    """The earliest finish time of a flow in flight (inf: none)."""
    if system.counters[FSIZE]:
        return system.finish[system.fheap[0]]
    return np.inf


@njit(cache=True, inline="always", error_model="numpy")
def begin(system):  # pragma: no cover - compiled
    """Open a change: the flows that end and start at one instant, then :func:`update`."""
    system.counters[STAMP] += 1
    system.counters[QUEUED] = 0
    system.counters[FLOWS] = 0
    system.settled[0] = np.inf


@njit(cache=True, inline="always", error_model="numpy")
def _touch(system, link, stamp):  # pragma: no cover - compiled
    """Queue ``link`` as a resource of this change (once)."""
    if system.seen[link] != stamp:
        system.seen[link] = stamp
        system.queue[system.counters[QUEUED]] = link
        system.counters[QUEUED] += 1
        system.joined[link] = np.inf


@njit(cache=True, inline="always", error_model="numpy")
def finish_first(system, horizon):  # pragma: no cover - compiled
    """Take the flow finishing first out of the system if it finishes by ``horizon``: its
    resources lose it and its bytes are counted. The flow, or -1."""
    counters = system.counters
    if not counters[FSIZE] or system.finish[system.fheap[0]] > horizon:
        return -1
    first, count, slot, holder, held, entry = (
        system.first, system.count, system.slot, system.holder, system.held, system.entry
    )  # fmt: skip
    rate, stamp = system.rate, counters[STAMP]
    k = system.fheap[0]
    counters[FSIZE] = heap_remove(system.fheap, system.fpos, system.finish, counters[FSIZE], k)
    system.moved[k] += rate[k] * (system.finish[k] - system.since[k])
    for e in range(system.indptr[k], system.indptr[k + 1]):
        link = system.indices[e]
        system.load[link] -= rate[k]
        count[link] -= 1  # the link's last slot moves into this entry's
        s, last = slot[e], first[link] + count[link]
        holder[s], held[s], entry[s] = holder[last], held[last], entry[last]
        slot[entry[s]] = s
        _touch(system, link, stamp)
        level = _leave_level(rate[k], held[first[link] : first[link] + count[link]])
        system.settled[0] = min(system.settled[0], level)
    return k


@njit(cache=True, inline="always", error_model="numpy")
def join(system, k, now):  # pragma: no cover - compiled
    """Flow ``k`` starts at ``now`` (rate 0 until :func:`update`)."""
    counters = system.counters
    system.since[k] = now
    system.rate[k] = 0.0
    system.reached[k] = counters[STAMP]
    system.component[counters[FLOWS]] = k
    counters[FLOWS] += 1
    for e in range(system.indptr[k], system.indptr[k + 1]):
        link = system.indices[e]
        s = system.first[link] + system.count[link]
        system.count[link] += 1
        system.slot[e], system.holder[s], system.held[s], system.entry[s] = s, k, 0.0, e
        _touch(system, link, counters[STAMP])


@njit(**LOOP)
def update(system, now):  # pragma: no cover - compiled
    """Close a change at ``now``: re-solve the flows it can change (the selective update) and
    give those whose rate changed a new finish time. False if a flow got no bandwidth."""
    indptr, indices, capacity, first = system.indptr, system.indices, system.capacity, system.first
    count, holder, held, slot = system.count, system.holder, system.held, system.slot
    reached, component, queue, redo = system.reached, system.component, system.queue, system.redo
    load, left, walked, wide, seen = (
        system.load,
        system.left,
        system.walked,
        system.wide,
        system.seen,
    )
    residual, froze, solved, rate = system.residual, system.froze, system.solved, system.rate
    moved, since, finish, fheap, fpos = (
        system.moved, system.since, system.finish, system.fheap, system.fpos
    )  # fmt: skip
    counters = system.counters
    stamp, queued, flows = counters[STAMP], counters[QUEUED], counters[FLOWS]
    fsize = counters[FSIZE]
    settled = system.settled[0]
    for i in range(flows):  # a start saturates its resources no lower than this
        for e in range(indptr[component[i]], indptr[component[i] + 1]):
            link = indices[e]
            level = _join_level(capacity[link], held[first[link] : first[link] + count[link]])
            system.joined[link] = level
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
            ceiling = system.joined[link] if q <= touched else np.inf
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
        counters[SOLVED] += flows
        fill_into(
            part, indptr, indices, residual, system.unbounded, solved, system.local, froze,
            system.work,
        )  # fmt: skip
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
    counters[QUEUED], counters[FLOWS] = queued, flows
    # only flows whose rate changed get a new finish time; when they are many, the heap is
    # rebuilt once (O(heap)) instead of sifting each (O(changes · log heap))
    rebuild = flows * REBUILD_SHARE > fsize
    for f in part:
        r = solved[f]
        if r <= 0:
            counters[FSIZE] = fsize
            return False
        if abs(r - rate[f]) <= RATE_CHANGE * r:
            continue
        moved[f] += rate[f] * (now - since[f])
        since[f] = now
        for e in range(indptr[f], indptr[f + 1]):
            load[indices[e]] += r - rate[f]
            held[slot[e]] = r
        rate[f] = r
        finish[f] = now + (system.size[f] - moved[f]) / r
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
    counters[FSIZE] = fsize
    return True


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
    """The fill level at which a resource saturates once this change's new flows (rate 0 in
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
