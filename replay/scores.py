"""Scores of a replay (paper 004 §4.1, §5.2, §7.4): how evenly the forwarding targets
carry the traffic, how much was delayed, and what it cost jobs."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from burstlake.jobs.metrics.nud import nud_of
from burstlake.jobs.metrics.settings import MetricSettings, top_count
from burstlake.replay.graph import Topology
from burstlake.replay.intervals import Rows, Solved
from burstlake.replay.requests import Timeline


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

    def __init__(self, topology: Topology, thresholds: MetricSettings) -> None:
        self.ion_of = topology.ion_of
        self.ions = len(topology.ions)
        self.top = top_count(thresholds.top_ion_fraction, self.ions)  # 10 % (004 §7.4.1)
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


class BusiestIons:
    """Per interval, the distinct targets serving the busiest 1 % of all compute nodes
    (004 §4.1, §7.5), accumulated over parts of the trace that hold whole intervals."""

    def __init__(self, topology: Topology, thresholds: MetricSettings) -> None:
        self.ion_of = topology.ion_of
        self.k = top_count(thresholds.top_node_fraction, len(topology.nodes))
        self.used: list[np.ndarray] = []

    def add(self, rows: Rows) -> None:
        keep = rows.bytes > 0
        t, node, traffic = rows.t[keep], rows.node[keep], rows.bytes[keep]
        if np.any(t[1:] < t[:-1]):
            order = np.argsort(t, kind="stable")
            t, node, traffic = t[order], node[order], traffic[order]
        self.used.append(_ions_of_busiest(t, traffic, self.ion_of[node], self.k))

    def scores(self) -> list[Score]:
        """Mean and distribution over the intervals with traffic."""
        used = np.concatenate(self.used) if self.used else np.zeros(0, dtype=np.int64)
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


def route_bytes(topology: Topology, node_bytes: np.ndarray) -> np.ndarray:
    """Bytes crossing each resource when every compute node sends ``node_bytes`` over its I/O
    route to its forwarding target (a static load, without time)."""
    paths = topology.io_paths()
    load = np.zeros(len(topology.resources.names))
    np.add.at(load, paths.indices, np.repeat(np.asarray(node_bytes, float), paths.lengths))
    return load


def bridge_scores(topology: Topology, node_bytes: np.ndarray) -> list[Score]:
    """Load of the bridge nodes (paper 003: the bytes routed through each bridge node, its own
    I/O link and the torus links leaving it), max over mean and NUD, and the busiest link."""
    load = route_bytes(topology, node_bytes)
    links = topology.resources.of_kind("switch_link")
    through = [topology.router.through(b) for b in range(len(topology.ions))]
    bridges = (
        np.array([load[resources].sum() for resources in through])
        if through and all(resources is not None for resources in through)
        else np.bincount(topology.ion_of, weights=node_bytes, minlength=len(topology.ions))
    )
    mean = bridges.mean() if len(bridges) else 0.0
    return [
        Score("bridge_load_max_over_mean", float(bridges.max() / mean) if mean else None, "x"),
        Score("bridge_load_nud", nud(bridges), "NUD"),
        Score("max_link_load", float(load[links].max()) if len(links) else None, "bytes"),
    ]


def bridge_io_scores(topology: Topology, node_bytes: np.ndarray) -> list[Score]:
    """Bytes each bridge node writes to its ION for the nodes it serves (the weight of 003's
    load-aware reassignment): max over mean and NUD."""
    served = np.bincount(topology.ion_of, weights=node_bytes, minlength=len(topology.ions))
    mean = served.mean() if len(served) else 0.0
    return [
        Score("bridge_io_max_over_mean", float(served.max() / mean) if mean else None, "x"),
        Score("bridge_io_nud", nud(served), "NUD"),
    ]


def bridge_message_scores(
    topology: Topology, nodes: np.ndarray, messages: np.ndarray
) -> list[Score]:
    """003's network counters: the messages routed *through* a bridge node (I/O of nodes it
    does not serve, passing its router on the way to another bridge node; mean per bridge
    node), and the spread of the messages each bridge node *sends*: to its ION for the nodes
    it serves plus on along the torus for the others (standard deviation over the mean, as
    003's 0.09 → 0.02). ``messages[k]`` is what node ``nodes[k]`` writes. None where the
    targets are not compute nodes (:meth:`Router.target_nodes`; no torus)."""
    hosts = topology.router.target_nodes()
    if hosts is None:
        return [
            Score("bridge_messages_through_mean", None, "messages"),
            Score("bridge_messages_sent_sd", None, "sd/mean"),
        ]
    bridge_of = {int(n): b for b, n in enumerate(hosts)}
    nodes = np.asarray(nodes, dtype=np.int64)
    messages = np.asarray(messages, dtype=np.float64)
    through = np.zeros(len(topology.ions))
    for node, count in zip(nodes.tolist(), messages.tolist(), strict=True):
        if count:
            for here in topology.router.passes(node, int(topology.ion_of[node])) or ():
                if here in bridge_of:
                    through[bridge_of[here]] += count
    sent = through + np.bincount(
        topology.ion_of[nodes], weights=messages, minlength=len(topology.ions)
    )
    mean = sent.mean() if len(sent) else 0.0
    return [
        Score("bridge_messages_through_mean", float(through.mean()), "messages"),
        Score("bridge_messages_sent_sd", float(sent.std() / mean) if mean else None, "sd/mean"),
    ]


PAIR_SAMPLE = 64  # nodes of a job whose pairwise routes are counted (evenly spaced)


def pair_hops(topology: Topology, nodes: np.ndarray) -> float | None:
    """Mean hops between two of a job's nodes (its communication cost, 004 §7.2.2): the links
    of the route where the topology models the network (fat-tree, torus); on a forwarding
    machine, whose compute network is not modelled (004 §5.2), 2 hops within a group (cabinet,
    board) and 4 between groups, as 004 §5.2 counts hops on CS19. None below two nodes."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if len(nodes) < 2:
        return None
    if not topology.router.network:  # groups only
        _, counts = np.unique(topology.groups()[nodes], return_counts=True)
        same = float((counts * (counts - 1)).sum()) / (len(nodes) * (len(nodes) - 1))
        return 2.0 * same + 4.0 * (1.0 - same)
    sample = nodes[np.linspace(0, len(nodes) - 1, min(len(nodes), PAIR_SAMPLE)).astype(int)]
    hops = [len(topology.router.route(int(a), int(b))) for a in sample for b in sample if a != b]
    return float(np.mean(hops))


def job_hops(topology: Topology, jobs: list[np.ndarray]) -> Score:
    """Mean over jobs of two or more nodes of :func:`pair_hops`."""
    values = [h for h in (pair_hops(topology, nodes) for nodes in jobs) if h is not None]
    return Score("job_pair_hops_mean", float(np.mean(values)) if values else None, "hops")


def traffic_hops(topology: Topology, node_bytes: np.ndarray) -> Score:
    """Mean hops from node to forwarding target weighted by the bytes each node moves."""
    hops = topology.route_hops()
    total = float(np.sum(node_bytes))
    value = None if hops is None or total <= 0 else float(hops @ node_bytes / total)
    return Score("io_hops_mean", value, "hops")


def transfer_stats(name: str, latency: np.ndarray, unit: str = "s") -> list[Score]:
    """Mean, median, p99 and max of transfer latencies — the time to complete one MPI message
    or I/O request (000 §3.3); None without any."""
    if not len(latency):
        return [Score(f"{name}_{s}", None, unit) for s in ("mean", "median", "p99", "max")]
    values = (latency.mean(), np.median(latency), np.percentile(latency, 99), latency.max())
    return [
        Score(f"{name}_{s}", float(v), unit)
        for s, v in zip(("mean", "median", "p99", "max"), values, strict=True)
    ]


def interference_scores(
    job: str,
    latency: np.ndarray,
    latency_alone: np.ndarray,
    completion: float,
    completion_alone: float,
    moved: float,
) -> list[Score]:
    """One job's scores: its transfer latencies in the interference run and the baseline run
    (the job alone, 000 §3.3), the slowdown of the mean latency, the interference factor
    I = T / T_alone of its completion time T (001 §II.C; the checkpoint time of an I/O job,
    000 §5.3), its figure of merit 1/T (002 §2.1, as for pF3D) and the bytes it moved."""
    mean, alone = (float(v.mean()) if len(v) else None for v in (latency, latency_alone))
    factor = float(interference_factors(completion, completion_alone)) if completion_alone else None
    return [
        *transfer_stats(f"{job}_latency", latency),
        *transfer_stats(f"{job}_baseline_latency", latency_alone),
        Score(f"{job}_slowdown", mean / alone if mean is not None and alone else None, "x"),
        Score(f"{job}_completion_time", completion, "s"),
        Score(f"{job}_baseline_completion_time", completion_alone, "s"),
        Score(f"{job}_interference_factor", factor, "x"),
        Score(f"{job}_figure_of_merit", 1.0 / completion if completion > 0 else None, "1/s"),
        Score(f"{job}_bytes", moved, "bytes"),
    ]


def interference_factor_sum(factors: list[float | None]) -> Score:
    """Σ I over the jobs (001 §III.A): the number of jobs when nothing interferes."""
    known = [f for f in factors if f is not None]
    return Score("interference_factor_sum", float(sum(known)) if known else None, "x")


COORDINATION_TOTALS = (("io_cpu_hours", "CPU-hours"), ("sum_interference_factor", "x"))


def interference_factors(io_time: np.ndarray, alone: np.ndarray) -> np.ndarray:
    """I = T / T_alone per phase (001 §II-C): 1 when nothing interfered."""
    return np.asarray(io_time, dtype=float) / np.asarray(alone, dtype=float)


def coordination_totals(
    nodes: np.ndarray, io_time: np.ndarray, alone: np.ndarray, cores_per_node: float
) -> list[Score]:
    """The machine-wide metrics of 001 §IV-D: f = Σ N·T (in CPU-hours, N nodes × their cores)
    and f = Σ I over the phases."""
    cpu_hours = float(np.sum(np.asarray(nodes) * cores_per_node * io_time) / 3600.0)
    values = (cpu_hours, float(interference_factors(io_time, alone).sum()))
    return [Score(m, v, u) for (m, u), v in zip(COORDINATION_TOTALS, values, strict=True)]


def phase_scores(
    names: list[str],
    nodes: np.ndarray,
    io_time: np.ndarray,
    alone: np.ndarray,
    cores_per_node: float,
) -> list[Score]:
    """Per phase its I/O time, T_alone and interference factor; then the totals."""
    factors = interference_factors(io_time, alone)
    out = []
    for name, t, t_alone, i in zip(names, io_time, alone, factors, strict=True):
        out += [
            Score(f"io_time[{name}]", float(t), "s"),
            Score(f"t_alone[{name}]", float(t_alone), "s"),
            Score(f"interference_factor[{name}]", float(i), "x"),
        ]
    return [*out, *coordination_totals(nodes, io_time, alone, cores_per_node)]
