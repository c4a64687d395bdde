"""Job placement what-ifs (docs/design.md, "Placement"): the jobs of a demand placed again by a
strategy of :mod:`burstlake.allocation` — ``control`` and ``split`` (paper 002 §2.3),
``best-fit`` (Slurm, 004 §3.3.1), ``random-node`` and ``random-switch`` (000 §5.1).

Any demand that can be placed implements :class:`~burstlake.replay.demands.Placeable`: the
jobs to place, in start order, and the same demand with each job's traffic moved (by node
index) to its new nodes. The groups
are the topology's (:meth:`~burstlake.replay.graph.Topology.groups`: leaf switches on a
fat-tree, ION groups elsewhere). Each policy takes a ``seed`` setting (default 0).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from burstlake.allocation import STRATEGIES, JobRequest, place_in_order
from burstlake.replay.demands import Placeable
from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, register


def seed_of(policy: str, seed: Any) -> int:
    """A policy's ``seed`` setting: an integer >= 0 (one-line error otherwise)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"policy {policy}: seed must be an integer >= 0, got {seed!r}")
    return seed


def place(
    topology: Topology,
    demand: Any,
    strategy: str,
    rng: np.random.Generator,
    group: np.ndarray | None = None,
    **settings: Any,
) -> Any:
    """``demand`` with its jobs placed on ``topology`` by ``strategy``, in start order, over
    ``group`` (a group per node; the topology's groups when None)."""
    if not isinstance(demand, Placeable):
        raise ValueError(
            f"policy {strategy} places jobs; this workload has none to place "
            f"(workload sources with jobs: jobs, lake)"
        )
    group = topology.groups() if group is None else group
    chosen = STRATEGIES[strategy]

    def choose(free: np.ndarray, request: JobRequest) -> np.ndarray | None:
        return chosen(free, request.nodes, group, rng, **settings)

    jobs = demand.placement_jobs(topology)
    return demand.placed(topology, place_in_order(jobs, group, choose, len(topology.nodes)))


def _placement(strategy: str, seed: Any, **settings: Any) -> Apply:
    seed = seed_of(strategy, seed)

    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        rng = np.random.default_rng(seed)
        return topology, place(topology, demand, strategy, rng, **settings)

    return apply


def _seeded(strategy: str, seed: int = 0) -> Apply:
    return _placement(strategy, seed)


for _name in ("control", "best-fit", "random-node", "random-switch"):
    register(_name)(partial(_seeded, _name))


@register("split")
def split_policy(s: int = 2, seed: int = 0) -> Apply:
    if isinstance(s, bool) or not isinstance(s, int) or s < 1:
        raise ValueError(f"policy split: s must be an integer >= 1 (groups per job), got {s!r}")
    return _placement("split", seed, s=s)
