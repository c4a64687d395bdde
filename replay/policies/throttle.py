"""I/O throttling (paper 000 §5.3): a *throttle window*, the minimum time between the starts of
a client's consecutive I/O requests — unlike the interval, which runs from one request's
completion to the next send. The policy sets the window on the demand's I/O jobs; the replay
paces them (the engine's ``Requests.window``)."""

from __future__ import annotations

import math
from typing import Any

from burstlake.replay.demands import Throttleable
from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, register


@register("throttle")
def throttle(throttle_window: float) -> Apply:
    try:
        window = float(throttle_window)
    except (TypeError, ValueError):
        window = math.nan
    if isinstance(throttle_window, bool) or not 0 < window < math.inf:
        raise ValueError(
            f"policy throttle: throttle_window must be a number of seconds > 0 (e.g. 2.0e-3), "
            f"got {throttle_window!r}"
        )

    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        if not isinstance(demand, Throttleable):
            raise ValueError(
                "policy throttle paces the I/O jobs of a jobs workload (source: jobs); "
                "this workload has none"
            )
        return topology, demand.throttled(window)

    return apply
