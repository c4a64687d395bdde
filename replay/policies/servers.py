"""I/O server placement what-ifs on a fat-tree (paper 000 §5.2), and on a dragonfly (isolated
in one group or spread over the groups): where the I/O servers sit.
``isolated-target`` (000's default: whole leaves, two in each half of the tree),
``spread-target`` (one server per leaf, all on the same port) and ``random-target`` (hosts drawn
at random). Each is a change of the topology (:func:`~burstlake.replay.topologies.fattree.
with_servers`); the jobs keep their node indices."""

from __future__ import annotations

from typing import Any

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, register
from burstlake.replay.policies.placement import seed_of
from burstlake.replay.topologies import dragonfly, fattree, lake_dragonfly


def _servers(place, on_dragonfly: str | None = None) -> Apply:
    """Servers placed by ``place(shape, count)`` on a fat-tree; on a dragonfly
    (:func:`~burstlake.replay.topologies.dragonfly.with_servers`) ``isolated`` in the last
    group or ``spread`` over the groups (``on_dragonfly``)."""

    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        if isinstance(topology.router, lake_dragonfly.LakeDragonflyRouter) and on_dragonfly:
            return lake_dragonfly.with_servers(topology, on_dragonfly), demand  # jobs stay
        if isinstance(topology.router, dragonfly.DragonflyRouter):
            if on_dragonfly is None:
                raise ValueError(
                    "policy random-target places fat-tree servers; on a dragonfly use "
                    "isolated-target or spread-target"
                )
            return dragonfly.with_servers(topology, on_dragonfly), demand
        shape = fattree.shape_of(topology)
        return fattree.with_servers(topology, place(shape, len(topology.ions))), demand

    return apply


@register("isolated-target")
def isolated_target(leaves: list[int] | None = None) -> Apply:
    leaves = fattree.leaf_list("policy isolated-target: leaves", leaves)
    return _servers(lambda shape, _count: fattree.isolated_servers(shape, leaves), "isolated")


@register("spread-target")
def spread_target() -> Apply:
    return _servers(fattree.spread_servers, "spread")


@register("random-target")
def random_target(seed: int = 0) -> Apply:
    seed = seed_of("random-target", seed)
    return _servers(
        lambda shape, count: fattree.random_servers(shape, count, np.random.default_rng(seed))
    )
