"""Topology builders by name (docs/design.md, "Replay"): the forwarding presets of
burstlake.machines (``tianhe1a``, ``cs19``, ``tiny``), the fat-tree ``cab1296``, the torus
``mira512``, and ``lake`` (the lake's own ``topology`` table)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from burstlake.machines import PRESETS
from burstlake.replay.graph import Topology
from burstlake.replay.topologies import fattree, forwarding, torus

SETTINGS = {
    "cab1296": {"radix", "leaves", "taper", "server_leaves", "capacities"},
    "mira512": {"dims", "nodes_per_bridge", "capacities"},
    "lake": {"capacities"},
    **{name: {"capacities"} for name in PRESETS},
}


# The capacities (bytes/s) each kind of topology has, which a scenario's ``capacities:`` may set.
CAPACITIES = {
    "cab1296": fattree.CAPACITY_KEYS,
    "mira512": torus.CAPACITY_KEYS,
    "lake": forwarding.CAPACITY_KEYS,
    **{name: forwarding.CAPACITY_KEYS for name in PRESETS},
}


def names() -> list[str]:
    return sorted(SETTINGS)


def check(settings: Mapping[str, Any]) -> None:
    """Refuse a scenario's ``topology:`` mapping before any work: an unknown name, setting or
    capacity key (a misspelled ``ionn`` is an error, not ignored), or a capacity that is not a
    positive number."""
    settings = dict(settings)
    name = settings.pop("name", None)
    if name not in SETTINGS:
        raise ValueError(f"unknown topology {name!r}; choose one of {', '.join(names())}")
    unknown = set(settings) - SETTINGS[name]
    if unknown:
        raise ValueError(
            f"topology {name}: unknown settings {sorted(unknown)}; "
            f"allowed: {sorted(SETTINGS[name])}"
        )
    caps = _capacities(settings.get("capacities")) or {}
    unknown = set(caps) - set(CAPACITIES[name])
    if unknown:
        raise ValueError(
            f"topology {name}: unknown capacities {sorted(unknown)}; "
            f"allowed: {sorted(CAPACITIES[name])}"
        )
    bad = {k: v for k, v in caps.items() if not 0 < v < float("inf")}
    if bad:
        raise ValueError(f"topology {name}: each capacity must be positive bytes/s, got {bad}")
    if name == "mira512":
        torus.shape(settings)


def build(settings: Mapping[str, Any], lake: str | os.PathLike | None = None) -> Topology:
    """Build the topology a scenario's ``topology:`` mapping names (``name:`` plus settings)."""
    check(settings)
    settings = dict(settings)
    name = settings.pop("name")
    caps = _capacities(settings.get("capacities"))
    if name == "cab1296":
        shape = fattree.FatTreeShape(
            int(settings.get("radix", 36)),
            int(settings.get("leaves", 72)),
            float(settings.get("taper", 1.0)),
        )
        return fattree.build(shape, settings.get("server_leaves"), caps)
    if name == "mira512":
        dims, nodes_per_bridge = torus.shape(settings)
        return torus.build(dims, caps, nodes_per_bridge=nodes_per_bridge)
    if name == "lake":
        from burstlake.lake import read_table

        return forwarding.from_table(read_table(lake, "topology"), capacities=caps)
    return forwarding.from_machine(PRESETS[name], caps)


def _capacities(given: Mapping[str, Any] | None) -> dict[str, float] | None:
    """Capacities in bytes/s as floats (YAML reads ``1.5e9`` as a string)."""
    if given is None:
        return None
    try:
        return {str(k): float(v) for k, v in dict(given).items()}
    except (TypeError, ValueError) as err:
        raise ValueError(f"topology capacities must be numbers in bytes/s: {err}") from err
