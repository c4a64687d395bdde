"""Node selection strategies (burstlake.allocation; papers 000 §5.1, 002 §2.3, 004 §3.3.1) on
small hand-built free masks, and jobs placed in start order."""

from __future__ import annotations

import numpy as np
import pytest

from burstlake.allocation import (
    STRATEGIES,
    JobRequest,
    best_fit,
    control,
    fewest_groups,
    place_in_order,
    random_node,
    random_switch,
    split,
)

GROUP = np.repeat(np.arange(3), 4)  # three groups (leaf switches) of four nodes


def mask(text: str) -> np.ndarray:
    """'.' free, 'x' busy."""
    return np.array([c == "." for c in text])


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def test_control_takes_the_fullest_group_that_holds_the_job() -> None:
    # free per group: g0 3 (nodes 1-3), g1 4, g2 2 (8, 11)
    free = mask("x..." + "...." + ".xx.")
    assert control(free, 2, GROUP, rng()).tolist() == [8, 11]  # g2: fewest free that fit
    assert control(free, 3, GROUP, rng()).tolist() == [1, 2, 3]  # g0, one run
    assert control(free, 4, GROUP, rng()).tolist() == [4, 5, 6, 7]
    assert control(free, 5, GROUP, rng()) is None  # no group holds five


def test_best_fit_prefers_fewest_groups_then_runs_then_lowest() -> None:
    free = mask("x..." + "...." + ".xx.")
    # 5 nodes need two adjacent groups; best fit takes the pair with the fewest free nodes that
    # still holds 5: g1+g2 (4 + 2 = 6) over g0+g1 (3 + 4 = 7), filled in node order.
    assert best_fit(free, 5, GROUP, rng()).tolist() == [4, 5, 6, 7, 8]
    # busy machine: 3 free nodes in three groups, no window of one group holds 3
    assert best_fit(mask("x.xx" + "xx.x" + "xxx."), 3, GROUP, rng()).tolist() == [1, 6, 11]
    assert best_fit(mask("x.xx" + "xxxx" + "xxxx"), 2, GROUP, rng()) is None


def test_fewest_groups_with_unequal_groups() -> None:
    group = np.array([0, 0, 1, 1, 1, 2])  # sizes 2, 3, 1: a job of 3 needs one group (size 3)
    assert fewest_groups(np.ones(6, dtype=bool), 3, group).tolist() == [2, 3, 4]


def test_random_node_draws_distinct_free_nodes() -> None:
    free = mask("x.x." + "...." + "xx..")
    nodes = random_node(free, 6, GROUP, rng())
    assert len(set(nodes.tolist())) == 6 and free[nodes].all() and (np.diff(nodes) > 0).all()
    assert random_node(free, 9, GROUP, rng()) is None  # 8 free


def test_random_switch_takes_whole_free_groups() -> None:
    free = mask("x..." + "...." + "....")  # g1 and g2 wholly free, g0 not
    nodes = random_switch(free, 6, GROUP, rng())
    # two whole groups (g1, g2) are needed; the first drawn is filled, the second holds the rest
    assert set((nodes // 4).tolist()) == {1, 2} and len(nodes) == 6
    assert set(random_switch(free, 4, GROUP, rng()).tolist()) in ({4, 5, 6, 7}, {8, 9, 10, 11})
    assert random_switch(free, 9, GROUP, rng()) is None  # only 8 nodes in whole free groups


def test_split_puts_n_over_s_on_each_of_s_groups() -> None:
    free = np.ones(12, dtype=bool)
    nodes = split(free, 6, GROUP, rng(), s=3)
    assert np.bincount(nodes // 4, minlength=3).tolist() == [2, 2, 2]
    nodes = split(free, 5, GROUP, rng(), s=2)  # 3 + 2
    assert sorted(np.bincount(nodes // 4)[np.bincount(nodes // 4) > 0].tolist()) == [2, 3]
    assert split(mask("xxx." + "xxx." + "...."), 4, GROUP, rng(), s=2) is None  # one group has 2
    with pytest.raises(ValueError, match=r"s must be in 1\.\.4"):
        split(free, 4, GROUP, rng(), s=5)


def test_every_strategy_is_registered() -> None:
    assert set(STRATEGIES) == {"control", "best-fit", "random-node", "random-switch", "split"}


def test_place_in_order_frees_nodes_at_the_end_and_waits() -> None:
    group = np.repeat(np.arange(2), 4)
    jobs = [
        JobRequest(job=10, nodes=4, start=0.0, end=10.0),
        JobRequest(job=11, nodes=4, start=1.0, end=5.0),
        JobRequest(job=12, nodes=4, start=2.0, end=3.0),  # machine full: waits for job 11 (t=5)
        JobRequest(job=13, nodes=8, start=20.0, end=21.0),  # all free again
    ]

    def choose(free: np.ndarray, request: JobRequest) -> np.ndarray | None:
        return (
            control(free, request.nodes, group, rng())
            if request.nodes <= 4
            else (np.flatnonzero(free) if free.all() else None)
        )

    placed = place_in_order(jobs, group, choose, 8)
    assert [p.tolist() for p in placed.nodes[:3]] == [[0, 1, 2, 3], [4, 5, 6, 7], [4, 5, 6, 7]]
    assert placed.nodes[3].tolist() == list(range(8))
    # job 12 waited from 2 to 5 and still runs 1 s; the others started when they asked
    assert placed.start.tolist() == [0.0, 1.0, 5.0, 20.0]
    assert placed.delay(jobs).tolist() == [0.0, 0.0, 3.0, 0.0]


def test_place_in_order_refuses_a_job_that_never_fits() -> None:
    group = np.repeat(np.arange(2), 4)
    with pytest.raises(ValueError, match=r"job 7 \(5 nodes\) cannot be placed"):
        place_in_order(
            [JobRequest(7, 5, 0.0, 1.0)],
            group,
            lambda free, r: control(free, r.nodes, group, rng()),
            8,
        )
    with pytest.raises(ValueError, match="asks for 9 nodes; the machine has 8"):
        place_in_order([JobRequest(8, 9, 0.0, 1.0)], group, lambda f, r: None, 8)
