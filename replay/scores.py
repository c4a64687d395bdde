"""Scores of a replay (paper 004 §4.1, §5.2, §7.4): how evenly the forwarding targets
carry the traffic, how much was delayed, and what it cost jobs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from burstlake.jobs.metrics.nud import nud_of
from burstlake.jobs.metrics.settings import MetricSettings, top_count
from burstlake.replay.events import Timeline
from burstlake.replay.graph import Topology
from burstlake.replay.intervals import Rows, Solved

THRESHOLDS = MetricSettings()  # top 10 % of IONs (004 §7.4.1), busiest 1 % of nodes (§4.1)


@dataclass(frozen=True)
class Score:
    metric: str
    value: float | None
    unit: str


def nud(values: np.ndarray) -> float | None:
    """The NUD of 004 Def. 2 (:func:`~burstlake.jobs.metrics.nud.nud_of`); None where undefined."""
    degree = nud_of(values)
    return None if math.isnan(degree) else degree


def _distribution(name: str, values: np.ndarray, unit: str) -> list[Score]:
    """Median, p10 and p90 over intervals (None without intervals)."""
    stats = np.percentile(values, [50, 10, 90]) if len(values) else [None] * 3
    return [
        Score(f"{name}_{label}", None if v is None else float(v), unit)
        for label, v in zip(("median", "p10", "p90"), stats, strict=True)
    ]


class IonLoad:
    """Bytes each forwarding target served per interval, accumulated over replay chunks."""

    def __init__(self, topology: Topology) -> None:
        self.ion_of = topology.ion_of
        self.ions = len(topology.ions)
        self.top = top_count(THRESHOLDS.top_ion_fraction, self.ions)
        self.totals = np.zeros(self.ions)
        self.top_bytes: list[np.ndarray] = []
        self.all_bytes: list[np.ndarray] = []
        self.backlog_intervals = 0
        self.served = 0.0

    def add(self, solved: Solved) -> None:
        if not len(solved.t):
            return
        self.served += float(solved.served.sum())
        intervals, at = np.unique(solved.t, return_inverse=True)
        cells = at * self.ions + self.ion_of[solved.node]  # summed in row order, as np.add.at
        load = np.bincount(cells, solved.served, len(intervals) * self.ions)
        load = load.reshape(len(intervals), self.ions)
        self.totals += load.sum(axis=0)
        busy = load.sum(axis=1) > 0
        ranked = -np.sort(-load[busy], axis=1)
        self.top_bytes.append(ranked[:, : self.top].sum(axis=1))
        self.all_bytes.append(ranked.sum(axis=1))
        late = np.zeros(len(intervals), dtype=bool)
        late[at[solved.served < solved.demand]] = True
        self.backlog_intervals += int(late.sum())

    def scores(self, interval_s: float) -> list[Score]:
        top = np.concatenate(self.top_bytes) if self.top_bytes else np.zeros(0)
        total = np.concatenate(self.all_bytes) if self.all_bytes else np.zeros(0)
        mean = self.totals.mean() if self.ions else 0.0
        return [
            Score(
                "top10_ion_share",
                float(top.sum() / total.sum()) if total.sum() > 0 else None,
                "fraction of traffic",
            ),
            *_distribution("top10_ion_share", top / np.where(total > 0, total, 1), "fraction"),
            Score("ion_load_max_over_mean", float(self.totals.max() / mean) if mean else None, "x"),
            Score("ion_load_nud", nud(self.totals), "NUD"),
            Score("backlog_seconds", self.backlog_intervals * interval_s, "s"),
            Score("bytes_served", self.served, "bytes"),
        ]


def busiest_node_ions(rows: Rows, topology: Topology) -> list[Score]:
    """Per interval, the distinct targets serving the busiest 1 % of all compute nodes
    (004 §4.1, §7.5): mean and distribution over intervals with traffic."""
    keep = rows.bytes > 0
    t, node, traffic = rows.t[keep], rows.node[keep], rows.bytes[keep]
    k = top_count(THRESHOLDS.top_node_fraction, len(topology.nodes))
    if np.any(t[1:] < t[:-1]):
        order = np.argsort(t, kind="stable")
        t, node, traffic = t[order], node[order], traffic[order]
    used = _ions_of_busiest(t, traffic, topology.ion_of[node], k)
    mean = float(used.mean()) if len(used) else None
    return [
        Score("busiest1pct_nodes_ions", mean, "IONs"),
        *_distribution("busiest1pct_nodes_ions", used.astype(float), "IONs"),
    ]


@njit(cache=True)
def _ions_of_busiest(t, traffic, ion, k):  # pragma: no cover - compiled
    """Per interval (rows sorted by ``t``), the distinct ``ion`` of its ``k`` rows of most
    ``traffic`` (ties: the earlier row)."""
    used = np.zeros(len(np.unique(t)), np.int64)
    seen = np.full(ion.max() + 1 if len(ion) else 0, -1, np.int64)
    a = 0
    b = 0
    while a < len(t):
        z = a
        while z < len(t) and t[z] == t[a]:
            z += 1
        top = np.arange(a, z)
        if z - a > k:
            top = a + np.argsort(-traffic[a:z], kind="mergesort")[:k]
        for i in top:
            if seen[ion[i]] != b:
                seen[ion[i]] = b
                used[b] += 1
        a = z
        b += 1
    return used


class JobTime:
    """Per job, the intervals it had bytes pending: its I/O time (004 §7.2)."""

    def __init__(self, jobs: int) -> None:
        self.busy = np.zeros(jobs)

    def add(self, job: np.ndarray, t: np.ndarray, demand: np.ndarray) -> None:
        keep = (job >= 0) & (demand > 0)
        if len(self.busy) and keep.any():
            self.busy += _distinct_intervals(job[keep], t[keep], len(self.busy))


@njit(cache=True)
def _distinct_intervals(job, t, jobs):  # pragma: no cover - compiled
    """Per job, how many distinct intervals ``t`` it has: one pass while each job's rows come
    in interval order (as the replay yields them), else through a sort."""
    count = np.zeros(jobs, np.int64)
    last = np.zeros(jobs, np.int64)
    for i in range(len(job)):
        j = job[i]
        if count[j] and t[i] <= last[j]:
            if t[i] == last[j]:
                continue
            stride = t.max() - t.min() + 1
            pairs = np.unique(job * stride + (t - t.min()))
            return np.bincount(pairs // stride, minlength=jobs)
        count[j] += 1
        last[j] = t[i]
    return count


def job_scores(shared: JobTime, alone: JobTime, interval_s: float) -> list[Score]:
    """I/O time of jobs with I/O, and its slowdown against each job replayed alone."""
    ran = alone.busy > 0
    if not ran.any():
        return [Score(m, None, u) for m, u in JOB_METRICS]
    slowdown = shared.busy[ran] / alone.busy[ran]
    values = (
        float(shared.busy[ran].mean() * interval_s),
        float(slowdown.mean()),
        float(np.percentile(slowdown, 90)),
        float(slowdown.max()),
        float(ran.sum()),
    )
    return [Score(m, v, u) for (m, u), v in zip(JOB_METRICS, values, strict=True)]


JOB_METRICS = (
    ("job_io_time_mean", "s"),
    ("job_slowdown_mean", "x"),
    ("job_slowdown_p90", "x"),
    ("job_slowdown_max", "x"),
    ("jobs_with_io", "jobs"),
)


def hops_score(topology: Topology) -> Score:
    """Mean route hops from compute node to its target (004 §5.2), None without a hop model."""
    hops = topology.route_hops()
    return Score("mean_hops", None if hops is None else float(hops.mean()), "hops")


def stream_scores(timeline: Timeline, size: np.ndarray, suffix: str = "") -> list[Score]:
    """Aggregate bandwidth (bytes / makespan) and request latency of an event-driven run."""
    makespan = float(np.nanmax(timeline.end) - np.nanmin(timeline.start)) if len(size) else 0.0
    latency = timeline.latency
    p99 = float(np.percentile(latency, 99)) if len(size) else None
    return [
        Score(f"aggregate_bandwidth{suffix}", size.sum() / makespan if makespan else None, "B/s"),
        Score(f"makespan{suffix}", makespan, "s"),
        Score(f"latency_mean{suffix}", float(latency.mean()) if len(size) else None, "s"),
        Score(f"latency_p99{suffix}", p99, "s"),
    ]
