"""Scenario workloads by name (docs/design.md, "Replay"): what a scenario replays, named by its
``workload: {source: ...}``. A workload module registers a :class:`Kind` with :func:`register`:
the settings it takes, a check run before any work, the demand it builds (which the policies
transform, ``apply(topology, demand)``; the demand types and contracts both sides share are in
:mod:`burstlake.replay.demands`) and the scores of one policy's replay, given the
:class:`Settings` it reads of the scenario. The engine and the scenario runner never change
when a workload is added."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import pyarrow as pa

from burstlake.jobs.metrics.settings import MetricSettings
from burstlake.lake import Cluster
from burstlake.replay.demands import Progress
from burstlake.replay.graph import Topology
from burstlake.replay.registry import Registry, refuse_unknown
from burstlake.replay.scores import Score


@dataclass(frozen=True)
class ScenarioLimits:
    """How much a scenario file may ask for; anything beyond is refused before any work."""

    file_bytes: int = 1_000_000  # a scenario is a few lines of YAML
    requests: int = 5_000_000  # simulated requests of a synthetic workload (paper 000: 1.2 M)
    size_bytes: float = 1e15  # any one byte size a workload gives (a request, a message): 1 PB


def is_size(key: Any) -> bool:
    """A workload key that gives a byte size (``message_bytes``, ``bytes_per_node``...)."""
    return isinstance(key, str) and (key.endswith("_bytes") or key.startswith("bytes_"))


def check_sizes(workload: Any, limits: ScenarioLimits, where: str = "workload") -> None:
    """Refuse, in one line naming the key (``workload.jobs[0].message_bytes``), a byte size
    beyond ``limits.size_bytes``, in the workload or any mapping or list it holds, before any
    work: a 1e30-byte message would otherwise reach a model that cannot count its packets.
    Values that are not numbers are left to the workload's own check."""
    if isinstance(workload, dict):
        for key, value in workload.items():
            inner = f"{where}.{key}"
            if is_size(key) and not isinstance(value, bool | dict | list):
                try:
                    size = float(value)
                except (TypeError, ValueError):
                    continue
                if size > limits.size_bytes:  # NaN and -inf fall to the workload's check
                    raise ValueError(
                        f"{inner}: {size:g} bytes is beyond the {limits.size_bytes:g} bytes "
                        "(1 PB) a scenario may give one size"
                    )
            check_sizes(value, limits, inner)
    elif isinstance(workload, list):
        for i, item in enumerate(workload):
            check_sizes(item, limits, f"{where}[{i}]")


def known_keys(
    where: str, given: Iterable[Any], allowed: Iterable[str], what: str = "settings"
) -> None:
    """Refuse keys a scenario mapping does not take, in one line naming them and the allowed
    ones (a misspelled key is an error, not ignored): the registry's one refusal."""
    refuse_unknown(where, what, set(given) - set(allowed), allowed)


def entries(workload: dict, key: str, shape: str) -> Iterator[tuple[str, dict]]:
    """The workload's ``key:`` list, each entry with the place a one-line error names: a
    missing, empty or non-list value and a non-mapping entry are refused (``shape`` says what
    an entry holds, e.g. ``{name, kind, ...}``)."""
    items = workload.get(key)
    if not isinstance(items, list) or not items:
        raise ValueError(f"workload {key}: {key} must be a non-empty list of {shape}")
    for i, item in enumerate(items):
        where = f"workload {key}: {key}[{i}]"
        if not isinstance(item, dict):
            raise ValueError(f"{where} must be a mapping {shape}, got {item!r}")
        yield where, item


def number(
    where: str,
    value: Any,
    *,
    low: float | None = None,
    strict: bool = False,
    integer: bool = False,
) -> float:
    """A scenario setting that must be a finite number (YAML's ``1e9``, read as text, counts),
    at least ``low`` (above it with ``strict``), whole with ``integer``. The one-line error
    names ``where`` (the workload and key) and what is allowed."""
    try:
        parsed = math.nan if isinstance(value, bool) else float(value)
    except (TypeError, ValueError):
        parsed = math.nan
    good = math.isfinite(parsed) and (not integer or parsed == int(parsed))
    if low is not None:
        good = good and (parsed > low if strict else parsed >= low)
    if not good:
        what = "an integer" if integer else "a number"
        bound = "" if low is None else f" {'>' if strict else '>='} {low:g}"
        raise ValueError(f"{where} must be {what}{bound}, got {value!r}")
    return parsed


@dataclass(frozen=True)
class Settings:
    """What a workload's scores read of the scenario they replay."""

    workload: dict  # the scenario's ``workload:`` mapping
    scenario: str = ""  # its name (rows of further tables, e.g. delta_graph)
    job_scores: bool = True  # also replay each job alone, for its slowdown (lake)
    # the metrics' thresholds the scores use (top ION and node fractions, 004 §4.1, §7.4):
    # the lake's recorded ones (burstlake.jobs.metrics.settings.recorded) or the defaults
    thresholds: MetricSettings = field(default_factory=MetricSettings)


def _no_window(_spec: dict) -> tuple[datetime | None, datetime | None]:
    return None, None


@dataclass(frozen=True)
class Scored:
    """One policy's replay when it yields more than scores: rows for further lake tables
    (table name → rows without the ``policy`` column, which the scenario runner adds)."""

    scores: list[Score]
    tables: dict[str, pa.Table] = field(default_factory=dict)


@dataclass(frozen=True)
class Kind:
    """One workload source.

    - ``keys``: the settings a scenario's ``workload:`` may give besides ``source``;
    - ``check(spec, limits)``: refuse bad settings in one line, before any work;
    - ``demand(spec, topology, lake)``: what every policy's ``apply`` receives (``lake``: the
      one machine of the lake the scenario replays, :class:`burstlake.lake.Cluster`);
    - ``scores(given, topology, demand, progress)``: replay one policy's machine and demand
      (``given``: :class:`Settings`; a list of scores, or :class:`Scored` with rows for
      further tables);
    - ``window(spec)``: the time window the scores cover (written with them), if any;
    - ``reads_lake``: the demand comes from the lake's traces, so a lake holding several
      machines is replayed one machine at a time;
    - ``models``: the contention models its scores are replayed under (None: every one, as
      its scores come from ``Topology.simulate``); another is refused before any work.
    """

    keys: frozenset[str]
    check: Callable[[dict, ScenarioLimits], None]
    demand: Callable[[dict, Topology, Cluster], Any]
    scores: Callable[[Settings, Topology, Any, Progress], list[Score] | Scored]
    window: Callable[[dict], tuple[datetime | None, datetime | None]] = _no_window
    reads_lake: bool = False
    models: frozenset[str] | None = None


def check_model(source: str, kind: Kind, model: str) -> None:
    """Refuse, in one line, a contention model the workload's scores are not replayed under
    (they would be labelled with a model that did not produce them)."""
    if kind.models is not None and model not in kind.models:
        raise ValueError(
            f"workload {source} replays under the {', '.join(sorted(kind.models))} model only, "
            f"not model {model} (a window of the lake, workload lake_window, runs under any "
            "model)"
        )


def _load() -> None:
    from burstlake.replay.workloads import (  # noqa: F401 - register their kinds
        bridge_write,
        incremental,
        io_alltoall,
        ior,
        jobs,
        lake,
        lake_window,
        phases,
        synthetic,
    )


KINDS: Registry[Kind] = Registry("workload", lambda kind: kind.keys, _load)


def register(name: str, kind: Kind) -> Kind:
    return KINDS.register(name, kind)


def names() -> list[str]:
    return KINDS.names()


def kind(name: Any) -> Kind:
    """The workload a scenario's ``source:`` names; a one-line error lists the others."""
    return KINDS.get(name, "workload")


def parse(spec: Any, where: str = "workload") -> tuple[str, Kind, dict]:
    """A scenario's ``workload:`` mapping: its ``source``, that workload and its settings,
    refused in one line if the source or a setting is unknown."""
    return KINDS.parse(spec, where, key="source")
