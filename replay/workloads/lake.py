"""The lake's traces as a workload (docs/design.md, "Replay"; paper 004 §7.4): node-interval
demand from ``node_io``, attributed to jobs through ``jobs`` and ``job_nodes``, replayed by the
interval driver with backlog; each job is also replayed alone, for its slowdown."""

from __future__ import annotations

import logging
import os
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import njit

from burstlake.lake import Cluster, cluster_of
from burstlake.replay import scores as sc
from burstlake.replay.demands import JobIndex, NodeDemand
from burstlake.replay.graph import Topology
from burstlake.replay.intervals import IntervalReplay, Rows
from burstlake.replay.solver import saturable
from burstlake.replay.workloads import (
    Kind,
    Progress,
    ScenarioLimits,
    Settings,
    lake_jobs,
    number,
    register,
)
from burstlake.replay.workloads.lake_jobs import JOB_KEY, LakeDemand, job_labels, run_keyed

US = 1_000_000
MAX_INTERVALS = 1 << 31  # first to last row; about 680 years of 10 s intervals
SPARSE = 8  # intervals per row above which rows are sorted by comparison, not counting
log = logging.getLogger(__name__)


def lake_demand(
    lake: str | os.PathLike | Cluster | None,
    topology: Topology,
    start: datetime | None = None,
    end: datetime | None = None,
    max_intervals: int = MAX_INTERVALS,
) -> LakeDemand:
    """The ``node_io`` traffic of [start, end) on ``topology``'s nodes, sorted by interval, of
    one machine of the lake (a path: the lake's only machine); its jobs can be re-placed.

    Interval 0 is the first interval holding a row (on the window's grid when it has a start),
    so memory follows the rows, never the window (issue 25): a 200-year window over a day of
    rows costs a day. Rows spanning more than ``max_intervals`` intervals, first to last, are
    refused in one line."""
    lake = cluster_of(lake)
    condition = pc.field("ts").is_valid()
    if start is not None:
        condition &= pc.field("ts") >= pa.scalar(start, type=pa.timestamp("us", tz="UTC"))
    if end is not None:
        condition &= pc.field("ts") < pa.scalar(end, type=pa.timestamp("us", tz="UTC"))
    table = lake.read(
        "node_io", ["node", "ts", "interval_s", "read_bytes", "write_bytes"], condition
    )
    if table.num_rows == 0:
        raise ValueError("no node_io rows in the replay window: ingest or synthesize traces first")
    interval_s = int(pc.min(table["interval_s"]).as_py())
    if interval_s <= 0:
        raise ValueError(f"node_io has a non-positive interval_s ({interval_s})")
    ts = table["ts"].cast(pa.int64()).to_numpy()
    step = interval_s * US
    origin, last = int(ts.min()), int(ts.max())
    if start is not None:  # the first interval holding data, on the window's grid
        grid = round(start.timestamp() * US)
        origin = grid + (origin - grid) // step * step
    span = (last - origin) // step + 1
    if span > max_intervals:
        first_at, last_at = (
            pa.scalar(v, pa.timestamp("us", tz="UTC")).as_py() for v in (origin, last)
        )
        raise ValueError(
            f"the node_io rows to replay span {span} intervals of {interval_s} s ({first_at} to "
            f"{last_at}); at most {max_intervals} are replayed: narrow the window, or raise "
            "the workload's max_intervals"
        )
    t = ts - origin
    del ts
    t //= step
    node = _node_indices(table["node"], topology)
    traffic = pc.add(pc.fill_null(table["read_bytes"], 0), pc.fill_null(table["write_bytes"], 0))
    traffic = traffic.to_numpy().astype(np.float64)
    del table  # the columns are copied out: hold one copy of the month, not two
    order = _interval_order(t, node, len(topology.nodes))
    rows = Rows(np.zeros(len(t), dtype=np.int64), t[order], node[order], traffic[order])
    del t, node, traffic, order
    jobs = job_index(lake, topology, origin, interval_s)
    start_dt = pa.scalar(origin, pa.timestamp("us", tz="UTC")).as_py()
    return LakeDemand(rows, float(interval_s), start_dt, jobs.lookup(rows.node, rows.t), jobs, lake)


def _interval_order(t: np.ndarray, node: np.ndarray, nodes: int) -> np.ndarray:
    """The rows by interval, then node, ties in row order (``np.lexsort((node, t))``): two
    counting sorts when the rows fill their intervals, else a comparison sort, so memory
    follows the rows and not the time they span."""
    if len(t) and int(t.max()) > SPARSE * len(t):
        return np.lexsort((node, t))
    return _counting_orders(t, node, nodes)


@njit(cache=True)
def _counting_orders(t, node, nodes):  # pragma: no cover - compiled
    """:func:`_interval_order` as two stable counting sorts (t >= 0, 0 <= node < nodes)."""
    by_node = _counting_order(np.arange(len(t)), node, nodes)
    return _counting_order(by_node, t, t.max() + 1 if len(t) else 0)


@njit(cache=True)
def _counting_order(rows, key, keys):  # pragma: no cover - compiled
    """``rows`` stably reordered by ``key[row]`` (0 <= key < keys)."""
    slot = np.zeros(keys + 1, np.int64)
    for r in rows:
        slot[key[r] + 1] += 1
    for k in range(keys):
        slot[k + 1] += slot[k]
    out = np.empty(len(rows), np.int64)
    for r in rows:
        out[slot[key[r]]] = r
        slot[key[r]] += 1
    return out


def _node_indices(names: pa.ChunkedArray, topology: Topology) -> np.ndarray:
    encoded = names.combine_chunks().dictionary_encode()
    lookup = topology.node_index
    dictionary = encoded.dictionary.to_pylist()
    unknown = [n for n in dictionary if n not in lookup]
    if unknown:
        raise ValueError(
            f"{len(unknown)} node_io nodes are not in topology {topology.name} "
            f"(e.g. {unknown[0]}): replay the lake's own topology or fix the node names"
        )
    codes = np.asarray([lookup[n] for n in dictionary], dtype=np.int64)
    return codes[encoded.indices.to_numpy()]


def job_index(lake: Cluster, topology: Topology, origin: int, interval_s: int) -> JobIndex:
    """The allocations of ``jobs`` × ``job_nodes`` on ``topology``, in interval units."""
    jobs = run_keyed(lake.read("jobs", [*JOB_KEY, "start", "end"]))
    nodes = run_keyed(lake.read("job_nodes", [*JOB_KEY, "node", "node_index"]))
    jobs = jobs.filter(pc.is_valid(jobs["start"]))
    alloc = nodes.join(jobs, keys=["job_id", "cluster", "run"], join_type="inner")
    alloc = alloc.filter(pc.is_in(alloc["node"], pa.array(list(topology.node_index))))
    if alloc.num_rows == 0:
        empty = np.zeros(0, dtype=np.int64)
        return JobIndex(empty, empty, empty, empty, ())
    job_ids, job = np.unique(np.array(job_labels(alloc), dtype=object), return_inverse=True)
    node = _node_indices(alloc["node"], topology)
    step = interval_s * US
    begin = (alloc["start"].cast(pa.int64()).to_numpy() - origin) // step
    stop = alloc["end"].cast(pa.int64()).fill_null(np.iinfo(np.int64).max // 2).to_numpy()
    end = -((origin - stop) // step)  # ceil: the interval holding the end belongs to the job
    order = np.lexsort((begin, node))
    ids = tuple(str(j) for j in job_ids)
    node_index = alloc["node_index"].to_numpy().astype(np.int64)[order]
    return JobIndex(node[order], begin[order], end[order], job[order], ids, node_index)


def window_bounds(window: dict | None) -> tuple[datetime | None, datetime | None]:
    """``{start: ..., end: ...}`` of a scenario (ISO strings or datetimes, UTC if naive)."""
    window = window or {}
    unknown = set(window) - {"start", "end"}
    if unknown:
        raise ValueError(f"window: unknown keys {sorted(unknown)}; use start and end")
    return tuple(_utc(window.get(k)) for k in ("start", "end"))  # type: ignore[return-value]


def _utc(value) -> datetime | None:
    from datetime import UTC

    if value is None:
        return None
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def interval_scores(
    given: Settings, topology: Topology, demand: NodeDemand, progress: Progress
) -> list[sc.Score]:
    """Interval replay of the trace (lane 0), and of every job alone (lane job + 1)."""
    loads = sc.IonLoad(topology, given.thresholds)
    shared = sc.JobTime(len(demand.jobs.job_ids))
    for solved in IntervalReplay(topology, demand.interval_s).run(demand.rows, progress):
        loads.add(solved)
        owner = demand.jobs.lookup(solved.node, solved.t, after_end=True)
        shared.add(owner, solved.t, solved.demand)
    out = [
        *loads.scores(demand.interval_s),
        *sc.busiest_node_ions(demand.rows, topology, given.thresholds),
    ]
    if given.job_scores:
        out += sc.job_scores(shared, alone_time(topology, demand, progress), demand.interval_s)
    return [*out, sc.hops_score(topology), *lake_jobs.placement_scores(topology, demand)]


def alone_time(topology: Topology, demand: NodeDemand, progress: Progress = None) -> sc.JobTime:
    """Each job's I/O time replayed alone, on the machine to itself (lane job + 1).

    A job that cannot saturate any resource alone in any interval (:func:`unsaturable_jobs`)
    is served its whole demand in every interval, so it never backlogs: its alone time is the
    intervals in which it has bytes, read off its rows. Only the other jobs are replayed."""
    alone = sc.JobTime(len(demand.jobs.job_ids))
    mine = demand.job >= 0
    quiet = unsaturable_jobs(topology, demand)
    easy = mine.copy()
    easy[mine] = quiet[demand.job[mine]]
    alone.add(demand.job[easy], demand.rows.t[easy], demand.rows.bytes[easy])
    replayed = mine & ~easy
    if replayed.any():
        rows = demand.rows.take(replayed)
        lanes = Rows(demand.job[replayed] + 1, rows.t, rows.node, rows.bytes)
        for solved in IntervalReplay(topology, demand.interval_s).run(lanes, progress):
            alone.add(solved.lane - 1, solved.t, solved.demand)
    log.info(
        "alone replay: %d of %d jobs replayed", len(np.unique(demand.job[replayed])), len(quiet)
    )
    return alone


def unsaturable_jobs(topology: Topology, demand: NodeDemand) -> np.ndarray:
    """Per job, whether in every interval its demand rates (bytes / interval_s) sum to at most
    every capacity they cross, with the solver's margin (:func:`saturable`).

    Such a job alone gets its whole demand in each interval: every flow at its cap is max-min
    fair when no resource is over-subscribed, so it carries no backlog into the next interval.
    Tested on the whole trace per interval first (a job's rows are a part of it), then per job
    in the intervals where the whole trace may saturate something."""
    rows, jobs = demand.rows, len(demand.jobs.job_ids)
    paths, capacity = topology.io_paths(), topology.resources.capacity
    if not len(rows):
        return np.ones(jobs, dtype=bool)
    rate = rows.bytes / demand.interval_s
    order = np.arange(len(rows))
    if np.any(rows.t[1:] < rows.t[:-1]):
        order = np.argsort(rows.t, kind="stable")
    hot = saturable(order, rows.t, rows.node, paths.indptr, paths.indices, capacity, rate)
    busy = np.isin(rows.t, np.unique(rows.t[hot])) & (demand.job >= 0)
    cell = demand.job[busy] * (int(rows.t.max()) + 1) + rows.t[busy]
    order = np.argsort(cell, kind="stable")
    hot = saturable(order, cell, rows.node[busy], paths.indptr, paths.indices, capacity, rate[busy])
    quiet = np.ones(jobs, dtype=bool)
    quiet[demand.job[busy][hot]] = False
    return quiet


def _check(workload: dict, _limits: ScenarioLimits) -> None:
    window_bounds(workload.get("window"))
    _max_intervals(workload)


def _max_intervals(workload: dict) -> int:
    """The workload's ``max_intervals`` (default :data:`MAX_INTERVALS`): the most intervals,
    first row to last, a replay of the lake's traces may span."""
    value = workload.get("max_intervals", MAX_INTERVALS)
    return int(number("workload lake: max_intervals", value, low=1, integer=True))


KIND = register(
    "lake",
    Kind(
        keys=frozenset({"window", "max_intervals"}),
        check=_check,
        reads_lake=True,
        demand=lambda spec, topology, lake: lake_demand(
            lake, topology, *window_bounds(spec.get("window")), _max_intervals(spec)
        ),
        scores=interval_scores,
        window=lambda spec: window_bounds(spec.get("window")),
        models=frozenset({"flow"}),  # the interval replay is the fluid max-min model's
    ),
)
