"""The lake's own jobs in a time window, request by request (docs/design.md, "Replay"): the
workload both contention models replay, so "what would this placement have done to last
week's jobs" is answered at the fidelity the question needs (paper 000 §4: interconnect
interference the flow model cannot show).

    workload:
      source: lake_window
      window: {start: 2018-01-03T10:00, end: 2018-01-03T10:00:10}   # or windows: [...]
      # busiest: {k: 3, length_s: 10, by: backlog}   # picked by the flow model (replay/windows)
      request_bytes: 1048576     # node_io bytes become requests of this size
      message_bytes: 65536       # communication becomes messages of this size
      pattern: random-pairs      # or ring (by node_index), all-to-all
      stripe: {size: 1048576, count: 1}   # Lustre's default striping
      storage: auto              # ion (the node's forwarding target), striping, or auto
      max_memory_bytes: 4.0e+9   # refuse a window whose replay would need more

For one machine and window: the jobs running in it on their real nodes (``jobs``,
``job_nodes``); their I/O from DXT segments where the job has them (``darshan_dxt``: each
segment a request from its rank's node at its own start), else each node's ``node_io`` bytes
of an interval spread evenly over it as requests of ``request_bytes``; each request goes to
its storage target by the machine's route: the node's forwarding target (the ION on a
forwarding machine, 004 §2.1) or a server by Lustre's striping rule on file and offset
(``storage: auto`` takes striping where the router says its targets are striped storage
servers, :attr:`burstlake.replay.graph.Router.striped`: a fat-tree's I/O servers).
Communication is each node's network bytes less its storage bytes in the interval (004 §6.2,
as :mod:`burstlake.jobs.metrics.job_io` defines it), halved (every message is counted by its
sender's tx and its receiver's rx), sent as messages of ``message_bytes`` to partners within
the job by ``pattern``; without network counters there is none, and the scores say so
(``network_counters`` 0).

Lake nodes meet the topology by name when every one of them is a topology node (``topology:
lake``, ``lake_fattree``, ``lake_dragonfly``: the lake's switches as leaves or routers), else
in name order (node i of the lake, by natural order, is the topology's compute
node i). Each job is replayed alone in the same window for its slowdown and interference
factor. Placement policies move the jobs' ranks, server policies the servers, ``throttle``
paces the I/O streams; the scores are per window and job.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.allocation import JobRequest, Placements
from burstlake.lake import Cluster
from burstlake.replay import models
from burstlake.replay import scores as sc
from burstlake.replay import traffic as tr
from burstlake.replay import windows as win
from burstlake.replay.graph import Topology
from burstlake.replay.requests import Requests
from burstlake.replay.topologies.forwarding import natural_key
from burstlake.replay.workloads import (
    Kind,
    Progress,
    ScenarioLimits,
    Settings,
    known_keys,
    number,
    register,
)
from burstlake.replay.workloads.lake_jobs import JOB_KEY, job_labels, run_keyed

log = logging.getLogger(__name__)

SOURCE = "lake_window"
PATTERNS = ("random-pairs", "ring", "all-to-all")
STORAGE_ROUTES = ("auto", "ion", "striping")
DXT_MODULE = "DXT_POSIX"  # MPI-IO segments are traced again by POSIX underneath: one of them
LUSTRE_STRIPE = {"size": 1 << 20, "count": 1}  # Lustre's default: 1 MiB over 1 OST
DEFAULTS: dict[str, Any] = {
    "request_bytes": float(1 << 20),
    "message_bytes": 65536.0,
    "pattern": "random-pairs",
    "storage": "auto",
    "seed": 0,
    "max_memory_bytes": 4.0e9,  # what a window's replay may need
    "workers": 1,
    # messages of an interval: None spreads them evenly over it; a number of seconds sends
    # them from its start, each that long after the previous one completed (000 §3.2's MPI job)
    "message_interval_s": None,
    "spark_master": None,  # run the replays as Spark tasks on this master (the metrics' session)
}
KEYS = frozenset({"window", "windows", "busiest", "stripe", *DEFAULTS})
# What a replay keeps per request and per route entry, for the estimate: counted from the
# arrays (the flow model's event loop holds 14 eight-byte arrays per request and 4 per route
# entry, the requests, routes, traffic and timeline about 20 more per request); the packet
# model holds fewer, and its packets in flight are bounded by its buffers, not the window
BYTES_PER_REQUEST = 320
BYTES_PER_ROUTE_ENTRY = 64
US, NS = 1_000_000, 1_000_000_000


# --- settings ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowSettings:
    """The workload's settings, checked (one-line errors name the key)."""

    request_bytes: float
    message_bytes: float
    pattern: str
    storage: str
    stripe_size: int
    stripe_count: int
    seed: int
    max_memory_bytes: float
    workers: int
    spark_master: str | None = None
    message_interval_s: float | None = None


def settings(spec: dict) -> WindowSettings:
    where = f"workload {SOURCE}"
    given = DEFAULTS | {k: v for k, v in spec.items() if k in DEFAULTS}
    pattern, storage = given["pattern"], given["storage"]
    if pattern not in PATTERNS:
        raise ValueError(f"{where}: pattern must be one of {list(PATTERNS)}, got {pattern!r}")
    if storage not in STORAGE_ROUTES:
        raise ValueError(f"{where}: storage must be one of {list(STORAGE_ROUTES)}, got {storage!r}")
    stripe = spec.get("stripe", LUSTRE_STRIPE)
    if not isinstance(stripe, dict):
        raise ValueError(f"{where}: stripe must be a mapping {{size, count}}, got {stripe!r}")
    known_keys(f"{where}: stripe", stripe, {"size", "count"})
    stripe = LUSTRE_STRIPE | stripe
    return WindowSettings(
        request_bytes=number(f"{where}: request_bytes", given["request_bytes"], low=0, strict=True),
        message_bytes=number(f"{where}: message_bytes", given["message_bytes"], low=0, strict=True),
        pattern=pattern,
        storage=storage,
        stripe_size=int(number(f"{where}: stripe size", stripe["size"], low=1, integer=True)),
        stripe_count=int(number(f"{where}: stripe count", stripe["count"], low=1, integer=True)),
        seed=int(number(f"{where}: seed", given["seed"], low=0, integer=True)),
        max_memory_bytes=number(
            f"{where}: max_memory_bytes", given["max_memory_bytes"], low=0, strict=True
        ),
        workers=int(number(f"{where}: workers", given["workers"], low=1, integer=True)),
        spark_master=_master(where, given["spark_master"]),
        message_interval_s=None
        if given["message_interval_s"] is None
        else number(f"{where}: message_interval_s", given["message_interval_s"], low=0),
    )


def _master(where: str, master: Any) -> str | None:
    if master is not None and (not isinstance(master, str) or not master.strip()):
        raise ValueError(f"{where}: spark_master must be a Spark master URL, got {master!r}")
    return master


def chosen_windows(spec: dict) -> tuple[list[win.Window], tuple[int, float, str] | None]:
    """The explicit windows and the ``busiest`` request; exactly one way must be given."""
    where = f"workload {SOURCE}"
    ways = [k for k in ("window", "windows", "busiest") if k in spec]
    if len(ways) != 1:
        raise ValueError(f"{where}: give one of window, windows or busiest, got {ways or 'none'}")
    if "busiest" in spec:
        return [], win.busiest_spec(f"{where}: busiest", spec["busiest"])
    if "window" in spec:
        return [win.explicit(f"{where}: window", spec["window"])], None
    given = spec["windows"]
    if not isinstance(given, list) or not given:
        raise ValueError(f"{where}: windows must be a non-empty list of {{start, end}}")
    windows = [win.explicit(f"{where}: windows[{i}]", w) for i, w in enumerate(given)]
    order = sorted(range(len(windows)), key=lambda i: windows[i].start)
    for a, b in pairwise(order):
        if windows[b].start < windows[a].end:  # a job in both would need its nodes twice
            raise ValueError(f"{where}: windows[{b}] overlaps windows[{a}]; windows must not")
    return windows, None


def check(spec: dict, _limits: ScenarioLimits) -> None:
    settings(spec)
    chosen_windows(spec)


# --- the demand --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Flow:
    """One job's requests of one kind (``io`` or ``mpi``) by rank: :class:`tr.Traffic`
    (``dst`` a server, or -1 for the node's own forwarding target, for I/O; a rank for MPI)
    and when each may be issued (seconds from the window's start)."""

    traffic: tr.Traffic
    release: np.ndarray

    @property
    def bytes(self) -> float:
        return float(self.traffic.size.sum())


@dataclass(frozen=True)
class WindowJob:
    """A job of a window on its nodes (``nodes[rank]``: topology node index, ranks in
    node_index order), running ``begin``..``end`` seconds from the window's start."""

    name: str
    nodes: np.ndarray
    begin: float
    end: float
    io: Flow
    mpi: Flow
    dxt: bool  # its I/O came from DXT segments
    throttle_window: float = 0.0


@dataclass(frozen=True)
class LakeWindow:
    """One window's jobs, and what the scores report of it."""

    window: win.Window
    jobs: tuple[WindowJob, ...]
    network_counters: bool
    quarantined: int  # DXT segments whose host is not in the job's allocation
    estimate: Estimate


@dataclass(frozen=True)
class Estimate:
    """What a window's replay will cost, before any of it runs."""

    requests: int
    packets: int
    events: int
    memory_bytes: float


@dataclass(frozen=True)
class WindowDemand:
    """The windows to replay: placeable (every job of every window, on a time line from the
    first window's start) and throttleable (the I/O streams paced)."""

    windows: tuple[LakeWindow, ...]
    settings: WindowSettings = field(compare=False)

    def _jobs(self) -> list[tuple[int, int]]:
        return [(w, j) for w, each in enumerate(self.windows) for j in range(len(each.jobs))]

    def placement_jobs(self, topology: Topology) -> list[JobRequest]:
        origin = self.windows[0].window.start
        out = []
        for i, (w, j) in enumerate(self._jobs()):
            lake_window, job = self.windows[w], self.windows[w].jobs[j]
            shift = (lake_window.window.start - origin).total_seconds()
            out.append(JobRequest(i, len(job.nodes), shift + job.begin, shift + job.end))
        return out

    def placed(self, topology: Topology, placements: Placements) -> WindowDemand:
        nodes = iter(placements.nodes)
        return replace(
            self,
            windows=tuple(
                replace(
                    each,
                    jobs=tuple(
                        replace(job, nodes=np.asarray(next(nodes), dtype=np.int64))
                        for job in each.jobs
                    ),
                )
                for each in self.windows
            ),
        )

    def throttled(self, window: float) -> WindowDemand:
        """Every I/O stream paced by a throttle window (000 §5.3)."""
        return replace(
            self,
            windows=tuple(
                replace(each, jobs=tuple(replace(j, throttle_window=window) for j in each.jobs))
                for each in self.windows
            ),
        )

    def node_bytes(self, topology: Topology) -> np.ndarray:
        out = np.zeros(len(topology.nodes))
        for each in self.windows:
            for job in each.jobs:
                traffic = job.io.traffic
                np.add.at(out, job.nodes[traffic.src], traffic.size)
        return out


def demand(spec: dict, topology: Topology, lake: Cluster) -> WindowDemand:
    """The windows' jobs and requests; every refusal (no jobs, a node outside the topology,
    a window over the bound) comes here, before any simulation."""
    given = settings(spec)
    windows, wanted = chosen_windows(spec)
    nodes = node_map(lake, topology)
    if wanted is not None:  # the flow model's pass over the span, on the lake's node names
        names = list(topology.nodes)
        for name, i in nodes.items():
            names[i] = name
        windows = win.busiest(lake, replace(topology, nodes=tuple(names), _cache={}), *wanted)
    built = []
    for i, window in enumerate(windows):
        each = window_jobs(lake, topology, nodes, window, given, f"windows[{i}]")
        log.info(
            "lake_window %s: window %d (%s to %s, %s): %d jobs, %d requests, about %d packets "
            "and %d events, %.3g GB",
            lake.label,
            i,
            window.start.isoformat(),
            window.end.isoformat(),
            window.reason,
            len(each.jobs),
            each.estimate.requests,
            each.estimate.packets,
            each.estimate.events,
            each.estimate.memory_bytes / 1e9,
        )
        if each.estimate.memory_bytes > given.max_memory_bytes:
            raise ValueError(
                f"workload {SOURCE}: windows[{i}] ({window.start.isoformat()} to "
                f"{window.end.isoformat()}) needs about {each.estimate.memory_bytes / 1e9:.3g} "
                f"GB ({each.estimate.requests:,} requests, {each.estimate.packets:,} packets); "
                f"max_memory_bytes is {given.max_memory_bytes / 1e9:.3g} GB: shorten the "
                "window or raise request_bytes, message_bytes or max_memory_bytes"
            )
        built.append(each)
    return WindowDemand(tuple(built), given)


def node_map(lake: Cluster, topology: Topology) -> dict[str, int]:
    """Lake node name → topology node index: by name when the topology holds any of the
    lake's nodes (the lake's own topology; a node it lacks is then refused by job), else in
    natural name order (lake node i → compute node i; nodes past the topology's are left
    out, and a job on them refused)."""
    names = set(lake.read("topology", ["node"])["node"].to_pylist())
    names |= set(lake.read("job_nodes", ["node"])["node"].to_pylist())
    index = topology.node_index
    if names & set(index):
        return {n: index[n] for n in names if n in index}
    ordered = sorted(names, key=natural_key)
    return {n: i for i, n in enumerate(ordered) if i < len(topology.nodes)}


def _ts(moment: datetime) -> pa.Scalar:
    return pa.scalar(moment, type=pa.timestamp("us", tz="UTC"))


def window_jobs(
    lake: Cluster,
    topology: Topology,
    nodes: dict[str, int],
    window: win.Window,
    given: WindowSettings,
    where: str,
) -> LakeWindow:
    """The jobs running in ``window`` and their requests (module docstring)."""
    start, end = _ts(window.start), _ts(window.end)
    jobs = run_keyed(lake.read("jobs", [*JOB_KEY, "start", "end"]))
    jobs = jobs.filter(
        pc.field("start").is_valid()
        & (pc.field("start") < end)
        & (pc.field("end").is_null() | (pc.field("end") > start))
    )
    context = f"workload {SOURCE}: {where} ({window.start.isoformat()} to {window.end.isoformat()})"
    if jobs.num_rows == 0:
        raise ValueError(f"{context}: no job runs in this window; pick another window")
    alloc = run_keyed(lake.read("job_nodes", [*JOB_KEY, "node", "node_index"]))
    labels = job_labels(jobs)
    by_job: dict[str, list[tuple[int, str]]] = {label: [] for label in labels}
    for label, node, rank in zip(  # labels, not a join: Arrow's join never matches a null cluster
        job_labels(alloc), alloc["node"].to_pylist(), alloc["node_index"].to_pylist(), strict=True
    ):
        if label in by_job:
            by_job[label].append((rank, node))
    for label in labels:
        if not by_job[label]:
            raise ValueError(f"{context}: job {label} has no job_nodes rows; re-ingest Slurm")
        outside = [n for _, n in by_job[label] if n not in nodes]
        if outside:
            raise ValueError(
                f"{context}: job {label}: node {outside[0]} ({len(outside)} of "
                f"{len(by_job[label])}) is not in topology {topology.name} "
                f"({len(topology.nodes)} compute nodes); replay a topology holding them"
            )
    origin_us = int(start.value)
    io_rows = _node_io(lake, window)
    monitored = io_rows.filter(
        pc.field("net_rx_bytes").is_valid() | pc.field("net_tx_bytes").is_valid()
    )
    network = monitored.num_rows > 0
    dxt, quarantined = _dxt(lake, window, jobs, by_job, context)
    rng = np.random.default_rng(given.seed)
    built = []
    begins = jobs["start"].cast(pa.int64()).to_numpy()
    ends = jobs["end"].cast(pa.int64()).fill_null(int(end.value)).to_numpy()
    servers = len(topology.ions)
    striping = given.storage == "striping" or (given.storage == "auto" and topology.router.striped)
    for j, label in enumerate(labels):
        ranked = sorted(by_job[label])
        names = [n for _, n in ranked]
        rank_of = {n: r for r, n in enumerate(names)}
        begin = max(0.0, (begins[j] - origin_us) / US)
        finish = min(window.length_s, (ends[j] - origin_us) / US)
        mine = _held(io_rows.filter(pc.is_in(io_rows["node"], pa.array(names))), begins[j], ends[j])
        segments = dxt.get(label)
        traced = segments is not None and len(segments["rank"]) > 0
        if traced:
            io = _dxt_flow(segments, rank_of, origin_us, given, servers, striping)
        else:
            io = _spread_io(mine, rank_of, origin_us, given, servers, striping, j)
        mpi = _messages(mine, rank_of, origin_us, given, rng)
        built.append(
            WindowJob(
                label,
                np.asarray([nodes[n] for n in names], dtype=np.int64),
                begin,
                finish,
                io,
                mpi,
                traced,
            )
        )
    return LakeWindow(
        window,
        tuple(built),
        network,
        quarantined,
        estimate(tuple(built), topology),
    )


def _held(rows: pa.Table, begin_us: int, end_us: int) -> pa.Table:
    """The ``node_io`` rows of a job's nodes that are the job's: those whose interval's
    midpoint lies in its run (as the metrics attribute them, jobs/metrics/job_io.py)."""
    mid = rows["ts"].cast(pa.int64()).to_numpy() + rows["interval_s"].to_numpy().astype(
        np.int64
    ) * (US // 2)
    return rows.filter(pa.array((mid >= begin_us) & (mid < end_us)))


def _node_io(lake: Cluster, window: win.Window) -> pa.Table:
    condition = (pc.field("ts") >= _ts(window.start)) & (pc.field("ts") < _ts(window.end))
    columns = ["node", "ts", "interval_s", "read_bytes", "write_bytes"]
    return lake.read("node_io", [*columns, "net_rx_bytes", "net_tx_bytes"], condition)


def _dxt(
    lake: Cluster,
    window: win.Window,
    jobs: pa.Table,
    by_job: dict[str, list[tuple[int, str]]],
    context: str,
) -> tuple[dict[str, dict[str, np.ndarray]], int]:
    """Each window job's DXT segments (one module: :data:`DXT_MODULE` where the job has it)
    starting in the window, and how many were quarantined: a segment whose host is not in
    its job's allocation is left out of the replay, counted and logged by log and record."""
    from burstlake.schemas import REGISTRY

    if "darshan_dxt" not in REGISTRY:  # a lake contract without DXT segments
        return {}, 0
    lo, hi = (round(w.timestamp() * NS) for w in (window.start, window.end))
    condition = (pc.field("start_ns") >= lo) & (pc.field("start_ns") < hi)
    columns = ["log_id", "job_id", "module", "rank", "hostname", "record_id", "op"]
    rows = lake.read("darshan_dxt", [*columns, "offset", "length", "start_ns"], condition)
    if rows.num_rows == 0:
        return {}, 0
    label_of = {
        job_id: label
        for job_id, label in zip(jobs["job_id"].to_pylist(), job_labels(jobs), strict=True)
    }
    out: dict[str, dict[str, np.ndarray]] = {}
    quarantined = 0
    job_ids = rows["job_id"].to_pylist()
    for job_id in sorted({j for j in job_ids if j in label_of}):
        label = label_of[job_id]
        mine = rows.filter(pc.equal(rows["job_id"], job_id))
        modules = set(mine["module"].to_pylist())
        module = DXT_MODULE if DXT_MODULE in modules else sorted(modules)[0]
        mine = mine.filter(pc.equal(mine["module"], module))
        allocated = pa.array([n for _, n in by_job[label]])
        inside = pc.fill_null(pc.is_in(mine["hostname"], allocated), False)
        stray = mine.filter(pc.invert(inside))
        if stray.num_rows:
            first = stray.slice(0, 1).to_pylist()[0]
            log.warning(
                "%s: %d DXT segments of job %s quarantined: host %s (log %s, record %s, rank "
                "%s) is not in the job's allocation",
                context,
                stray.num_rows,
                label,
                first["hostname"],
                first["log_id"],
                first["record_id"],
                first["rank"],
            )
            quarantined += stray.num_rows
        mine = mine.filter(inside)
        out[label] = {
            "host": np.asarray(mine["hostname"].to_pylist(), dtype=object),
            "rank": mine["rank"].to_numpy(),
            "record": mine["record_id"].to_numpy(),
            "offset": mine["offset"].to_numpy(),
            "length": mine["length"].to_numpy().astype(np.float64),
            "start_ns": mine["start_ns"].to_numpy(),
        }
    return out, quarantined


def stripe_shares(
    record: np.ndarray, offset: np.ndarray, length: np.ndarray, servers: int, size: int, count: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lustre's striping of each extent (``record``'s file from ``offset``, ``length`` bytes)
    over ``count`` of ``servers`` servers, ``size`` bytes a stripe: the file's first OST is
    its record id modulo ``servers``, stripe unit u lies on OST (first + u mod count) mod
    ``servers``. Returns (extent index, server, bytes) per piece: one piece per server an
    extent touches."""
    first = np.mod(record, servers)
    if count == 1:
        return np.arange(len(record)), first.astype(np.int64), length
    index, server, share = [], [], []
    for k in range(len(record)):
        lo, hi = int(offset[k]), int(offset[k]) + int(length[k])
        units = np.arange(lo // size, (hi - 1) // size + 1) if hi > lo else np.zeros(0, np.int64)
        bytes_in = np.minimum(hi, (units + 1) * size) - np.maximum(lo, units * size)
        slot = units % count
        per = np.bincount(slot, bytes_in, count)
        used = np.flatnonzero(per > 0)
        index += [k] * len(used)
        server += list((first[k] + used) % servers)
        share += list(per[used])
    return np.asarray(index), np.asarray(server, dtype=np.int64), np.asarray(share)


def _flow(
    kind: str,
    stream_key: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    size: np.ndarray,
    release: np.ndarray,
    to_servers: bool,
    think: float = 0.0,
) -> Flow:
    """Requests grouped into streams (``stream_key``), each stream in release order; each
    issued no sooner than ``think`` seconds after the previous one of its stream completed."""
    order = np.lexsort((release, stream_key))
    _, stream = np.unique(stream_key[order], return_inverse=True)
    n = len(order)
    gap = np.full(n, float(think))
    gap[np.r_[True, stream[1:] != stream[:-1]] if n else []] = 0.0  # a stream's first: release
    traffic = tr.Traffic(
        kind,
        stream.astype(np.int64),
        src[order].astype(np.int64),
        dst[order].astype(np.int64),
        size[order].astype(np.float64),
        gap,
        np.zeros(n, dtype=bool),
        to_servers,
    )
    return Flow(traffic, release[order].astype(np.float64))


def _dxt_flow(
    segments: dict[str, np.ndarray],
    rank_of: dict[str, int],
    origin_us: int,
    given: WindowSettings,
    servers: int,
    striping: bool,
) -> Flow:
    """Each DXT segment a request from its host's rank at its start; a stream per Darshan
    rank (and per stripe slot, so one segment's pieces on several servers go together)."""
    src = np.asarray([rank_of[h] for h in segments["host"]], dtype=np.int64)
    release = (segments["start_ns"] - origin_us * 1000) / NS
    if striping:
        at, server, size = stripe_shares(
            segments["record"],
            segments["offset"],
            segments["length"],
            servers,
            given.stripe_size,
            given.stripe_count,
        )
    else:
        at = np.arange(len(src))
        server, size = np.full(len(src), -1, dtype=np.int64), segments["length"]
    slot = np.mod(server, given.stripe_count) if striping else np.zeros(len(at), np.int64)
    key = segments["rank"][at] * given.stripe_count + slot
    return _flow("io", key, src[at], server, size, release[at], True)


def _spread(total: np.ndarray, piece: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``total[i]`` bytes as ceil(total / piece) pieces of ``piece`` bytes (the last the
    rest): (row of each piece, its position within the row, its bytes)."""
    count = np.ceil(total / piece).astype(np.int64)
    row = np.repeat(np.arange(len(total)), count)
    first = np.repeat(np.cumsum(count) - count, count)
    position = np.arange(len(row)) - first
    size = np.minimum(piece, total[row] - position * piece)
    return row, position, size


def _spread_io(
    rows: pa.Table,
    rank_of: dict[str, int],
    origin_us: int,
    given: WindowSettings,
    servers: int,
    striping: bool,
    job: int,
) -> Flow:
    """A node's ``node_io`` bytes of an interval as requests of ``request_bytes`` evenly
    spread over the interval; with striping each rank writes one file sequentially."""
    if rows.num_rows == 0:
        return _flow(*_empty("io"), True)
    total = _storage_bytes(rows)
    keep = total > 0
    rank = np.asarray([rank_of[n] for n in rows["node"].to_pylist()], dtype=np.int64)[keep]
    at = (rows["ts"].cast(pa.int64()).to_numpy()[keep] - origin_us) / US
    interval = rows["interval_s"].to_numpy().astype(np.float64)[keep]
    row, position, size = _spread(total[keep], given.request_bytes)
    pieces = np.ceil(total[keep] / given.request_bytes)
    release = at[row] + interval[row] * position / pieces[row]
    if not striping:
        return _flow("io", rank[row], rank[row], np.full(len(row), -1), size, release, True)
    order = np.lexsort((release, rank[row]))  # each rank's file, written in order
    offset = np.empty(len(row))
    ends = np.cumsum(size[order])
    first = np.r_[True, rank[row][order][1:] != rank[row][order][:-1]]
    base = np.maximum.accumulate(np.where(first, ends - size[order], 0))
    offset[order] = ends - size[order] - base
    record = job * 1_000_003 + rank[row]  # one file per job and rank
    at_piece, server, share = stripe_shares(
        record, offset, size, servers, given.stripe_size, given.stripe_count
    )
    key = rank[row][at_piece] * given.stripe_count + np.mod(server, given.stripe_count)
    src = rank[row][at_piece]
    return _flow("io", key, src, server, share, release[at_piece], True)


def _storage_bytes(rows: pa.Table) -> np.ndarray:
    """read + write bytes of each ``node_io`` row (unmonitored as 0)."""
    read, write = (pc.fill_null(rows[c], 0).to_numpy() for c in ("read_bytes", "write_bytes"))
    return (read + write).astype(np.float64)


def _empty(kind: str) -> tuple:
    none = np.zeros(0, dtype=np.int64)
    return kind, none, none, none, np.zeros(0), np.zeros(0)


def partners(pattern: str, ranks: int, rng: np.random.Generator) -> np.ndarray | None:
    """For ``random-pairs`` and ``ring``, each rank's one partner; None for ``all-to-all``
    (a rank's messages go round robin to every other rank)."""
    if pattern == "ring":
        return (np.arange(ranks) + 1) % ranks
    if pattern == "random-pairs":
        return tr.random_pairs(ranks, rng)
    return None


def _messages(
    rows: pa.Table,
    rank_of: dict[str, int],
    origin_us: int,
    given: WindowSettings,
    rng: np.random.Generator,
) -> Flow:
    """Communication (network bytes less storage bytes, 004 §6.2; halved: a message counts at
    both ends) as messages of ``message_bytes`` spread over each interval, to partners by
    ``pattern``."""
    ranks = len(rank_of)
    if rows.num_rows == 0 or ranks < 2:
        return _flow(*_empty("mpi"), False)
    rx, tx = rows["net_rx_bytes"], rows["net_tx_bytes"]
    monitored = pc.or_(pc.is_valid(rx), pc.is_valid(tx)).to_numpy()
    net = (pc.fill_null(rx, 0).to_numpy() + pc.fill_null(tx, 0).to_numpy()).astype(np.float64)
    sent = np.where(monitored, np.maximum(net - _storage_bytes(rows), 0.0) / 2, 0.0)
    keep = sent > 0
    if not keep.any():
        return _flow(*_empty("mpi"), False)
    rank = np.asarray([rank_of[n] for n in rows["node"].to_pylist()], dtype=np.int64)[keep]
    at = (rows["ts"].cast(pa.int64()).to_numpy()[keep] - origin_us) / US
    interval = rows["interval_s"].to_numpy().astype(np.float64)[keep]
    row, position, size = _spread(sent[keep], given.message_bytes)
    pieces = np.ceil(sent[keep] / given.message_bytes)
    if given.message_interval_s is None:  # spread evenly over the interval
        release = at[row] + interval[row] * position / pieces[row]
    else:  # from the interval's start, each message an interval after the previous completes
        release = at[row]
    partner = partners(given.pattern, ranks, rng)
    src = rank[row]
    # all-to-all: a rank's messages go round robin to the other ranks
    dst = (src + 1 + position % (ranks - 1)) % ranks if partner is None else partner[src]
    think = given.message_interval_s or 0.0
    return _flow("mpi", src, src, dst, size, release, False, think)


def estimate(jobs: tuple[WindowJob, ...], topology: Topology) -> Estimate:
    """Requests, packets, events and memory of a window's replay, before it runs: packets of
    the packet model's size (its setting, else the model's default), each crossing as many
    resources as the machine's I/O routes do on average (the packet model's events are
    about one per packet and hop: 10.8 M for 4.3 M packets on 3-hop routes, a synthesized
    ``tiny`` window); the flow model's events are each request's start and end."""
    from burstlake.replay.packet import PacketSettings

    settings_ = getattr(topology.contention, "settings", None)
    packet_bytes = getattr(settings_, "packet_bytes", PacketSettings().packet_bytes)
    sizes = [job.io.traffic.size for job in jobs] + [job.mpi.traffic.size for job in jobs]
    size = np.concatenate(sizes) if sizes else np.zeros(0)
    requests = len(size)
    routes = np.diff(topology.io_paths().indptr)
    hops = float(routes.mean()) if len(routes) else 1.0  # resources a route crosses
    packets = int(np.ceil(size / packet_bytes).sum())
    packet_model = getattr(topology.contention, "name", "flow") == "packet"
    events = round(packets * hops) if packet_model else 2 * requests
    memory = requests * (BYTES_PER_REQUEST + hops * BYTES_PER_ROUTE_ENTRY)
    return Estimate(requests, packets, int(events), float(memory))


# --- replay and scores -------------------------------------------------------------------------


def routed(topology: Topology, jobs: list[WindowJob]) -> tuple[Requests, np.ndarray, np.ndarray]:
    """Every job's I/O and messages as one set of requests on ``topology``: the requests,
    the job (position in ``jobs``) and whether each is I/O."""
    parts, owner, is_io, release, window = [], [], [], [], []
    for j, job in enumerate(jobs):
        for flow in (job.io, job.mpi):
            traffic = flow.traffic
            if not len(traffic):
                continue
            if traffic.to_servers:  # -1: the node's own forwarding target
                own = topology.ion_of[job.nodes[traffic.src]]
                traffic = replace(traffic, dst=np.where(traffic.dst < 0, own, traffic.dst))
            parts.append((traffic, job.nodes))
            owner.append(np.full(len(traffic), j))
            is_io.append(np.full(len(traffic), traffic.to_servers))
            release.append(flow.release)
            pace = job.throttle_window if traffic.to_servers else 0.0
            window.append(np.full(len(traffic), pace))
    if not parts:
        return None, np.zeros(0, np.int64), np.zeros(0, bool)  # type: ignore[return-value]
    done = tr.requests(topology, parts)
    cat = np.concatenate
    requests = replace(done.requests, release=cat(release), window=cat(window))
    return requests, cat(owner), cat(is_io)


@dataclass(frozen=True)
class Run:
    """One replay of some of a window's jobs: each request's job, kind, start, end, size."""

    job: np.ndarray
    io: np.ndarray
    start: np.ndarray
    end: np.ndarray
    size: np.ndarray
    events: int = 0  # the model's events (the estimate's check)


def replay(topology: Topology, jobs: list[WindowJob], progress: Progress = None) -> Run:
    requests, owner, is_io = routed(topology, jobs)
    if requests is None:
        empty = np.zeros(0)
        return Run(owner, is_io, empty, empty, empty)
    timeline = topology.simulate(requests, progress)
    size = np.asarray(requests.size)
    return Run(owner, is_io, timeline.start, timeline.end, size, int(timeline.events))


def busy_time(start: np.ndarray, end: np.ndarray) -> float:
    """The time at least one of the transfers [start, end) is in flight (their union)."""
    if not len(start):
        return 0.0
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(s) - 1]
    return float(np.sum(reach[last] - s[first]))


def _job_view(run: Run, j: int) -> tuple[float, np.ndarray, float]:
    """A job's I/O time (busy time of its I/O), its message latencies, its completion."""
    mine = run.job == j
    io = mine & run.io
    mpi = mine & ~run.io
    completion = float(run.end[mine].max() - run.start[mine].min()) if mine.any() else 0.0
    return busy_time(run.start[io], run.end[io]), run.end[mpi] - run.start[mpi], completion


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def runs_of(each: LakeWindow, alone: bool) -> list[tuple[int, ...]]:
    """The replays a window's scores need, each the jobs it runs: all together (the
    interference run), then with ``alone`` each job by itself (its baseline run)."""
    every = tuple(range(len(each.jobs)))
    return [every, *([(j,) for j in every] if alone else [])]


def run_jobs(topology: Topology, each: LakeWindow, chosen: tuple[int, ...], progress: Progress):
    return replay(topology, [each.jobs[j] for j in chosen], progress)


def window_scores(i: int, each: LakeWindow, runs: list[Run]) -> list[sc.Score]:
    """One window's scores from its runs (:func:`runs_of`): why it was picked, its size and,
    per job, I/O time, message latency (mean, p99, max), slowdown against the job alone and
    interference factor (completion time over completion alone, 001 §II.C)."""
    prefix = f"w{i}"
    window = each.window
    out = [
        sc.Score(f"{prefix}.start", window.start.timestamp(), "s since epoch"),
        sc.Score(f"{prefix}.length", window.length_s, "s"),
        sc.Score(f"{prefix}.picked.{window.reason}", window.value, window.unit or None),
        sc.Score(f"{prefix}.jobs", float(len(each.jobs)), "jobs"),
        sc.Score(f"{prefix}.requests", float(each.estimate.requests), "requests"),
        sc.Score(f"{prefix}.estimated_events", float(each.estimate.events), "events"),
        sc.Score(f"{prefix}.events", float(runs[0].events), "events"),
        sc.Score(f"{prefix}.network_counters", float(each.network_counters), "bool"),
        sc.Score(f"{prefix}.dxt_quarantined", float(each.quarantined), "segments"),
    ]
    shared, alone = runs[0], runs[1:]
    factors = []
    for j, job in enumerate(each.jobs):
        name = f"{prefix}.{job.name}"
        io_time, latency, completion = _job_view(shared, j)
        base_io, base_latency, base_completion = (None, np.zeros(0), None)
        if alone:
            base_io, base_latency, base_completion = _job_view(alone[j], 0)
        mean = float(latency.mean()) if len(latency) else None
        base_mean = float(base_latency.mean()) if len(base_latency) else None
        factor = _ratio(completion, base_completion)
        factors.append(factor)
        out += [
            sc.Score(f"{name}.io_bytes", job.io.bytes, "bytes"),
            sc.Score(f"{name}.io_from_dxt", float(job.dxt), "bool"),
            sc.Score(f"{name}.io_time", io_time, "s"),
            sc.Score(f"{name}.io_time_alone", base_io, "s"),
            sc.Score(f"{name}.io_slowdown", _ratio(io_time, base_io), "x"),
            sc.Score(f"{name}.messages", float(len(latency)), "messages"),
            sc.Score(f"{name}.mpi_latency_mean", mean, "s"),
            sc.Score(
                f"{name}.mpi_latency_p99",
                float(np.percentile(latency, 99)) if len(latency) else None,
                "s",
            ),
            sc.Score(
                f"{name}.mpi_latency_max", float(latency.max()) if len(latency) else None, "s"
            ),
            sc.Score(f"{name}.mpi_slowdown", _ratio(mean, base_mean), "x"),
            sc.Score(f"{name}.interference_factor", factor, "x"),
        ]
    total = sc.interference_factor_sum(factors)
    return [*out, replace(total, metric=f"{prefix}.{total.metric}")]


def scores(given: Settings, topology: Topology, work: WindowDemand, progress: Progress) -> list:
    """Every window's scores under one policy. The runs (window × together or alone) are
    independent: with ``workers`` > 1 they run in local processes (:func:`fanned_runs`),
    giving the rows of a serial run."""
    tasks = [
        (i, chosen)
        for i, each in enumerate(work.windows)
        for chosen in runs_of(each, given.job_scores)
    ]
    if work.settings.spark_master is not None:
        done = spark_runs(topology, work, tasks)
    elif work.settings.workers > 1 and len(tasks) > 1:
        done = fanned_runs(topology, work, tasks)
    else:
        done = [run_jobs(topology, work.windows[i], chosen, progress) for i, chosen in tasks]
    out = []
    for i, each in enumerate(work.windows):
        out += window_scores(
            i, each, [run for (w, _), run in zip(tasks, done, strict=True) if w == i]
        )
    return out


def _one_run(args: tuple) -> Run:
    each, chosen, topology, model = args
    return run_jobs(topology.with_contention(models.parse(model)), each, chosen, None)


def _run_args(topology: Topology, work: WindowDemand, tasks: list[tuple]) -> list[tuple]:
    # a contention model holds functions, so it crosses to a worker as its ``model:`` spec
    contention = topology.contention or models.DEFAULT
    contention.ran(len(tasks))  # the workers replay under its spec
    plain = topology.with_contention(None)
    return [(work.windows[i], chosen, plain, contention.spec()) for i, chosen in tasks]


def fanned_runs(topology: Topology, work: WindowDemand, tasks: list[tuple]) -> list[Run]:
    """The runs ``tasks`` names (window, jobs) in ``workers`` local processes, in order."""
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=work.settings.workers) as pool:
        return list(pool.map(_one_run, _run_args(topology, work, tasks)))


def spark_runs(topology: Topology, work: WindowDemand, tasks: list[tuple]) -> list[Run]:
    """The runs as Spark tasks, one each, on ``spark_master`` through the session the metrics
    use (:func:`burstlake.spark.session`), collected in order: the rows of a local run."""
    from burstlake.spark import session

    spark = session(work.settings.spark_master, app_name="burstlake-replay")
    args = _run_args(topology, work, tasks)
    return spark.sparkContext.parallelize(args, len(args)).map(_one_run).collect()


def window_span(spec: dict) -> tuple[datetime | None, datetime | None]:
    """The span the scores cover: the explicit windows' first start and last end."""
    try:
        windows, _ = chosen_windows(spec)
    except ValueError:
        return None, None
    if not windows:
        return None, None
    return min(w.start for w in windows), max(w.end for w in windows)


KIND = register(
    SOURCE,
    Kind(
        keys=KEYS,
        check=check,
        demand=demand,
        scores=scores,
        window=window_span,
        reads_lake=True,
    ),
)
