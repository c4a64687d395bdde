"""The lake's jobs as placeable jobs (docs/design.md, "Placement"; paper 004 §6): the lake
workload's demand, :class:`LakeDemand`, is its :class:`~burstlake.replay.demands.NodeDemand`
whose jobs can be re-placed (:class:`~burstlake.replay.demands.Reallocatable`).

- :func:`requests`: every job with its node count and run (interval units × interval_s,
  seconds from the replay's start), numbered like ``jobs.job_ids``;
- :func:`placed`: each job's ``node_io`` rows moved by ``node_index`` to its new nodes, and
  later by as many intervals as the job waited for them;
- :func:`history`: what the allocator may know of a job before it starts (004 §6.1-§6.3),
  from the application's jobs that *ended before it starts*: optimizable when most of them
  were (``job_io_metrics.optimizable``, written by ``burstlake metrics``), and, when their
  per-node_index traffic shares diverge by at most ``divergence_consistent`` (Def. 4), the
  mean of those shares as the prediction for even-traffic.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.allocation import JobRequest, Placements
from burstlake.jobs.metrics.divergence import divergence_of
from burstlake.jobs.metrics.settings import recorded
from burstlake.replay import scores as sc
from burstlake.replay.demands import History, JobIndex, NodeDemand
from burstlake.replay.graph import Topology

log = logging.getLogger(__name__)

PREDICTED = 0.5  # a job is predicted optimizable when more than this share of its app's were
HISTORY_JOBS = 16  # the application's most recent ended jobs a prediction looks at
US = 1_000_000


JOB_KEY = ("job_id", "cluster", "run")
LAST_RUN = -1  # stands for a null jobs.run (a job's last run) in Arrow joins, where null != null


def run_keyed(table: pa.Table) -> pa.Table:
    """``run`` with :data:`LAST_RUN` for null, so that Arrow's join matches last runs."""
    run = table.schema.get_field_index("run")
    return table.set_column(run, "run", pc.fill_null(table["run"], LAST_RUN))


def job_labels(table: pa.Table) -> list[str]:
    """``job_id@cluster`` per row (``job_id`` without a cluster), ``#run`` appended for an
    earlier run of a requeued job (jobs.run, docs/design.md "Run identity")."""
    labels = []
    for job_id, cluster, run in zip(*(table[c].to_pylist() for c in JOB_KEY), strict=True):
        label = f"{job_id}@{cluster}" if cluster is not None else job_id
        labels.append(label if run is None or run == LAST_RUN else f"{label}#{run}")
    return labels


@dataclass(frozen=True)
class LakeDemand(NodeDemand):
    """The lake's node-interval demand with the placement contract (004 §6.4): its jobs by
    :func:`requests`, moved by :func:`placed`, predicted by :func:`history`."""

    def placement_jobs(self, topology: Topology) -> list[JobRequest]:
        return requests(self)

    def placed(self, topology: Topology, placements: Placements) -> LakeDemand:
        return placed(self, topology, placements)

    def io_history(self, topology: Topology, requests: list[JobRequest]) -> History:
        return history(self, requests)


def _ranks(demand: NodeDemand) -> np.ndarray:
    """Each allocation entry's rank among its job's nodes by node_index (0..nodes-1)."""
    jobs = demand.jobs
    if jobs.node_index is None:
        raise ValueError("lake jobs: job_nodes has no node_index; re-ingest the Slurm traces")
    order = np.lexsort((jobs.node_index, jobs.job))
    counts = np.bincount(jobs.job, minlength=len(jobs.job_ids))
    first = np.repeat(np.cumsum(counts) - counts, counts)
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order)) - first
    return ranks


def requests(demand: NodeDemand) -> list[JobRequest]:
    """The jobs to place, numbered like ``jobs.job_ids`` (placement sorts them by start)."""
    jobs = demand.jobs
    count = np.bincount(jobs.job, minlength=len(jobs.job_ids))
    begin = np.full(len(jobs.job_ids), np.iinfo(np.int64).max)
    end = np.full(len(jobs.job_ids), np.iinfo(np.int64).min)
    np.minimum.at(begin, jobs.job, jobs.begin)
    np.maximum.at(end, jobs.job, jobs.end)
    step = demand.interval_s
    return [
        JobRequest(j, int(count[j]), float(begin[j] * step), float(end[j] * step))
        for j in range(len(jobs.job_ids))
    ]


def _entry_of_rows(demand: NodeDemand, nodes: int) -> np.ndarray:
    """The allocation entry of every row held by a job (-1 for rows no job holds)."""
    jobs = demand.jobs
    key = jobs.job * nodes + jobs.node
    order = np.argsort(key, kind="stable")
    held = demand.job >= 0
    want = demand.job[held] * nodes + demand.rows.node[held]
    at = order[np.searchsorted(key[order], want)]
    out = np.full(len(demand.job), -1)
    out[held] = at
    return out


def placed(demand: NodeDemand, topology: Topology, placements: Placements) -> NodeDemand:
    """``demand`` with job j's rows moved from its node of rank k to ``nodes[j][k]``, and by
    the intervals it waited for them (its run keeps its length and its traffic its shape)."""
    jobs, nodes = demand.jobs, placements.nodes
    if len(nodes) != len(jobs.job_ids):
        raise ValueError(f"lake jobs: {len(nodes)} placements for {len(jobs.job_ids)} jobs")
    if not len(jobs.job):
        return demand
    counts = np.bincount(jobs.job, minlength=len(jobs.job_ids))
    flat = np.concatenate([np.asarray(n, dtype=np.int64) for n in nodes])
    offsets = np.cumsum(counts) - counts
    new_node = flat[offsets[jobs.job] + _ranks(demand)]
    entry = _entry_of_rows(demand, len(topology.nodes))
    node = demand.rows.node.copy()
    node[entry >= 0] = new_node[entry[entry >= 0]]
    waited = placements.delay(requests(demand)) / demand.interval_s
    shift = np.rint(waited).astype(np.int64)  # starts and ends are whole intervals
    t = demand.rows.t.copy()
    t[entry >= 0] += shift[jobs.job[entry[entry >= 0]]]
    order = np.lexsort((node, t))
    rows = replace(demand.rows, node=node, t=t).take(order)
    alloc = np.lexsort((jobs.begin + shift[jobs.job], new_node))
    index = replace(
        jobs,
        node=new_node[alloc],
        begin=(jobs.begin + shift[jobs.job])[alloc],
        end=(jobs.end + shift[jobs.job])[alloc],
        job=jobs.job[alloc],
        node_index=jobs.node_index[alloc],
    )
    return replace(demand, rows=rows, job=demand.job[order], jobs=index)


def _share_vectors(demand: NodeDemand) -> dict[int, np.ndarray]:
    """Per job with traffic in the window, its bytes' share per rank (node_index order)."""
    jobs = demand.jobs
    entry = _entry_of_rows(demand, int(max(demand.rows.node.max(initial=0), jobs.node.max())) + 1)
    held = entry >= 0
    ranks = _ranks(demand)
    counts = np.bincount(jobs.job, minlength=len(jobs.job_ids))
    per = np.zeros(len(jobs.job))
    np.add.at(per, entry[held], demand.rows.bytes[held])
    out = {}
    for j in np.unique(jobs.job[per > 0]):
        mine = jobs.job == j
        vector = np.zeros(counts[j])
        vector[ranks[mine]] = per[mine]
        out[int(j)] = vector / vector.sum()
    return out


def history(demand: NodeDemand, requests: list[JobRequest]) -> History:
    """Optimizable flags and traffic shares predicted from earlier ended jobs (004 §6.1-§6.3)."""
    metrics = demand.lake.read("job_io_metrics", [*JOB_KEY, "app_id", "end", "optimizable"])
    if metrics.num_rows == 0:
        raise ValueError(
            "reallocation predicts jobs from job_io_metrics, which is empty: run "
            "`burstlake metrics` on this lake first"
        )
    labels = job_labels(metrics)
    # the threshold the lake's metrics ran with, as the optimizable flags read here (004 §6.3)
    consistent = recorded(demand.lake.lake).divergence_consistent
    origin = round(demand.start.timestamp() * US)
    ends = (metrics["end"].cast(pa.int64()).to_numpy() - origin) / US
    apps, flags = metrics["app_id"].to_pylist(), metrics["optimizable"].to_pylist()
    known = {label: k for k, label in enumerate(labels)}
    by_app: dict[str, list[int]] = {}
    for k in np.argsort(ends, kind="stable"):
        by_app.setdefault(apps[k], []).append(int(k))
    position = {known[j]: p for p, j in enumerate(demand.jobs.job_ids) if j in known}
    vectors = _share_vectors(demand)
    optimizable = np.zeros(len(requests), dtype=bool)
    shares: list[np.ndarray | None] = [None] * len(requests)
    for p, job in enumerate(demand.jobs.job_ids):
        k = known.get(job)
        if k is None:
            continue
        earlier = [e for e in by_app[apps[k]] if ends[e] <= requests[p].start][-HISTORY_JOBS:]
        if not earlier or np.mean([bool(flags[e]) for e in earlier]) <= PREDICTED:
            continue
        optimizable[p] = True
        seen = [
            vectors[position[e]]
            for e in earlier
            if e in position
            and position[e] in vectors
            and len(vectors[position[e]]) == requests[p].nodes
        ]
        if len(seen) >= 2 and divergence_of(seen) <= consistent:
            shares[p] = np.mean(seen, axis=0)
    log.info(
        "reallocation: %d of %d jobs predicted optimizable, %d with a traffic prediction",
        optimizable.sum(),
        len(requests),
        sum(s is not None for s in shares),
    )
    return History(optimizable, shares)


def placement_scores(topology: Topology, jobs: JobIndex, node_bytes: np.ndarray) -> list[sc.Score]:
    """Communication cost of the placement (mean hops between a job's nodes) and the
    traffic-weighted hops from node to forwarding target (``node_bytes``: per compute node)."""
    order = np.argsort(jobs.job, kind="stable")
    cuts = np.cumsum(np.bincount(jobs.job, minlength=len(jobs.job_ids)))[:-1]
    per_job = np.split(jobs.node[order], cuts) if len(jobs.job) else []
    return [sc.job_hops(topology, per_job), sc.traffic_hops(topology, node_bytes)]
