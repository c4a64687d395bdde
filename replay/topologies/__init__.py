"""Topology builders by name (docs/design.md, "Replay"): the forwarding presets of
burstlake.machines (``tianhe1a``, ``cs19``, ``tiny``), the fat-tree ``cab1296``, the torus
``mira512``, and ``lake`` (the lake's own ``topology`` table)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from burstlake.machines import PRESETS
from burstlake.replay.graph import Topology
from burstlake.replay.topologies import fattree, forwarding, torus

SETTINGS = {
    "cab1296": {"radix", "leaves", "taper", "server_leaves", "capacities", "link_latency"},
    "mira512": {"dims", "nodes_per_bridge", "capacities", "link_latency"},
    "lake": {"capacities", "link_latency"},
    **{name: {"capacities", "link_latency"} for name in PRESETS},
}
# Seconds per link a route crosses where a scenario leaves ``link_latency`` out: the fat-tree's
# is the CODES router delay (:data:`fattree.LINK_LATENCY`); the forwarding and torus presets
# model no network latency (004 §5.2 takes the compute network's overhead as negligible).
LINK_LATENCY = {"cab1296": fattree.LINK_LATENCY}


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
    _link_latency(name, settings)


def _link_latency(name: str, settings: Mapping[str, Any]) -> float:
    """The scenario's ``link_latency`` (seconds per link, >= 0) or the topology's default."""
    value = settings.get("link_latency", LINK_LATENCY.get(name, 0.0))
    try:
        latency = float(value)
    except (TypeError, ValueError):
        latency = float("nan")
    if isinstance(value, bool) or not 0 <= latency < float("inf"):
        raise ValueError(
            f"topology {name}: link_latency must be a number of seconds >= 0 "
            f"(e.g. 9e-8), got {value!r}"
        )
    return latency


def build(settings: Mapping[str, Any], lake: Any = None) -> Topology:
    """Build the topology a scenario's ``topology:`` mapping names (``name:`` plus settings);
    ``lake`` (a path, or one machine of it: :class:`burstlake.lake.Cluster`) for ``lake``."""
    check(settings)
    settings = dict(settings)
    name = settings.pop("name")
    caps = _capacities(settings.get("capacities"))
    latency = _link_latency(name, settings)
    if name == "cab1296":
        shape = fattree.FatTreeShape(
            int(settings.get("radix", 36)),
            int(settings.get("leaves", 72)),
            float(settings.get("taper", 1.0)),
        )
        servers = fattree.isolated_servers(shape, settings.get("server_leaves"))
        return fattree.build(shape, caps, servers, link_latency=latency)
    if name == "mira512":
        dims, nodes_per_bridge = torus.shape(settings)
        topology = torus.build(dims, caps, nodes_per_bridge=nodes_per_bridge)
    elif name == "lake":
        from burstlake.lake import cluster_of

        topology = forwarding.from_table(cluster_of(lake).read("topology"), capacities=caps)
    else:
        topology = forwarding.from_machine(PRESETS[name], caps)
    return replace(topology, settings={**topology.settings, "link_latency": latency}, _cache={})


def _capacities(given: Mapping[str, Any] | None) -> dict[str, float] | None:
    """Capacities in bytes/s as floats (YAML reads ``1.5e9`` as a string)."""
    if given is None:
        return None
    try:
        return {str(k): float(v) for k, v in dict(given).items()}
    except (TypeError, ValueError) as err:
        raise ValueError(f"topology capacities must be numbers in bytes/s: {err}") from err
