"""Several policies as one (docs/design.md, "Policies"): ``{name: combine, label: ...,
policies: [spread-target, random-switch, {name: throttle, throttle_window: 2.0e-3}]}`` applies
them in list order — each to the machine and demand the one before left — so placements,
server placements and throttling compare in one scenario (paper 000 §5)."""

from __future__ import annotations

from typing import Any

from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, policy, register


@register("combine")
def combine(policies: list) -> Apply:
    if not isinstance(policies, list) or not policies:
        raise ValueError(
            f"policy combine: policies must be a non-empty list of policies, got {policies!r}"
        )
    if any(isinstance(p, dict) and p.get("name") == "combine" for p in policies):
        raise ValueError("policy combine: list the policies themselves, not another combine")
    steps = [policy(entry).apply for entry in policies]

    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        for step in steps:
            topology, demand = step(topology, demand)
        return topology, demand

    return apply
