"""Synthetic network traffic (CODES' ``model-net-synthetic-dragonfly-all``,
codes-org/codes src/network-workloads/model-net-synthetic-dragonfly-all.c): every compute node
sends ``messages`` messages of ``message_bytes``, one every inter-arrival time (the first one
after one interval, open loop: a message leaves whether or not the previous one arrived), to a
destination given by the ``pattern``:

- ``uniform``: a random node other than itself (CODES draws ``(i + U{1, n-2}) mod n``; here
  ``U{1, n-1}``, every other node);
- ``nearest-group``: the node at the same position in the next group, ``(i + m) mod n`` with
  ``m`` the nodes of a group (:meth:`~burstlake.replay.graph.Topology.groups`): a dragonfly's
  worst case, every group's traffic on the few global links to the next group;
- ``nearest-neighbour``: node ``i + 1``;
- ``random-permutation``: one partner per node drawn as a random permutation for the whole run
  (CODES' ``rand_perm`` re-draws a partner after ``rperm_threshold`` bytes).

The inter-arrival time is ``interval`` seconds, or ``message_bytes / (load × b)`` for an offered
``load`` as a fraction of the injection bandwidth ``b`` (the capacity of a node's link into the
network, CODES' ``load`` over ``cn_bandwidth``). Messages sent before ``warmup`` seconds are
replayed and left out of the scores.

Scores: mean, p99 and maximum packet latency (a message's latency, from its hand-off to the
network to its last byte's arrival; one packet when the message fits one, as CODES' 2 KiB
default does), mean hops (routers a packet leaves, CODES' ``my_N_hop``; per packet under the
packet model, which routes per packet), the offered load and the accepted throughput, both as
fractions of the injection bandwidth per node (the accepted throughput: bytes of the scored
messages over the time from the first of them sent to the last delivered), their ratio, and
the observed load as CODES' driver measures it (:func:`observed_rate`: the bytes a node received
over the time from the first to the last delivery of its own messages, averaged over nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from burstlake.replay import scores as sc
from burstlake.replay.graph import Topology
from burstlake.replay.requests import Requests
from burstlake.replay.solver import Paths
from burstlake.replay.workloads import Kind, Progress, ScenarioLimits, Settings, number, register

PATTERNS = ("uniform", "nearest-group", "nearest-neighbour", "random-permutation")
DEFAULTS: dict[str, Any] = {
    "pattern": "uniform",
    "load": 0.5,  # offered, as a fraction of the injection bandwidth
    "interval": None,  # seconds between two messages of a node (instead of load)
    "message_bytes": 2048,  # CODES' PAYLOAD_SZ
    "messages": 20,  # per node (CODES' num_messages default)
    "warmup": 0.0,  # seconds
    "seed": 0,
}


def settings(workload: dict) -> dict[str, Any]:
    """The workload's settings with defaults, each checked with a one-line error."""
    spec = DEFAULTS | {k: v for k, v in workload.items() if k != "source"}
    if spec["pattern"] not in PATTERNS:
        raise ValueError(
            f"workload synthetic: pattern must be one of {list(PATTERNS)}, got {spec['pattern']!r}"
        )
    out = dict(spec)
    out["load"] = number("workload synthetic: load", spec["load"], low=0, strict=True)
    if spec["interval"] is not None:
        out["interval"] = number(
            "workload synthetic: interval", spec["interval"], low=0, strict=True
        )
    out["message_bytes"] = number(
        "workload synthetic: message_bytes", spec["message_bytes"], low=0, strict=True
    )
    for key in ("messages", "seed"):
        low = 1 if key == "messages" else 0
        out[key] = int(number(f"workload synthetic: {key}", spec[key], low=low, integer=True))
    out["warmup"] = number("workload synthetic: warmup", spec["warmup"], low=0)
    return out


def check(workload: dict, limits: ScenarioLimits) -> None:
    spec = settings(workload)
    if spec["messages"] > limits.requests:
        raise ValueError(
            f"workload synthetic asks for {spec['messages']:,} messages per node; the limit is "
            f"{limits.requests:,} requests"
        )


@dataclass(frozen=True)
class Synthetic:
    """The traffic of one run: message k goes from node ``src[k]`` to ``dst[k]`` at ``at[k]``."""

    src: np.ndarray
    dst: np.ndarray
    at: np.ndarray
    message_bytes: float
    interval: float
    injection: float  # bytes/s of a node's injection link
    warmup: float


def destinations(topology: Topology, pattern: str, messages: int, rng) -> np.ndarray:
    """(nodes, messages) destination of every message (module docstring)."""
    n = len(topology.nodes)
    if n < 2:
        raise ValueError("workload synthetic: the topology needs at least two compute nodes")
    own = np.arange(n, dtype=np.int64)[:, None]
    if pattern == "uniform":
        return (own + rng.integers(1, n, size=(n, messages))) % n
    if pattern == "nearest-group":
        groups = topology.groups()
        width = int(np.count_nonzero(groups == groups[0]))
        return np.repeat((own + width) % n, messages, axis=1)
    if pattern == "nearest-neighbour":
        return np.repeat((own + 1) % n, messages, axis=1)
    return np.repeat(rng.permutation(n)[:, None], messages, axis=1)


def injection_bandwidth(topology: Topology) -> float:
    """Bytes/s of a node's first link (node 0 towards node 1)."""
    route = topology.router.route(0, 1 % len(topology.nodes))
    return float(topology.resources.capacities[route[0]])


def demand(spec: dict, topology: Topology, _lake: Any = None) -> Synthetic:
    spec = settings(spec)
    rng = np.random.default_rng(spec["seed"])
    size = float(spec["message_bytes"])
    injection = injection_bandwidth(topology)
    interval = spec["interval"] or size / (spec["load"] * injection)
    m, n = spec["messages"], len(topology.nodes)
    dst = destinations(topology, spec["pattern"], m, rng)
    at = np.broadcast_to(interval * np.arange(1, m + 1), (n, m))
    src = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], (n, m))
    return Synthetic(
        src.ravel().copy(), dst.ravel(), at.ravel().copy(), size, interval, injection,
        float(spec["warmup"]),
    )  # fmt: skip


def requests(topology: Topology, traffic: Synthetic) -> Requests:
    """One stream per message, issued at its time (open loop), routed by the topology: a
    router that routes many pairs at once (``route_arrays(src, dst)``, the dragonfly's, which
    draws gateways and intermediate groups per message as CODES draws them per packet) routes
    every message; any other routes each pair once."""
    count = len(traffic.src)
    router = topology.router
    arrays = getattr(router, "route_arrays", None)
    if arrays is not None:
        paths = arrays(traffic.src, traffic.dst)
    else:
        width = len(topology.nodes)
        unique, inverse = np.unique(traffic.src * width + traffic.dst, return_inverse=True)
        routes = [router.route(int(k // width), int(k % width)) for k in unique]
        paths = Paths.from_lists(routes).take(inverse)
    return Requests(
        stream=np.arange(count, dtype=np.int64),
        size=np.full(count, traffic.message_bytes),
        gap=np.asarray(traffic.at, dtype=np.float64),
        paths=paths,
        latency=topology.route_latency(paths),
    )


def measure(topology: Topology, traffic: Synthetic, progress: Progress = None) -> dict[str, float]:
    """Replay ``traffic`` and measure it (module docstring): latencies in seconds, loads as
    fractions of the injection bandwidth."""
    routed = requests(topology, traffic)
    timeline = topology.simulate(routed, progress)
    scored = traffic.at >= traffic.warmup
    latency = (timeline.end - timeline.start)[scored]
    hops = getattr(timeline, "hops", np.zeros(0))
    if len(hops) == len(traffic.src):
        packets = np.maximum(1, np.ceil(traffic.message_bytes / _packet_bytes(topology)))
        per = hops[scored] / packets
    else:
        per = (routed.paths.lengths - 1)[scored].astype(np.float64)
    n = len(topology.nodes)
    done = np.isfinite(latency)
    done_at = timeline.end[scored]
    first_sent = traffic.at[scored].min() if done.any() else math.nan
    span = float(np.nanmax(done_at) - first_sent) if done.any() else 0.0
    accepted = traffic.message_bytes * int(done.sum()) / n / span if span > 0 else math.nan
    observed = observed_rate(traffic, timeline.end, scored, n)
    offered = traffic.message_bytes / traffic.interval
    return {
        "packet_latency_mean": float(np.mean(latency[done])) if done.any() else math.nan,
        "packet_latency_p99": float(np.percentile(latency[done], 99)) if done.any() else math.nan,
        "packet_latency_max": float(np.max(latency[done])) if done.any() else math.nan,
        "mean_hops": float(np.mean(per)) if len(per) else math.nan,
        "offered_load": offered / traffic.injection,
        "accepted_throughput": accepted / traffic.injection,
        "accepted_share": accepted / offered,
        "observed_load": observed / traffic.injection,
        "events": float(timeline.events),
    }


def observed_rate(traffic: Synthetic, end: np.ndarray, scored: np.ndarray, n: int) -> float:
    """CODES' synthetic driver's "observed load" per node (bytes/s): the bytes a node
    received over the time from the first to the last delivery of its own messages, averaged
    over the nodes (scored messages only)."""
    delivered = scored & np.isfinite(end)
    if not delivered.any():
        return math.nan
    src, dst, at = traffic.src[delivered], traffic.dst[delivered], end[delivered]
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, src, at)
    np.maximum.at(last, src, at)
    received = np.bincount(dst, minlength=n) * traffic.message_bytes
    span = last - first
    rate = np.where(span > 0, received / np.where(span > 0, span, 1.0), np.nan)
    return float(np.nanmean(rate)) if np.isfinite(rate).any() else math.nan


def _packet_bytes(topology: Topology) -> float:
    settings = getattr(topology.contention, "settings", None)
    return float(getattr(settings, "packet_bytes", math.inf))


UNITS = {"packet_latency": "s", "mean_hops": "hops", "events": "events"}


def scores(given: Settings, topology: Topology, work: Synthetic, progress: Progress) -> list:
    measured = measure(topology, work, progress)
    return [
        sc.Score(key, value, next((u for p, u in UNITS.items() if key.startswith(p)), "fraction"))
        for key, value in measured.items()
        if key != "events"
    ]


KIND = register(
    "synthetic",
    Kind(keys=frozenset(DEFAULTS), check=check, demand=demand, scores=scores),
)
