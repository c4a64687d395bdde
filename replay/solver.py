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
of every resource), the event driver re-solves only the flows an event can change
(:func:`fill` on part of the flows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

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
        capped = capped[:ncapped][np.argsort(cap[flows[capped[:ncapped]]], kind="mergesort")]
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
