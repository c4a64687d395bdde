"""The interval replay streamed by day (issue 37, "a year on one machine"): the lake workload
reads ``node_io`` one day partition at a time and carries only the backlog and the jobs in
flight; its scores equal the whole span's read at once (an independent path, the one the
placement policies still take), backlog crossing midnight included."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from burstlake.replay.intervals import IntervalReplay, Rows
from burstlake.replay.policies import policy
from burstlake.replay.topologies import build
from burstlake.replay.workloads import Settings
from burstlake.replay.workloads.lake import LakeDays, interval_scores, lake_days, lake_demand

DAYS = 3


@pytest.fixture(scope="module")
def lake(tmp_path_factory):
    from burstlake.jobs.synth.run import synthesize

    root = tmp_path_factory.mktemp("days") / "lake"
    synthesize("tiny", lake=root, days=DAYS, seed=2)
    return root


def machine(ion: float):
    return build({"name": "tiny", "capacities": {"ion": ion}})


def scored(topology, demand, entry: str) -> dict[str, float | None]:
    ran, work = policy(entry).apply(topology, demand)
    return {s.metric: s.value for s in interval_scores(Settings({}), ran, work, None)}


@pytest.mark.parametrize("ion", [2e8, pytest.param(1e8, marks=pytest.mark.slow)])  # 1e8: hours late
def test_days_score_as_the_whole_span(lake, ion) -> None:
    topology = machine(ion)
    days = lake_days(lake, topology)
    assert isinstance(days, LakeDays) and len(days.days) == DAYS
    whole = lake_demand(lake, topology)
    parts = list(days.parts())
    assert sum(len(p.rows) for p in parts) == len(whole.rows)
    assert parts[0].rows.t[0] == whole.rows.t[0] and parts[-1].rows.t[-1] == whole.rows.t[-1]
    for entry in ("block", "cyclic"):
        streamed, read_whole = scored(topology, days, entry), scored(topology, whole, entry)
        assert streamed.keys() == read_whole.keys()
        for metric, value in read_whole.items():
            if value is None:
                assert streamed[metric] is None, metric
            else:
                assert streamed[metric] == pytest.approx(value, rel=1e-12, abs=1e-9), metric
    assert read_whole["backlog_seconds"] > 0


def test_a_window_reads_only_its_days(lake) -> None:
    from datetime import UTC, datetime, timedelta

    topology = machine(2e8)
    first = lake_demand(lake, topology).start
    start = datetime(first.year, first.month, first.day, tzinfo=UTC) + timedelta(days=1, hours=6)
    end = start + timedelta(hours=12)
    days = lake_days(lake, topology, start, end)
    assert len(days.days) == 1
    whole = lake_demand(lake, topology, start, end)
    (part,) = days.parts()
    np.testing.assert_array_equal(part.rows.t, whole.rows.t)
    np.testing.assert_array_equal(part.job, whole.job)
    assert scored(topology, days, "block") == scored(topology, whole, "block")


def test_an_empty_window_is_refused(lake) -> None:
    from datetime import UTC, datetime

    far = datetime(2100, 1, 1, tzinfo=UTC)
    with pytest.raises(ValueError, match="no node_io rows in the replay window"):
        lake_days(lake, machine(2e8), far, None)


def test_placement_policies_read_the_whole_span(lake) -> None:
    """A policy that moves jobs gets the whole span (the same demand lake_demand gives)."""
    topology = machine(2e8)
    days = lake_days(lake, topology)
    assert scored(topology, days, "best-fit") == scored(
        topology, lake_demand(lake, topology), "best-fit"
    )
    np.testing.assert_allclose(
        days.node_bytes(topology), lake_demand(lake, topology).node_bytes(topology), rtol=1e-12
    )


def rows(t, node, traffic, lane=None) -> Rows:
    t = np.asarray(t, dtype=np.int64)
    lane = np.zeros(len(t), dtype=np.int64) if lane is None else np.asarray(lane)
    return Rows(lane, t, np.asarray(node, dtype=np.int64), np.asarray(traffic, dtype=float))


def flat(chunks) -> dict[str, np.ndarray]:
    out = {k: np.concatenate([getattr(s, k) for s in chunks]) for k in ("lane", "t", "node")}
    out |= {k: np.concatenate([getattr(s, k) for s in chunks]) for k in ("demand", "served")}
    order = np.lexsort((out["node"], out["t"], out["lane"]))
    return {k: v[order] for k, v in out.items()}


@pytest.mark.parametrize("chunk_rows", [1, 3, 1000])
def test_stream_in_parts_equals_one_run(chunk_rows) -> None:
    """Random rows with gaps fed in parts cut between intervals, backlog crossing the cuts:
    the same outcome as one run, whatever the chunk size (hand-checked pieces are in
    test_intervals.py)."""
    rng = np.random.default_rng(7)
    t = np.sort(rng.choice(60, 40))
    data = rows(t, rng.integers(0, 40, len(t)), rng.uniform(10, 400, len(t)))
    topology = machine(100.0)
    whole = flat(list(IntervalReplay(topology, 1.0, chunk_rows).run(data)))
    stream = IntervalReplay(topology, 1.0, chunk_rows).stream()
    chunks, carried = [], 0
    cuts = [0, *np.flatnonzero(np.diff(t))[::3] + 1, len(t)]
    for a, b in pairwise(cuts):
        chunks += stream.feed(data.take(slice(a, b)))
        carried += len(stream.carry)  # backlog waiting for the next part's intervals
    chunks += stream.finish()
    got = flat(chunks)
    for key in ("lane", "t", "node", "demand"):
        np.testing.assert_array_equal(got[key], whole[key])
    np.testing.assert_allclose(got["served"], whole["served"], rtol=1e-12)
    assert got["served"].sum() == pytest.approx(data.bytes.sum(), rel=1e-12)
    assert carried > 0 or chunk_rows > len(data)


def test_stream_refuses_a_part_before_the_last() -> None:
    stream = IntervalReplay(machine(100.0), 1.0).stream()
    list(stream.feed(rows([3, 4], [0, 1], [10, 10])))
    with pytest.raises(ValueError, match="sorted by interval"):
        list(stream.feed(rows([2], [0], [10])))
