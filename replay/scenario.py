"""Replay scenarios (docs/design.md, "Replay"): a YAML file naming the workload, the topology, the
policies to compare and the time window. ``run`` replays the workload under each policy and
writes one ``replay_scores`` row per policy and metric (source_id = scenario, so a re-run
replaces them).

```yaml name: ion_remap workload: {source: lake, window: {start: 2018-01-01, end: 2018-01-08}} #
or source: ior topology: {name: tianhe1a, capacities: {ion: 1.5e9}} policies: [block, cyclic]
```"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import yaml

from burstlake import catalog
from burstlake.lake import run as lake_run
from burstlake.lake import write_table
from burstlake.replay import scores as sc
from burstlake.replay.events import simulate
from burstlake.replay.graph import Topology
from burstlake.replay.intervals import IntervalReplay, Rows
from burstlake.replay.policies import Policy, policy
from burstlake.replay.topologies import build
from burstlake.replay.topologies import check as check_topology
from burstlake.replay.workload import (
    NodeDemand,
    ior,
    lake_demand,
    requests_per_node,
    window_bounds,
)

REPLAY_INPUTS = ("jobs", "job_nodes", "node_io", "topology")
KEYS = {"name", "description", "workload", "topology", "policies", "job_scores"}
# An ``ior`` workload's settings where the scenario leaves them out (paper 004 §7.2.1).
IOR_DEFAULTS = {
    "nodes": [1, 2, 4, 8, 16],
    "bytes_per_node": 4e9,
    "request_bytes": 256e6,
    "gap_s": 0.0,
}
WORKLOADS = {
    "lake": {"source", "window"},
    "ior": {"source", "nodes", "bytes_per_node", "request_bytes", "gap_s"},
}

SCENARIOS = resources.files(__package__).joinpath("scenarios")  # package data (pyproject.toml)

Progress = Callable[[int], None] | None


@dataclass(frozen=True)
class Scenario:
    name: str
    workload: dict
    topology: dict
    policies: tuple[Policy, ...]
    description: str = ""
    job_scores: bool = True


@dataclass(frozen=True)
class ScenarioLimits:
    """How much a scenario file may ask for; anything beyond is refused before any work."""

    file_bytes: int = 1_000_000  # a scenario is a few lines of YAML
    requests: int = 5_000_000  # simulated requests of a synthetic workload (paper 000: 1.2 M)


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without anchors and aliases: a scenario never needs them, and an alias bomb
    ("billion laughs") is refused instead of expanded."""

    def compose_node(self, parent, index):  # type: ignore[no-untyped-def]
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.YAMLError(f"aliases are not allowed (line {event.start_mark.line + 1})")
        return super().compose_node(parent, index)


def _ior_requests(workload: dict) -> int:
    """Requests an ``ior`` workload asks for: over its node counts m (one or a list, default
    1, 2, 4, 8, 16), m × ⌈bytes_per_node / request_bytes⌉."""
    spec = _ior_spec(workload)
    try:
        nodes = [int(m) for m in spec["nodes"]]
        per_node = float(spec["bytes_per_node"]) / float(spec["request_bytes"])
    except (TypeError, ValueError, ZeroDivisionError) as err:
        raise ValueError(
            f"workload ior: nodes, bytes_per_node and request_bytes must be positive numbers "
            f"({err})"
        ) from None
    if not nodes or min(nodes) <= 0 or not 0 < per_node < float("inf"):
        raise ValueError("workload ior: nodes, bytes_per_node and request_bytes must be positive")
    return sum(nodes) * requests_per_node(
        float(spec["bytes_per_node"]), float(spec["request_bytes"])
    )


def _ior_spec(workload: dict) -> dict:
    """An ``ior`` workload with its defaults filled in and ``nodes`` always a list."""
    spec = IOR_DEFAULTS | workload
    return spec | {"nodes": spec["nodes"] if isinstance(spec["nodes"], list) else [spec["nodes"]]}


def load(path: str | os.PathLike, limits: ScenarioLimits = ScenarioLimits()) -> Scenario:
    """Read and check a scenario file; errors say which key is wrong and what is allowed."""
    path = Path(path)
    size = path.stat().st_size
    if size > limits.file_bytes:
        raise ValueError(f"{path}: {size} bytes; a scenario file is at most {limits.file_bytes}")
    try:
        spec = yaml.load(path.read_text(), Loader=_NoAliasLoader)  # a SafeLoader
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ValueError(f"{path}: not valid YAML: {' '.join(str(err).split())}") from err
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: a scenario is a YAML mapping with keys {sorted(KEYS)}")
    unknown = set(spec) - KEYS
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)}; allowed: {sorted(KEYS)}")
    for key in ("name", "workload", "topology", "policies"):
        if key not in spec:
            raise ValueError(f"{path}: missing key {key!r}")
    name = str(spec["name"])
    if not re.fullmatch(r"[A-Za-z0-9_.]+", name):
        raise ValueError(f"{path}: scenario name {name!r} may only use letters, digits, _ and .")
    workload = dict(spec["workload"])
    source = workload.get("source")
    if source not in WORKLOADS:
        raise ValueError(f"{path}: workload source must be one of {sorted(WORKLOADS)}")
    unknown = set(workload) - WORKLOADS[source]
    if unknown:
        raise ValueError(f"{path}: workload {source}: unknown keys {sorted(unknown)}")
    if source == "ior":
        requests = _ior_requests(workload)
        if requests > limits.requests:
            raise ValueError(
                f"{path}: workload ior asks for {requests:,} requests; the limit is "
                f"{limits.requests:,} (a larger request_bytes or fewer nodes)"
            )
    topology = spec["topology"]
    topology = {"name": topology} if isinstance(topology, str) else dict(topology)
    try:
        check_topology(topology)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    if not spec["policies"]:
        raise ValueError(f"{path}: list at least one policy to compare")
    policies = tuple(policy(entry) for entry in spec["policies"])
    labels = [p.label for p in policies]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{path}: policy labels must differ, got {labels}")
    return Scenario(
        name,
        workload,
        topology,
        policies,
        str(spec.get("description", "")),
        bool(spec.get("job_scores", True)),
    )


def run(scenario: Scenario, lake: str | os.PathLike | None, progress: Progress = None) -> pa.Table:
    """Replay the scenario under each policy; write and return its ``replay_scores`` rows.

    The inputs are read at one Delta version each, and the ``replay_scores`` commit records
    the run id and those versions (:func:`burstlake.lake.run`).
    """
    with lake_run(lake, f"replay-{scenario.name}", REPLAY_INPUTS):
        topology = build(scenario.topology, lake)
        window = (None, None)
        if scenario.workload["source"] == "lake":
            window = window_bounds(scenario.workload.get("window"))
            demand: Any = lake_demand(lake, topology, *window)
            replay = _interval_scores
        else:
            demand = None
            replay = _ior_scores
        rows = []
        for each in scenario.policies:
            machine, workload = each.apply(topology, demand)
            for score in replay(scenario, machine, workload, progress):
                rows.append({"policy": each.label, **score.__dict__})
        table = _table(scenario, topology, rows, window)
        write_table(lake, "replay_scores", table, source_id=f"scenario-{scenario.name}")
    catalog.refresh(lake, ["replay_scores"])
    return table


def _interval_scores(
    scenario: Scenario, topology: Topology, demand: NodeDemand, progress: Progress
) -> list[sc.Score]:
    """Interval replay of the trace (lane 0), and of every job alone (lane job + 1)."""
    loads = sc.IonLoad(topology)
    shared, alone = sc.JobTime(len(demand.jobs.job_ids)), sc.JobTime(len(demand.jobs.job_ids))
    for solved in IntervalReplay(topology, demand.interval_s).run(demand.rows, progress):
        loads.add(solved)
        owner = demand.jobs.lookup(solved.node, solved.t, after_end=True)
        shared.add(owner, solved.t, solved.demand)
    out = [*loads.scores(demand.interval_s), *sc.busiest_node_ions(demand.rows, topology)]
    if scenario.job_scores:
        mine = demand.job >= 0
        rows = demand.rows.take(mine)
        lanes = Rows(demand.job[mine] + 1, rows.t, rows.node, rows.bytes)
        for solved in IntervalReplay(topology, demand.interval_s).run(lanes, progress):
            alone.add(solved.lane - 1, solved.t, solved.demand)
        out += sc.job_scores(shared, alone, demand.interval_s)
    return [*out, sc.hops_score(topology)]


def _ior_scores(
    scenario: Scenario, topology: Topology, _demand: Any, progress: Progress
) -> list[sc.Score]:
    """IOR from m adjacent nodes for each m (004 §7.2.1, Fig. 13a): aggregate bandwidth."""
    spec = _ior_spec(scenario.workload)
    out = []
    for m in spec["nodes"]:
        requests = ior(
            topology,
            int(m),
            float(spec["bytes_per_node"]),
            float(spec["request_bytes"]),
            float(spec["gap_s"]),
        )
        timeline = simulate(requests, topology.resources.capacity, progress)
        out += sc.stream_scores(timeline, requests.size, suffix=f"_m{int(m)}")
    return [*out, sc.hops_score(topology)]


def _table(
    scenario: Scenario,
    topology: Topology,
    rows: list[dict],
    window: tuple[datetime | None, datetime | None],
) -> pa.Table:
    now = datetime.now(UTC)
    values = [r["value"] for r in rows]
    return pa.table(
        {
            "scenario": [scenario.name] * len(rows),
            "policy": [r["policy"] for r in rows],
            "metric": [r["metric"] for r in rows],
            "value": [None if v is None or not np.isfinite(v) else float(v) for v in values],
            "unit": [r["unit"] for r in rows],
            "topology": [topology.name] * len(rows),
            "window_start": [window[0]] * len(rows),
            "window_end": [window[1]] * len(rows),
            "computed_at": [now] * len(rows),
        }
    )


def scenario_files(directory: str | os.PathLike | None = None) -> list[str]:
    """The scenario files a scheduled replay runs: ``*.yaml`` in ``directory``, else in
    ``$BURSTLAKE_SCENARIOS``, else the examples shipped in ``burstlake/replay/scenarios``."""
    folder = Path(directory or os.environ.get("BURSTLAKE_SCENARIOS") or SCENARIOS)
    if not folder.is_dir():
        raise FileNotFoundError(f"scenario directory {folder} does not exist")
    return [str(p) for p in sorted(folder.glob("*.yaml"))]


def comparison(table: pa.Table) -> tuple[list[str], list[tuple]]:
    """The scores as a metric × policy grid (columns, rows) for printing."""
    policies = list(dict.fromkeys(table["policy"].to_pylist()))
    grid: dict[str, dict[str, float | None]] = {}
    units: dict[str, str] = {}
    for row in table.select(["policy", "metric", "value", "unit"]).to_pylist():
        grid.setdefault(row["metric"], {})[row["policy"]] = row["value"]
        units[row["metric"]] = row["unit"] or ""
    lines = [
        (metric, units[metric], *(_fmt(grid[metric].get(p)) for p in policies)) for metric in grid
    ]
    return ["metric", "unit", *policies], lines


def _fmt(value: float | None) -> str:
    return "NULL" if value is None else f"{value:.6g}"
