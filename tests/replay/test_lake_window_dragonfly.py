"""The lake's jobs on a dragonfly (replay/topologies/lake_dragonfly.py): the topology table's
``switch`` column names each node's router, ``routers`` consecutive routers make a group; a
lake_window replays on it under minimal and ugal routing, and random-router / random-group
place the lake's jobs by whole routers and groups."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest

from burstlake.lake import cluster_of
from burstlake.replay import scenario as sn
from burstlake.replay import topologies
from tests.builders.lake_window import STEP, T0, WINDOW, jobs, node_io, scenario, scores_of
from tests.builders.lake_window import switched as switched_lake

GIB = 2.0**30
# 3 groups of 2 routers, 2 hosts and 1 global link per router (1 link per pair of groups)
TINY = {"name": "lake_dragonfly", "groups": 3, "routers": 2, "hosts": 2, "global_links": 1}
# natural order: sw1, sw2, sw3, sw10 → routers 0, 1 (group 0), 2, 3 (group 1)
SWITCHES = {"sw10": ["n6", "n7"], "sw2": ["n3"], "sw1": ["n2", "n1"], "sw3": ["n4", "n5"]}


def test_nodes_land_on_the_routers_their_switch_names(lake):
    switched_lake(lake, SWITCHES)
    machine = topologies.build({**TINY, "servers": 1}, cluster_of(lake))
    # hosts 0-11; the server on host 11 (the last of the last group); free ports by host
    assert machine.nodes == (
        "n1", "n2", "n3", "free-h3", "n4", "n5", "n6", "n7",
        "free-h8", "free-h9", "free-h10",
    )  # fmt: skip
    at = machine.node_index
    routers, groups = machine.router.routers(), machine.router.groups()
    assert [int(routers[at[n]]) for n in ("n1", "n2", "n3", "n4", "n5", "n6", "n7")] == [
        0, 0, 1, 2, 2, 3, 3,
    ]  # fmt: skip
    assert [int(groups[at[n]]) for n in ("n1", "n3", "n4", "n7")] == [0, 0, 1, 1]
    assert machine.router.server.tolist() == [11] and machine.ions == ("srv00011",)
    assert machine.settings["routing"] == "minimal"


@pytest.mark.parametrize(
    "shape, switches, match",
    [
        (  # 7 switches, 3 × 2 routers
            {},
            {f"s{k}": [f"n{k}"] for k in range(7)},
            r"^topology lake_dragonfly: the lake has 7 switches but groups × routers is "
            r"3 × 2 = 6 routers: raise groups or routers$",
        ),
        (
            {},
            {"s0": ["a", "b", "c"]},
            r"^topology lake_dragonfly: switch s0 has 3 nodes but hosts \(per router\) is 2: "
            r"raise hosts$",
        ),
        (  # the isolated server sits on host 11, the second host of router 5
            {"servers": 1},
            {f"s{k}": [f"n{k}a", f"n{k}b"] for k in range(6)},
            r"^topology lake_dragonfly: server_placement isolated puts an I/O server on host "
            r"11, which lake node n5b holds",
        ),
        ({"groups": 4}, SWITCHES, r"global ports per group cannot wire 4 groups"),
    ],
    ids=["more-switches-than-routers", "switch-over-hosts", "server-on-a-lake-node", "shape"],
)
def test_a_lake_that_does_not_fit_the_dragonfly_is_refused_in_one_line(
    lake, shape, switches, match
):
    switched_lake(lake, switches)
    with pytest.raises(ValueError, match=match) as caught:
        topologies.build({**TINY, **shape}, cluster_of(lake))
    assert "\n" not in str(caught.value)


def test_a_scenario_refuses_the_lake_before_any_replay(lake, tmp_path):
    switched_lake(lake, {f"s{k}": [f"n{k}"] for k in range(7)})
    jobs(lake, {"1": (T0, T0 + dt.timedelta(seconds=STEP), ["n0", "n1"])})
    node_io(lake, [{"node": "n0", "ts": T0, "write_bytes": 1 << 20}])
    chosen = scenario(tmp_path, {"window": WINDOW}, topo=TINY)
    with pytest.raises(ValueError, match=r"the lake has 7 switches .* raise groups or routers"):
        sn.run(chosen, lake)


POLICIES = (
    "given",
    {"name": "routing", "routing": "ugal"},
    {"name": "random-router", "seed": 1},
    {"name": "random-group", "seed": 1},
    "spread-target",  # the server to host 3, group 0's last (free) port: the jobs stay
)


@pytest.mark.parametrize("model", ["flow", "packet"])
def test_a_window_replays_under_minimal_and_ugal(lake, tmp_path, model):
    """Job 1 on n1, n3 (group 0) writes 125 MB from n1 to the server in group 2 and sends n3
    ring messages; job 2 on n4, n6 (group 1) only talks. With no other I/O the write is held
    by the 2 GiB/s links and server alone: 125e6 / 2 GiB/s, whatever the routing or the
    placement or the server's place (each link on any path is 2 GiB/s). Every policy records
    its routing."""
    switched_lake(lake, SWITCHES)
    end = T0 + dt.timedelta(seconds=STEP)
    jobs(lake, {"1": (T0, end, ["n1", "n3"]), "2": (T0, end, ["n4", "n6"])})
    node_io(
        lake,
        [
            {"node": "n1", "ts": T0, "write_bytes": 125_000_000},
            {"node": "n3", "ts": T0, "net_rx_bytes": 1 << 20, "net_tx_bytes": 1 << 20},
            {"node": "n4", "ts": T0, "net_rx_bytes": 1 << 20, "net_tx_bytes": 1 << 20},
        ],
    )
    topo = {**TINY, "servers": 1, "link_latency": 0}
    work = {"window": WINDOW, "request_bytes": 125_000_000, "pattern": "ring"}
    table = sn.run(scenario(tmp_path, work, model=model, policies=POLICIES, topo=topo), lake)
    labels = ("given", "routing", "random-router", "random-group", "spread-target")
    assert sorted(set(table["policy"].to_pylist())) == sorted(labels)
    for label in labels:
        got = scores_of(table, label)
        routing = "ugal" if label == "routing" else "minimal"
        assert got[f"routing_{routing}"] == 1.0 and not [k for k in got if k.endswith(
            "_ugal" if routing == "minimal" else "_minimal")], label  # fmt: skip
        assert got["w0.jobs"] == 2
        assert got["w0.1.io_time"] == pytest.approx(125e6 / (2 * GIB), rel=0.05), label
        assert got["w0.1.messages"] == 16 and got["w0.2.messages"] == 16  # 1 MiB / 64 KiB
        assert got["w0.2.io_bytes"] == 0 and got["w0.1.io_bytes"] == 125e6
        assert got["w0.1.mpi_latency_max"] >= 65536 / (2 * GIB) * (1 - 1e-9)


def test_random_group_places_the_lake_jobs_on_whole_groups(lake):
    """random-group and random-router move the lake's jobs onto whole free groups / routers
    of the dragonfly the lake's switches named."""
    from burstlake.replay import policies
    from burstlake.replay.workloads import lake_window as lw

    switched_lake(lake, SWITCHES)
    end = T0 + dt.timedelta(seconds=STEP)
    jobs(lake, {"1": (T0, end, ["n1", "n3", "n4"]), "2": (T0, end, ["n6", "n7"])})
    node_io(lake, [{"node": "n1", "ts": T0, "write_bytes": 1 << 20}])
    machine = topologies.build({**TINY, "groups": 5, "global_links": 2}, cluster_of(lake))
    work = lw.demand({"window": WINDOW}, machine, cluster_of(lake))
    given = work.windows[0].jobs
    groups, routers = machine.router.groups(), machine.router.routers()
    assert [sorted(groups[j.nodes].tolist()) for j in given] == [[0, 0, 1], [1, 1]]
    for policy, level in (("random-group", groups), ("random-router", routers)):
        apply = policies.policy({"name": policy, "seed": 2}).apply
        _, moved = apply(machine, work)
        held = [np.unique(level[j.nodes]) for j in moved.windows[0].jobs]
        every = np.concatenate([level[j.nodes] for j in moved.windows[0].jobs])
        for units, job in zip(held, moved.windows[0].jobs, strict=True):
            # whole units: no unit holds fewer of the job's nodes than it could spare
            assert len(units) == -(-len(job.nodes) // int(np.bincount(level).max())), policy
        assert len(np.unique(every)) == sum(len(u) for u in held)  # no unit shared by two jobs


def test_a_node_without_a_switch_is_refused_naming_the_family(lake):
    switched_lake(lake, {"": ["n0"], "s1": ["n1"]})
    with pytest.raises(ValueError, match=r"1 nodes have no switch \(e.g. n0\); the lake_dragonfly"):
        topologies.build(TINY, cluster_of(lake))


def test_server_policies_move_the_servers_and_leave_the_lake_nodes_on_their_hosts(lake, tmp_path):
    """spread-target puts the dragonfly's servers on each group's last host (3 and 7 here,
    free ports), isolated-target back on the last group's (10, 11); the lake's nodes keep
    their index and host throughout, the free ports take the hosts the servers left. A
    placement that lands a server on a lake node is refused in one line naming it."""
    from burstlake.replay import policies

    switched_lake(lake, {"sw1": ["n1", "n2"], "sw2": ["n3"], "sw3": ["n4", "n5"], "sw10": ["n6"]})
    machine = topologies.build({**TINY, "servers": 2}, cluster_of(lake))
    assert machine.router.server.tolist() == [10, 11]
    hosts = machine.router.host.tolist()
    assert hosts == list(range(10))
    spread, _ = policies.policy("spread-target").apply(machine, None)
    assert spread.router.server.tolist() == [3, 7]
    assert spread.router.host.tolist() == [0, 1, 2, 10, 4, 5, 6, 11, 8, 9]
    assert spread.nodes[:7] == ("n1", "n2", "n3", "free-h10", "n4", "n5", "n6")
    back, _ = policies.policy("isolated-target").apply(spread, None)
    assert back.router.server.tolist() == [10, 11] and back.router.host.tolist() == hosts
    assert back.nodes == machine.nodes
    other = tmp_path / "other"
    switched_lake(other, SWITCHES)  # n7 on host 7, group 1's last
    with pytest.raises(
        ValueError,
        match=r"^topology lake_dragonfly: server_placement spread "
        r"puts an I/O server on the host of lake node n7: raise groups or routers",
    ):
        policies.policy("spread-target").apply(
            topologies.build({**TINY, "servers": 2}, cluster_of(other)), None
        )  # fmt: skip
    full = {**TINY, "servers": 2, "server_placement": "spread"}
    switched_lake(lake, {"sw1": ["n1"], "sw2": ["n2", "n3"]})  # host 3: router 1's second port
    with pytest.raises(ValueError, match=r"puts an I/O server on host 3, which lake node n3"):
        topologies.build(full, cluster_of(lake))


def test_busiest_picks_the_window_on_the_lake_dragonfly(lake, tmp_path):
    """The flow model's screen runs on the lake's dragonfly too: of two intervals, the one
    where n1 writes 4 MB (over 1 MB in the other) is the busiest by the server's load."""
    switched_lake(lake, SWITCHES)
    late = T0 + dt.timedelta(seconds=STEP)
    jobs(lake, {"1": (T0, late + dt.timedelta(seconds=STEP), ["n1", "n3"])})
    node_io(
        lake,
        [
            {"node": "n1", "ts": T0, "write_bytes": 1 << 20},
            {"node": "n1", "ts": late, "write_bytes": 4 << 20},
        ],
    )
    work = {"busiest": {"k": 1, "length_s": STEP, "by": "ion"}}
    got = scores_of(sn.run(scenario(tmp_path, work, topo={**TINY, "servers": 1}), lake))
    assert got["w0.start"] == late.timestamp()
    assert got["w0.picked.busiest_ion"] == 4 << 20
    assert got["w0.1.io_bytes"] == 4 << 20 and got["routing_minimal"] == 1.0
