"""Replay scenarios (docs/design.md, "Replay"): a YAML file naming the workload, the topology, the
policies to compare and the time window. ``run`` replays the workload under each policy and
writes one ``replay_scores`` row per policy and metric (source_id = scenario, so a re-run
replaces them).

    name: ion_remap
    workload: {source: lake, window: {start: 2018-01-01, end: 2018-01-08}}  # or {source: ior}
    topology: {name: tianhe1a, capacities: {ion: 1.5e9}}
    policies: [block, cyclic]
    cluster: tianhe1a   # which machine of a lake holding several (default: each in turn)
    seeds: 5            # or [3, 7, 11]: every policy on each seed (:mod:`.spread`)

With ``seeds:`` each run replaces every seed of the scenario (the workload's ``seed``, each
policy's, the packet model's ``tie_seed``; :func:`seeded`), ``replay_scores`` keeps every run's
value under its ``seed`` and ``replay_spread`` holds their spread (docs/design.md, "Seeds and
spread").

The workload sources are registered in :mod:`burstlake.replay.workloads`, the policies in
:mod:`burstlake.replay.policies`.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow as pa

from burstlake import catalog, paths, strict_yaml
from burstlake.jobs.metrics.settings import MetricSettings, recorded
from burstlake.lake import Cluster, check_cluster, cluster_of, clusters, write_table
from burstlake.lake import run as lake_run
from burstlake.replay import models, spread, topologies, workloads
from burstlake.replay.graph import Topology
from burstlake.replay.policies import Policy, policy
from burstlake.replay.scores import Score
from burstlake.replay.workloads import Progress, ScenarioLimits
from burstlake.schemas.replay import INPUTS

KEYS = {
    "name",
    "description",
    "workload",
    "topology",
    "model",
    "policies",
    "job_scores",
    "cluster",
    "seeds",
}

LIMITS = ScenarioLimits()
SCENARIOS = resources.files(__package__).joinpath("scenarios")  # package data (pyproject.toml)
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Scenario:
    name: str
    workload: dict
    topology: dict
    policies: tuple[Policy, ...]
    description: str = ""
    job_scores: bool = True
    cluster: str | None = None  # the lake's machine it replays; None: each machine in turn
    model: models.Contention = models.DEFAULT  # the contention model (flow or packet)
    seeds: tuple[int, ...] | None = None  # ``seeds:``: each policy runs on each (None: once)
    entries: tuple = ()  # the policies as the file gives them (paths resolved), to reseed
    notes: tuple[str, ...] = ()  # what a user should know before reading the scores


def load(path: str | os.PathLike, limits: ScenarioLimits = LIMITS) -> Scenario:
    """Read and check a scenario file; errors say which key is wrong and what is allowed."""
    path = Path(path)
    size = path.stat().st_size
    if size > limits.file_bytes:
        raise ValueError(f"{path}: {size} bytes; a scenario file is at most {limits.file_bytes}")
    try:
        spec = strict_yaml.loads(path.read_text())  # no aliases, no key given twice
    except strict_yaml.StrictYAMLError as err:
        raise ValueError(f"{path}: {err}") from None
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not valid YAML: {' '.join(str(err).split())}") from err
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: a scenario is a YAML mapping with keys {sorted(KEYS)}")
    workloads.known_keys(str(path), spec, KEYS, what="keys")
    for key in ("name", "workload", "topology", "policies"):
        if key not in spec:
            raise ValueError(f"{path}: missing key {key!r}")
    name = str(spec["name"])
    if not re.fullmatch(r"[A-Za-z0-9_.]+", name):
        raise ValueError(f"{path}: scenario name {name!r} may only use letters, digits, _ and .")
    if not isinstance(spec["workload"], dict):
        raise ValueError(f"{path}: workload is a mapping with a source, e.g. {{source: lake}}")
    workload = dict(spec["workload"])
    try:
        source, kind, _ = workloads.parse(workload)
        workloads.check_sizes(workload, limits)
        kind.check(workload, limits)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    topology = spec["topology"]
    topology = {"name": topology} if isinstance(topology, str) else dict(topology)
    try:
        topologies.check(topology)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    if not spec["policies"]:
        raise ValueError(f"{path}: list at least one policy to compare")
    try:
        entries = tuple(_files_beside(entry, path) for entry in spec["policies"])
        policies = tuple(policy(entry) for entry in entries)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    labels = [p.label for p in policies]
    if len(set(labels)) != len(labels):
        raise ValueError(f"{path}: policy labels must differ, got {labels}")
    try:
        cluster = check_cluster(spec.get("cluster"))
        model = models.parse(spec.get("model"))
        workloads.check_model(source, kind, model.name)
        seeds = spread.seeds_of(spec["seeds"]) if "seeds" in spec else None
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None
    scenario = Scenario(
        name,
        workload,
        topology,
        policies,
        str(spec.get("description", "")),
        bool(spec.get("job_scores", True)),
        cluster,
        model,
        seeds,
        entries,
    )
    if seeds is not None and not drawn(scenario):
        note = (
            f"{path}: seeds: nothing in this scenario draws random numbers (workload "
            f"{workload['source']}, policies {labels}, {model.name} model): the runs are "
            "identical, so it is replayed once"
        )
        log.warning(note)
        scenario = replace(scenario, seeds=seeds[:1], notes=(note,))
    return scenario


def _reseeded(entry: object, run: int) -> tuple[object, bool]:
    """A policy entry drawing with run ``run``'s seeds (:func:`spread.derived_seed` of its
    own ``seed``), and whether it takes a seed at all; a combination's policies each."""
    settings = {"name": entry} if isinstance(entry, str) else dict(entry)  # type: ignore[arg-type]
    takes = False
    if isinstance(settings.get("policies"), list):  # a combination: each of its policies
        parts = [_reseeded(e, run) for e in settings["policies"]]
        settings["policies"] = [e for e, _ in parts]
        takes = any(t for _, t in parts)
    own = settings.get("seed", 0)
    trial = {**settings, "seed": spread.derived_seed(run, own if isinstance(own, int) else 0)}
    try:
        policy(trial)
    except ValueError:  # the policy takes no seed
        return settings, takes
    return trial, True


def drawn(scenario: Scenario) -> list[str]:
    """The parts of a scenario that draw random numbers, which its seeds reach: the workload's
    ``seed``, the policies that take one, the packet model's ``tie_seed``."""
    parts = []
    if "seed" in workloads.kind(scenario.workload["source"]).keys:
        parts.append("workload seed")
    parts += [
        f"policy {p.label}"
        for p, entry in zip(scenario.policies, scenario.entries, strict=False)
        if _reseeded(entry, 0)[1]
    ]
    if "tie_seed" in scenario.model.spec():
        parts.append(f"{scenario.model.name} model tie_seed")
    if "routing_seed" in topologies.resolve(scenario.topology)[1].settings:
        parts.append("topology routing_seed")
    return parts


def seeded(scenario: Scenario, run: int) -> Scenario:
    """The scenario as run ``run`` of its seeds replays it: every seed it holds (the
    workload's, each policy's, the packet model's ``tie_seed``, the topology's
    ``routing_seed``: a dragonfly's gateway and intermediate-group draws) drawn from ``run``
    (:func:`spread.derived_seed`: the run's seed itself where the scenario gives none)."""
    topology = scenario.topology
    _, family, given = topologies.resolve(topology)
    if "routing_seed" in family.settings:
        own = spread.derived_seed(run, int(given.get("routing_seed", 0)))
        topology = {**topology, "routing_seed": own}
    workload = scenario.workload
    if "seed" in workloads.kind(workload["source"]).keys:
        workload = {**workload, "seed": spread.derived_seed(run, int(workload.get("seed", 0)))}
    entries = tuple(_reseeded(entry, run)[0] for entry in scenario.entries)
    model = scenario.model
    settings = model.spec()
    if "tie_seed" in settings:
        tie = spread.derived_seed(run, int(settings["tie_seed"]))
        model = models.parse({**settings, "tie_seed": tie})
    policies = (
        tuple(
            replace(policy(entry), label=p.label)
            for entry, p in zip(entries, scenario.policies, strict=True)
        )
        if entries
        else scenario.policies  # built in code, without entries: as given
    )
    return replace(
        scenario,
        workload=workload,
        policies=policies,
        entries=entries,
        model=model,
        topology=topology,
    )


def _files_beside(entry: object, scenario: Path) -> object:
    """A policy entry whose ``path`` setting names a file relative to the scenario's folder
    (not the working directory) and is refused unless it is one."""
    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
        return entry
    given = Path(entry["path"]).expanduser()
    where = given if given.is_absolute() else scenario.parent / given
    paths.input_file(where, f"policy {entry.get('name')}: path")
    return {**entry, "path": str(where)}


def run(
    scenario: Scenario,
    lake: str | os.PathLike | None,
    progress: Progress = None,
    thresholds: MetricSettings | None = None,
) -> pa.Table:
    """Replay the scenario under each policy; write and return its ``replay_scores`` rows.

    A scenario that reads the lake's traces (or its topology) replays one machine of the lake
    at a time: the one its ``cluster`` names, else each machine the lake holds, each written
    with its ``cluster``. The inputs are read at one Delta version each, and the
    ``replay_scores`` commit records the run id and those versions (:func:`burstlake.lake.run`).
    With ``seeds:`` every policy is replayed on each seed (:func:`seeded`), ``replay_scores``
    holds every run's rows under its ``seed`` and ``replay_spread`` their spread
    (:func:`spread.summary`); rows of further tables (``delta_graph``) are the first seed's.
    """
    kind = workloads.kind(scenario.workload["source"])
    reads_lake = kind.reads_lake or topologies.reads_lake(scenario.topology)
    tables: list[pa.Table] = []
    written: set[str] = set()
    with lake_run(lake, f"replay-{scenario.name}", INPUTS) as root:  # read and written as one run
        thresholds = thresholds or recorded(root)  # the lake's metrics' (metrics --set)
        held = clusters(root) if reads_lake else []
        if not reads_lake:
            machines = [Cluster(root, None)]
        elif scenario.cluster is not None:
            machines = [cluster_of(root, scenario.cluster)]
        else:
            machines = held or [Cluster(root, None)]
        # the unnamed machine's rows have the scenario's plain source id, as a lake's rows
        # written before it had machine names do
        unnamed = any(each.name is None for each in held)
        for machine in machines:
            table, extra = _runs(scenario, kind, machine, progress, thresholds)
            source = f"scenario-{scenario.name}"
            # a named machine's rows also replace the scenario's rows of a lake written before
            # it had machine names (unless the lake still holds an unnamed machine)
            legacy = [source] if machine.name is not None and not unnamed else []
            if machine.name is not None:
                source += f"@{machine.name}"
            if scenario.seeds is not None:
                extra = {**extra, "replay_spread": [spread.summary(table)]}
            for each, rows in {"replay_scores": table, **extra}.items():
                write_table(root, each, rows, source_id=source, replaces=legacy)
                written.add(each)
            tables.append(table)
    catalog.refresh(lake, sorted(written))
    return pa.concat_tables(tables)


def _scored(
    scenario: Scenario,
    kind: workloads.Kind,
    lake: Cluster | None,
    progress: Progress,
    thresholds: MetricSettings,
) -> tuple[Topology, list[tuple[str, workloads.Scored]]]:
    """The machine and each policy's label and scores on it (``lake``: None for a scenario
    that reads no lake), under the scenario's contention model."""
    replays = models.Replays()
    counted = scenario.model.counted(replays)
    topology = topologies.build(scenario.topology, lake).with_contention(counted)
    demand = kind.demand(scenario.workload, topology, lake)
    given = workloads.Settings(scenario.workload, scenario.name, scenario.job_scores, thresholds)
    out = []
    for each in scenario.policies:
        machine, work = each.apply(topology, demand)
        machine = machine.with_contention(counted)  # a policy may rebuild the machine
        result = kind.scores(given, machine, work, progress)
        scored = result if isinstance(result, workloads.Scored) else workloads.Scored(result)
        routing = machine.router.routing  # a routing setting (a dragonfly's), recorded
        if routing is not None:
            flag = Score(f"routing_{routing}", 1.0, "flag")
            scored = workloads.Scored([*scored.scores, flag], scored.tables)
        out.append((each.label, scored))
    if scenario.model.name != models.DEFAULT.name and not replays.runs:
        raise ValueError(
            f"scenario {scenario.name}: workload {scenario.workload['source']} replayed "
            f"nothing under model {scenario.model.name}; its scores are not that model's"
        )
    return topology, out


def scores(
    scenario: Scenario, progress: Progress = None, thresholds: MetricSettings | None = None
) -> dict[str, dict[str, float | None]]:
    """Each policy's scores (label → metric → value) of a scenario that reads no lake, written
    nowhere: what notebooks, benchmarks and tests compare with a paper's figures."""
    kind = _lakeless(scenario)
    return {
        label: {score.metric: score.value for score in scored.scores}
        for label, scored in _scored(
            scenario, kind, None, progress, thresholds or MetricSettings()
        )[1]
    }


def _lakeless(scenario: Scenario) -> workloads.Kind:
    """The workload kind of a scenario that reads no lake; refused in one line otherwise."""
    kind = workloads.kind(scenario.workload["source"])
    if kind.reads_lake or topologies.reads_lake(scenario.topology):
        raise ValueError(f"scenario {scenario.name} reads a lake: replay it with run()")
    return kind


def runs(
    scenario: Scenario, progress: Progress = None, thresholds: MetricSettings | None = None
) -> pa.Table:
    """The ``replay_scores`` rows of every seed of a scenario that reads no lake, written
    nowhere (``spread.summary`` of them: their spread)."""
    kind = _lakeless(scenario)
    return _runs(
        scenario, kind, Cluster(Path("."), None), progress, thresholds or MetricSettings()
    )[0]


def _runs(
    scenario: Scenario,
    kind: workloads.Kind,
    lake: Cluster,
    progress: Progress,
    thresholds: MetricSettings,
) -> tuple[pa.Table, dict[str, list[pa.Table]]]:
    """Every run of the scenario on one machine: once, or once per seed (the further tables
    of the first seed only: their keys hold no seed)."""
    if scenario.seeds is None:
        return _replay(scenario, kind, lake, progress, thresholds)
    tables, first = [], None
    for run in scenario.seeds:
        table, extra = _replay(seeded(scenario, run), kind, lake, progress, thresholds)
        tables.append(table.append_column("seed", pa.array([run] * table.num_rows, pa.int64())))
        first = extra if first is None else first
    return pa.concat_tables(tables), first or {}


def _replay(
    scenario: Scenario,
    kind: workloads.Kind,
    lake: Cluster,
    progress: Progress,
    thresholds: MetricSettings,
) -> tuple[pa.Table, dict[str, list[pa.Table]]]:
    """Every policy's scores on one machine of the lake (and rows of further tables)."""
    rows, extra = [], {}
    topology, scored_policies = _scored(scenario, kind, lake, progress, thresholds)
    for label, scored in scored_policies:
        for score in scored.scores:
            rows.append({"policy": label, **score.__dict__})
        for name, part in scored.tables.items():
            labels = pa.array([label] * part.num_rows, pa.string())
            extra.setdefault(name, []).append(part.append_column("policy", labels))
    table = _table(scenario, lake.name, topology, rows, kind.window(scenario.workload))
    return table, {
        name: _with_cluster(pa.concat_tables(parts), lake.name) for name, parts in extra.items()
    }


def _with_cluster(rows: pa.Table, cluster: str | None) -> pa.Table:
    return rows.append_column("cluster", pa.array([cluster] * rows.num_rows, pa.string()))


def _table(
    scenario: Scenario,
    cluster: str | None,
    topology: Topology,
    rows: list[dict],
    window: tuple[datetime | None, datetime | None],
) -> pa.Table:
    now = datetime.now(UTC)
    values = [r["value"] for r in rows]
    return pa.table(
        {
            "scenario": [scenario.name] * len(rows),
            "cluster": pa.array([cluster] * len(rows), pa.string()),
            "policy": [r["policy"] for r in rows],
            "metric": [r["metric"] for r in rows],
            "value": [None if v is None or not np.isfinite(v) else float(v) for v in values],
            "unit": [r["unit"] for r in rows],
            "topology": [topology.name] * len(rows),
            "model": [scenario.model.name] * len(rows),
            "window_start": [window[0]] * len(rows),
            "window_end": [window[1]] * len(rows),
            "computed_at": [now] * len(rows),
        }
    )


def scenario_files(directory: str | os.PathLike | None = None) -> list[str]:
    """The scenario files of a folder: ``*.yaml`` in ``directory``, else in
    ``$BURSTLAKE_SCENARIOS``, else the examples shipped in ``burstlake/replay/scenarios``."""
    folder = Path(directory or os.environ.get("BURSTLAKE_SCENARIOS") or SCENARIOS)
    if not folder.is_dir():
        raise FileNotFoundError(f"scenario directory {folder} does not exist")
    return [str(p) for p in sorted(folder.glob("*.yaml"))]


def scheduled(named: tuple[Path, ...]) -> list[str]:
    """The scenario files the scheduled replay runs: those the deployment file names (its
    ``replay:`` list, :attr:`burstlake.config.Deployment.scenarios`), else those of the folder
    ``$BURSTLAKE_SCENARIOS``, else none (the shipped examples run only when named)."""
    if named:
        return [str(p) for p in named]
    if os.environ.get("BURSTLAKE_SCENARIOS"):
        return scenario_files()
    return []


def comparison(table: pa.Table) -> tuple[list[str], list[tuple]]:
    """The scores as a metric × policy grid (columns, rows) for printing; with a ``cluster``
    column first when the scenario replayed several machines. Over several seeds a cell is
    the mean ± the half-width of its 95 % interval (:func:`spread.interval`)."""
    policies = list(dict.fromkeys(table["policy"].to_pylist()))
    several = len(set(table["cluster"].to_pylist())) > 1
    over_seeds = "seed" in table.column_names
    grid: dict[tuple, dict[str, list[float | None]]] = {}
    units: dict[str, str] = {}
    for row in table.select(["cluster", "policy", "metric", "value", "unit"]).to_pylist():
        cell = grid.setdefault((row["cluster"], row["metric"]), {})
        cell.setdefault(row["policy"], []).append(row["value"])
        units[row["metric"]] = row["unit"] or ""
    lines = [
        (
            *([cluster or "(unnamed)"] if several else []),
            metric,
            units[metric],
            *(_fmt(grid[cluster, metric].get(p, [None]), over_seeds) for p in policies),
        )
        for cluster, metric in grid
    ]
    return [*(["cluster"] if several else []), "metric", "unit", *policies], lines


def _fmt(values: list[float | None], over_seeds: bool) -> str:
    if not over_seeds:
        return "NULL" if values[-1] is None else f"{values[-1]:.6g}"
    got = spread.interval(values)
    if got.mean is None:
        return "NULL"
    if got.high is None or got.low is None:
        return f"{got.mean:.6g}"
    return f"{got.mean:.6g} ± {(got.high - got.low) / 2:.3g}"
