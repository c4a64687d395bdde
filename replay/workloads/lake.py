"""The lake's traces as a workload (docs/design.md, "Replay"; paper 004 §7.4): node-interval
demand from ``node_io``, attributed to jobs through ``jobs`` and ``job_nodes``, replayed by the
interval driver with backlog; each job is also replayed alone, for its slowdown."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
from numba import njit

from burstlake.allocation import JobRequest, Placements
from burstlake.lake import DAY, Cluster, cluster_of, table_files
from burstlake.replay import scores as sc
from burstlake.replay.demands import History, JobIndex, NodeDemand
from burstlake.replay.graph import Topology
from burstlake.replay.intervals import IntervalReplay, Rows, Solved
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
from burstlake.schemas import spec

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
    condition = _window_condition(start, end)
    table = lake.read("node_io", list(NODE_IO_COLUMNS), condition)
    if table.num_rows == 0:
        raise ValueError("no node_io rows in the replay window: ingest or synthesize traces first")
    interval_s = _interval_s(int(pc.min(table["interval_s"]).as_py()))
    ts = table["ts"].cast(pa.int64())
    origin = _origin(int(pc.min(ts).as_py()), start, interval_s)
    _check_span(origin, int(pc.max(ts).as_py()), interval_s, max_intervals)
    del ts
    columns = _columns(table, topology, origin, interval_s)
    del table  # the columns are copied out: hold one copy of the month, not two
    rows = _sorted_rows(*columns, len(topology.nodes))
    del columns
    jobs = job_index(lake, topology, origin, interval_s)
    start_dt = pa.scalar(origin, pa.timestamp("us", tz="UTC")).as_py()
    return LakeDemand(rows, float(interval_s), start_dt, jobs.lookup(rows.node, rows.t), jobs, lake)


NODE_IO_COLUMNS = ("node", "ts", "interval_s", "read_bytes", "write_bytes")


def _window_condition(start: datetime | None, end: datetime | None) -> pc.Expression:
    condition = pc.field("ts").is_valid()
    if start is not None:
        condition &= pc.field("ts") >= pa.scalar(start, type=pa.timestamp("us", tz="UTC"))
    if end is not None:
        condition &= pc.field("ts") < pa.scalar(end, type=pa.timestamp("us", tz="UTC"))
    return condition


def _interval_s(interval_s: int) -> int:
    if interval_s <= 0:
        raise ValueError(f"node_io has a non-positive interval_s ({interval_s})")
    return interval_s


def _origin(first: int, start: datetime | None, interval_s: int) -> int:
    """Interval 0: the first interval holding data, on the window's grid when it has a start."""
    if start is None:
        return first
    step = interval_s * US
    grid = round(start.timestamp() * US)
    return grid + (first - grid) // step * step


def _check_span(origin: int, last: int, interval_s: int, max_intervals: int) -> None:
    span = (last - origin) // (interval_s * US) + 1
    if span > max_intervals:
        first_at, last_at = (
            pa.scalar(v, pa.timestamp("us", tz="UTC")).as_py() for v in (origin, last)
        )
        raise ValueError(
            f"the node_io rows to replay span {span} intervals of {interval_s} s ({first_at} to "
            f"{last_at}); at most {max_intervals} are replayed: narrow the window, or raise "
            "the workload's max_intervals"
        )


def _columns(
    table: pa.Table, topology: Topology, origin: int, interval_s: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``node_io`` rows' interval index, topology node index and bytes (read + write)."""
    t = table["ts"].cast(pa.int64()).to_numpy() - origin
    t //= interval_s * US
    node = _node_indices(table["node"], topology)
    traffic = pc.add(pc.fill_null(table["read_bytes"], 0), pc.fill_null(table["write_bytes"], 0))
    return t, node, traffic.to_numpy().astype(np.float64)


def _sorted_rows(t: np.ndarray, node: np.ndarray, traffic: np.ndarray, nodes: int) -> Rows:
    """Replay rows (lane 0) sorted by interval and node."""
    order = _interval_order(t, node, nodes)
    return Rows(np.zeros(len(t), dtype=np.int64), t[order], node[order], traffic[order])


@dataclass(frozen=True)
class LakeDays:
    """The lake workload's demand (004 §7.4) read one UTC day of ``node_io`` at a time (its ``day``
    partitions): :meth:`parts` yields each day's :class:`NodeDemand` on the same interval grid
    and :class:`JobIndex` as :func:`lake_demand` gives for the whole span, so the interval
    replay (:func:`interval_scores`) carries only the backlog and the jobs in flight from one
    day to the next, and its memory is set by the busiest day, not by the span.

    A policy that moves jobs (:class:`~burstlake.replay.demands.Placeable`) reads the whole
    span (:meth:`whole`) and replays that; one that weighs nodes sums the days."""

    lake: Cluster
    topology: Topology
    start: datetime | None
    end: datetime | None
    interval_s: float
    origin: int  # µs UTC of interval 0
    days: tuple[tuple[str, tuple[str, ...]], ...]  # (day, its files) holding rows, in order
    jobs: JobIndex
    max_intervals: int = MAX_INTERVALS
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def parts(self) -> Iterator[NodeDemand]:
        """Each day's rows, sorted by interval and node, in day order."""
        start = pa.scalar(self.origin, pa.timestamp("us", tz="UTC")).as_py()
        last, previous = -1, None
        for day, files in self.days:
            table = _day_rows(self.lake, files, NODE_IO_COLUMNS, self.start, self.end)
            if not table.num_rows:
                continue
            columns = _columns(table, self.topology, self.origin, int(self.interval_s))
            del table
            rows = _sorted_rows(*columns, len(self.topology.nodes))
            del columns
            if rows.t[0] <= last:
                raise ValueError(
                    f"node_io day={day} holds rows of intervals before those of day={previous}: "
                    "the day partitions disagree with ts; rewrite node_io (burstlake lake migrate)"
                )
            last, previous = int(rows.t[-1]), day
            job = self.jobs.lookup(rows.node, rows.t)
            yield NodeDemand(rows, self.interval_s, start, job, self.jobs, self.lake)

    def whole(self) -> LakeDemand:
        """The whole span in memory, as :func:`lake_demand` reads it (for moving jobs)."""
        if "whole" not in self.memo:
            self.memo["whole"] = lake_demand(
                self.lake, self.topology, self.start, self.end, self.max_intervals
            )
        return self.memo["whole"]

    def placement_jobs(self, topology: Topology) -> list[JobRequest]:
        return self.whole().placement_jobs(topology)

    def placed(self, topology: Topology, placements: Placements) -> LakeDemand:
        return self.whole().placed(topology, placements)

    def io_history(self, topology: Topology, requests: list[JobRequest]) -> History:
        return self.whole().io_history(topology, requests)

    def node_bytes(self, topology: Topology) -> np.ndarray:
        total = np.zeros(len(topology.nodes))
        for part in self.parts():
            total += part.node_bytes(topology)
        return total


def lake_days(
    lake: str | os.PathLike | Cluster | None,
    topology: Topology,
    start: datetime | None = None,
    end: datetime | None = None,
    max_intervals: int = MAX_INTERVALS,
) -> LakeDays:
    """:func:`lake_demand`'s traffic as :class:`LakeDays`: one look at every day's ``ts`` and
    ``interval_s`` finds the grid and refuses what :func:`lake_demand` refuses; the rows are
    read when the replay asks for them, one day at a time."""
    lake = cluster_of(lake)
    days = _days(lake, start, end)
    interval_s, first, last, held = None, None, None, []
    for day, files in days:
        table = _day_rows(lake, files, ("ts", "interval_s"), start, end)
        if not table.num_rows:
            continue
        held.append((day, files))
        shortest = int(pc.min(table["interval_s"]).as_py())
        interval_s = shortest if interval_s is None else min(interval_s, shortest)
        ts = table["ts"].cast(pa.int64())
        low, high = int(pc.min(ts).as_py()), int(pc.max(ts).as_py())
        first = low if first is None else min(first, low)
        last = high if last is None else max(last, high)
    if interval_s is None or first is None or last is None:
        raise ValueError("no node_io rows in the replay window: ingest or synthesize traces first")
    interval_s = _interval_s(interval_s)
    origin = _origin(first, start, interval_s)
    _check_span(origin, last, interval_s, max_intervals)
    jobs = job_index(lake, topology, origin, interval_s)
    return LakeDays(
        lake, topology, start, end, float(interval_s), origin, tuple(held), jobs, max_intervals
    )


def _days(
    lake: Cluster, start: datetime | None, end: datetime | None
) -> list[tuple[str, tuple[str, ...]]]:
    """``node_io``'s files by ``day`` partition, in day order, without the days outside
    [start, end); files outside a day partition (a lake of an older layout) make one part."""
    files = table_files(lake.lake, "node_io")
    by_day: dict[str, list[str]] = {}
    for path in files:
        folder = path.parent.name
        if not folder.startswith(f"{DAY}="):
            return [("", tuple(str(p) for p in files))] if files else []
        by_day.setdefault(folder.removeprefix(f"{DAY}="), []).append(str(path))
    first = start.astimezone(UTC).date().isoformat() if start is not None else None
    last = end.astimezone(UTC).date().isoformat() if end is not None else None
    return [
        (day, tuple(paths))
        for day, paths in sorted(by_day.items())
        if (first is None or day >= first) and (last is None or day <= last)
    ]


def _day_rows(
    lake: Cluster,
    files: tuple[str, ...],
    columns: tuple[str, ...],
    start: datetime | None,
    end: datetime | None,
) -> pa.Table:
    """The machine's ``node_io`` rows of [start, end) in ``files``."""
    rows = ds.dataset(list(files), schema=spec("node_io").schema, format="parquet")
    return rows.to_table(columns=list(columns), filter=lake.only(_window_condition(start, end)))


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
    jobs = jobs.append_column("job_row", pa.array(np.arange(jobs.num_rows, dtype=np.int64)))
    alloc = nodes.join(jobs, keys=["job_id", "cluster", "run"], join_type="inner")
    alloc = alloc.filter(pc.is_in(alloc["node"], pa.array(list(topology.node_index))))
    if alloc.num_rows == 0:
        empty = np.zeros(0, dtype=np.int64)
        return JobIndex(empty, empty, empty, empty, ())
    # labels per job, not per allocated node: a year holds millions of job_nodes rows
    held, of_job = np.unique(alloc["job_row"].to_numpy(), return_inverse=True)
    labels = np.array(job_labels(jobs.take(pa.array(held))), dtype=object)
    job_ids, label_of = np.unique(labels, return_inverse=True)
    job = label_of[of_job]
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
    given: Settings, topology: Topology, demand: NodeDemand | LakeDays, progress: Progress
) -> list[sc.Score]:
    """Interval replay of the trace (lane 0), and of every job alone (lane job + 1), fed one
    part at a time (a day of :class:`LakeDays`, or the whole :class:`NodeDemand`): the scores
    accumulate over the parts, the replays carry their backlog from one part to the next."""
    jobs = demand.jobs
    loads = sc.IonLoad(topology, given.thresholds)
    busiest = sc.BusiestIons(topology, given.thresholds)
    shared = sc.JobTime(len(jobs.job_ids))
    alone = AloneReplay(topology, demand.interval_s, len(jobs.job_ids), progress)
    node_bytes = np.zeros(len(topology.nodes))
    together = IntervalReplay(topology, demand.interval_s).stream(progress)

    def take(solved_chunks: Iterator[Solved]) -> None:
        for solved in solved_chunks:
            loads.add(solved)
            shared.add(jobs.lookup(solved.node, solved.t, after_end=True), solved.t, solved.demand)

    for part in demand.parts() if isinstance(demand, LakeDays) else [demand]:
        take(together.feed(part.rows))
        busiest.add(part.rows)
        node_bytes += part.node_bytes(topology)
        if given.job_scores:
            alone.feed(topology, part)
    take(together.finish())
    out = [*loads.scores(demand.interval_s), *busiest.scores()]
    if given.job_scores:
        out += sc.job_scores(shared, alone.finish(), demand.interval_s)
    return [*out, sc.hops_score(topology), *lake_jobs.placement_scores(topology, jobs, node_bytes)]


class AloneReplay:
    """Each job's I/O time replayed alone, on the machine to itself (lane job + 1), fed the
    trace part by part (:meth:`feed`, then :meth:`finish`).

    A job that cannot saturate any resource alone in an interval (:func:`unsaturable_jobs`)
    is served its whole demand there, so until its first interval that can, it never
    backlogs: its alone time is the intervals in which it has bytes, read off its rows. From
    the part holding that interval on, its rows are replayed (exact: it carries no backlog in).
    """

    def __init__(
        self, topology: Topology, interval_s: float, jobs: int, progress: Progress = None
    ) -> None:
        self.time = sc.JobTime(jobs)
        self.replayed = np.zeros(jobs, dtype=bool)  # jobs that may have saturated something
        self.stream = IntervalReplay(topology, interval_s).stream(progress)

    def feed(self, topology: Topology, part: NodeDemand) -> None:
        mine = part.job >= 0
        self.replayed |= ~unsaturable_jobs(topology, part)
        easy = mine.copy()
        easy[mine] = ~self.replayed[part.job[mine]]
        self.time.add(part.job[easy], part.rows.t[easy], part.rows.bytes[easy])
        hard = mine & ~easy
        if hard.any():
            rows = part.rows.take(hard)
            self._add(self.stream.feed(Rows(part.job[hard] + 1, rows.t, rows.node, rows.bytes)))

    def finish(self) -> sc.JobTime:
        self._add(self.stream.finish())
        log.info("alone replay: %d of %d jobs replayed", self.replayed.sum(), len(self.replayed))
        return self.time

    def _add(self, solved_chunks: Iterator[Solved]) -> None:
        for solved in solved_chunks:
            self.time.add(solved.lane - 1, solved.t, solved.demand)


def alone_time(topology: Topology, demand: NodeDemand, progress: Progress = None) -> sc.JobTime:
    """Each job's I/O time replayed alone (:class:`AloneReplay` fed the whole demand)."""
    alone = AloneReplay(topology, demand.interval_s, len(demand.jobs.job_ids), progress)
    alone.feed(topology, demand)
    return alone.finish()


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
        demand=lambda spec, topology, lake: lake_days(
            lake, topology, *window_bounds(spec.get("window")), _max_intervals(spec)
        ),
        scores=interval_scores,
        window=lambda spec: window_bounds(spec.get("window")),
        models=frozenset({"flow"}),  # the interval replay is the fluid max-min model's
    ),
)
