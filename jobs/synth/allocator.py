"""A Slurm-like allocator and scheduler (paper 004 §3.3.1).

Node selection follows Slurm on Tianhe-1A and CS19 (the steps are in
:mod:`burstlake.allocation`): the topology (tree) step puts a job on the fewest leaf switches
(here cabinets), best fit; otherwise best fit on consecutive free nodes; when neither fits (a
busy, fragmented machine) the job takes scattered free nodes — the lowest ones, or free nodes
spread over the machine. A share of jobs skips the consecutive step (node features,
reservations and weights make production allocations less tidy). So small jobs mostly sit in
their minimal number of cabinets and large ones spill over (Fig. 4), unevenly or not (Fig. 5).
Scheduling is first come first served with backfill of smaller jobs; a head job that has
waited ``max_head_wait_s`` stops the backfill until it starts.
"""

from __future__ import annotations

import heapq
import math
from dataclasses import dataclass

import numpy as np

from burstlake.allocation import consecutive, fewest_groups, lowest_free, random_free
from burstlake.jobs.synth.calibration import Calibration
from burstlake.jobs.synth.submissions import Submissions
from burstlake.presets import ForwardingMachine


@dataclass(frozen=True)
class AllocatorPolicy:
    """How often each step of node selection is taken (shares of jobs, 004 §3.3.1)."""

    tree_fit_share: float = 0.0  # the topology step (fewest cabinets) first
    scatter_share: float = 0.0  # skip the consecutive best fit: scattered nodes directly
    spread_share: float = 0.0  # scattered jobs take free nodes spread over the machine


class Allocator:
    """Which nodes are free, and the choice of nodes for a job of ``n`` nodes."""

    def __init__(
        self, machine: ForwardingMachine, policy: AllocatorPolicy, rng: np.random.Generator
    ):
        self.free = np.ones(machine.nodes, dtype=bool)
        self.free_count = machine.nodes
        self.cabinet = np.arange(machine.nodes) // machine.nodes_per_cabinet  # the groups
        self.policy = policy
        self.rng = rng

    def allocate(self, n: int) -> np.ndarray | None:
        """Sorted node indices for a job of ``n`` nodes, or None when too few are free."""
        if n > self.free_count:
            return None
        step = self.rng.random()
        tree, scatter = self.policy.tree_fit_share, self.policy.scatter_share
        nodes = fewest_groups(self.free, n, self.cabinet) if step < tree else None
        if nodes is None and not tree <= step < tree + scatter:
            nodes = consecutive(self.free, n)
        if nodes is None:
            nodes = self._scattered(n)
        self.free[nodes] = False
        self.free_count -= n
        return nodes

    def _scattered(self, n: int) -> np.ndarray:
        """The lowest free nodes, or (``spread_share`` of jobs) free nodes drawn at random."""
        if self.rng.random() < self.policy.spread_share:
            return random_free(self.free, n, self.rng)
        return lowest_free(self.free, n)

    def release(self, nodes: np.ndarray) -> None:
        self.free[nodes] = True
        self.free_count += len(nodes)


@dataclass(frozen=True)
class Placement:
    """Where and when each submitted job ran; ``start_s`` is -1 for jobs never started."""

    start_s: np.ndarray
    nodes: list[np.ndarray | None]  # sorted node indices per job


def schedule(
    cal: Calibration,
    machine: ForwardingMachine,
    jobs: Submissions,
    window_s: int,
    rng: np.random.Generator,
) -> Placement:
    """Run the submissions through the scheduler until the window closes."""
    policy = AllocatorPolicy(cal.tree_fit_share, cal.scatter_share, cal.spread_share)
    allocator = Allocator(machine, policy, rng)
    start = np.full(len(jobs), -1, dtype=np.int64)
    nodes: list[np.ndarray | None] = [None] * len(jobs)
    running: list[tuple[int, int]] = []  # heap of (end, job)
    queue: list[int] = []
    head = submitted = 0
    while True:
        next_submit = int(jobs.submit_s[submitted]) if submitted < len(jobs) else math.inf
        now = min(next_submit, running[0][0] if running else math.inf)
        if now >= window_s:
            break
        released = False
        while running and running[0][0] <= now:
            allocator.release(nodes[heapq.heappop(running)[1]])
            released = True
        arrived = len(queue)
        while submitted < len(jobs) and jobs.submit_s[submitted] <= now:
            queue.append(submitted)
            submitted += 1
        while head < len(queue) and start[queue[head]] >= 0:
            head += 1
        # Without a release, only the newly arrived jobs can fit where others did not.
        for job in _candidates(queue, head if released else arrived, start, cal.backfill_depth):
            if allocator.free_count == 0:
                break
            chosen = allocator.allocate(int(jobs.nnodes[job]))
            if chosen is None:
                if job == queue[head] and now - jobs.submit_s[job] >= cal.max_head_wait_s:
                    break  # the head job has waited too long: reserve for it
                continue
            start[job] = now
            nodes[job] = chosen
            heapq.heappush(running, (now + int(jobs.runtime_s[job]), job))
    return Placement(start, nodes)


def _candidates(queue: list[int], first: int, start: np.ndarray, depth: int) -> list[int]:
    """Up to ``depth`` queued jobs not yet started, from position ``first`` on."""
    found: list[int] = []
    for job in queue[first:]:
        if start[job] < 0:
            found.append(job)
            if len(found) == depth:
                break
    return found
