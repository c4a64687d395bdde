"""The lake_window workload (replay/workloads/lake_window.py): the lake's jobs of a time window
replayed request by request under the flow and the packet model, on hand-built lakes."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from burstlake.lake import write_table
from burstlake.replay import scenario as sn
from burstlake.replay.workloads import lake_window as lw
from tests.builders.lake_window import (
    ION,
    STEP,
    T0,
    WINDOW,
    jobs,
    machine,
    node_io,
    scenario,
    scores_of,
)


def bottleneck_lake(lake: Path) -> None:
    """Four nodes behind one ION, one job writing 15 MB on each at the window's start."""
    nodes = [f"cn{i}" for i in range(4)]
    machine(lake, {"ion0": nodes, "ion1": ["cn4", "cn5"]})
    jobs(lake, {"7": (T0, T0 + dt.timedelta(seconds=STEP), nodes)})
    node_io(lake, [{"node": n, "ts": T0, "write_bytes": 15_000_000} for n in nodes])


@pytest.mark.parametrize("model", ["flow", "packet"])
def test_equal_flows_through_one_bottleneck_take_bytes_over_capacity(lake, tmp_path, model):
    """4 requests of 15 MB released together share the ION max-min: 60 MB / 1.5 GB/s = 40 ms
    of I/O, under either model (within 5 %: the packet model adds delays and headers)."""
    bottleneck_lake(lake)
    work = {"window": WINDOW, "request_bytes": 15_000_000}
    got = scores_of(sn.run(scenario(tmp_path, work, model=model), lake))
    want = 4 * 15e6 / ION
    assert got["w0.7.io_bytes"] == 60e6
    assert got["w0.7.io_time"] >= want * (1 - 1e-9)
    assert got["w0.7.io_time"] == pytest.approx(want, rel=0.05)
    assert got["w0.7.io_slowdown"] == pytest.approx(1.0)  # alone in its window
    assert got["w0.network_counters"] == 0 and got["w0.7.messages"] == 0
    assert got["w0.7.mpi_latency_mean"] is None
    assert got["w0.picked.explicit"] is None and got["w0.jobs"] == 1
    # the estimate before the run: 14,652 packets over 3-hop routes (packet), a start and an
    # end per request (flow); the interference run's own count beside it
    assert got["w0.estimated_events"] == (14652 * 3 if model == "packet" else 8)
    if model == "packet":
        assert got["w0.events"] == pytest.approx(got["w0.estimated_events"], rel=0.5)
    else:  # starts (and ends) at one instant are one event: 2 here
        assert 0 < got["w0.events"] <= got["w0.estimated_events"]


def test_flow_and_packet_windows_agree_where_max_min_is_the_answer(lake, tmp_path):
    """... and the report shows them side by side: "flow says x, packet says y"."""
    from burstlake.lake import read_table
    from burstlake.report_windows import windows_section

    bottleneck_lake(lake)
    work = {"window": WINDOW, "request_bytes": 15_000_000}
    flow = scores_of(sn.run(scenario(tmp_path, work, model="flow"), lake))
    packet = scores_of(sn.run(scenario(tmp_path, work, model="packet"), lake))
    assert packet["w0.7.io_time"] == pytest.approx(flow["w0.7.io_time"], rel=0.05)
    (section,) = windows_section(read_table(lake, "replay_scores").to_pandas())
    said = f"flow says {flow['w0.7.io_time']:.4g}, packet says {packet['w0.7.io_time']:.4g}"
    assert said in section.table_html and "2018-01-01 00:00:00" in section.table_html
    assert windows_section(read_table(lake, "replay_scores").to_pandas().head(0)) == []


def test_node_io_spread_over_the_interval_in_requests(lake, tmp_path):
    """1 MB in an interval of 10 s, request_bytes 300 kB: 4 requests (3 × 300 kB + 100 kB)
    released 2.5 s apart; each alone at the ION's rate, so the I/O time is 1 MB / 1.5 GB/s."""
    machine(lake, {"ion0": ["cn0", "cn1"]})
    jobs(lake, {"1": (T0, T0 + dt.timedelta(seconds=STEP), ["cn0"])})
    node_io(lake, [{"node": "cn0", "ts": T0, "read_bytes": 600_000, "write_bytes": 400_000}])
    work = {"window": WINDOW, "request_bytes": 300_000}
    demand = lw.demand(scenario(tmp_path, work).workload, *_machine_and_lake(tmp_path, work, lake))
    io = demand.windows[0].jobs[0].io
    assert io.traffic.size.tolist() == [300_000, 300_000, 300_000, 100_000]
    assert io.release.tolist() == [0.0, 2.5, 5.0, 7.5]
    got = scores_of(sn.run(scenario(tmp_path, work), lake))
    assert got["w0.1.io_time"] == pytest.approx(1e6 / ION)
    assert got["w0.1.io_from_dxt"] == 0


def _machine_and_lake(tmp_path, work, lake):
    from burstlake.lake import cluster_of
    from burstlake.replay import topologies

    return topologies.build({"name": "lake"}, lake), cluster_of(lake)


def test_communication_is_network_less_storage_bytes_by_pattern(lake, tmp_path):
    """rx + tx 3 MB, write 1 MB: 2 MB of communication, 1 MB sent per node (each message is
    counted at both ends), 4 messages of 262,144 bytes per node to its ring neighbour."""
    nodes = ["cn0", "cn1", "cn2"]
    machine(lake, {"ion0": nodes})
    jobs(lake, {"5": (T0, T0 + dt.timedelta(seconds=STEP), nodes)})
    rows = [
        {
            "node": n,
            "ts": T0,
            "write_bytes": 1 << 20,
            "net_rx_bytes": 1 << 20,
            "net_tx_bytes": 2 << 20,
        }
        for n in nodes
    ]
    node_io(lake, rows)
    work = {"window": WINDOW, "pattern": "ring", "message_bytes": 262144}
    demand = lw.demand(scenario(tmp_path, work).workload, *_machine_and_lake(tmp_path, work, lake))
    mpi = demand.windows[0].jobs[0].mpi.traffic
    assert len(mpi) == 12 and set(mpi.size) == {262144}
    assert dict(zip(mpi.src.tolist(), mpi.dst.tolist(), strict=False)) == {0: 1, 1: 2, 2: 0}
    assert mpi.gap.tolist() == [0.0] * 12 and len(set(demand.windows[0].jobs[0].mpi.release)) == 4
    # message_interval_s: from the interval's start, each one that long after the previous
    paced = {**work, "message_interval_s": 1e-3}
    machine_, lake_ = _machine_and_lake(tmp_path, paced, lake)
    flow = lw.demand(scenario(tmp_path, paced).workload, machine_, lake_).windows[0].jobs[0].mpi
    assert flow.release.tolist() == [0.0] * 12
    assert flow.traffic.gap.tolist() == ([0.0] + [1e-3] * 3) * 3  # a rank's first: at release
    with pytest.raises(ValueError, match=r"message_interval_s must be a number >= 0"):
        scenario(tmp_path, {**work, "message_interval_s": -1})
    got = scores_of(sn.run(scenario(tmp_path, work), lake))
    assert got["w0.network_counters"] == 1 and got["w0.5.messages"] == 12
    # a message alone on its sender's 6 GB/s link (no interference: the I/O goes elsewhere
    # at other times or shares only the ION)
    assert got["w0.5.mpi_latency_max"] >= 262144 / 6e9 * (1 - 1e-9)
    assert got["w0.5.mpi_latency_p99"] <= got["w0.5.mpi_latency_max"]


def test_all_to_all_and_random_pairs_partners():
    rng = np.random.default_rng(0)
    pairs = lw.partners("random-pairs", 6, rng)
    assert sorted(pairs.tolist()) == list(range(6))
    assert all(pairs[pairs[r]] == r for r in range(6))
    assert lw.partners("all-to-all", 4, rng) is None
    assert lw.partners("ring", 4, rng).tolist() == [1, 2, 3, 0]


def test_interference_between_two_jobs_on_one_ion(lake, tmp_path):
    """Two jobs writing 15 MB each at once through one ION: each takes 20 ms alone, 20 ms
    shared (both finish at 20 ms: slowdown 2)."""
    machine(lake, {"ion0": ["cn0", "cn1"]})
    end = T0 + dt.timedelta(seconds=STEP)
    jobs(lake, {"a": (T0, end, ["cn0"]), "b": (T0, end, ["cn1"])})
    node_io(lake, [{"node": n, "ts": T0, "write_bytes": 15_000_000} for n in ("cn0", "cn1")])
    work = {"window": WINDOW, "request_bytes": 15_000_000}
    got = scores_of(sn.run(scenario(tmp_path, work), lake))
    assert got["w0.a.io_time_alone"] == pytest.approx(15e6 / ION)
    assert got["w0.a.io_time"] == pytest.approx(30e6 / ION)
    assert got["w0.a.io_slowdown"] == pytest.approx(2.0)
    assert got["w0.a.interference_factor"] == pytest.approx(2.0)
    assert got["w0.interference_factor_sum"] == pytest.approx(4.0)


def test_policies_apply_unchanged(lake, tmp_path):
    """A placement policy moves the jobs, the cyclic mapping their IONs: every policy scores."""
    nodes = [f"cn{i}" for i in range(8)]
    machine(lake, {"ion0": nodes[:4], "ion1": nodes[4:]})
    end = T0 + dt.timedelta(seconds=STEP)
    jobs(lake, {"a": (T0, end, nodes[:2]), "b": (T0, end, nodes[2:4])})
    node_io(lake, [{"node": n, "ts": T0, "write_bytes": 15_000_000} for n in nodes[:4]])
    work = {"window": WINDOW, "request_bytes": 15_000_000}
    table = sn.run(scenario(tmp_path, work, policies=("given", "cyclic", "random-node")), lake)
    given, cyclic = scores_of(table, "given"), scores_of(table, "cyclic")
    # given: 4 writers on ion0 (60 MB / 1.5 GB/s); cyclic: cn0, cn2 on ion0, cn1, cn3 on ion1
    assert given["w0.a.io_time"] == pytest.approx(60e6 / ION)
    assert cyclic["w0.a.io_time"] == pytest.approx(30e6 / ION)
    assert scores_of(table, "random-node")["w0.a.io_bytes"] == 30e6


def test_striping_sends_extents_to_servers_by_file_and_offset():
    """Stripe 1 MiB over 2 of 4 servers: file 5 starts on server 1; 3 MiB from offset 0.5 MiB
    touch units 0..3 (0.5, 1, 1 and 0.5 MiB): units 0, 2 on server 1, units 1, 3 on server 2."""
    mib = 1 << 20
    at, server, share = lw.stripe_shares(
        np.array([5]), np.array([mib // 2]), np.array([3.0 * mib]), 4, mib, 2
    )
    assert at.tolist() == [0, 0]
    assert server.tolist() == [1, 2]
    assert share.tolist() == [1.5 * mib, 1.5 * mib]
    at, server, share = lw.stripe_shares(np.array([-3, 9]), np.zeros(2), np.ones(2), 4, mib, 1)
    assert server.tolist() == [1, 1] and share.tolist() == [1, 1]


def test_a_fattree_by_name_order_with_striped_servers(lake, tmp_path):
    """On cab1296 the lake's nodes are its compute nodes in name order; the I/O goes to the
    servers by striping (one file per rank, 1 MiB stripes)."""
    nodes = [f"n{i}" for i in range(4)]
    machine(lake, {"ion0": nodes})
    jobs(lake, {"9": (T0, T0 + dt.timedelta(seconds=STEP), nodes)})
    node_io(lake, [{"node": n, "ts": T0, "write_bytes": 4 << 20} for n in nodes])
    work = {"window": WINDOW}
    table = sn.run(scenario(tmp_path, work, topo="cab1296"), lake)
    got = scores_of(table)
    assert got["w0.9.io_bytes"] == 16 << 20
    assert got["w0.9.io_time"] > 0


# --- bad input: one line naming the key or record, before any simulation -------------------


def refused(tmp_path, lake, work, match, **kw):
    with pytest.raises(ValueError, match=match) as err:
        sn.run(scenario(tmp_path, work, **kw), lake)
    assert "\n" not in str(err.value)


def test_a_window_without_jobs_is_refused(lake, tmp_path):
    bottleneck_lake(lake)
    later = {"start": "2019-01-01T00:00:00", "end": "2019-01-01T00:00:10"}
    refused(tmp_path, lake, {"window": later}, r"windows\[0\].*no job runs in this window")


def test_a_job_on_nodes_outside_the_topology_is_refused(lake, tmp_path):
    machine(lake, {"ion0": ["cn0", "cn1"]})
    jobs(lake, {"3": (T0, T0 + dt.timedelta(seconds=STEP), ["cn0", "zz9"])})
    refused(tmp_path, lake, {"window": WINDOW}, r"job 3: node zz9 .* not in topology lake")


def test_a_job_past_the_topology_in_name_order_is_refused(lake, tmp_path):
    nodes = [f"x{i}" for i in range(1300)]
    machine(lake, {"ion0": nodes})
    jobs(lake, {"4": (T0, T0 + dt.timedelta(seconds=STEP), nodes[-2:])})
    refused(
        tmp_path,
        lake,
        {"window": WINDOW},
        r"job 4: node x1298 .* not in topology cab1296",
        topo="cab1296",
    )


@pytest.mark.parametrize(
    ("work", "match"),
    [
        ({"window": WINDOW, "pattern": "butterfly"}, r"pattern must be one of"),
        ({"window": WINDOW, "storage": "nfs"}, r"storage must be one of"),
        ({"window": WINDOW, "stripe": {"size": 0}}, r"stripe size must be"),
        (
            {"window": WINDOW, "stripe": {"width": 2}},
            r"stripe: unknown settings 'width'; allowed: count, size",
        ),
        ({"window": WINDOW, "request_bytes": 0}, r"request_bytes must be a number > 0"),
        ({"window": WINDOW, "busiest": {"k": 1, "length_s": 10}}, r"give one of window"),
        ({}, r"give one of window, windows or busiest, got none"),
        ({"window": {"start": "2018-01-02"}}, r"window: give start and end"),
        ({"window": {"start": "yesterday", "end": "now"}}, r"window: Invalid isoformat"),
        ({"windows": []}, r"windows must be a non-empty list"),
        ({"windows": [WINDOW, dict(WINDOW)]}, r"windows\[1\] overlaps windows\[0\]"),
        ({"windows": [WINDOW, "noon"]}, r"windows\[1\] must be a mapping \{start, end\}"),
        ({"busiest": {"k": 0, "length_s": 10}}, r"busiest: k must be an integer >= 1"),
        ({"busiest": {"length_s": 10, "by": "links"}}, r"by must be one of \['backlog', 'ion'\]"),
        ({"busiest": {"k": 2}}, r"length_s must be a number > 0"),
        ({"window": WINDOW, "colour": 1}, r"workload lake_window: unknown settings 'colour'"),
    ],
)
def test_bad_settings_are_refused_at_load(tmp_path, work, match):
    with pytest.raises(ValueError, match=match) as err:
        scenario(tmp_path, work)
    assert "\n" not in str(err.value)


def test_an_unknown_family_is_refused(tmp_path):
    with pytest.raises(ValueError, match=r"unknown topology 'hypercube'"):
        scenario(tmp_path, {"window": WINDOW}, topo="hypercube")


def test_a_window_over_the_bound_is_refused_with_its_estimate(lake, tmp_path, caplog):
    bottleneck_lake(lake)
    work = {"window": WINDOW, "request_bytes": 4096, "max_memory_bytes": 1e6}
    with caplog.at_level("INFO", logger=lw.__name__):
        refused(
            tmp_path,
            lake,
            work,
            r"windows\[0\] .* needs about .* GB \(14,652 requests, 14,652 packets\); "
            r"max_memory_bytes is 0.001 GB",
            model="packet",
        )
    assert "14652 requests, about 14652 packets" in caplog.text


def test_dxt_segments_become_requests_and_stray_hosts_are_quarantined(lake, tmp_path, dxt_table):
    """Two segments on the job's host, one on a host outside its allocation (quarantined and
    counted); the node_io bytes of a job with DXT are not replayed again."""
    machine(lake, {"ion0": ["cn0", "cn1", "cn2"]})
    jobs(lake, {"42": (T0, T0 + dt.timedelta(seconds=STEP), ["cn0", "cn1"])})
    node_io(lake, [{"node": "cn0", "ts": T0, "write_bytes": 99_000_000}])
    base = round(T0.timestamp() * 1e9)
    segments = [
        ("cn0", 0, 0, 3_000_000, 1_000_000_000),
        ("cn1", 1, 0, 3_000_000, 1_000_000_000),  # together with the first: they share the ION
        ("cn2", 2, 0, 5_000_000, 2_000_000_000),  # not in job 42's allocation
    ]
    rows = [
        {
            "log_id": "log42", "job_id": "42", "module": "DXT_POSIX", "rank": rank,
            "hostname": host, "record_id": 77, "op": "write", "offset": off, "length": size,
            "start": T0 + dt.timedelta(seconds=at / 1e9), "end": T0 + dt.timedelta(seconds=2),
            "start_ns": base + at, "end_ns": base + 2 * 10**9,
        }
        for host, rank, off, size, at in segments
    ]  # fmt: skip
    write_table(lake, dxt_table, pa.Table.from_pylist(rows), "log42")
    got = scores_of(sn.run(scenario(tmp_path, {"window": WINDOW}), lake))
    assert got["w0.dxt_quarantined"] == 1
    assert got["w0.42.io_from_dxt"] == 1 and got["w0.42.io_bytes"] == 6e6
    assert got["w0.42.io_time"] == pytest.approx(6e6 / ION)


def test_busiest_windows_are_picked_by_the_flow_model_and_say_why(lake, tmp_path):
    """Three 10-s windows: the second one's 30 GB exceed what the ION serves in 10 s (15 GB):
    it backlogs; the busiest by backlog is it, and its scores say why it was picked."""
    machine(lake, {"ion0": ["cn0", "cn1"]})
    end = T0 + dt.timedelta(seconds=3 * STEP)
    jobs(lake, {"1": (T0, end, ["cn0", "cn1"])})
    at = [T0 + dt.timedelta(seconds=k * STEP) for k in range(3)]
    node_io(
        lake,
        [
            {"node": "cn0", "ts": at[0], "write_bytes": 1_000_000_000},
            {"node": "cn0", "ts": at[1], "write_bytes": 15_000_000_000},
            {"node": "cn1", "ts": at[1], "write_bytes": 15_000_000_000},
            {"node": "cn1", "ts": at[2], "write_bytes": 2_000_000_000},
        ],
    )
    from burstlake.lake import cluster_of
    from burstlake.replay import topologies
    from burstlake.replay.windows import busiest

    topology = topologies.build({"name": "lake"}, lake)
    picked = busiest(cluster_of(lake), topology, 2, STEP, "backlog")
    assert picked[0].start == at[1] and picked[0].value == pytest.approx(15e9)
    assert picked[0].reason == "busiest_backlog"
    by_ion = busiest(cluster_of(lake), topology, 1, STEP, "ion")
    assert by_ion[0].start == at[1] and by_ion[0].value == pytest.approx(15e9)
    # the third window carries 15 GB in with its own 2 GB: 2 GB left; the first none: left out
    five = busiest(cluster_of(lake), topology, 5, STEP, "backlog")
    assert [w.value for w in five] == pytest.approx([15e9, 2e9])
    roomy = topologies.build({"name": "lake", "capacities": {"ion": 1e10}}, lake)
    with pytest.raises(ValueError, match=r"busiest by backlog: no window of the span has any"):
        busiest(cluster_of(lake), roomy, 1, STEP, "backlog")
    work = {"busiest": {"k": 1, "length_s": STEP, "by": "backlog"}, "request_bytes": 1e9}
    got = scores_of(sn.run(scenario(tmp_path, work), lake))
    assert got["w0.picked.busiest_backlog"] == pytest.approx(15e9)
    assert got["w0.start"] == at[1].timestamp()
    assert got["w0.1.io_time"] == pytest.approx(30e9 / ION)
    # on a family the lake's nodes meet in name order (cab1296: no backlog at 12.5 GB/s a
    # link and server), the busiest by the load of the busiest server: cn0 and cn1 are its
    # compute nodes 0 and 1, both served by server 0 under the block mapping (17 nodes each)
    work["busiest"]["by"] = "ion"
    got = scores_of(sn.run(scenario(tmp_path, work, topo="cab1296"), lake))
    assert got["w0.start"] == at[1].timestamp()
    assert got["w0.picked.busiest_ion"] == pytest.approx(30e9)


def three_windows(lake: Path) -> list[dict]:
    machine(lake, {"ion0": ["cn0", "cn1"]})
    end = T0 + dt.timedelta(seconds=3 * STEP)
    jobs(lake, {"a": (T0, end, ["cn0"]), "b": (T0, end, ["cn1"])})
    node_io(
        lake,
        [{"node": n, "ts": T0 + dt.timedelta(seconds=k * STEP), "write_bytes": 10**7 * (k + 1)}
         for k in range(3) for n in ("cn0", "cn1")],
    )  # fmt: skip
    windows = [
        {"start": (T0 + dt.timedelta(seconds=k * STEP)).isoformat(),
         "end": (T0 + dt.timedelta(seconds=(k + 1) * STEP)).isoformat()}
        for k in range(3)
    ]  # fmt: skip
    return windows


KEEP = ["policy", "metric", "value", "unit"]


def test_workers_write_the_rows_of_a_serial_run(lake, tmp_path):
    windows = three_windows(lake)
    keep = KEEP
    serial = sn.run(scenario(tmp_path, {"windows": windows}), lake).select(keep)
    fanned = sn.run(scenario(tmp_path, {"windows": windows, "workers": 2}), lake).select(keep)
    assert fanned.to_pylist() == serial.to_pylist()
    assert len({m.split(".")[0] for m in serial["metric"].to_pylist()}) == 3


def test_workers_under_the_packet_model_are_its_replays(lake, tmp_path):
    """The runs handed to workers count as the packet model's (issue 41: a model that replayed
    nothing is refused), and give a serial packet run's rows."""
    windows = three_windows(lake)
    serial = sn.run(scenario(tmp_path, {"windows": windows}, model="packet"), lake)
    work = {"windows": windows, "workers": 2}
    fanned = sn.run(scenario(tmp_path, work, model="packet"), lake)
    assert fanned.select(KEEP).to_pylist() == serial.select(KEEP).to_pylist()
    assert set(fanned["model"].to_pylist()) == {"packet"}


def test_the_command_line_prints_the_estimate_and_fans_out(lake, tmp_path, capsys):
    from burstlake.cli import main

    bottleneck_lake(lake)
    path = scenario(tmp_path, {"window": WINDOW, "request_bytes": 15_000_000}).name
    args = ["replay", "--lake", str(lake), "--scenario", str(tmp_path / f"{path}.yaml")]
    assert main([*args, "--workers", "2"]) == 0
    out = capsys.readouterr()
    assert "window 0 (2018-01-01T00:00:00+00:00 to 2018-01-01T00:00:10+00:00, explicit): " in (
        out.err
    )
    assert "1 jobs, 4 requests, about 14652 packets" in out.err
    assert "w0.7.io_time" in out.out
    assert main([*args, "--workers", "0"]) != 0
    assert "--workers must be at least 1, got 0" in capsys.readouterr().err


def test_workers_on_a_workload_that_does_not_fan_out_is_refused(tmp_path, capsys):
    from burstlake.cli import main
    from burstlake.replay.scenario import SCENARIOS

    args = ["replay", "--lake", str(tmp_path), "--scenario", str(SCENARIOS / "ior_cs19.yaml")]
    assert main([*args, "--workers", "2"]) != 0
    assert "--workers: workload ior runs in one process" in capsys.readouterr().err
    assert main([*args, "--spark-master", "local[2]"]) != 0
    assert "--spark-master: workload ior runs in one process" in capsys.readouterr().err


def switched_lake(lake: Path) -> list[str]:
    """Two leaf switches of three nodes (s1: cn0-cn2, s2: cn3-cn5, listed out of order)."""
    rows = [
        {"node": f"cn{i}", "cabinet": "c0", "switch": "s2" if i >= 3 else "s1"}
        for i in (5, 0, 3, 1, 4, 2)
    ]
    write_table(lake, "topology", pa.Table.from_pylist(rows), "topo")
    return [f"cn{i}" for i in range(6)]


def test_the_lake_switches_as_fattree_leaves(lake):
    from burstlake.lake import cluster_of
    from burstlake.replay import topologies

    switched_lake(lake)
    isolated = topologies.build({"name": "lake_fattree", "servers": 2}, cluster_of(lake))
    # leaves 0, 1: the lake's switches; leaf 2: the two servers and a free port
    assert isolated.nodes == ("cn0", "cn1", "cn2", "cn3", "cn4", "cn5", "free-h8")
    assert isolated.groups().tolist() == [0, 0, 0, 1, 1, 1, 2]
    assert len(isolated.ions) == 2
    spread = topologies.build(
        {"name": "lake_fattree", "servers": 2, "server_placement": "spread"}, cluster_of(lake)
    )
    assert spread.nodes == ("cn0", "cn1", "cn2", "cn3", "cn4", "cn5")
    assert spread.router.server_host.tolist() == [3, 7]  # each leaf's last port
    with pytest.raises(ValueError, match=r"3 spread servers need as many leaves; .* 2 switches"):
        topologies.build(
            {"name": "lake_fattree", "servers": 3, "server_placement": "spread"}, cluster_of(lake)
        )
    with pytest.raises(ValueError, match=r"server_placement must be one of"):
        topologies.check({"name": "lake_fattree", "server_placement": "rack"})


def test_a_node_without_a_switch_is_refused(lake):
    from burstlake.lake import cluster_of
    from burstlake.replay import topologies

    rows = [{"node": "cn0", "cabinet": "c0", "switch": "s1"}, {"node": "cn1", "cabinet": "c0"}]
    write_table(lake, "topology", pa.Table.from_pylist(rows), "topo")
    with pytest.raises(ValueError, match=r"1 nodes have no switch \(e.g. cn1\)"):
        topologies.build({"name": "lake_fattree"}, cluster_of(lake))


def test_messages_and_io_on_the_lake_fattree(lake, tmp_path):
    """A job on cn0, cn1 (one leaf) writing 125 MB from cn0 to a server (12.5 GB/s links and
    server, no latency: 10 ms) and sending ring messages within the leaf."""
    nodes = switched_lake(lake)
    jobs(lake, {"2": (T0, T0 + dt.timedelta(seconds=STEP), nodes[:2])})
    node_io(
        lake,
        [
            {"node": "cn0", "ts": T0, "write_bytes": 125_000_000},
            {"node": "cn1", "ts": T0, "net_rx_bytes": 1 << 20, "net_tx_bytes": 1 << 20},
        ],
    )
    topo = {"name": "lake_fattree", "servers": 2, "link_latency": 0}
    work = {"window": WINDOW, "request_bytes": 125_000_000, "pattern": "ring"}
    for model in ("flow", "packet"):
        got = scores_of(sn.run(scenario(tmp_path, work, topo=topo, model=model), lake))
        assert got["w0.2.io_time"] == pytest.approx(125e6 / 12.5e9, rel=0.05), model
        assert got["w0.2.messages"] == 16  # 1 MiB sent by cn1 in 65,536-byte messages
        assert got["w0.2.mpi_latency_max"] >= 65536 / 12.5e9 * (1 - 1e-9)


@pytest.mark.slow
def test_spark_tasks_write_the_rows_of_a_local_run(lake, tmp_path, spark):
    """The 9 runs (3 windows × together and each of 2 jobs alone) as Spark tasks on the test
    run's session (local[2]: the session builder returns it)."""
    windows = three_windows(lake)
    local = sn.run(scenario(tmp_path, {"windows": windows}), lake).select(KEEP)
    work = {"windows": windows, "spark_master": "local[2]"}
    on_spark = sn.run(scenario(tmp_path, work), lake).select(KEEP)
    assert on_spark.to_pylist() == local.to_pylist()
    with pytest.raises(ValueError, match=r"spark_master must be a Spark master URL, got ''"):
        scenario(tmp_path, {"windows": windows, "spark_master": ""})


def test_auto_storage_stripes_where_the_router_says_its_targets_are_striped(lake, tmp_path):
    """``storage: auto`` asks the router (``Router.striped``): the fat-tree's I/O servers are
    striped over, a forwarding machine's IONs serve their own nodes."""
    from burstlake.replay.graph import Router
    from burstlake.replay.topologies import build

    assert Router.striped is False
    assert build({"name": "cab1296"}).router.striped
    assert not build({"name": "tiny"}).router.striped
    nodes = [f"n{i}" for i in range(4)]
    machine(lake, {"ion0": nodes[:2], "ion1": nodes[2:]})
    jobs(lake, {"9": (T0, T0 + dt.timedelta(seconds=STEP), nodes)})
    node_io(lake, [{"node": n, "ts": T0, "write_bytes": 4 << 20} for n in nodes])

    def io_scores(storage: str, topo: str) -> dict[str, float | None]:
        work = {"window": WINDOW, "storage": storage, "stripe": {"size": 1 << 20, "count": 4}}
        got = scores_of(sn.run(scenario(tmp_path, work, topo=topo), lake))
        return {k: v for k, v in got.items() if ".io_" in k}

    striped = io_scores("striping", "cab1296")
    assert io_scores("auto", "cab1296") == striped
    assert io_scores("ion", "cab1296") != striped
    assert io_scores("auto", "lake") == io_scores("ion", "lake")
