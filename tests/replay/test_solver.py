"""Max-min fair solver against hand-solved cases (docs/design.md, "Replay"), to 1e-9 relative."""

from __future__ import annotations

import numpy as np
import pytest

from burstlake.replay.solver import SCAN_LIMIT, Paths, max_min_rates

P = Paths.from_lists


def close(actual, expected) -> None:
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=0)


def test_one_bottleneck_shared_by_n_flows() -> None:
    for n in (1, 2, 7):
        close(max_min_rates(P([[0]] * n), [12.5e9]), [12.5e9 / n] * n)


def test_parking_lot_line() -> None:
    # a long flow over links 0..3 and one short flow per link: every flow gets c/2
    routes = [[0, 1, 2, 3], [0], [1], [2], [3]]
    close(max_min_rates(P(routes), [4.0, 4.0, 4.0, 4.0]), [2.0] * 5)


def test_parking_lot_with_a_thin_link() -> None:
    # link 2 is thin (1.0): long flow and flow 3 get 0.5, the other short flows take the rest
    routes = [[0, 1, 2, 3], [0], [1], [2], [3]]
    close(max_min_rates(P(routes), [4.0, 4.0, 1.0, 4.0]), [0.5, 3.5, 3.5, 0.5, 3.5])


def test_flows_limited_at_different_resources() -> None:
    # A (10) carries f0 and f1; B (3) carries f1 and f2: B halves to 1.5, f0 takes 10 - 1.5
    close(max_min_rates(P([[0], [0, 1], [1]]), [10.0, 3.0]), [8.5, 1.5, 1.5])


def test_three_levels() -> None:
    # r0 (1) holds f0,f1 -> 0.5 each; r1 (4) holds f1,f2,f3 -> (4-0.5)/2; r2 (10) holds f3,f4
    rates = max_min_rates(P([[0], [0, 1], [1], [1, 2], [2]]), [1.0, 4.0, 10.0])
    close(rates, [0.5, 0.5, 1.75, 1.75, 8.25])


def test_rate_caps_are_demands() -> None:
    close(max_min_rates(P([[0]] * 3), [9.0], cap=np.array([1.0, 2.0, 100.0])), [1.0, 2.0, 6.0])
    close(max_min_rates(P([[0]] * 2), [9.0], cap=np.array([1.0, 2.0])), [1.0, 2.0])
    close(max_min_rates(P([[0], [0]]), [9.0], cap=np.array([0.0, 5.0])), [0.0, 5.0])


def test_flow_without_resources_runs_at_its_cap() -> None:
    close(max_min_rates(P([[], [0]]), [9.0], cap=np.array([3.0, np.inf])), [3.0, 9.0])


def test_groups_do_not_share_resources() -> None:
    routes = P([[0], [0, 1], [1], [0], [0]])
    group = np.array([1, 1, 1, 0, 0])
    close(max_min_rates(routes, [10.0, 3.0], group=group), [8.5, 1.5, 1.5, 5.0, 5.0])


def test_batched_equals_one_by_one() -> None:
    rng = np.random.default_rng(7)
    capacity = rng.uniform(1, 10, 12)
    problems = []
    for _ in range(20):
        flows = rng.integers(1, 9)
        routes = [list(rng.choice(12, rng.integers(1, 4), replace=False)) for _ in range(flows)]
        problems.append((routes, rng.uniform(0.1, 8, flows)))
    alone = np.concatenate([max_min_rates(P(r), capacity, cap=c) for r, c in problems])
    routes = [route for r, _ in problems for route in r]
    caps = np.concatenate([c for _, c in problems])
    group = np.repeat(np.arange(20)[::-1], [len(r) for r, _ in problems])  # unsorted groups
    close(max_min_rates(P(routes), capacity, cap=caps, group=group), alone)


def test_allocation_is_feasible_and_max_min() -> None:
    rng = np.random.default_rng(3)
    capacity = rng.uniform(1, 5, 30)
    routes = [list(rng.choice(30, rng.integers(1, 6), replace=False)) for _ in range(200)]
    rates = max_min_rates(P(routes), capacity)
    load = np.zeros(30)
    for route, rate in zip(routes, rates, strict=True):
        load[route] += rate
    assert np.all(load <= capacity * (1 + 1e-9))
    # max-min: every flow crosses a saturated resource where no other flow gets more
    for route, rate in zip(routes, rates, strict=True):
        assert any(
            load[r] >= capacity[r] * (1 - 1e-9)
            and all(rates[g] <= rate * (1 + 1e-9) for g, other in enumerate(routes) if r in other)
            for r in route
        )


def test_many_resources_the_heap_path_is_max_min() -> None:
    """Over SCAN_LIMIT resources that may saturate, fill keeps them in a heap: the same rules."""
    rng = np.random.default_rng(5)
    resources = 3 * SCAN_LIMIT
    capacity = rng.uniform(1, 5, resources)
    routes = [list(rng.choice(resources, rng.integers(1, 5), replace=False)) for _ in range(3000)]
    cap = np.where(rng.random(3000) < 0.1, rng.uniform(0.01, 0.1, 3000), np.inf)
    rates = max_min_rates(P(routes), capacity, cap)
    paths = P(routes)
    flow = paths.flow_of_entry()
    load = np.bincount(paths.indices, rates[flow], minlength=resources)
    assert np.all(load <= capacity * (1 + 1e-9))
    fastest = np.zeros(resources)
    np.maximum.at(fastest, paths.indices, rates[flow])
    # max-min: a flow below its cap crosses a saturated resource where no flow gets more
    bottleneck = (load[paths.indices] >= capacity[paths.indices] * (1 - 1e-9)) & (
        fastest[paths.indices] <= rates[flow] * (1 + 1e-9)
    )
    held = np.bincount(flow, bottleneck, minlength=3000) > 0
    assert np.all(held | (rates >= cap * (1 - 1e-9)))
    assert np.all(rates <= cap * (1 + 1e-9))


@pytest.mark.parametrize(
    ("routes", "capacity", "cap", "message"),
    [
        ([[0]], [0.0], None, "positive capacity"),
        ([[3]], [1.0], None, "does not exist"),
        ([[]], [1.0], None, "finite rate cap"),
        ([[0]], [1.0], np.array([1.0, 2.0]), "2 rate caps for 1 flows"),
    ],
)
def test_bad_problems_are_refused(routes, capacity, cap, message) -> None:
    with pytest.raises(ValueError, match=message):
        max_min_rates(P(routes), capacity, cap=cap)


def test_no_flows() -> None:
    assert len(max_min_rates(P([]), [1.0])) == 0


def test_paths_take_repeats_rows() -> None:
    paths = P([[0, 1], [2], [3, 4, 5]])
    taken = paths.take(np.array([2, 0, 2]))
    assert taken.indptr.tolist() == [0, 3, 5, 8]
    assert taken.indices.tolist() == [3, 4, 5, 0, 1, 3, 4, 5]
