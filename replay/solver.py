"""Max-min fair bandwidth sharing by progressive filling (SPEC §5; SimGrid's flow model, as used
for the fat-tree study of paper 000 §3 at flow level).

Every flow crosses a set of capacitated resources; all unfrozen flows grow at the same pace until
a resource saturates or a flow reaches its own rate cap; the flows held by that constraint are
frozen and the others keep growing. The result is the unique max-min fair allocation. Each sweep
jumps straight to the next saturating resource: per resource the water level its flows would
reach (flows capped lower keep their caps), the lowest level in the group saturates first.

The solver is vectorised and *batched*: flows carry a ``group`` and flows of different groups
never share a resource (each group sees its own copy of every resource), so the interval driver
solves thousands of intervals, or of "job alone" replays, in one call. Groups progress
independently, so the number of NumPy sweeps is the largest number of distinct bottleneck
levels in any one group, not their sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RELATIVE_TOLERANCE = 1e-12  # a resource or cap within this fraction of its limit is saturated


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


def _segment_min(values: np.ndarray, segment: np.ndarray, segments: int) -> np.ndarray:
    """Minimum of ``values`` per segment id (``segment`` sorted ascending); inf when empty."""
    out = np.full(segments, np.inf)
    if len(values) == 0:
        return out
    starts = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]])
    out[segment[starts]] = np.minimum.reduceat(values, starts)
    return out


def max_min_rates(
    paths: Paths,
    capacity: np.ndarray,
    cap: np.ndarray | None = None,
    group: np.ndarray | None = None,
) -> np.ndarray:
    """Max-min fair rates of the flows in ``paths`` over resources of ``capacity`` (bytes/s).

    ``cap`` bounds each flow's rate (its demand; inf = none); ``group`` (ints) separates
    independent problems solved together. A flow with no resource needs a finite cap.
    """
    flows = paths.flows
    capacity = np.asarray(capacity, dtype=np.float64)
    cap = np.full(flows, np.inf) if cap is None else np.asarray(cap, dtype=np.float64)
    group = np.zeros(flows, dtype=np.int64) if group is None else np.asarray(group)
    if flows == 0:
        return np.zeros(0)
    _check(paths, capacity, cap)

    # groups contiguous (for segment minima); the drivers usually pass them sorted already
    order = np.arange(flows) if _sorted(group) else np.argsort(group, kind="stable")
    change = np.r_[False, np.diff(group[order]) != 0]
    flow_group = np.cumsum(change)
    groups = flow_group[-1] + 1
    flow_cap = cap[order]
    sorted_paths = paths.take(order)
    entry_flow = sorted_paths.flow_of_entry()
    # a private copy of every resource per group: (group, resource) -> local resource id;
    # entries sorted by local resource, then flow cap, once (masks keep that order)
    keys = flow_group[entry_flow] * len(capacity) + sorted_paths.indices
    by_level = np.lexsort((flow_cap[entry_flow], keys))
    keys, entry_flow = keys[by_level], entry_flow[by_level]
    first = np.r_[True, keys[1:] != keys[:-1]]
    entry_resource = np.cumsum(first) - 1
    local_keys = keys[first]
    resource_group = local_keys // len(capacity)
    remaining = capacity[local_keys % len(capacity)].copy()
    rate = np.zeros(flows)
    active = flow_cap > 0
    while active.any():
        live = active[entry_flow]
        flow, resource = entry_flow[live], entry_resource[live]
        level = _water_levels(resource, flow_cap[flow], remaining)
        bottleneck = _segment_min(level, resource_group, groups)[flow_group]
        tight = level[resource] <= bottleneck[flow] * (1 + RELATIVE_TOLERANCE)
        held = np.bincount(flow[tight], minlength=flows) > 0
        capped = active & (flow_cap <= bottleneck * (1 + RELATIVE_TOLERANCE))
        done = active & (held | capped)
        rate[done] = np.minimum(flow_cap[done], bottleneck[done])
        active &= ~done
        frozen = done[entry_flow]
        used = np.bincount(
            entry_resource[frozen], weights=rate[entry_flow[frozen]], minlength=len(remaining)
        )
        remaining = np.maximum(remaining - used, 0.0)
    out = np.empty(flows)
    out[order] = rate
    return out


def _water_levels(resource: np.ndarray, cap: np.ndarray, remaining: np.ndarray) -> np.ndarray:
    """Per resource, the fair level L its active flows would reach alone: the flows capped
    below L keep their cap, the rest get L, and together they fill the remaining capacity
    (inf when all of them fit at their caps). Entries are (resource, flow cap) pairs sorted by
    resource, then cap."""
    level = np.full(len(remaining), np.inf)
    starts = np.flatnonzero(np.r_[True, resource[1:] != resource[:-1]])
    counts = np.diff(np.r_[starts, len(resource)])
    segment = np.repeat(np.arange(len(starts)), counts)
    position = np.arange(len(resource)) - starts[segment]
    finite = np.where(np.isfinite(cap), cap, 0.0)
    before = np.cumsum(finite) - finite  # caps of the smaller flows, from the segment start
    before -= before[starts][segment]
    with np.errstate(invalid="ignore"):
        candidate = (remaining[resource] - before) / (counts[segment] - position)
    fits = candidate <= cap
    first = np.minimum.reduceat(np.where(fits, np.arange(len(resource)), len(resource)), starts)
    found = first < len(resource)
    level[resource[starts[found]]] = candidate[first[found]]
    return level


def _sorted(values: np.ndarray) -> bool:
    return len(values) < 2 or bool(np.all(values[1:] >= values[:-1]))


def _check(paths: Paths, capacity: np.ndarray, cap: np.ndarray) -> None:
    if len(cap) != paths.flows:
        raise ValueError(f"{len(cap)} rate caps for {paths.flows} flows")
    if np.any(capacity <= 0):
        raise ValueError("every resource needs a positive capacity (bytes/s)")
    if len(paths.indices) and (paths.indices.min() < 0 or paths.indices.max() >= len(capacity)):
        raise ValueError("a flow route names a resource that does not exist")
    if np.any((paths.lengths == 0) & ~np.isfinite(cap)):
        raise ValueError("a flow crossing no resource needs a finite rate cap")
