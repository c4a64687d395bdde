"""Dragonfly what-ifs (docs/design.md, "Dragonfly"): placement by router or by group, beside
``random-node`` and ``random-switch`` (paper 000 §5.1 moved to a dragonfly), and the routing
of the machine as a policy, so one scenario compares placements under ``minimal`` and
``ugal`` routing.

- ``random-router``: whole free routers drawn at random until they hold the job (000's
  random-switch with a dragonfly router as the switch);
- ``random-group``: whole free dragonfly groups drawn at random;
- ``routing``: the same machine under another routing (``{name: routing, routing: ugal}``);
  with ``combine`` it applies to any placement.

Each placement takes a ``seed`` (default 0); on a topology without routers or groups of its
own (not a dragonfly) ``random-router`` and ``random-group`` refuse in one line.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, register
from burstlake.replay.policies.placement import place, seed_of
from burstlake.replay.topologies import dragonfly_routing

LEVELS = {"random-router": "routers", "random-group": "groups"}  # policy → router hook


def _by(policy: str, seed: Any) -> Apply:
    seed = seed_of(policy, seed)
    hook_name = LEVELS[policy]

    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        hook = getattr(topology.router, hook_name, None)
        if hook is None or not hasattr(topology.router, "routers"):
            raise ValueError(
                f"policy {policy} places jobs by dragonfly {hook_name}; topology "
                f"{topology.name} has none (use random-switch)"
            )
        group = np.asarray(hook(), dtype=np.int64)
        rng = np.random.default_rng(seed)
        return topology, place(topology, demand, "random-switch", rng, group=group)

    return apply


@register("random-router")
def random_router(seed: int = 0) -> Apply:
    return _by("random-router", seed)


@register("random-group")
def random_group(seed: int = 0) -> Apply:
    return _by("random-group", seed)


@register("routing")
def routing(routing: str = "minimal") -> Apply:
    if routing not in dragonfly_routing.ROUTINGS:
        raise ValueError(
            f"policy routing: routing must be one of {list(dragonfly_routing.ROUTINGS)}, "
            f"got {routing!r}"
        )

    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        if topology.router.routing is None:
            raise ValueError(f"policy routing: topology {topology.name} has no routing setting")
        router = replace(topology.router, routing=routing)
        settings = {**topology.settings, "routing": routing}
        return replace(topology, router=router, settings=settings, _cache={}), demand

    return apply
