"""Interval replay of node_io with backlog (docs/design.md, "Replay"): hand-computed carry-over,
conservation; the batched solve and the job-alone replay skip only what cannot saturate."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from burstlake.replay.demands import JobIndex, NodeDemand
from burstlake.replay.intervals import IntervalReplay, Rows
from burstlake.replay.scores import JobTime
from burstlake.replay.solver import fill, max_min_rates, saturable
from burstlake.replay.topologies import build
from burstlake.replay.workloads.lake import alone_time, unsaturable_jobs


def tiny(ion: float = 100.0, node_link: float = 1000.0, storage: float = 1e6):
    caps = {"ion": ion, "node_link": node_link, "storage": storage}
    return build({"name": "tiny", "capacities": caps})  # 16 nodes per ION


def rows(t, node, traffic, lane=None) -> Rows:
    t = np.asarray(t)
    lane = np.zeros(len(t), dtype=np.int64) if lane is None else np.asarray(lane)
    return Rows(lane, t, np.asarray(node), np.asarray(traffic, dtype=float))


def replay(topology, data: Rows, interval_s: float = 1.0, **kw):
    driver = IntervalReplay(topology, interval_s, **kw)
    solved = list(driver.run(data))
    out = {k: np.concatenate([getattr(s, k) for s in solved]) for k in solved[0].__dict__}
    order = np.lexsort((out["node"], out["t"], out["lane"]))
    return {k: v[order] for k, v in out.items()}, driver


def test_backlog_carries_over_until_served() -> None:
    # nodes 0 and 1 share ion000 (100 B/s): 300 B each at t=0 drain 50 B/s each for 6 s;
    # node 20 (ion001) is untouched; at t=5 it adds 50 B that its own ION serves at once
    out, _ = replay(tiny(), rows([0, 0, 5], [0, 1, 20], [300, 300, 50]))
    assert out["t"].tolist() == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 5]
    assert out["demand"].tolist() == [300, 300, 250, 250, 200, 200, 150, 150, 100, 100, 50, 50, 50]
    np.testing.assert_allclose(out["served"], [50] * 13, rtol=1e-12)


def test_new_demand_joins_the_backlog() -> None:
    # node 0 alone: 250 B at t=0 on a 100 B/s ION, 80 more at t=1 -> 100, 100, 100, 30
    out, _ = replay(tiny(), rows([0, 1], [0, 0], [250, 80]))
    assert out["demand"].tolist() == [250, 230, 130, 30]
    np.testing.assert_allclose(out["served"], [100, 100, 100, 30], rtol=1e-12)


def test_demand_rate_is_the_cap() -> None:
    # interval of 10 s: 400 B on a 100 B/s ION is served within the interval, no backlog
    out, _ = replay(tiny(), rows([0, 0], [0, 1], [400, 500]), interval_s=10.0)
    np.testing.assert_allclose(out["served"], [400, 500], rtol=1e-12)
    # a lighter node keeps its demand, the heavier one gets the rest: 1000 B/s ION over 1 s
    out, _ = replay(tiny(ion=1000.0, node_link=1e4), rows([0, 0], [0, 1], [200, 2000]))
    np.testing.assert_allclose(out["served"][:2], [200, 800], rtol=1e-12)


def test_lanes_are_separate_machines() -> None:
    data = rows([0, 0, 0], [0, 1, 0], [300, 300, 300], lane=[0, 0, 1])
    out, _ = replay(tiny(), data)
    lane1 = out["lane"] == 1
    assert out["served"][lane1].tolist() == [100, 100, 100]  # alone: the whole ION
    assert out["served"][~lane1].tolist()[:2] == [50, 50]


@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_conservation_and_chunking(chunk_rows) -> None:
    rng = np.random.default_rng(11)
    t = np.sort(rng.integers(0, 40, 300))
    node = rng.integers(0, 48, 300)
    keep = np.unique(t * 100 + node, return_index=True)[1]
    data = rows(t[keep], node[keep], rng.uniform(0, 400, len(keep)))
    out, _ = replay(tiny(), data, chunk_rows=chunk_rows)
    assert out["served"].sum() == pytest.approx(data.bytes.sum(), rel=1e-12)
    assert np.all(out["served"] <= out["demand"] * (1 + 1e-12))
    # per ION and interval the served bytes never exceed the ION's capacity
    ion = tiny().ion_of[out["node"]]
    load = np.zeros((out["t"].max() + 1, 16))
    np.add.at(load, (out["t"], ion), out["served"])
    assert load.max() <= 100 * (1 + 1e-9)
    reference, _ = replay(tiny(), data, chunk_rows=10**6)
    np.testing.assert_allclose(out["served"], reference["served"], rtol=1e-9)


def test_rows_must_be_sorted_by_interval() -> None:
    with pytest.raises(ValueError, match="sorted by interval"):
        list(IntervalReplay(tiny(), 1.0).run(rows([3, 1], [0, 0], [1, 1])))


def test_interval_length_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        IntervalReplay(tiny(), 0)


def test_empty_trace() -> None:
    assert list(IntervalReplay(tiny(), 1.0).run(rows([], [], []))) == []


def plain_rates(paths, capacity, cap, group) -> np.ndarray:
    """The plain batched solve: every flow filled, a private copy of each resource per group."""
    keys = group[paths.flow_of_entry()] * len(capacity) + paths.indices
    local, indices = np.unique(keys, return_inverse=True)
    rate = np.zeros(paths.flows)
    scratch = np.full(len(local), -1, dtype=np.int64)
    fill(
        np.arange(paths.flows),
        paths.indptr,
        indices,
        capacity[local % len(capacity)],
        cap,
        rate,
        scratch,
        np.zeros(len(local)),
    )
    return rate


def test_flows_on_unsaturable_resources_take_their_cap() -> None:
    # 300 groups on tiny's routes (tx, ion, storage), demand rates around the ION's 100 B/s:
    # some groups over-subscribe an ION, most do not; the batched solve fills only the flows
    # crossing a resource that may saturate and must equal filling every flow, to the bit
    topology = tiny()
    rng = np.random.default_rng(5)
    node = rng.integers(0, 64, 3000)
    group = np.sort(rng.integers(0, 300, 3000))
    cap = rng.uniform(0, 60, 3000) * (rng.random(3000) < 0.5)
    paths = topology.io_paths().take(node)
    capacity = topology.resources.capacity
    hot = saturable(
        np.arange(3000), group, np.arange(3000), paths.indptr, paths.indices, capacity, cap
    )
    assert 0.1 < hot.mean() < 0.9  # both paths are exercised
    rate = max_min_rates(paths, capacity, cap, group)
    np.testing.assert_array_equal(rate, plain_rates(paths, capacity, cap, group))
    np.testing.assert_array_equal(rate[~hot], cap[~hot])


def node_demand(data: Rows, job: list[int], jobs: int, interval_s: float) -> NodeDemand:
    none = np.zeros(0, dtype=np.int64)
    index = JobIndex(none, none, none, none, tuple(f"j{k}" for k in range(jobs)))
    return NodeDemand(data, interval_s, dt.datetime(2018, 1, 1), np.asarray(job), index)


def plain_alone(topology, demand: NodeDemand) -> np.ndarray:
    """Every job replayed alone in its own lane, none skipped."""
    alone = JobTime(len(demand.jobs.job_ids))
    mine = demand.job >= 0
    rows = demand.rows.take(mine)
    lanes = Rows(demand.job[mine] + 1, rows.t, rows.node, rows.bytes)
    for solved in IntervalReplay(topology, demand.interval_s).run(lanes):
        alone.add(solved.lane - 1, solved.t, solved.demand)
    return alone.busy


def test_jobs_that_never_saturate_are_not_replayed_alone() -> None:
    # tiny: 16 nodes per ION of 100 B/s, 10 s intervals. A (cn0-1) and B (cn2-3) share ion000,
    # 400 B per node at t=0: 160 B/s together saturate it (both backlog in the trace), but
    # each alone asks 80 B/s -> never saturable, one busy interval alone. C (cn16-17, ion001)
    # asks 2 x 70 B/s alone -> saturates: 50 B/s each, 500 B served, 200 B carried to t=1:
    # replayed, two intervals. D (cn32) 300 B at t=0 and t=3: two intervals. cn48 has no job.
    data = rows([0, 0, 0, 0, 0, 0, 0, 0, 3], [0, 1, 2, 3, 16, 17, 32, 48, 32],
                [400, 400, 400, 400, 700, 700, 300, 5000, 300])  # fmt: skip
    demand = node_demand(data, [0, 0, 1, 1, 2, 2, 3, -1, 3], 4, 10.0)
    assert unsaturable_jobs(tiny(), demand).tolist() == [True, True, False, True]
    assert alone_time(tiny(), demand).busy.tolist() == [1, 1, 2, 2]
    assert plain_alone(tiny(), demand).tolist() == [1, 1, 2, 2]


def test_alone_time_equals_replaying_every_job() -> None:
    # 40 jobs of 1-6 nodes over 120 intervals, some heavy enough to backlog alone, some
    # sharing IONs with others, plus traffic of nodes in no job
    rng = np.random.default_rng(9)
    t, node, traffic, job = [], [], [], []
    for k in range(40):
        first, size = int(rng.integers(0, 250)), int(rng.integers(1, 7))
        begin = int(rng.integers(0, 100))
        heavy = rng.random() < 0.3
        for step in range(begin, begin + int(rng.integers(1, 20))):
            for n in range(first, min(first + size, 256)):
                t.append(step)
                node.append(n)
                traffic.append(rng.uniform(0, 3000 if heavy else 400))
                job.append(k if rng.random() < 0.9 else -1)
    order = np.lexsort((node, t))
    key = np.asarray(t)[order] * 256 + np.asarray(node)[order]
    keep = order[np.r_[True, key[1:] != key[:-1]]]  # one row per node and interval
    data = rows(np.asarray(t)[keep], np.asarray(node)[keep], np.asarray(traffic)[keep])
    demand = node_demand(data, np.asarray(job)[keep], 40, 10.0)
    quiet = unsaturable_jobs(tiny(), demand)
    assert 0 < quiet.sum() < 40
    np.testing.assert_array_equal(alone_time(tiny(), demand).busy, plain_alone(tiny(), demand))


def test_alone_time_without_jobs() -> None:
    # traffic of nodes in no job: nothing to replay alone, no job time
    demand = node_demand(rows([0, 1], [0, 1], [500, 500]), [-1, -1], 0, 10.0)
    assert len(unsaturable_jobs(tiny(), demand)) == 0
    assert len(alone_time(tiny(), demand).busy) == 0
