"""Storage-server efficiency: a server's throughput as a function of the number of streams it
interleaves (paper 001 §I: servers "have to deal with interleaved requests coming from
different sources, which often break the access pattern optimized by each application
individually"; §II-C, Figs. 2, 7 and 12: the measured Δ-graphs depart from the
proportional-sharing curve). Off by default: a server is one max-min resource and the Δ-graph
is the theoretical curve exactly.

    workload:
      source: phases
      server_efficiency: {streams: [16, 32, 64], efficiency: [1.0, 0.8, 0.7]}

``efficiency(k)`` is a measured curve (e.g. IOR on the real servers with k writers): linear
between its points, flat beyond its ends. A curve falling with k makes two overlapping phases
slower than proportional sharing predicts (I > theory); a rising one (a small application alone
does not keep the servers busy) makes them faster, as 001 Figs. 7b and 12 measured.

The engine (:mod:`burstlake.replay.events`) has one fixed capacity per resource, so the curve is
applied from the workload: a request issued while its server (its forwarding target) serves k
streams costs ``size / efficiency(k)`` of the server's time, modelled as that many bytes; the
requests are replayed, the counts taken again from the new timeline, until they no longer
change (at most :data:`ROUNDS` replays). A stream (one node of one phase) is counted on its
server from its first request's start to its last request's end. The inflated bytes also cross
the node's link, which never binds in the calciom scenarios (6 GB/s against a 1.5 GB/s ION).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from burstlake.replay.requests import Requests, Timeline

log = logging.getLogger(__name__)
ROUNDS = 12  # replays at most while the stream counts settle
KEY = "server_efficiency"


@dataclass(frozen=True)
class ServerEfficiency:
    """A measured curve: ``efficiency[i]`` of the server's throughput with ``streams[i]``
    interleaved streams."""

    streams: tuple[float, ...]
    efficiency: tuple[float, ...]

    @classmethod
    def from_mapping(cls, spec: Any, where: str = f"workload: {KEY}") -> ServerEfficiency | None:
        """The setting, checked with one-line errors naming the key; None when absent."""
        if spec is None:
            return None
        if not isinstance(spec, Mapping) or set(spec) != {"streams", "efficiency"}:
            raise ValueError(f"{where} must be {{streams: [k, ...], efficiency: [e, ...]}}")
        lists = {}
        for name in ("streams", "efficiency"):
            values = spec[name]
            if not isinstance(values, list) or not values:
                raise ValueError(f"{where}.{name} must be a non-empty list of numbers")
            if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                raise ValueError(f"{where}.{name} must hold numbers only, got {values!r}")
            lists[name] = tuple(float(v) for v in values)
        streams, efficiency = lists["streams"], lists["efficiency"]
        if len(streams) != len(efficiency):
            raise ValueError(
                f"{where}: streams has {len(streams)} points and efficiency {len(efficiency)}"
            )
        if streams[0] < 1 or np.any(np.diff(streams) <= 0):
            raise ValueError(f"{where}.streams must be increasing stream counts >= 1")
        if not all(0 < e <= 1 for e in efficiency):
            raise ValueError(f"{where}.efficiency must be fractions in (0, 1]")
        return cls(streams, efficiency)

    def __call__(self, k: np.ndarray) -> np.ndarray:
        return np.interp(k, self.streams, self.efficiency)

    def simulate(
        self,
        run: Callable[[Requests], Timeline],
        requests: Requests,
        server: np.ndarray,
    ) -> Timeline:
        """``run`` (the topology's contention model) on ``requests`` whose request k goes to
        ``server[k]``, each costing its size over the efficiency at its issue time."""
        timeline = run(requests)
        for _ in range(ROUNDS):
            factor = self(interleaved(requests.stream, server, timeline))
            again = run(_scaled(requests, factor))
            settled = np.allclose(again.end, timeline.end, rtol=1e-9, atol=1e-9)
            timeline = again
            if settled:
                break
        else:
            log.warning("%s: stream counts still moving after %d replays", KEY, ROUNDS)
        return timeline


def interleaved(stream: np.ndarray, server: np.ndarray, timeline: Timeline) -> np.ndarray:
    """For each request: the streams its server serves when it is issued, itself included."""
    _, first = np.unique(stream, return_index=True)  # requests are grouped by stream
    begin = timeline.start[first]
    finish = np.maximum.reduceat(timeline.end, first)
    host = server[first]
    counts = np.zeros(len(stream))
    for s in np.unique(host):
        mine = host == s
        starts, ends = np.sort(begin[mine]), np.sort(finish[mine])
        at = np.flatnonzero(server == s)
        t = timeline.start[at]
        counts[at] = np.searchsorted(starts, t, "right") - np.searchsorted(ends, t, "right")
    return np.maximum(counts, 1)


def _scaled(requests: Requests, factor: np.ndarray) -> Requests:
    return replace(requests, size=requests.size / factor)
