"""Interval replay of node_io with backlog (docs/design.md, "Replay"): hand-computed carry-over,
conservation."""

from __future__ import annotations

import numpy as np
import pytest

from burstlake.replay.intervals import IntervalReplay, Rows
from burstlake.replay.topologies import build


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
