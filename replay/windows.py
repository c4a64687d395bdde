"""Windows of the lake worth replaying packet by packet (docs/design.md, "Replay"): given
explicitly, or the busiest ones the flow model finds over the whole span.

``busiest: {k, length_s, by}`` runs the interval replay of the flow model (paper 004 §7.4,
:class:`~burstlake.replay.intervals.IntervalReplay`) over the lake's ``node_io`` and cuts the
span into windows of ``length_s`` on a grid from the first row; each window is measured ``by``

- ``backlog``: the bytes left unserved at the end of its intervals, summed (the I/O path's
  backlog of 004 §7.4; a window without backlog scores 0);
- ``ion``: the bytes the busiest forwarding target (ION, bridge node or I/O server) served
  in one of its intervals (the load that makes an I/O path busy, 004 §5).

Link utilisation is not a measure here: the interval replay routes only I/O (node to target),
so it knows no interconnect link's load. The k windows with the highest measure are picked,
highest first (fewer when fewer windows measure above 0; none is refused), and each keeps
why it was picked (:class:`Window`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.intervals import IntervalReplay
from burstlake.replay.workloads import known_keys, number
from burstlake.replay.workloads.lake import lake_demand, window_bounds

MEASURES = {"backlog": "bytes", "ion": "bytes"}  # what ``by`` may name, and its unit
BUSIEST_KEYS = frozenset({"k", "length_s", "by"})


@dataclass(frozen=True)
class Window:
    """A time window of one machine and why it is replayed: ``reason`` ``explicit`` (the
    scenario named it) or ``busiest_<measure>``, with the measure's ``value``."""

    start: datetime
    end: datetime
    reason: str = "explicit"
    value: float | None = None
    unit: str = ""

    @property
    def length_s(self) -> float:
        return (self.end - self.start).total_seconds()


def busiest_spec(where: str, given: Any) -> tuple[int, float, str]:
    """A ``busiest:`` mapping's ``k`` (integer >= 1), ``length_s`` (> 0 seconds) and ``by``
    (one of :data:`MEASURES`); a one-line error names the key."""
    if not isinstance(given, dict):
        raise ValueError(f"{where} must be a mapping {{k, length_s, by}}, got {given!r}")
    known_keys(where, given, BUSIEST_KEYS)
    k = int(number(f"{where}: k", given.get("k", 1), low=1, integer=True))
    length = number(f"{where}: length_s", given.get("length_s"), low=0, strict=True)
    by = given.get("by", "backlog")
    if by not in MEASURES:
        raise ValueError(f"{where}: by must be one of {sorted(MEASURES)}, got {by!r}")
    return k, length, by


def explicit(where: str, given: Any) -> Window:
    """A ``window: {start, end}`` given by the scenario (both required, start before end)."""
    if not isinstance(given, dict):
        raise ValueError(f"{where} must be a mapping {{start, end}}, got {given!r}")
    try:
        start, end = window_bounds(given)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from None
    if start is None or end is None or not start < end:
        raise ValueError(f"{where}: give start and end, start before end, got {given!r}")
    return Window(start, end)


def busiest(lake: Any, topology: Topology, k: int, length_s: float, by: str) -> list[Window]:
    """The ``k`` windows of ``length_s`` with the highest measure ``by`` over the lake's whole
    ``node_io`` span, replayed by the flow model's interval replay (module docstring)."""
    demand = lake_demand(lake, topology)
    step = demand.interval_s
    per_slot = max(1, round(length_s / step))  # intervals per window
    slots = demand.intervals // per_slot + 1
    score = np.zeros(slots + 1)  # the drain after the last row counts for the last window
    for solved in IntervalReplay(topology, step).run(demand.rows):
        slot = np.minimum(solved.t // per_slot, slots)
        if by == "backlog":
            np.add.at(score, slot, np.maximum(solved.demand - solved.served, 0.0))
        else:
            ion = topology.ion_of[solved.node]
            cells, at = np.unique(solved.t * len(topology.ions) + ion, return_inverse=True)
            load = np.bincount(at, solved.served, len(cells))
            np.maximum.at(score, np.minimum(cells // len(topology.ions) // per_slot, slots), load)
    score[slots - 1] = max(score[slots - 1], score[slots])
    score = score[:slots]
    order = np.argsort(-score, kind="stable")[:k]
    order = order[score[order] > 0]  # a window where nothing was measured is not busy
    if not len(order):
        raise ValueError(
            f"workload lake_window: busiest by {by}: no window of the span has any (the flow "
            f"model serves every interval in full); pick by {'ion' if by == 'backlog' else by}"
            " or give the window"
        )
    length = timedelta(seconds=per_slot * step)
    return [
        Window(
            demand.start + int(s) * length,
            demand.start + (int(s) + 1) * length,
            f"busiest_{by}",
            float(score[s]),
            MEASURES[by],
        )
        for s in order
    ]
