"""The lake's machine as a fat-tree (paper 000 §2.3's network under the lake's own nodes): the
``topology`` table's ``switch`` column names each node's leaf switch, so jobs that shared a
leaf share it in the replay too.

``{name: lake_fattree, servers: 8, server_placement: isolated}``: leaves are the lake's
switches in natural name order, each node on its leaf's next host port in name order; every
leaf has as many host ports as the fullest switch has nodes (taper 1: as many uplinks, radix
twice that). The I/O servers are placed by ``server_placement``: ``isolated`` (the default,
000 §3.1) on whole leaves added after the lake's, or ``spread`` (000 §5.2) on one more port
of every leaf, round robin. Routing, capacities (``link``, ``server``) and latency are the
fat-tree family's (:mod:`.fattree`); the compute nodes keep the lake's names (a free host
port is a compute node named ``free-h<host>``, which no job holds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.topologies import Family, register
from burstlake.replay.topologies.fattree import (
    CAPACITY_KEYS,
    FAMILY,
    LINK_LATENCY,
    FatTreeShape,
    build,
    spread_servers,
)
from burstlake.replay.topologies.forwarding import natural_key

PLACEMENTS = ("isolated", "spread")
SERVERS = 4  # I/O servers where a scenario gives no count (000 §3.1 has one per pod)


def _settings(name: str, settings: Mapping[str, Any]) -> tuple[int, str]:
    count = settings.get("servers", SERVERS)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"topology {name}: servers must be an integer ≥ 1, got {count!r}")
    placement = settings.get("server_placement", "isolated")
    if placement not in PLACEMENTS:
        raise ValueError(
            f"topology {name}: server_placement must be one of {list(PLACEMENTS)}, "
            f"got {placement!r}"
        )
    return count, placement


def leaves_of(rows: list[dict], family: str = "lake_fattree") -> dict[str, list[str]]:
    """The lake's switches (natural order) and their nodes (natural order); a node without a
    switch is refused in one line naming it and the ``family`` that needs the column."""
    missing = [r["node"] for r in rows if not r.get("switch")]
    if missing:
        raise ValueError(
            f"topology: {len(missing)} nodes have no switch (e.g. {missing[0]}); the "
            f"{family} topology needs the switch column (or replay topology: lake)"
        )
    by_switch: dict[str, list[str]] = {}
    for r in rows:
        by_switch.setdefault(r["switch"], []).append(r["node"])
    return {s: sorted(by_switch[s], key=natural_key) for s in sorted(by_switch, key=natural_key)}


def from_switches(
    leaves: dict[str, list[str]],
    servers: int,
    placement: str,
    capacities: dict[str, float] | None = None,
    name: str = "lake_fattree",
    link_latency: float = LINK_LATENCY,
) -> Topology:
    """The fat-tree over ``leaves`` (switch → its nodes) with ``servers`` I/O servers placed
    by ``placement`` (module docstring)."""
    if not leaves:
        raise ValueError(f"topology {name}: the lake has no topology rows with a switch")
    fullest = max(len(nodes) for nodes in leaves.values())
    down = fullest + (1 if placement == "spread" else 0)
    extra = 0 if placement == "spread" else math.ceil(servers / down)
    shape = FatTreeShape(radix=2 * down, leaves=len(leaves) + extra, taper=1.0, hosts_per_leaf=down)
    if placement == "spread":
        if servers > len(leaves):
            raise ValueError(
                f"topology {name}: {servers} spread servers need as many leaves; the lake "
                f"has {len(leaves)} switches"
            )
        hosts = spread_servers(shape, servers)
    else:
        hosts = len(leaves) * down + np.arange(servers)
    topology = build(shape, capacities, hosts, name, link_latency)
    host_name = {
        leaf * down + port: node
        for leaf, nodes in enumerate(leaves.values())
        for port, node in enumerate(nodes)
    }
    compute = np.setdiff1d(np.arange(shape.hosts), hosts)
    names = tuple(host_name.get(int(h), f"free-h{int(h)}") for h in compute)
    return replace(topology, nodes=names, _cache={})


def _check(name: str, settings: Mapping[str, Any]) -> None:
    _settings(name, settings)


def _build(
    name: str, settings: dict[str, Any], capacities: dict[str, float] | None, lake: Any
) -> Topology:
    from burstlake.lake import cluster_of

    rows = cluster_of(lake).read("topology", ["node", "switch"]).to_pylist()
    return from_switches(leaves_of(rows), *_settings(name, settings), capacities, name)


register(
    "lake_fattree",
    Family(
        settings=frozenset({"servers", "server_placement"}),
        capacities=CAPACITY_KEYS,
        check=_check,
        build=_build,
        link_kinds=FAMILY.link_kinds,  # the fat-tree's links
        link_latency=LINK_LATENCY,
        reads_lake=True,
    ),
)
