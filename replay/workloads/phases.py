"""I/O phases as the unit of replay (paper 001 §II-C, §IV): applications A, B, ... each write
``bytes_per_node`` from N compute nodes, starting at an offset dt; the coordination strategies
(:mod:`burstlake.replay.policies.coordination`) decide when each phase may move its bytes.

A phase's bytes go from its nodes through their forwarding targets to storage on the scenario's
topology (phases take consecutive nodes in the order they are listed, as Slurm packs jobs). Each
node writes ``files`` files, each in requests of at most ``request_bytes``: one *round* is one
request of every node of the phase. A strategy pauses a phase only between rounds (at every
round, or only at file ends: the granularity of 001 §IV-C) by giving a round a ``release`` time
(:class:`~burstlake.replay.requests.Requests`); the one event-driven ``simulate()`` replays it.

    workload:
      source: phases
      request_bytes: 64.0e6
      phases:
        - {app: A, nodes: 64, bytes_per_node: 4.0e9, files: 4}
        - {app: B, nodes: 64, bytes_per_node: 1.0e9, start: 5.0}
      sweep: {dt: {from: -10, to: 10, step: 1}}   # Δ-graph: B starts dt after A (001 §II-C)
      server_efficiency: {streams: [64, 128], efficiency: [1.0, 0.8]}  # optional (efficiency.py)

``source: lake_phases`` replays instead the ``io_phases`` the metrics detected in the lake's
node_io (a ``window`` of them), each on its job's allocated nodes, and scores it against the
phases as they ran (:func:`lake_demand`, :func:`lake_scores`).

Scores (:func:`scores`): per phase its I/O time T, T_alone (the phase replayed alone) and the
interference factor I = T / T_alone (001 §II-C); per scenario Σ N·T in CPU-hours and Σ I
(001 §IV-D). A sweep also writes its points to the ``delta_graph`` table, beside the
theoretical proportional-sharing curve (:func:`proportional_sharing`).
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.lake import Cluster, cluster_of
from burstlake.presets import PRESETS
from burstlake.replay import scores as sc
from burstlake.replay.demands import REQUEST_BYTES, Phase, PhaseDemand, Phases, require
from burstlake.replay.efficiency import KEY as EFFICIENCY_KEY
from burstlake.replay.efficiency import ServerEfficiency
from burstlake.replay.graph import Topology
from burstlake.replay.workloads import (
    Kind,
    Progress,
    ScenarioLimits,
    Scored,
    Settings,
    entries,
    known_keys,
    number,
    register,
)
from burstlake.replay.workloads.lake import window_bounds
from burstlake.replay.workloads.lake_jobs import JOB_KEY

log = logging.getLogger(__name__)
LIMITS = ScenarioLimits()

PHASE_KEYS = {"app", "nodes", "bytes_per_node", "start", "files"}  # of one phases[] entry
SWEEP_POINTS = 2_000  # at most this many dt values in one sweep
DELTA_TABLE = "delta_graph"


def proportional_sharing(
    alone_a: float, alone_b: float, n_a: float, n_b: float, dt: float
) -> tuple[float, float]:
    """The theoretical Δ-graph point (001 §II-C): A starts at 0, B at dt; alone each takes the
    whole storage, together they share it in proportion to their node counts (each node one
    equal share, as max-min gives). Returns (T_A, T_B); piecewise linear in dt."""
    if dt < 0:
        t_b, t_a = proportional_sharing(alone_b, alone_a, n_b, n_a, -dt)
        return t_a, t_b
    share_a, share_b = n_a / (n_a + n_b), n_b / (n_a + n_b)
    left = alone_a - dt  # A's remaining work (alone-seconds) when B arrives
    if left <= 0:
        return alone_a, alone_b
    # both run: A ends first if its remaining work at its share takes less than B's
    if left / share_a <= alone_b / share_b:
        overlap = left / share_a
        return dt + overlap, overlap + (alone_b - overlap * share_b)
    overlap = alone_b / share_b
    return dt + overlap + (left - overlap * share_a), overlap


def _phase_specs(workload: dict) -> list[dict]:
    """The ``phases:`` list, each entry checked (one-line errors naming the key)."""
    out, seen = [], set()
    for where, spec in entries(workload, "phases", "{app, nodes, bytes_per_node, ...}"):
        known_keys(where, spec, PHASE_KEYS)
        for key in ("app", "nodes", "bytes_per_node"):
            if key not in spec:
                raise ValueError(f"{where}: missing key {key!r}")
        app = str(spec["app"])
        if not app or app in seen:
            raise ValueError(f"{where}.app: {app!r} is {'empty' if not app else 'listed twice'}")
        seen.add(app)
        nodes = number(f"{where}.nodes", spec["nodes"], integer=True)
        if nodes < 1:
            raise ValueError(f"{where}.nodes: a phase needs at least 1 node, got {spec['nodes']}")
        size = number(f"{where}.bytes_per_node", spec["bytes_per_node"])
        if size <= 0:
            raise ValueError(f"{where}.bytes_per_node must be positive, got {size:g}")
        start = number(f"{where}.start", spec.get("start", 0.0))
        if start < 0:
            raise ValueError(f"{where}.start: an offset is at least 0 s, got {start:g}")
        files = number(f"{where}.files", spec.get("files", 1), integer=True)
        if files < 1:
            raise ValueError(f"{where}.files must be at least 1, got {spec.get('files')}")
        out.append(
            {
                "app": app,
                "nodes": int(nodes),
                "bytes_per_node": size,
                "start": start,
                "files": int(files),
            }
        )
    return out


def sweep_points(workload: dict) -> np.ndarray | None:
    """The dt values of a ``sweep:`` (a list, or ``{from, to, step}``), or None."""
    sweep = workload.get("sweep")
    if sweep is None:
        return None
    if not isinstance(sweep, dict) or set(sweep) != {"dt"}:
        raise ValueError("workload phases: sweep is {dt: [values]} or {dt: {from, to, step}}")
    values = sweep["dt"]
    if isinstance(values, dict):
        if set(values) != {"from", "to", "step"}:
            raise ValueError("workload phases: sweep.dt as a range needs exactly from, to, step")
        low, high, step = (number(f"sweep.dt.{k}", values[k]) for k in ("from", "to", "step"))
        if step <= 0 or high < low:
            raise ValueError("workload phases: sweep.dt needs step > 0 and to >= from")
        count = math.floor((high - low) / step + 1e-9) + 1
        if count > SWEEP_POINTS:
            raise ValueError(
                f"workload phases: sweep.dt has {count} points; at most {SWEEP_POINTS}"
            )
        return low + step * np.arange(count)
    if not isinstance(values, list) or not values:
        raise ValueError("workload phases: sweep.dt must be a non-empty list or {from, to, step}")
    points = np.asarray([number("sweep.dt[]", v) for v in values])
    if len(np.unique(points)) != len(points):
        raise ValueError("workload phases: sweep.dt lists a value twice")
    if len(points) > SWEEP_POINTS:
        raise ValueError(
            f"workload phases: sweep.dt has {len(points)} points; at most {SWEEP_POINTS}"
        )
    return points


def request_bytes(workload: dict) -> float:
    size = number("workload: request_bytes", workload.get("request_bytes", REQUEST_BYTES))
    if size <= 0:
        raise ValueError(f"workload: request_bytes must be positive, got {size:g}")
    return size


def cores_per_node(workload: dict, topology: str | None) -> float:
    """The cores behind each node for CPU-hours: the setting, else the machine preset's
    (burstlake.presets), else 1 (then CPU-hours count nodes)."""
    if "cores_per_node" in workload:
        cores = number("workload: cores_per_node", workload["cores_per_node"])
        if cores <= 0:
            raise ValueError(f"workload: cores_per_node must be positive, got {cores:g}")
        return cores
    return float(PRESETS[topology].cores_per_node) if topology in PRESETS else 1.0


def check(workload: dict, limits: ScenarioLimits) -> None:
    specs = _phase_specs(workload)
    points = sweep_points(workload)
    if points is not None and len(specs) != 2:
        raise ValueError(
            f"workload phases: a sweep moves B against A: give 2 phases, got {len(specs)}"
        )
    size = request_bytes(workload)
    cores_per_node(workload, None)
    ServerEfficiency.from_mapping(workload.get(EFFICIENCY_KEY))
    per_case = sum(
        s["nodes"] * s["files"] * math.ceil(s["bytes_per_node"] / s["files"] / size - 1e-9)
        for s in specs
    )
    total = per_case * (1 if points is None else len(points))
    if total > limits.requests:
        raise ValueError(
            f"workload phases asks for {total:,} requests; the limit is {limits.requests:,} "
            "(a larger request_bytes, fewer nodes or sweep points)"
        )


def demand(workload: dict, topology: Topology, _lake: Any = None) -> PhaseDemand:
    """The scenario's phases on consecutive compute nodes of ``topology`` (one case per sweep
    point: A at 0 and B at dt, shifted so the earlier starts at 0)."""
    specs = _phase_specs(workload)
    needed = sum(s["nodes"] for s in specs)
    if needed > len(topology.nodes):
        raise ValueError(
            f"workload phases: the phases need {needed} nodes; topology {topology.name} "
            f"has {len(topology.nodes)}"
        )
    first = np.cumsum([0] + [s["nodes"] for s in specs])
    phases = tuple(
        Phase(
            s["app"],
            np.arange(first[k], first[k] + s["nodes"], dtype=np.int64),
            s["bytes_per_node"],
            s["start"],
            s["files"],
        )
        for k, s in enumerate(specs)
    )
    size = request_bytes(workload)
    cores = cores_per_node(workload, topology.name)
    points = sweep_points(workload)
    curve = ServerEfficiency.from_mapping(workload.get(EFFICIENCY_KEY))
    if points is None:
        return PhaseDemand((Phases(phases, size, efficiency=curve),), cores)
    cases = []
    for dt in points:
        a, b = phases
        cases.append(
            Phases(
                (replace(a, start=max(0.0, -dt)), replace(b, start=max(0.0, dt))),
                size,
                dt=dt,
                efficiency=curve,
            )
        )
    return PhaseDemand(tuple(cases), cores, sweep=True)


@dataclass(frozen=True)
class CaseScores:
    """One case replayed under one policy: T, T_alone and I per phase."""

    io_time: np.ndarray
    alone: np.ndarray

    @property
    def interference(self) -> np.ndarray:
        return sc.interference_factors(self.io_time, self.alone)


def replay_case(case: Phases, topology: Topology, progress: Progress = None) -> CaseScores:
    return CaseScores(case.io_times(topology, progress), case.alone_times(topology))


def scores(given: Settings, topology: Topology, work: Any, progress: Progress) -> Scored:
    """Per phase T, T_alone, I; per scenario Σ N·T (CPU-hours) and Σ I (001 §II-C, §IV-D).
    A sweep gives the per-dt points (``delta_graph``) and the scores summed over its dt."""
    work = require(work, "the phases scores")
    results = [replay_case(case, topology, progress) for case in work.cases]
    if not work.sweep:
        case, result = work.cases[0], results[0]
        names = [p.app for p in case.phases]
        return Scored(
            sc.phase_scores(names, case.weights, result.io_time, result.alone, work.cores_per_node)
        )
    totals = [
        sc.coordination_totals(case.weights, r.io_time, r.alone, work.cores_per_node)
        for case, r in zip(work.cases, results, strict=True)
    ]
    out = [
        sc.Score(f"{metric}_sweep_sum", float(sum(t[k].value for t in totals)), unit)
        for k, (metric, unit) in enumerate(sc.COORDINATION_TOTALS)
    ]
    return Scored(out, {DELTA_TABLE: delta_rows(given.scenario, work, results)})


def delta_rows(scenario: str, work: PhaseDemand, results: list[CaseScores]) -> pa.Table:
    """One ``delta_graph`` row per dt and phase (without the policy column: the runner adds
    it), with the theoretical proportional-sharing I/O time of 001 §II-C."""
    rows = []
    now = datetime.now(UTC)
    for case, result in zip(work.cases, results, strict=True):
        a, b = case.phases
        theory = proportional_sharing(*result.alone, a.n, b.n, float(case.dt))
        for k, phase in enumerate(case.phases):
            rows.append(
                {
                    "scenario": scenario,
                    "dt": float(case.dt),
                    "phase": phase.app,
                    "role": "AB"[k],
                    "nodes": phase.n,
                    "io_time_s": float(result.io_time[k]),
                    "alone_s": float(result.alone[k]),
                    "interference_factor": float(result.interference[k]),
                    "theory_io_time_s": float(theory[k]),
                    "computed_at": now,
                }
            )
    return pa.Table.from_pylist(rows)


def lake_demand(workload: dict, topology: Topology, lake: Cluster | None) -> PhaseDemand:
    """The ``io_phases`` of the lake whose start is in the window (``burstlake metrics``
    detects them), each on its job's allocated nodes of ``topology``, with its I/O time as it
    ran (the phase's duration in the trace)."""
    start, end = window_bounds(workload.get("window"))
    condition = pc.field("start").is_valid()
    for bound, keep in (
        (start, pc.field("start") >= _ts(start)),
        (end, pc.field("start") < _ts(end)),
    ):
        if bound is not None:
            condition &= keep
    lake = cluster_of(lake)
    table = lake.read("io_phases", [*JOB_KEY, "phase", "start", "duration_s", "bytes"], condition)
    if table.num_rows == 0:
        raise ValueError(
            "no io_phases rows in the window: run `burstlake metrics` on the lake first"
        )
    table = table.sort_by([("start", "ascending"), ("job_id", "ascending"), ("phase", "ascending")])
    nodes = lake.read("job_nodes", [*JOB_KEY, "node"])
    index = topology.node_index
    held: dict[tuple, list[int]] = {}
    for row in nodes.to_pylist():
        if row["node"] in index:
            held.setdefault(tuple(row[c] for c in JOB_KEY), []).append(index[row["node"]])
    begin = table["start"].cast(pa.int64()).to_numpy()
    origin = int(begin.min()) if start is None else round(start.timestamp() * 1e6)
    phases, as_ran, skipped = [], [], 0
    for k, row in enumerate(table.to_pylist()):
        mine = held.get(tuple(row[c] for c in JOB_KEY))
        if not mine or not row["bytes"]:
            skipped += 1
            continue
        on = np.unique(mine)
        name = f"{row['job_id']}#{row['phase']}"
        phases.append(Phase(name, on, row["bytes"] / len(on), (begin[k] - origin) / 1e6))
        as_ran.append(row["duration_s"])
    if skipped:
        log.info(
            "lake_phases: %d phases without nodes on %s or bytes skipped", skipped, topology.name
        )
    if not phases:
        raise ValueError(f"no io_phases of the window run on topology {topology.name}'s nodes")
    case = Phases(tuple(phases), request_bytes(workload))
    count = sum(p.n * len(case.rounds(i)) for i, p in enumerate(phases))
    if count > LIMITS.requests:
        raise ValueError(
            f"workload lake_phases: the window's phases make {count:,} requests; the limit is "
            f"{LIMITS.requests:,} (a larger request_bytes or a shorter window)"
        )
    return PhaseDemand((case,), cores_per_node(workload, topology.name), np.asarray(as_ran))


def _ts(moment: datetime | None) -> pa.Scalar:
    return pa.scalar(moment, type=pa.timestamp("us", tz="UTC"))


def _lake_check(workload: dict, _limits: ScenarioLimits) -> None:
    window_bounds(workload.get("window"))
    request_bytes(workload)
    cores_per_node(workload, None)


def lake_scores(
    _given: Settings, topology: Topology, work: Any, progress: Progress
) -> list[sc.Score]:
    """The window's phases replayed under the policy: Σ N·T in CPU-hours and Σ I, beside the
    same figures for the phases as they ran in the trace (T = their duration)."""
    work = require(work, "the phases scores")
    case = work.cases[0]
    result = replay_case(case, topology, progress)
    replayed = sc.coordination_totals(
        case.weights, result.io_time, result.alone, work.cores_per_node
    )
    ran = sc.coordination_totals(case.weights, work.as_ran, result.alone, work.cores_per_node)
    factors = result.interference
    return [
        *replayed,
        *(sc.Score(f"{s.metric}_as_ran", s.value, s.unit) for s in ran),
        sc.Score("phases", float(len(case.phases)), "phases"),
        sc.Score("interference_factor_max", float(factors.max()), "x"),
        sc.Score("io_time_mean", float(result.io_time.mean()), "s"),
    ]


LAKE_KIND = register(
    "lake_phases",
    Kind(
        keys=frozenset({"window", "request_bytes", "cores_per_node"}),
        check=_lake_check,
        reads_lake=True,
        demand=lake_demand,
        scores=lake_scores,
        window=lambda spec: window_bounds(spec.get("window")),
    ),
)

KIND = register(
    "phases",
    Kind(
        keys=frozenset({"phases", "request_bytes", "sweep", "cores_per_node", EFFICIENCY_KEY}),
        check=check,
        demand=demand,
        scores=scores,
    ),
)
