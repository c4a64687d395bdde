"""Topologies by name (docs/design.md, "Topologies"): a scenario's ``topology:`` names a
*family* with its parameters (``{name: fattree, radix: 36, leaves: 72}``) or a *preset*, a
parameter set of a family (``cab1296``, ``quartz186``, ``mira512``, ``tianhe1a``, ``cs19``,
``tiny``).

A family module registers a :class:`Family` with :func:`register` (its settings, capacities,
link kinds and default link latency, check and build) and its presets with :func:`preset`: the
fat-tree (:mod:`.fattree`), the torus (:mod:`.torus`), the dragonfly (:mod:`.dragonfly`), the
I/O forwarding machines and the lake's own ``topology`` table (:mod:`.forwarding`), and the
lake's switches as a fat-tree's leaves (:mod:`.lake_fattree`) or a dragonfly's routers
(:mod:`.lake_dragonfly`). Every topology also takes
``capacities`` (the family's capacity keys, bytes/s) and ``link_latency`` (seconds per link
crossed). The scenario runner and the engine never change when a family is added.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from burstlake.replay.graph import Topology
from burstlake.replay.registry import Registry, refuse_unknown

COMMON = frozenset({"capacities", "link_latency"})  # settings every topology takes


@dataclass(frozen=True)
class Family:
    """One family of topologies.

    - ``settings``: the parameters a scenario may give besides ``name`` and :data:`COMMON`;
    - ``capacities``: the capacity keys (bytes/s) a scenario's ``capacities:`` may set;
    - ``check(name, settings)``: refuse bad parameters in one line naming the topology,
      before any work (what it returns is ignored);
    - ``build(name, settings, capacities, lake)``: the topology (``capacities`` None: the
      family's own; ``lake``: the one machine of the lake replayed, for ``reads_lake``);
    - ``link_kinds``: the resource kinds that are network links, each paying
      ``link_latency`` when a route crosses it (a dragonfly's ``global_link`` too), declared
      by every family (no default: a link kind left out would be silently free);
    - ``link_latency``: seconds per link crossed where a scenario leaves it out;
    - ``reads_lake``: built from the lake's own tables, so a lake holding several machines is
      replayed one machine at a time.
    """

    settings: frozenset[str]
    capacities: tuple[str, ...]
    check: Callable[[str, Mapping[str, Any]], Any]
    build: Callable[[str, dict[str, Any], dict[str, float] | None, Any], Topology]
    link_kinds: tuple[str, ...]
    link_latency: float = 0.0
    reads_lake: bool = False


def _load() -> None:
    from burstlake.replay.topologies import (  # noqa: F401 - register their families
        dragonfly,
        fattree,
        forwarding,
        lake_dragonfly,
        lake_fattree,
        torus,
    )


FAMILIES: Registry[Family] = Registry("topology", lambda family: family.settings | COMMON, _load)
PRESETS: dict[str, tuple[str, dict[str, Any]]] = {}  # name -> (family, its settings)


def register(name: str, family: Family) -> Family:
    return FAMILIES.register(name, family)


def preset(name: str, family: str, **settings: Any) -> None:
    """Register ``name`` as ``family`` with ``settings`` (a scenario may override them)."""
    PRESETS[name] = (family, settings)


def names() -> list[str]:
    """Every name a scenario's ``topology:`` may give: families and presets."""
    return sorted({*FAMILIES.names(), *PRESETS})


def resolve(settings: Mapping[str, Any]) -> tuple[str, Family, dict[str, Any]]:
    """The name, family and settings (a preset's, then the scenario's) of a ``topology:``
    mapping, refusing an unknown name or setting (a misspelled ``ionn`` is an error, not
    ignored)."""
    given = dict(settings)
    name = given.pop("name", None)
    FAMILIES.names()  # the shipped families and their presets are registered
    if name in PRESETS:
        family_name, base = PRESETS[name]
    elif name in FAMILIES:
        family_name, base = name, {}
    else:
        refuse_unknown("topology", "topology", [name], names())
    family = FAMILIES.get(family_name, "topology")
    given = FAMILIES.settings(f"topology {name}", family, given)
    return name, family, {**base, **given}


def check(settings: Mapping[str, Any]) -> None:
    """Refuse a scenario's ``topology:`` mapping before any work: an unknown name, setting or
    capacity key, a capacity that is not a positive number, a bad parameter of the family."""
    name, family, given = resolve(settings)
    caps = _capacities(given.get("capacities")) or {}
    refuse_unknown(f"topology {name}", "capacities", set(caps) - set(family.capacities),
                   family.capacities)  # fmt: skip
    bad = {k: v for k, v in caps.items() if not 0 < v < math.inf}
    if bad:
        raise ValueError(f"topology {name}: each capacity must be positive bytes/s, got {bad}")
    family.check(name, given)
    _link_latency(name, family, given)


def reads_lake(settings: Mapping[str, Any]) -> bool:
    """Whether the topology is built from the lake's own tables (:attr:`Family.reads_lake`)."""
    return resolve(settings)[1].reads_lake


def _link_latency(name: str, family: Family, settings: Mapping[str, Any]) -> float:
    """The scenario's ``link_latency`` (seconds per link, >= 0) or the family's default."""
    value = settings.get("link_latency", family.link_latency)
    try:
        latency = float(value)
    except (TypeError, ValueError):
        latency = math.nan
    if isinstance(value, bool) or not 0 <= latency < math.inf:
        raise ValueError(
            f"topology {name}: link_latency must be a number of seconds >= 0 "
            f"(e.g. 9e-8), got {value!r}"
        )
    return latency


def build(settings: Mapping[str, Any], lake: Any = None) -> Topology:
    """Build the topology a scenario's ``topology:`` mapping names (``name:`` plus settings);
    ``lake`` (a path, or one machine of it: :class:`burstlake.lake.Cluster`) for a family that
    reads the lake."""
    check(settings)
    name, family, given = resolve(settings)
    latency = _link_latency(name, family, given)
    params = {k: v for k, v in given.items() if k not in COMMON}
    topology = family.build(name, params, _capacities(given.get("capacities")), lake)
    settings = {**topology.settings, "link_latency": latency}
    return replace(topology, settings=settings, link_kinds=tuple(family.link_kinds), _cache={})


def _capacities(given: Mapping[str, Any] | None) -> dict[str, float] | None:
    """Capacities in bytes/s as floats (YAML reads ``1.5e9`` as a string)."""
    if given is None:
        return None
    try:
        return {str(k): float(v) for k, v in dict(given).items()}
    except (TypeError, ValueError) as err:
        raise ValueError(f"topology capacities must be numbers in bytes/s: {err}") from err
