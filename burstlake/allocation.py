"""Node selection for jobs (docs/design.md, "Placement"): which free nodes a job of ``n`` nodes
gets, by strategy, and jobs placed in start order.

One definition of the Slurm-like selection (paper 004 §3.3.1) used by the trace synthesizer
(``jobs/synth/allocator.py``) and by the placement what-ifs (``replay/policies/placement.py``),
plus the placements of paper 000 §5.1 (random-node, random-switch) and paper 002 §2.3
(control, s-way split).

A machine is described by ``group``: the group of every node in node order (a leaf switch on a
fat-tree, a cabinet or ION group on a forwarding machine), groups being contiguous node ranges.
``free`` is a bool array of the nodes free now. Every strategy is
``f(free, n, group, rng, **settings) -> sorted node indices | None`` (None: it cannot place
``n`` nodes now) and is registered by name in :data:`STRATEGIES`.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

log = logging.getLogger(__name__)

Strategy = Callable[..., "np.ndarray | None"]


# --- consecutive runs ----------------------------------------------------------------------


def runs(free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and length of each run of consecutive free nodes."""
    edges = np.diff(np.concatenate(([0], free.view(np.int8), [0])))
    starts = np.flatnonzero(edges == 1)
    return starts, np.flatnonzero(edges == -1) - starts


def best_fit_run(free: np.ndarray, n: int) -> int | None:
    """First node of the smallest run of at least ``n`` free nodes (lowest on ties)."""
    starts, lengths = runs(free)
    fits = lengths >= n
    if not fits.any():
        return None
    return int(starts[fits][np.argmin(lengths[fits])])


def consecutive(free: np.ndarray, n: int) -> np.ndarray | None:
    """``n`` consecutive free nodes, best fit (Slurm's consecutive step), or None."""
    start = best_fit_run(free, n)
    return None if start is None else np.arange(start, start + n)


# --- groups ----------------------------------------------------------------------------------


def group_starts(group: np.ndarray) -> np.ndarray:
    """First node of each group (groups are contiguous node ranges)."""
    group = np.asarray(group)
    if not len(group):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.r_[True, group[1:] != group[:-1]])


def _bounds(group: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """First node and end (exclusive) of each group."""
    starts = group_starts(group)
    return starts, np.r_[starts[1:], len(group)]


def free_per_group(free: np.ndarray, group: np.ndarray) -> np.ndarray:
    starts = group_starts(group)
    if not len(starts):
        return np.zeros(0, dtype=np.int64)
    return np.add.reduceat(free.astype(np.int64), starts)


def _within_group(free: np.ndarray, low: int, high: int, n: int) -> np.ndarray:
    """``n`` free nodes of nodes low..high-1: best fit on a consecutive run, else the lowest."""
    start = best_fit_run(free[low:high], n)
    if start is not None:
        return low + np.arange(start, start + n)
    return low + np.flatnonzero(free[low:high])[:n]


def fewest_groups(free: np.ndarray, n: int, group: np.ndarray) -> np.ndarray | None:
    """Slurm's topology (tree) step: ``n`` nodes on ⌈n / group size⌉ adjacent groups, best fit
    (the window of groups with the fewest free nodes that still holds ``n``), else on the
    emptiest groups; within one group best fit on consecutive nodes (004 §3.3.1)."""
    starts, ends = _bounds(group)
    if not len(starts):
        return None
    k = math.ceil(n / int((ends - starts).max()))
    per_group = free_per_group(free, group)
    if k > len(per_group):
        return None
    window = np.convolve(per_group, np.ones(k, dtype=np.int64), mode="valid")
    fits = np.flatnonzero(window >= n)
    if len(fits):
        first = int(fits[np.argmin(window[fits])])
        chosen = np.arange(first, first + k)
    else:
        chosen = np.sort(np.argsort(-per_group, kind="stable")[:k])
        if per_group[chosen].sum() < n:
            return None
    if k == 1:
        g = int(chosen[0])
        return _within_group(free, int(starts[g]), int(ends[g]), n)
    mask = np.zeros_like(free)
    for g in chosen:
        mask[starts[g] : ends[g]] = True
    return np.flatnonzero(free & mask)[:n]


# --- strategies --------------------------------------------------------------------------------


def control(
    free: np.ndarray, n: int, group: np.ndarray, rng: np.random.Generator
) -> np.ndarray | None:
    """All ``n`` nodes on one group (002 §2.3 "Control": one leaf switch): the group with the
    fewest free nodes that holds ``n`` (lowest on ties), best fit inside it."""
    starts, ends = _bounds(group)
    per_group = free_per_group(free, group)
    fits = np.flatnonzero(per_group >= n)
    if not len(fits):
        return None
    g = int(fits[np.argmin(per_group[fits])])
    return _within_group(free, int(starts[g]), int(ends[g]), n)


def best_fit(
    free: np.ndarray, n: int, group: np.ndarray, rng: np.random.Generator
) -> np.ndarray | None:
    """Slurm-like (004 §3.3.1): fewest groups, best fit; else consecutive best fit; else the
    lowest free nodes."""
    if n > int(free.sum()):
        return None
    nodes = fewest_groups(free, n, group)
    if nodes is None:
        nodes = consecutive(free, n)
    if nodes is None:
        nodes = lowest_free(free, n)
    return nodes


def lowest_free(free: np.ndarray, n: int) -> np.ndarray | None:
    """The ``n`` lowest free nodes (a busy machine's scattered allocation)."""
    nodes = np.flatnonzero(free)
    return nodes[:n] if len(nodes) >= n else None


def random_free(free: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray | None:
    """``n`` free nodes drawn at random over the machine, sorted."""
    nodes = np.flatnonzero(free)
    return np.sort(rng.choice(nodes, n, replace=False)) if len(nodes) >= n else None


def random_node(
    free: np.ndarray, n: int, group: np.ndarray, rng: np.random.Generator
) -> np.ndarray | None:
    """Random-node (000 §3.1, §5.1): ``n`` free nodes drawn at random, topology-oblivious."""
    return random_free(free, n, rng)


def random_switch(
    free: np.ndarray, n: int, group: np.ndarray, rng: np.random.Generator
) -> np.ndarray | None:
    """Random-switch (000 §5.1): whole free groups drawn at random until they hold ``n`` nodes;
    tasks fill them in order. The last group's unused nodes stay free."""
    starts, ends = _bounds(group)
    whole = np.flatnonzero(free_per_group(free, group) == ends - starts)
    order = rng.permutation(whole)
    held = np.cumsum(ends[order] - starts[order])
    if not len(held) or held[-1] < n:
        return None
    chosen = order[: int(np.searchsorted(held, n)) + 1]
    nodes = np.concatenate([np.arange(starts[g], ends[g]) for g in chosen])
    return np.sort(nodes[:n])


def split(
    free: np.ndarray, n: int, group: np.ndarray, rng: np.random.Generator, s: int = 2
) -> np.ndarray | None:
    """s-way split (002 §2.3): ``n / s`` nodes on each of ``s`` groups (the first ``n mod s``
    take one node more), the emptiest groups first (ties broken at random), so that jobs split
    alike fill the machine evenly."""
    if not 1 <= s <= n:
        raise ValueError(f"split: s must be in 1..{n} (the job's nodes), got {s}")
    starts, ends = _bounds(group)
    share = np.full(s, n // s)
    share[: n % s] += 1
    per_group = free_per_group(free, group)
    order = np.lexsort((rng.permutation(len(per_group)), -per_group))
    chosen = order[:s]
    if len(chosen) < s or per_group[chosen].min() < share[0]:
        return None
    nodes = [
        _within_group(free, int(starts[g]), int(ends[g]), int(k))
        for g, k in zip(chosen, share, strict=True)
    ]
    return np.sort(np.concatenate(nodes))


STRATEGIES: dict[str, Strategy] = {
    "control": control,
    "best-fit": best_fit,
    "random-node": random_node,
    "random-switch": random_switch,
    "split": split,
}


# --- jobs in start order -----------------------------------------------------------------------


@dataclass(frozen=True)
class JobRequest:
    """A job to place: ``nodes`` nodes from ``start`` to ``end`` (seconds)."""

    job: int
    nodes: int
    start: float
    end: float


def place_in_order(
    requests: Sequence[JobRequest],
    group: np.ndarray,
    choose: Callable[[np.ndarray, JobRequest], np.ndarray | None],
    total_nodes: int,
) -> list[np.ndarray]:
    """Each job's nodes, jobs taken in start order and their nodes freed at their end.

    ``choose(free, request)`` picks a job's nodes (or None). A job that cannot be placed at its
    start waits for the next end (logged and counted); a job that does not fit even on an empty
    machine is an error. Returns each job's sorted nodes, index = position in ``requests``."""
    if len(group) != total_nodes:
        raise ValueError(f"placement: group covers {len(group)} of {total_nodes} nodes")
    free = np.ones(total_nodes, dtype=bool)
    placed: list[np.ndarray | None] = [None] * len(requests)
    running: list[tuple[float, int]] = []  # heap of (end, position)
    waited = 0
    order = sorted(range(len(requests)), key=lambda i: (requests[i].start, i))
    for i in order:
        request = requests[i]
        if not 0 < request.nodes <= total_nodes:
            raise ValueError(
                f"placement: job {request.job} asks for {request.nodes} nodes; "
                f"the machine has {total_nodes}"
            )
        now = request.start
        while running and running[0][0] <= now:
            free[placed[heapq.heappop(running)[1]]] = True
        nodes = choose(free, request)
        late = False
        while nodes is None:
            if not running:
                raise ValueError(
                    f"placement: job {request.job} ({request.nodes} nodes) cannot be placed "
                    f"even on an empty machine under this strategy"
                )
            if running[0][0] == math.inf:
                raise ValueError(
                    f"placement: job {request.job} ({request.nodes} nodes) does not fit beside "
                    f"the jobs running with it under this strategy"
                )
            now, j = heapq.heappop(running)
            free[placed[j]] = True
            late = True
            nodes = choose(free, request)
        waited += late
        nodes = np.asarray(nodes, dtype=np.int64)
        free[nodes] = False
        placed[i] = nodes
        heapq.heappush(running, (now + (request.end - request.start), i))
    if waited:
        log.info("placement: %d of %d jobs waited for nodes to free", waited, len(requests))
    return [p for p in placed if p is not None]
