"""I/O-aware node reallocation (paper 004 §6.4) on small hand-built queues, one test per
diversity rule (§6.4.3), and the benchmark shapes of §7.2 (Fig. 13b, 13c)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import SimpleNamespace

import numpy as np
import pytest

from burstlake.allocation import JobRequest
from burstlake.replay.demands import History
from burstlake.replay.policies import policy
from burstlake.replay.policies.reallocation import Diversity, spread, traffic_groups
from burstlake.replay.topologies import build, forwarding
from burstlake.replay.workloads import Settings, incremental

ANY = {"reserve_small": 1 / 3, "reserve_large": 2 / 3, "reserve_between": 1 / 2}


def machine(ions: int = 4, per_ion: int = 8):
    """``ions`` I/O nodes, each serving ``per_ion`` consecutive compute nodes."""
    nodes = [f"cn{i:03d}" for i in range(ions * per_ion)]
    return forwarding.build(
        "queue", nodes, [f"ion{j}" for j in range(ions)], np.arange(len(nodes)) // per_ion
    )


@dataclass(frozen=True)
class Queue:
    """A hand-built queue: (nodes, start, end, optimizable) per job; ``placed`` keeps the
    nodes each job got (node_index order)."""

    jobs: tuple[tuple[int, float, float, bool], ...]
    shares: tuple[np.ndarray | None, ...] = ()
    got: tuple[np.ndarray, ...] = ()

    def placement_jobs(self, topology):
        return [JobRequest(k, n, s, e) for k, (n, s, e, _) in enumerate(self.jobs)]

    def placed(self, topology, placements):
        return replace(self, got=tuple(np.asarray(n) for n in placements.nodes))

    def io_history(self, topology, requests):
        shares = list(self.shares) or [None] * len(self.jobs)
        return History(np.array([j[3] for j in self.jobs]), shares)


def place(label: str, queue: Queue, topology=None, **settings) -> list[list[int]]:
    topology = topology or machine()
    _, out = policy({"name": label, **settings}).apply(topology, queue)
    return [n.tolist() for n in out.got]


def test_rule1_more_ions_than_slurm_or_slurms_choice() -> None:
    # 8 nodes with at least 8 per ION (rule 3) can use 1 ION: no more than Slurm's, so
    # Slurm's choice (best fit: the first ION's 8 nodes) stands.
    assert Diversity().ions(8, slurm_ions=1, diversity=4, next_nodes=None) == 0
    assert place("even-node", Queue(((8, 0, 10, True),))) == [list(range(8))]
    # with 2 per ION: 4 idle IONs, half reserved (no optimizable job queued) leaves 2 > 1
    settings = {"min_nodes_per_ion": 2, **ANY}
    assert place("even-node", Queue(((8, 0, 10, True),)), **settings) == [
        [0, 1, 2, 3, 8, 9, 10, 11]
    ]
    # a job that is not optimizable always gets Slurm's choice
    assert place("even-node", Queue(((8, 0, 10, False),)), **settings) == [list(range(8))]


def test_rule2_reserve_diversity_by_the_next_optimizable_job() -> None:
    d = Diversity(min_nodes_per_ion=2)  # a 16-node job may span 8 IONs
    # 12 idle IONs: the next optimizable job larger than 2 × 16 keeps 2/3 (8): 4 left
    assert d.ions(16, slurm_ions=2, diversity=12, next_nodes=40) == 4
    # smaller than 16 / 2 keeps 1/3 (4): 8 left; in between keeps 1/2 (6): 6 left
    assert d.ions(16, slurm_ions=2, diversity=12, next_nodes=4) == 8
    assert d.ions(16, slurm_ions=2, diversity=12, next_nodes=16) == 6
    # not enough diversity to reserve (3 IONs, 2/3 kept leaves 1 ≤ Slurm's 2): the current
    # job comes first and gets all 3
    assert d.ions(16, slurm_ions=2, diversity=3, next_nodes=40) == 3
    # in a queue (4 IONs × 8 nodes): A (8, optimizable) sees C (8, optimizable) queued and
    # keeps half the 4 IONs: 2 IONs, 4 nodes each. B (4, not optimizable) gets Slurm's best
    # fit: the rest of ION 0. C finds IONs 1-3 idle (3); keeping half leaves 1, no more than
    # Slurm's 1, so C takes all 3: sizes 3, 3, 2, best fit puts the 3 on ION 1 (4 free).
    queue = Queue(((8, 0, 10, True), (4, 1, 10, False), (8, 2, 10, True)))
    assert place("even-node", queue, min_nodes_per_ion=2, **ANY) == [
        [0, 1, 2, 3, 8, 9, 10, 11],
        [4, 5, 6, 7],
        [12, 13, 14, 16, 17, 18, 24, 25],
    ]
    # a large job queued next (20 > 2 × 8) makes A keep 2/3 of the 4 IONs: 1 left, not
    # more than Slurm's, so A takes all 4 (the current job first), 2 nodes each
    big = Queue(((8, 0, 1, True), (20, 2, 3, True)))
    first = place("even-node", big, min_nodes_per_ion=2, **ANY)[0]
    assert first == [0, 1, 8, 9, 16, 17, 24, 25]


def test_rule3_shrink_below_min_nodes_per_ion() -> None:
    # 16 nodes, 10 idle IONs, nothing reserved: 8 per ION caps it at 2, 4 per ION at 4
    none = {"reserve_small": 0, "reserve_large": 0, "reserve_between": 0}
    assert Diversity(**none).ions(16, slurm_ions=1, diversity=10, next_nodes=None) == 2
    assert Diversity(min_nodes_per_ion=4, **none).ions(16, 1, 10, None) == 4
    t = machine(ions=8, per_ion=16)
    assert place("even-node", Queue(((16, 0, 1, True),)), t, **none) == [
        [*range(8), *range(16, 24)]
    ]


def test_even_traffic_groups_by_predicted_shares() -> None:
    # shares 1..8 into 4 groups of 2: 8+1, 7+2, 6+3, 5+4 (largest first, to the lightest)
    shares = np.arange(1, 9) / 36
    assert traffic_groups(shares, np.full(4, 2)).tolist() == [0, 1, 2, 3, 3, 2, 1, 0]
    free = np.ones(16, dtype=bool)
    ion_of = np.arange(16) // 4
    # even-node: node_index 0,1 on ION 0 ...; even-traffic: 0 and 7 share ION 0
    assert spread(free, ion_of, 8, 4, None).tolist() == [0, 1, 4, 5, 8, 9, 12, 13]
    assert spread(free, ion_of, 8, 4, shares).tolist() == [0, 4, 8, 12, 13, 9, 5, 1]
    # a job whose application has no consistent distribution falls back to even-node
    settings = {"min_nodes_per_ion": 2, "reserve_small": 0, "reserve_large": 0}
    settings["reserve_between"] = 0
    queue = Queue(((8, 0, 1, True),), shares=(None,))
    assert place("even-traffic", queue, **settings) == place("even-node", queue, **settings)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"reserve_small": 1.0}, "policy even-node: reserve_small must be a fraction in"),
        ({"reserve_large": -0.1}, "reserve_large must be a fraction"),
        ({"reserve_between": "half"}, "reserve_between must be a fraction"),
        ({"large": 0}, "large must be a positive number"),
        ({"small": None}, "small must be a positive number"),
        ({"min_nodes_per_ion": 0}, "min_nodes_per_ion must be an integer ≥ 1"),
        ({"min_nodes_per_ion": 2.5}, "min_nodes_per_ion must be an integer"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"reserve": 0.5}, "policy even-node: unknown settings"),
    ],
)
def test_reallocation_settings_are_checked(settings, message) -> None:
    with pytest.raises(ValueError, match=message):
        policy({"name": "even-node", **settings})


def test_reallocation_needs_a_workload_with_jobs() -> None:
    with pytest.raises(ValueError, match="reallocation policies need a workload"):
        policy("even-traffic").apply(machine(), None)


FIG13 = {"min_nodes_per_ion": 2, "reserve_small": 0, "reserve_large": 0, "reserve_between": 0}


def test_even_traffic_beats_even_node_on_the_incremental_benchmark() -> None:
    """004 Fig. 13c on ``tiny`` (16 nodes per ION, 1.5 GB/s IONs): m processes, process i
    writes i/m of 8 GB, m/2 IONs available. For m = 8: Slurm's adjacent nodes share one ION,
    36 GB / 1.5 GB/s = 24 s; even-node pairs (1,2)...(7,8): the busiest ION carries 15 GB,
    10 s; even-traffic pairs 8+1, 7+2, ...: 9 GB on every ION, 6 s."""
    t = build({"name": "tiny"})
    spec = {"nodes": [4, 8, 16], "bytes_max": 8e9, "request_bytes": 8e9}
    demand = incremental.demand(spec, t, None)
    out = {}
    for label in ("given", "even-node", "even-traffic"):
        machine_, work = policy({"name": label, **FIG13} if label != "given" else label).apply(
            t, demand
        )
        run = incremental.scores(SimpleNamespace(workload=spec), machine_, work, None)
        out[label] = {s.metric: s.value for s in run}
    assert out["given"]["io_time_m8"] == pytest.approx(24.0)
    assert out["even-node"]["io_time_m8"] == pytest.approx(10.0)
    assert out["even-traffic"]["io_time_m8"] == pytest.approx(6.0)
    for m in (4, 8, 16):
        assert out["even-traffic"][f"io_time_m{m}"] < out["even-node"][f"io_time_m{m}"]
        assert out["even-node"][f"io_time_m{m}"] < out["given"][f"io_time_m{m}"]
        assert out["even-traffic"][f"ions_used_m{m}"] == m // 2
        assert out["even-traffic"][f"ion_load_max_over_mean_used_m{m}"] == pytest.approx(1.0)


STEP = 60  # seconds per node_io interval


def app_lake(lake, metrics: bool = True) -> None:
    """A hand-built lake on ``tiny`` (16 nodes per ION): three runs of one 16-node
    application, each for 10 intervals on nodes 0-15 (one ION, as Slurm packed them), node of
    node_index k writing (k + 1) MB per interval (a consistent distribution, divergence 0);
    job_io_metrics calls every run optimizable."""
    import datetime as dt

    import pyarrow as pa

    from burstlake.lake import write_table
    from burstlake.presets import machine
    from burstlake.schemas import spec

    t0 = dt.datetime(2018, 1, 1, tzinfo=dt.UTC)
    write_table(lake, "topology", machine("tiny").topology(), "topo")
    runs = [("x1", 0), ("x2", 10), ("x3", 20)]
    at = [t0 + dt.timedelta(seconds=s * STEP) for s in (0, 10, 20, 30)]
    write_table(
        lake,
        "jobs",
        pa.Table.from_pylist(
            [
                {"job_id": j, "cluster": "th", "start": at[k], "end": at[k + 1], "nnodes": 16}
                for k, (j, _) in enumerate(runs)
            ]
        ),
        "jobs",
    )
    nodes = [f"cn{i:05d}" for i in range(16)]
    write_table(
        lake,
        "job_nodes",
        pa.Table.from_pylist(
            [
                {"job_id": j, "cluster": "th", "node": n, "node_index": k}
                for j, _ in runs
                for k, n in enumerate(nodes)
            ]
        ),
        "jobs",
    )
    io = [
        (n, first + t, (k + 1) << 20)
        for _, first in runs
        for t in range(10)
        for k, n in enumerate(nodes)
    ]
    write_table(
        lake,
        "node_io",
        pa.table(
            {
                "node": [n for n, _, _ in io],
                "ts": [t0 + dt.timedelta(seconds=t * STEP) for _, t, _ in io],
                "interval_s": [STEP] * len(io),
                "write_bytes": [b for _, _, b in io],
            }
        ),
        "io",
    )
    if not metrics:
        return
    total = 10 * (136 << 20)
    rows = [
        {
            "job_id": j,
            "cluster": "th",
            "app_id": "u|x|16",
            "start": at[k],
            "end": at[k + 1],
            "run_s": 600.0,
            "nodes": 16,
            "active_nodes": 16,
            "read_bytes": 0,
            "write_bytes": total,
            "io_bytes": total,
            "all_rank": True,
            "cabinets": 1,
            "data_intensive": True,
            "optimizable": True,
            "io_phase_s": 600.0,
        }
        for k, (j, _) in enumerate(runs)
    ]
    schema = spec("job_io_metrics").schema
    write_table(lake, "job_io_metrics", pa.Table.from_pylist(rows, schema=schema), "m")


def test_lake_jobs_reallocated_from_their_history(lake) -> None:
    """x1 has no ended run before it: Slurm's choice. x2 follows x1 (ended): optimizable,
    one share vector (no divergence yet): even-node over 8 IONs (2 nodes each; the next
    optimizable job is as large: half the 16 IONs kept). x3 has x1 and x2 (divergence 0):
    even-traffic pairs node_index 15+0, 14+1, ... on 8 IONs, 17 MB per ION per interval."""
    from burstlake.replay.workloads import lake_jobs
    from burstlake.replay.workloads.lake import interval_scores, lake_demand

    app_lake(lake)
    t = build({"name": "tiny"})
    demand = lake_demand(lake, t)
    requests = demand.placement_jobs(t)
    assert [(r.nodes, r.start, r.end) for r in requests] == [
        (16, 0.0, 600.0),
        (16, 600.0, 1200.0),
        (16, 1200.0, 1800.0),
    ]
    history = lake_jobs.history(demand, requests)
    assert history.optimizable.tolist() == [False, True, True]
    assert history.shares[0] is None and history.shares[1] is None
    assert np.allclose(history.shares[2], np.arange(1, 17) / 136)
    _, moved = policy({"name": "even-traffic", "min_nodes_per_ion": 2}).apply(t, demand)
    x2 = [16 * (k // 2) + k % 2 for k in range(16)]  # node_index k on ION k // 2
    held = {j: sorted(set(moved.rows.node[moved.job == j].tolist())) for j in range(3)}
    assert held[0] == list(range(16)) and held[1] == sorted(x2)
    # x2: node_index 9 (10 MB per interval) now on node 16·4 + 1 = 65
    assert set(moved.rows.bytes[(moved.job == 1) & (moved.rows.node == 65)]) == {10 << 20}
    # x3: each of its 8 IONs carries 17 MB per interval
    x3 = (moved.job == 2) & (moved.rows.t == 20)
    per_ion = np.bincount(t.ion_of[moved.rows.node[x3]], weights=moved.rows.bytes[x3])
    assert sorted(per_ion[per_ion > 0].tolist()) == [17 << 20] * 8
    scenario = Settings({}, job_scores=False)
    given = {s.metric: s.value for s in interval_scores(scenario, t, demand, None)}
    after = {s.metric: s.value for s in interval_scores(scenario, t, moved, None)}
    assert given["bytes_served"] == after["bytes_served"] == 3 * 10 * (136 << 20)
    # top 2 of 16 IONs: all the traffic before. After: x1 all; x2's busiest IONs hold
    # node_index 14+15 and 12+13, (31 + 27) of 136 MB; x3 2 of 8 equal IONs
    assert given["top10_ion_share"] == pytest.approx(1.0)
    assert after["top10_ion_share"] == pytest.approx((1 + 58 / 136 + 2 / 8) / 3)
    # communication cost: a job on one ION group: 2 hops between nodes; over 8 groups of 2
    # nodes: 2·(1/15) + 4·(14/15)
    assert given["job_pair_hops_mean"] == pytest.approx(2.0)
    assert after["job_pair_hops_mean"] == pytest.approx((2 + 2 * (2 / 15 + 4 * 14 / 15)) / 3)


def test_a_lake_job_that_waits_for_nodes_moves_later_in_time(lake) -> None:
    """x2 placed 3 intervals after it asked (its nodes were busy): its ten intervals of
    traffic move from 10-19 to 13-22, on its new nodes, and its allocation with them."""
    from burstlake.allocation import Placements
    from burstlake.replay.workloads import lake_jobs
    from burstlake.replay.workloads.lake import lake_demand

    app_lake(lake, metrics=False)
    t = build({"name": "tiny"})
    demand = lake_demand(lake, t)
    late = np.arange(16, 32)
    placements = Placements(
        [np.arange(16), late, np.arange(16)], np.array([0.0, 600.0 + 3 * STEP, 1200.0])
    )
    moved = lake_jobs.placed(demand, t, placements)
    x2 = moved.job == 1
    assert sorted(set(moved.rows.t[x2].tolist())) == list(range(13, 23))
    assert set(moved.rows.node[x2].tolist()) == set(late.tolist())
    assert moved.rows.bytes.sum() == demand.rows.bytes.sum()
    assert np.all(np.diff(moved.rows.t) >= 0)  # still in interval order for the replay
    mine = moved.jobs.job == 1
    assert set(moved.jobs.begin[mine].tolist()) == {13} and set(moved.jobs.end[mine]) == {23}
    assert moved.jobs.lookup(np.array([16]), np.array([14])).tolist() == [1]


def test_lake_reallocation_needs_job_metrics(lake) -> None:
    from burstlake.replay.workloads.lake import lake_demand

    app_lake(lake, metrics=False)
    t = build({"name": "tiny"})
    demand = lake_demand(lake, t)
    with pytest.raises(ValueError, match="run `burstlake metrics` on this lake first"):
        policy("even-node").apply(t, demand)
    # placement without a prediction needs no metrics: best fit packs each run on ION 0
    _, placed = policy("best-fit").apply(t, demand)
    assert sorted(set(placed.rows.node.tolist())) == list(range(16))


def test_reallocation_pays_communication_that_remapping_does_not() -> None:
    """004 Fig. 13b on ``cab1296`` (12.5 GB/s links and servers, 90 ns per link): 8 processes
    write, then exchange 4 KB per node pair and round, 400 rounds. Slurm's 8 adjacent nodes
    sit under one leaf and one server. Remapping (cyclic) gives them 8 servers and keeps the
    exchange inside the leaf; reallocation (even-node) gets 8 servers by spreading the nodes
    over leaves: the same I/O time, a longer exchange. Exchange inside a leaf, by hand: each
    node's 7 streams share its 12.5 GB/s link, each message pays 2 links of latency:
    400 × (2 × 90 ns + 7 × 4096 B / 12.5 GB/s) = 0.990 ms. I/O: 8 × 100 MB through one server
    = 64 ms, 100 MB each through 8 = 8 ms."""
    from burstlake.replay.workloads import io_alltoall

    t = build({"name": "cab1296"})
    spread = {"name": "even-node", **FIG13, "min_nodes_per_ion": 1}

    def run(spec: dict) -> dict[str, dict[str, float]]:
        demand = io_alltoall.demand(spec, t, None)
        out = {}
        for entry in ("given", "cyclic", spread):
            p = policy(entry)
            machine_, work = p.apply(t, demand)
            scored = io_alltoall.scores(SimpleNamespace(workload=spec), machine_, work, None)
            out[p.label] = {s.metric: s.value for s in scored}
        return out

    io_heavy = run({"nodes": 8, "io_bytes": 1e8, "request_bytes": 1e8, "message_bytes": 4096,
                    "rounds": 400})  # fmt: skip
    given, remap, realloc = io_heavy["given"], io_heavy["cyclic"], io_heavy["even-node"]
    assert given["comm_time_m8"] == pytest.approx(400 * (2 * 90e-9 + 7 * 4096 / 12.5e9))
    assert remap["comm_time_m8"] == pytest.approx(given["comm_time_m8"])
    assert given["io_time_m8"] == pytest.approx(0.064)
    assert remap["io_time_m8"] == pytest.approx(0.008) == realloc["io_time_m8"]
    assert realloc["job_pair_hops_m8"] > remap["job_pair_hops_m8"] == 2.0
    assert realloc["comm_time_m8"] > 1.05 * remap["comm_time_m8"]
    assert remap["total_time_m8"] < realloc["total_time_m8"] < given["total_time_m8"]
    # communication far in excess of I/O: reallocation no longer pays (004 §7.2.2 (4))
    comm_heavy = run({"nodes": 8, "io_bytes": 1e5, "request_bytes": 1e5, "message_bytes": 4096,
                      "rounds": 400})  # fmt: skip
    assert comm_heavy["even-node"]["total_time_m8"] > comm_heavy["given"]["total_time_m8"]
    assert comm_heavy["cyclic"]["total_time_m8"] < comm_heavy["even-node"]["total_time_m8"]
