"""Synthetic jobs sharing a machine (paper 000 §3; paper 002): MPI, I/O, nearest-neighbour and
all-to-all jobs built by :mod:`burstlake.replay.traffic`, placed together, each replayed alone
(the *baseline run*) and all together (the *interference run*) through the one event-driven
:func:`~burstlake.replay.events.simulate`.

    workload:
      source: jobs
      seed: 0                    # traffic and first placement
      placement: random-node     # the placement the jobs start with (000 §3.1)
      jobs:
        - {name: mpi, kind: mpi, nodes: 612, message_bytes: 4096, interval_s: 5.0e-4}
        - {name: io, kind: io, nodes: 612, request_bytes: 4.0e+6, interval_s: 0}
        - {name: amg, kind: application, nodes: 30, pattern: halo, compute_s: 0.3}

Placement policies (``random-switch``, ``split``, ...) move the jobs, server policies move the
I/O servers, ``throttle`` paces the I/O jobs; the scores are per job (its traffic class is its
kind).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from burstlake.allocation import STRATEGIES, JobRequest, Placements, place_in_order
from burstlake.replay import scores as sc
from burstlake.replay import traffic as tr
from burstlake.replay.graph import Topology
from burstlake.replay.workloads import (
    Kind,
    Progress,
    ScenarioLimits,
    Settings,
    entries,
    known_keys,
    number,
    register,
)

# Each kind's settings where a job leaves them out: 000 §5's representative MPI job (4 KB every
# 500 μs) and checkpoint I/O (4 MB requests back to back), 1,000 scored requests after 50
# warm-up ones per client (000 §3.3); the 002 exchanges on 30 nodes of 36 tasks (002 §2.2).
DEFAULTS: dict[str, dict[str, Any]] = {
    "mpi": {
        "nodes": 612,
        "message_bytes": 4096,
        "interval_s": 5e-4,
        "messages": 1000,
        "warmup": 50,
    },
    "io": {"nodes": 612, "request_bytes": 4e6, "interval_s": 0.0, "requests": 1000, "warmup": 50},
    "nearest-neighbour": {
        "nodes": 30,
        "ranks_per_node": 36,
        "mapping": "block",
        "message_bytes": 32768,
        "interval_s": 1e-3,
        "rounds": 100,
        "warmup": 5,
    },
    "all-to-all": {
        "nodes": 30,
        "ranks_per_node": 36,
        "mapping": "block",
        "message_bytes": 2048,
        "interval_s": 1e-3,
        "rounds": 100,
        "warmup": 5,
    },
    # 002 Table 1's applications: a compute phase, then a halo (AMG, UMT) or all-to-all (pF3D)
    # exchange and a small collective, each round; scenarios set the sizes per application
    "application": {
        "nodes": 30,
        "ranks_per_node": 36,
        "mapping": "block",
        "pattern": "halo",
        "message_bytes": 262144,
        "collective_bytes": 1024,
        "compute_s": 0.3,
        "rounds": 20,
        "warmup": 0,
    },
}
WORKLOAD_KEYS = frozenset({"jobs", "seed", "placement"})
JOB_KEYS = frozenset({"name", "kind"})
NAME = re.compile(r"[A-Za-z0-9_.-]+")

# name: (lowest value, integer?) — one rule per setting
_RANGES = {
    "nodes": (1, True),
    "ranks_per_node": (1, True),
    "messages": (1, True),
    "requests": (1, True),
    "rounds": (1, True),
    "warmup": (0, True),
    "message_bytes": (0, False),
    "request_bytes": (0, False),
    "interval_s": (0, False),
    "compute_s": (0, False),
    "collective_bytes": (0, False),
}
_POSITIVE = {"message_bytes", "request_bytes"}  # > 0, the others >= their lowest value


@dataclass(frozen=True)
class Job:
    """One job: its name and kind, its size, its nodes (node index of each rank, once placed)
    and its traffic."""

    name: str
    kind: str
    size: int
    nodes: np.ndarray
    traffic: tr.Traffic
    throttle_window: float = 0.0  # seconds between the starts of a client's requests (000 §5.3)


@dataclass(frozen=True)
class JobsDemand:
    """The jobs of a ``jobs`` workload: :class:`~burstlake.replay.demands.Placeable` and
    :class:`~burstlake.replay.demands.Throttleable`."""

    jobs: tuple[Job, ...]

    def placement_jobs(self, topology: Topology) -> list[JobRequest]:
        """All jobs run at once, from start to end of the replay."""
        return [JobRequest(i, job.size, 0.0, math.inf) for i, job in enumerate(self.jobs)]

    def placed(self, topology: Topology, placements: Placements) -> JobsDemand:
        return JobsDemand(
            tuple(replace(job, nodes=n) for job, n in zip(self.jobs, placements.nodes, strict=True))
        )

    def throttled(self, window: float) -> JobsDemand:
        """The I/O jobs paced by a throttle window (000 §5.3); the others unchanged."""
        return JobsDemand(
            tuple(
                replace(job, throttle_window=window) if job.kind == "io" else job
                for job in self.jobs
            )
        )


# --- the scenario's settings -------------------------------------------------------------------


def job_specs(workload: dict) -> list[dict]:
    """The workload's jobs with their defaults filled in; a one-line error names the job, the
    key and what is allowed."""
    specs, names = [], set()
    for where, job in entries(workload, "jobs", "{name, kind, ...}"):
        kind = job.get("kind")
        if kind not in DEFAULTS:
            raise ValueError(f"{where}: kind must be one of {sorted(DEFAULTS)}, got {kind!r}")
        allowed = JOB_KEYS | set(DEFAULTS[kind])
        known_keys(f"{where} ({kind})", job, allowed)
        spec = DEFAULTS[kind] | job
        name = spec.setdefault("name", kind)
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise ValueError(f"{where}: name must use letters, digits, _ . and -, got {name!r}")
        if name in names:
            raise ValueError(f"{where}: job name {name!r} is used twice; names must differ")
        names.add(name)
        for key, value in spec.items():
            if key in _RANGES:
                low, integer = _RANGES[key]
                got = number(
                    f"{where} ({name}): {key}",
                    value,
                    low=low,
                    strict=key in _POSITIVE,
                    integer=integer,
                )
                spec[key] = int(got) if integer else got
        if spec.get("mapping", "block") not in tr.MAPPINGS:
            raise ValueError(
                f"{where} ({name}): mapping must be one of {list(tr.MAPPINGS)}, "
                f"got {spec['mapping']!r}"
            )
        if spec.get("pattern", "halo") not in tr.PATTERNS:
            raise ValueError(
                f"{where} ({name}): pattern must be one of {list(tr.PATTERNS)}, "
                f"got {spec['pattern']!r}"
            )
        if kind == "mpi" and spec["nodes"] < 2:
            raise ValueError(f"{where} ({name}): an mpi job needs nodes >= 2")
        specs.append(spec)
    return specs


def _seed(workload: dict) -> int:
    seed = workload.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"workload jobs: seed must be an integer >= 0, got {seed!r}")
    return seed


def _placement(workload: dict) -> str:
    name = workload.get("placement", "random-node")
    if name not in STRATEGIES or name == "split":
        allowed = sorted(set(STRATEGIES) - {"split"})
        raise ValueError(f"workload jobs: placement must be one of {allowed}, got {name!r}")
    return name


def request_count(spec: dict) -> int:
    """Requests one job replays (an upper bound for the exchanges: node pairs × rounds)."""
    per = spec.get("messages", spec.get("requests", spec.get("rounds"))) + spec["warmup"]
    nodes = spec["nodes"]
    if spec["kind"] == "application":
        halo = spec["pattern"] == "halo"
        pairs = min(2 * nodes * spec["ranks_per_node"], nodes * (nodes - 1)) if halo else 0
        return (pairs + nodes * (nodes - 1)) * per
    if spec["kind"] == "nearest-neighbour":
        return min(2 * nodes * spec["ranks_per_node"], nodes * (nodes - 1)) * per
    if spec["kind"] == "all-to-all":
        return nodes * (nodes - 1) * per
    return nodes * per


def check(workload: dict, limits: ScenarioLimits) -> None:
    specs = job_specs(workload)
    _seed(workload)
    _placement(workload)
    total = sum(request_count(s) for s in specs)
    if total > limits.requests:
        raise ValueError(
            f"workload jobs asks for {total:,} requests; the limit is {limits.requests:,} "
            f"(fewer nodes, messages, requests or rounds)"
        )


# --- demand and scores ------------------------------------------------------------------------


def traffic_of(spec: dict, servers: int, rng: np.random.Generator) -> tr.Traffic:
    """The traffic of one job spec (ranks 0..nodes-1)."""
    kind, nodes = spec["kind"], spec["nodes"]
    if kind == "mpi":
        return tr.mpi_pairs(
            nodes,
            spec["message_bytes"],
            spec["interval_s"],
            spec["messages"],
            spec["warmup"],
            rng,
        )
    if kind == "io":
        return tr.lustre_io(
            nodes,
            servers,
            spec["request_bytes"],
            spec["interval_s"],
            spec["requests"],
            spec["warmup"],
            rng,
        )
    fields = tr.Exchange.__dataclass_fields__
    exchange = tr.Exchange(**{k: v for k, v in spec.items() if k in fields})
    if kind == "application":
        exchange = replace(exchange, interval_s=spec["compute_s"])
        return tr.application(exchange, spec["pattern"], spec["collective_bytes"], rng)
    generate = tr.nearest_neighbour if kind == "nearest-neighbour" else tr.all_to_all
    return generate(exchange, rng)


def demand(workload: dict, topology: Topology, _lake: Any = None) -> JobsDemand:
    """The jobs, their traffic and their first placement (``placement``, default random-node
    as in 000 §3.1), from ``seed``."""
    specs = job_specs(workload)
    wanted = sum(s["nodes"] for s in specs)
    if wanted > len(topology.nodes):
        raise ValueError(
            f"workload jobs: the jobs need {wanted} nodes; topology {topology.name} has "
            f"{len(topology.nodes)} compute nodes"
        )
    traffic_rng, place_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(_seed(workload)).spawn(2)
    )
    jobs = JobsDemand(
        tuple(
            Job(
                s["name"],
                s["kind"],
                s["nodes"],
                np.zeros(0, dtype=np.int64),
                traffic_of(s, len(topology.ions), traffic_rng),
            )
            for s in specs
        )
    )
    group, strategy = topology.groups(), STRATEGIES[_placement(workload)]
    nodes = place_in_order(
        jobs.placement_jobs(topology),
        group,
        lambda free, r: strategy(free, r.nodes, group, place_rng),
        len(topology.nodes),
    )
    return jobs.placed(topology, nodes)


@dataclass(frozen=True)
class Runs:
    """The interference run and each job's baseline run of a demand on a topology."""

    routed: tr.Routed
    shared: Any  # Timeline of all jobs together
    alone: list[Any]  # Timeline of each job alone, in job order


def replay(topology: Topology, jobs: JobsDemand, progress: Progress = None) -> Runs:
    """Every job alone (baseline runs), then all together (the interference run)."""

    def run(chosen: list[Job]) -> tuple[tr.Routed, Any]:
        routed = tr.requests(topology, [(job.traffic, job.nodes) for job in chosen])
        window = np.array([job.throttle_window for job in chosen])[routed.job]
        return routed, topology.simulate(replace(routed.requests, window=window), progress)

    alone = [run([job])[1] for job in jobs.jobs]
    routed, shared = run(list(jobs.jobs))
    return Runs(routed, shared, alone)


def job_scores(jobs: JobsDemand, runs: Runs) -> list[sc.Score]:
    """Per job: latency in both runs, slowdown, interference factor, completion time, bytes."""
    out, factors = [], []
    for j, job in enumerate(jobs.jobs):
        mine = runs.routed.job == j
        scored = mine & ~runs.routed.warmup
        alone = runs.alone[j]
        shared_latency = runs.shared.latency[scored]
        alone_latency = alone.latency[~job.traffic.warmup]
        completion = float(runs.shared.end[mine].max() - runs.shared.start[mine].min())
        completion_alone = float(alone.end.max() - alone.start.min())
        scores = sc.interference_scores(
            job.name,
            shared_latency,
            alone_latency,
            completion,
            completion_alone,
            float(runs.shared.delivered[mine].sum()),
        )
        factors.append(next(s.value for s in scores if s.metric.endswith("interference_factor")))
        out += scores
    return [*out, sc.interference_factor_sum(factors)]


def scores(_given: Settings, topology: Topology, work: JobsDemand, progress: Progress) -> list:
    return job_scores(work, replay(topology, work, progress))


KIND = register(
    "jobs",
    Kind(keys=WORKLOAD_KEYS, check=check, demand=demand, scores=scores),
)
