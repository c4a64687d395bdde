"""Event-driven driver (docs/design.md, "Replay"): rates recomputed at every start and end,
dependent requests, conservation, and the IOR shape of paper 004 Fig. 13a."""

from __future__ import annotations

import numpy as np
import pytest

from burstlake.replay.events import simulate
from burstlake.replay.policies import policy
from burstlake.replay.requests import Requests
from burstlake.replay.solver import Paths, max_min_rates
from burstlake.replay.topologies import build
from burstlake.replay.workloads.ior import ior


def requests(stream, size, gap, routes) -> Requests:
    return Requests(
        np.asarray(stream),
        np.asarray(size, dtype=float),
        np.asarray(gap, dtype=float),
        Paths.from_lists(routes),
    )


def test_rates_are_recomputed_when_flows_end_and_start() -> None:
    # one 10 B/s link: A (30 B) from 0; B (10 B) from 1. 0-1: A alone 10 B; 1-3: 5 B/s each,
    # B done at 3; A has 10 B left at 10 B/s -> done at 4
    timeline = simulate(requests([0, 1], [30, 10], [0, 1], [[0], [0]]), np.array([10.0]))
    np.testing.assert_allclose(timeline.start, [0, 1], rtol=1e-12)
    np.testing.assert_allclose(timeline.end, [4, 3], rtol=1e-12)


def test_next_request_waits_for_completion_plus_gap() -> None:
    # stream 0: 20 B, then 2 s think time, then 20 B; stream 1: 40 B at 0 on the same link
    # 0-4: 5 B/s each -> first request done at 4 (stream 1 has 20 left); 4-6: stream 1 alone
    # at 10 B/s -> done at 6; second request starts at 6 alone: done at 8
    timeline = simulate(
        requests([0, 0, 1], [20, 20, 40], [0, 2, 0], [[0], [0], [0]]), np.array([10.0])
    )
    np.testing.assert_allclose(timeline.start, [0, 6, 0], rtol=1e-12)
    np.testing.assert_allclose(timeline.end, [4, 8, 6], rtol=1e-12)
    np.testing.assert_allclose(timeline.latency, [4, 2, 6], rtol=1e-12)


def test_route_latency_is_paid_before_the_transfer() -> None:
    # two 10 B flows on one 10 B/s link, route latency 0.5 s: both issued at 0, both transfer
    # from 0.5 at 5 B/s each -> end at 2.5, latency 2.5 (half the link each, plus latency).
    # Stream 0 then thinks 1 s: issued at 3.5, transfers alone from 4 -> ends at 5.
    base = requests([0, 0, 1], [10, 10, 10], [0, 1, 0], [[0], [0], [0]])
    timed = Requests(base.stream, base.size, base.gap, base.paths, latency=np.full(3, 0.5))
    timeline = simulate(timed, np.array([10.0]))
    np.testing.assert_allclose(timeline.start, [0, 3.5, 0], rtol=1e-12)
    np.testing.assert_allclose(timeline.end, [2.5, 5, 2.5], rtol=1e-12)
    np.testing.assert_allclose(timeline.latency, [2.5, 1.5, 2.5], rtol=1e-12)
    with pytest.raises(ValueError, match="latencies must be non-negative"):
        Requests(base.stream, base.size, base.gap, base.paths, latency=np.full(3, -1.0))


def test_release_holds_a_request_until_its_time() -> None:
    # one 10 B/s link; stream 0: 10 B, then 10 B not before t = 5; stream 1: 10 B released at 2
    # (its gap 0 would start it at 0). 0-1: stream 0 alone; its second request waits until 5.
    base = requests([0, 0, 1], [10, 10, 10], [0, 0, 0], [[0], [0], [0]])
    held = Requests(base.stream, base.size, base.gap, base.paths, release=np.array([0, 5, 2.0]))
    timeline = simulate(held, np.array([10.0]))
    np.testing.assert_allclose(timeline.start, [0, 5, 2], rtol=1e-12)
    np.testing.assert_allclose(timeline.end, [1, 6, 3], rtol=1e-12)


def test_a_throttle_window_spaces_the_issues_of_a_stream() -> None:
    # one 10 B/s link, latency 0.5 s; stream 0: three 10 B requests, gap 0, window 3 s.
    # issue 0 -> transfer 0.5-1.5; next issue at max(1.5 + 0, 0 + 3) = 3 -> ends 4.5;
    # next at max(4.5, 6) = 6 -> ends 7.5. Stream 1 (no window) runs back to back alone
    # from 8: issued at 8 (its gap), ends 9.5. A window of 0.1 s (shorter than a request)
    # changes nothing.
    base = requests([0, 0, 0, 1], [10] * 4, [0, 0, 0, 8], [[0]] * 4)
    lat = np.full(4, 0.5)
    paced = Requests(
        base.stream, base.size, base.gap, base.paths, latency=lat, window=np.array([3, 3, 3, 0.0])
    )
    timeline = simulate(paced, np.array([10.0]))
    np.testing.assert_allclose(timeline.start, [0, 3, 6, 8], rtol=1e-12)
    np.testing.assert_allclose(timeline.end, [1.5, 4.5, 7.5, 9.5], rtol=1e-12)
    short = Requests(
        base.stream, base.size, base.gap, base.paths, latency=lat, window=np.full(4, 0.1)
    )
    free = Requests(base.stream, base.size, base.gap, base.paths, latency=lat)
    np.testing.assert_array_equal(
        simulate(short, np.array([10.0])).end, simulate(free, np.array([10.0])).end
    )


def test_empty_requests_complete_at_once() -> None:
    timeline = simulate(requests([0, 0], [0, 10], [1, 0], [[0], [0]]), np.array([10.0]))
    np.testing.assert_allclose(timeline.end, [1, 2], rtol=1e-12)


def test_conservation_bytes_out_equal_bytes_in() -> None:
    # random dependent streams on a small fat-tree: the fluid model moves exactly each size
    t = build({"name": "cab1296", "leaves": 4, "radix": 8})
    rng = np.random.default_rng(5)
    stream = np.repeat(np.arange(10), 3)
    size = rng.uniform(1e6, 1e8, 30)
    routes = t.io_paths().take(rng.integers(0, len(t.nodes), 10)[stream])
    timeline = simulate(
        Requests(stream, size, rng.uniform(0, 1e-3, 30), routes), t.resources.capacity
    )
    np.testing.assert_allclose(timeline.delivered, size, rtol=1e-9)
    assert np.all(timeline.latency >= size / 12.5e9 * (1 - 1e-9))  # never above link rate
    assert timeline.events >= 30


def test_delivered_bytes_match_sizes_step_by_step() -> None:
    # three flows on two links, exact fluid accounting: bytes = integral of rate over time
    # link 0 (6 B/s): f0, f1; link 1 (4 B/s): f1, f2. Level: link1 2 each, f0 4.
    # f2 (4 B) ends at 2; then f1 alone on link1 could take 4 but link0 gives 3,3 ->
    # f0 had 12-8=4 left -> at 3 B/s ends at 2+4/3; f1 had 10-4=6, gets 3 then 4 -> ...
    timeline = simulate(
        requests([0, 1, 2], [12, 10, 4], [0, 0, 0], [[0], [0, 1], [1]]), np.array([6.0, 4.0])
    )
    t0 = 2.0
    t1 = t0 + 4 / 3
    left_f1 = 10 - 2 * 2 - 3 * (4 / 3)  # 2 B left at t1, then 4 B/s (link 1 alone)
    np.testing.assert_allclose(timeline.end, [t1, t1 + left_f1 / 4, t0], rtol=1e-12)


@pytest.mark.parametrize(
    ("stream", "size", "gap", "message"),
    [
        ([1, 0], [1, 1], [0, 0], "grouped by stream"),
        ([0], [-1], [0], "non-negative"),
        ([0, 0], [1], [0], "one entry each"),
    ],
)
def test_bad_requests(stream, size, gap, message) -> None:
    with pytest.raises(ValueError, match=message):
        requests(stream, size, gap, [[0]] * len(stream))


def aggregate_bandwidth(topology, m: int) -> float:
    req = ior(topology, m, bytes_per_node=3e9, request_bytes=1e9)
    timeline = simulate(req, topology.resources.capacity)
    return req.size.sum() / timeline.end.max()


def test_ior_flat_under_block_growing_under_cyclic() -> None:
    """004 Fig. 13a: m adjacent nodes share one ION under block mapping; under cyclic they use
    m IONs until the storage (here 10 GB/s) saturates."""
    caps = {"node_link": 6e9, "ion": 1.5e9, "storage": 10e9}
    cs19 = build({"name": "cs19", "capacities": caps})
    blocked = policy("block").apply(cs19, None)[0]
    spread = policy("cyclic").apply(cs19, None)[0]
    for m in (1, 2, 4, 8, 16):
        assert aggregate_bandwidth(blocked, m) == pytest.approx(1.5e9, rel=1e-9)
    growth = [aggregate_bandwidth(spread, m) for m in (1, 2, 4, 8, 16)]
    np.testing.assert_allclose(growth, [1.5e9, 3e9, 6e9, 10e9, 10e9], rtol=1e-9)


def test_ior_bad_settings() -> None:
    with pytest.raises(ValueError, match=r"nodes must be in 1\.\.256"):
        ior(build({"name": "tiny"}), 0, 1e9, 1e8)


def full_resolve(requests: Requests, capacity: np.ndarray) -> np.ndarray:
    """Reference end times: every flow in flight re-solved at every start and end."""
    n = len(requests.stream)
    end = np.full(n, np.nan)
    pending = {
        k: float(requests.gap[k])
        for k in np.flatnonzero(np.r_[True, np.diff(requests.stream) != 0])
    }
    active: dict[int, float] = {}  # request -> bytes left
    now = 0.0
    while pending or active:
        keys = np.fromiter(active, dtype=np.int64, count=len(active))
        rate = max_min_rates(requests.paths.take(keys), capacity) if len(keys) else np.zeros(0)
        left = np.fromiter(active.values(), dtype=float, count=len(active))
        step = min([*(left / rate), np.inf]) if len(keys) else np.inf
        arrival = min(pending.values(), default=np.inf)
        dt = min(step, arrival - now)
        now += dt
        for k, r in zip(keys, rate, strict=True):
            active[k] -= r * dt
            if active[k] <= 1e-9 * requests.size[k]:
                del active[k]
                end[k] = now
                if k + 1 < n and requests.stream[k + 1] == requests.stream[k]:
                    pending[k + 1] = now + requests.gap[k + 1]
        for k in [k for k, t in pending.items() if t <= now]:
            del pending[k]
            active[k] = float(requests.size[k])
    return end


def test_incremental_solver_matches_full_resolve() -> None:
    # 60 streams of 5 dependent requests over 12 links of 3 capacities: the driver re-solves
    # only the flows an event can change; re-solving all of them at every event agrees
    rng = np.random.default_rng(17)
    capacity = rng.choice([1e9, 2.5e9, 5e9], 12)
    stream = np.repeat(np.arange(60), 5)
    routes = [list(rng.choice(12, rng.integers(1, 5), replace=False)) for _ in range(300)]
    req = requests(stream, rng.uniform(1e6, 5e7, 300), rng.uniform(0, 2e-3, 300), routes)
    timeline = simulate(req, capacity)
    np.testing.assert_allclose(timeline.end, full_resolve(req, capacity), rtol=1e-9)
    # fewer rates computed than a full re-solve: every flow in flight after each event
    instants = np.unique(np.r_[timeline.start, timeline.end])
    in_flight = [np.sum((timeline.start <= t) & (timeline.end > t)) for t in instants]
    assert timeline.events == len(instants)
    assert timeline.resolved < 0.8 * sum(in_flight)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_component_through_saturated_links_matches_full_resolve(seed) -> None:
    # a small two-level fat-tree (8 hosts up/down at 1 GB/s, 2 leaves x 2 spines at 1.5 GB/s):
    # most flows cross both saturated and unsaturated links, so an event's change reaches
    # resources left closed (unsaturated before) or flows left out (not a link's fastest) that
    # the new rates concern, which the driver must then walk too
    rng = np.random.default_rng(seed)
    capacity = np.r_[np.full(16, 1e9), np.full(8, 1.5e9)]
    routes = []
    for _ in range(240):
        src, dst = rng.choice(8, 2, replace=False)
        spine = int(rng.integers(0, 2))
        uplink, downlink = 16 + (src % 2) * 2 + spine, 20 + spine * 2 + dst % 2
        routes.append([int(src), uplink, downlink, 8 + int(dst)] if src % 2 != dst % 2 else
                      [int(src), 8 + int(dst)])  # fmt: skip
    stream = np.repeat(np.arange(40), 6)
    req = requests(stream, rng.uniform(1e6, 5e7, 240), rng.uniform(0, 5e-3, 240), routes)
    timeline = simulate(req, capacity)
    np.testing.assert_allclose(timeline.end, full_resolve(req, capacity), rtol=1e-9)
