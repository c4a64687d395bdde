"""I/O-aware compute node reallocation (paper 004 §6.2-§6.4): jobs are placed in start order,
the allocator seeing which nodes are busy at each moment (:func:`~burstlake.allocation.
place_in_order`). A job that is not optimizable gets Slurm's choice (``best-fit``). An
optimizable job (data-intensive, all-rank, low-communication, §6.2; predicted from its
application's earlier jobs) gets its nodes spread over more I/O nodes:

- ``even-node`` (§6.4.1): the job's nodes split into equal groups, one per I/O node, in
  node_index order;
- ``even-traffic`` (§6.4.2): for applications whose traffic distribution is consistent
  (divergence ≤ 0.3, Def. 4), the per-node_index traffic shares predicted from earlier jobs
  are grouped so that every I/O node gets about the same traffic; other optimizable jobs get
  even-node.

How many I/O nodes (§6.4.3, :class:`Diversity`): (1) more than Slurm's choice would use, else
Slurm's choice; (2) reserve 1/3 to 2/3 of the idle I/O-node diversity (distinct I/O nodes with
a free node) for the next optimizable job in the queue by its size, unless that leaves the
current job no more than Slurm's; (3) at least ``min_nodes_per_ion`` compute nodes per I/O
node. The I/O nodes of a machine are its forwarding targets (``topology.ion_of``).

A workload takes part by implementing :class:`~burstlake.replay.demands.Reallocatable`: the
placement contract (``placement_jobs``, ``placed``) and what the allocator may know of each job
before it starts (``io_history``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from burstlake.allocation import STRATEGIES, JobRequest, place_in_order
from burstlake.replay.demands import History, Reallocatable
from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, register
from burstlake.replay.policies.placement import seed_of


@dataclass(frozen=True)
class Diversity:
    """The thresholds of §6.4.3, each a policy setting."""

    reserve_small: float = 1 / 3  # next optimizable job smaller than ``small`` × this one
    reserve_large: float = 2 / 3  # next optimizable job larger than ``large`` × this one
    reserve_between: float = 1 / 2  # otherwise, and when no optimizable job is queued
    small: float = 0.5
    large: float = 2.0
    min_nodes_per_ion: int = 8  # rule (3): fewer compute nodes per I/O node shrink the span

    def __post_init__(self) -> None:
        for name in ("reserve_small", "reserve_large", "reserve_between"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
                raise ValueError(f"{name} must be a fraction in [0, 1), got {value!r}")
        for name in ("small", "large"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{name} must be a positive number, got {value!r}")
        m = self.min_nodes_per_ion
        if isinstance(m, bool) or not isinstance(m, int) or m < 1:
            raise ValueError(f"min_nodes_per_ion must be an integer ≥ 1, got {m!r}")

    def reserve(self, nodes: int, next_nodes: int | None) -> float:
        """Rule (2): the share of the idle diversity kept for the next optimizable job."""
        if next_nodes is not None and next_nodes > self.large * nodes:
            return self.reserve_large
        if next_nodes is not None and next_nodes < self.small * nodes:
            return self.reserve_small
        return self.reserve_between

    def ions(self, nodes: int, slurm_ions: int, diversity: int, next_nodes: int | None) -> int:
        """How many I/O nodes an optimizable job of ``nodes`` gets; 0: Slurm's choice."""
        cap = min(nodes, nodes // self.min_nodes_per_ion)  # rule (3)
        kept = math.ceil(self.reserve(nodes, next_nodes) * diversity - 1e-9)
        k = min(cap, diversity - kept)  # rule (2)
        if k <= slurm_ions:  # not enough to reserve: the current job first
            k = min(cap, diversity)
        return k if k > slurm_ions else 0  # rule (1)


def even_sizes(nodes: int, ions: int) -> np.ndarray:
    """``nodes`` split into ``ions`` groups of equal size (the first nodes mod ions one more)."""
    sizes = np.full(ions, nodes // ions)
    sizes[: nodes % ions] += 1
    return sizes


def pick_ions(free_per_ion: np.ndarray, sizes: np.ndarray) -> np.ndarray | None:
    """An I/O node for each group size (largest first): the one with the fewest free nodes
    that still holds it (best fit, lowest on ties), each I/O node once; None if none fits."""
    taken = np.zeros(len(free_per_ion), dtype=bool)
    chosen = np.full(len(sizes), -1)
    for k in np.argsort(-sizes, kind="stable"):
        room = np.flatnonzero(~taken & (free_per_ion >= sizes[k]))
        if not len(room):
            return None
        ion = int(room[np.argmin(free_per_ion[room])])
        chosen[k], taken[ion] = ion, True
    return chosen


def traffic_groups(shares: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Group of each node_index so the groups' traffic is about equal (§6.4.2): the largest
    share first, each to the group with the least traffic that has room (lowest on ties)."""
    traffic = np.zeros(len(sizes))
    room = sizes.astype(np.int64).copy()
    group = np.full(len(shares), -1)
    for j in np.argsort(-np.asarray(shares, dtype=np.float64), kind="stable"):
        open_ = np.flatnonzero(room > 0)
        g = int(open_[np.argmin(traffic[open_])])
        group[j] = g
        traffic[g] += shares[j]
        room[g] -= 1
    return group


def spread(
    free: np.ndarray, ion_of: np.ndarray, nodes: int, ions: int, shares: np.ndarray | None
) -> np.ndarray | None:
    """``nodes`` free nodes over ``ions`` I/O nodes (fewer if they do not fit), returned in
    node_index order: even-node puts consecutive node_indexes on one I/O node, even-traffic
    (``shares`` given) groups them by predicted traffic. None if not even two fit."""
    free_per_ion = np.bincount(ion_of[free], minlength=int(ion_of.max()) + 1)
    for k in range(ions, 1, -1):
        sizes = even_sizes(nodes, k)
        chosen = pick_ions(free_per_ion, sizes)
        if chosen is None:
            continue
        order = np.argsort(chosen)  # groups in I/O node order
        chosen, sizes = chosen[order], sizes[order]
        group = np.repeat(np.arange(k), sizes) if shares is None else traffic_groups(shares, sizes)
        out = np.empty(nodes, dtype=np.int64)
        for g, ion in enumerate(chosen):
            mine = np.flatnonzero(group == g)
            out[mine] = np.flatnonzero(free & (ion_of == ion))[: len(mine)]
        return out
    return None


@dataclass(frozen=True)
class Reallocator:
    """The chooser of :func:`place_in_order` for one replay (§6.4)."""

    topology: Topology
    groups: np.ndarray  # the groups Slurm's best fit sees (``topology.groups()``)
    requests: list[JobRequest]
    history: History
    traffic: bool  # even-traffic where a prediction exists, else even-node
    diversity: Diversity
    rng: np.random.Generator
    next_sizes: np.ndarray  # per job, the next optimizable job's nodes by start (0: none)

    def next_optimizable(self, position: int) -> int | None:
        """Size of the next optimizable job in the queue (by start) after this one."""
        size = int(self.next_sizes[position])
        return size if size > 0 else None

    def __call__(self, free: np.ndarray, request: JobRequest) -> np.ndarray | None:
        position = request.job
        if self.history.available is not None and self.history.available[position] is not None:
            free = free & self.history.available[position]
        ion_of = self.topology.ion_of
        slurm = STRATEGIES["best-fit"](free, request.nodes, self.groups, self.rng)
        if slurm is None or not self.history.optimizable[position]:
            return slurm
        slurm_ions = len(np.unique(ion_of[slurm]))
        diversity = len(np.unique(ion_of[free]))
        k = self.diversity.ions(
            request.nodes, slurm_ions, diversity, self.next_optimizable(position)
        )
        if not k:
            return slurm
        shares = self.history.shares[position] if self.traffic else None
        nodes = spread(free, ion_of, request.nodes, k, shares)
        if nodes is None or len(np.unique(ion_of[nodes])) <= slurm_ions:
            return slurm
        return nodes


def next_sizes(requests: list[JobRequest], history: History) -> np.ndarray:
    """Per job, the node count of the next optimizable job by (start, position), 0 if none."""
    order = sorted(range(len(requests)), key=lambda i: (requests[i].start, i))
    out = np.zeros(len(requests), dtype=np.int64)
    following = 0
    for i in reversed(order):
        out[i] = following
        if history.optimizable[i]:
            following = requests[i].nodes
    return out


def reallocate(
    topology: Topology, demand: Reallocatable, traffic: bool, diversity: Diversity, seed: int
) -> Any:
    """The demand with every job's nodes chosen in start order by the reallocation (§6.4)."""
    requests = demand.placement_jobs(topology)
    if any(r.job != i for i, r in enumerate(requests)):
        raise ValueError("reallocation: placement_jobs must number jobs by position")
    history = demand.io_history(topology, requests)
    groups = topology.groups()
    rng = np.random.default_rng(seed)
    chooser = Reallocator(
        topology, groups, requests, history, traffic, diversity, rng, next_sizes(requests, history)
    )
    nodes = place_in_order(requests, groups, chooser, len(topology.nodes))
    return demand.placed(topology, nodes)


SETTINGS = frozenset({"seed", *(f.name for f in fields(Diversity))})  # of even-node/-traffic


def _policy(name: str, traffic: bool, seed: Any, settings: dict[str, Any]) -> Apply:
    seed = seed_of(name, seed)
    try:
        diversity = Diversity(**settings)
    except ValueError as err:
        raise ValueError(f"policy {name}: {err}") from None

    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        if not isinstance(demand, Reallocatable):
            raise ValueError(
                "reallocation policies need a workload whose jobs can be re-placed "
                "(lake, incremental, io_alltoall)"
            )
        return topology, reallocate(topology, demand, traffic, diversity, seed)

    return apply


@register("even-node", schema=SETTINGS)
def even_node(seed: int = 0, **settings: Any) -> Apply:
    """Optimizable jobs on more I/O nodes, equal node groups (004 §6.4.1)."""
    return _policy("even-node", False, seed, settings)


@register("even-traffic", schema=SETTINGS)
def even_traffic(seed: int = 0, **settings: Any) -> Apply:
    """Optimizable jobs on more I/O nodes, groups of equal predicted traffic (004 §6.4.2)."""
    return _policy("even-traffic", True, seed, settings)
