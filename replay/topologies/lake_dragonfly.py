"""The lake's machine as a dragonfly (Kim, Dally, Scott and Abts, ISCA 2008; the dragonfly
family of :mod:`.dragonfly`): the ``topology`` table's ``switch`` column names each node's
router, so jobs that shared a router or a group share it in the replay too.

``{name: lake_dragonfly, groups: 9, routers: 4, hosts: 2, global_links: 2, routing: ugal}``
takes every setting of the dragonfly family. The lake's switches, in natural name order, are
the dragonfly's routers 0, 1, 2, ...; a group is ``routers`` consecutive routers (switch k is
in group k div ``routers``), as a Slingshot or Dragonfly+ machine numbers its switches group
by group. Each switch's nodes take its router's host ports in natural name order. A lake whose
switches do not fit the shape (more switches than ``groups`` × ``routers``, or a switch with
more nodes than ``hosts``) is refused in one line naming the key to raise; host ports no lake
node holds are compute nodes named ``free-h<host>``, which no job holds, so ``random-router``
and ``random-group`` may place jobs there. The I/O servers (``servers``,
``server_placement``) sit on the hosts the dragonfly family gives them, which must be free;
the server policies move them and leave the lake's nodes on their hosts (:func:`with_servers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.topologies import Family, register
from burstlake.replay.topologies import dragonfly as df
from burstlake.replay.topologies.lake_fattree import leaves_of

FAMILY_NAME = "lake_dragonfly"
FREE = "free-h"  # a host port no lake node holds: free-h<host>


@dataclass(frozen=True)
class LakeDragonflyRouter(df.DragonflyRouter):
    """The dragonfly's router over the lake's nodes: a server policy moves the servers and
    leaves every lake node on its host (:func:`with_servers`)."""


def _lake_router(router: df.DragonflyRouter) -> LakeDragonflyRouter:
    return LakeDragonflyRouter(**{f.name: getattr(router, f.name) for f in fields(router)})


def host_of(name: str, shape: df.DragonflyShape, routers: dict[str, list[str]]) -> dict[str, int]:
    """Lake node → dragonfly host: switch k (natural order) is router k, its nodes on the
    router's host ports in natural order; a lake that does not fit ``shape`` is refused in
    one line naming the key."""
    if len(routers) > shape.router_count:
        raise ValueError(
            f"topology {name}: the lake has {len(routers)} switches but groups × routers is "
            f"{shape.groups} × {shape.routers} = {shape.router_count} routers: raise groups or "
            "routers"
        )
    fullest = max(routers, key=lambda s: len(routers[s]))
    if len(routers[fullest]) > shape.hosts:
        raise ValueError(
            f"topology {name}: switch {fullest} has {len(routers[fullest])} nodes but hosts "
            f"(per router) is {shape.hosts}: raise hosts"
        )
    return {
        node: k * shape.hosts + port
        for k, nodes in enumerate(routers.values())
        for port, node in enumerate(nodes)
    }


def from_switches(
    name: str,
    routers: dict[str, list[str]],
    settings: Mapping[str, Any],
    capacities: dict[str, float] | None = None,
) -> Topology:
    """The dragonfly of ``settings`` with the lake's nodes on the routers their switch names
    (``routers``: switch → its nodes, both in natural order; module docstring)."""
    shape = df.check(name, settings)
    if not routers:
        raise ValueError(f"topology {name}: the lake has no topology rows with a switch")
    hosts = host_of(name, shape, routers)
    rest = {k: v for k, v in settings.items() if k not in df.SHAPE}
    topology = df.build(shape, capacities, name, **rest)
    compute = topology.router.host  # compute node index → host
    taken = set(hosts.values()) - set(compute.tolist())
    if taken:
        node = next(n for n, h in hosts.items() if h in taken)
        raise ValueError(
            f"topology {name}: server_placement {settings.get('server_placement', 'isolated')} "
            f"puts an I/O server on host {hosts[node]}, which lake node {node} holds: raise "
            "groups or routers to leave the servers' hosts free, or change servers"
        )
    name_at = {h: n for n, h in hosts.items()}
    names = tuple(name_at.get(int(h), f"{FREE}{int(h)}") for h in compute)
    return replace(topology, nodes=names, router=_lake_router(topology.router), _cache={})


def with_servers(topology: Topology, placement: str) -> Topology:
    """The lake's dragonfly with its I/O servers placed ``isolated`` or ``spread`` (the
    dragonfly family's placements, :func:`.dragonfly.with_servers`), every compute node
    keeping its index and its host, so the lake's jobs stay on their routers; a node the new
    servers displace must be a free port (it moves to a host the old servers left), else the
    move is refused in one line naming it."""
    moved = df.with_servers(topology, placement)
    old = topology.router.host
    free = np.setdiff1d(moved.router.host, old)  # the hosts the old servers left
    displaced = np.flatnonzero(np.isin(old, moved.router.server))
    held = [topology.nodes[i] for i in displaced if not topology.nodes[i].startswith(FREE)]
    if held:
        raise ValueError(
            f"topology {topology.name}: server_placement {placement} puts an I/O server on the "
            f"host of lake node {held[0]}: raise groups or routers to leave it free"
        )
    host = old.copy()
    host[displaced] = free
    names = list(topology.nodes)
    for i, h in zip(displaced.tolist(), free.tolist(), strict=True):
        names[i] = f"{FREE}{h}"
    router = _lake_router(replace(moved.router, host=host))
    return replace(moved, nodes=tuple(names), router=router, _cache={})


def _check(name: str, settings: Mapping[str, Any]) -> None:
    df.check(name, settings)


def _build(
    name: str, settings: dict[str, Any], capacities: dict[str, float] | None, lake: Any
) -> Topology:
    from burstlake.lake import cluster_of

    rows = cluster_of(lake).read("topology", ["node", "switch"]).to_pylist()
    return from_switches(name, leaves_of(rows, FAMILY_NAME), settings, capacities)


register(
    FAMILY_NAME,
    Family(
        settings=df.FAMILY.settings,
        capacities=df.CAPACITY_KEYS,
        check=_check,
        build=_build,
        link_kinds=df.LINK_KINDS,
        link_latency=df.LINK_LATENCY,
        reads_lake=True,
    ),
)
