"""Paper 000's MPI and I/O jobs through the trace path, at reduced size: the jobs as Slurm jobs
on their random-node placement on cab1296, the I/O job's requests as DXT segments, the MPI
traffic as node_io network bytes; replayed by lake_window under the packet model, random-node
against random-switch (000 §5.1: moving the MPI job off the I/O job's leaves removes most of
its slowdown), beside the synthetic ``jobs`` workload on the same setting."""

from __future__ import annotations

import datetime as dt
from contextlib import nullcontext

import pyarrow as pa
import pytest

from burstlake.lake import write_table
from burstlake.replay import scenario as sn
from burstlake.replay import topologies
from burstlake.replay.workloads import jobs as jw
from tests.builders import lake_window as window

T0 = dt.datetime(2018, 1, 1, tzinfo=dt.UTC)
NODES, MESSAGES, REQUESTS = 144, 100, 20
MESSAGE, REQUEST, THINK = 4096, 4e6, 5e-4  # 000 §5: 4 KB every 500 µs; 4 MB back to back


def paper000_lake(lake, table: str) -> None:
    topology = topologies.build({"name": "cab1296"})
    spec = {
        "seed": 1,
        "jobs": [
            {"name": "mpi", "kind": "mpi", "nodes": NODES, "message_bytes": MESSAGE,
             "messages": MESSAGES, "warmup": 0},
            {"name": "io", "kind": "io", "nodes": NODES, "requests": REQUESTS, "warmup": 0},
        ],
    }  # fmt: skip
    placed = jw.demand(spec, topology)  # random-node, as 000 §3.1
    names = topology.nodes
    leaf = topology.groups()
    rows = [{"node": n, "cabinet": "c0", "switch": f"leaf{leaf[i]}"} for i, n in enumerate(names)]
    write_table(lake, "topology", pa.Table.from_pylist(rows), "topo")
    end = T0 + dt.timedelta(seconds=window.STEP)  # the jobs hold the node_io interval
    window.jobs(
        lake,
        {job.name: (T0, end, [names[i] for i in job.nodes]) for job in placed.jobs},
    )
    mpi = [names[i] for i in placed.jobs[0].nodes]
    sent = MESSAGE * MESSAGES  # random pairs: each node sends and receives as much
    window.node_io(
        lake, [{"node": n, "ts": T0, "net_rx_bytes": sent, "net_tx_bytes": sent} for n in mpi]
    )
    io = [names[i] for i in placed.jobs[1].nodes]
    start_ns = round(T0.timestamp() * 1e9)
    segments = [
        {
            "log_id": "io", "job_id": "io", "module": "DXT_POSIX", "rank": r, "hostname": host,
            "record_id": 7 * r + k, "op": "write", "offset": 0, "length": int(REQUEST),
            "start": T0, "end": T0, "start_ns": start_ns, "end_ns": start_ns,
        }
        for r, host in enumerate(io)
        for k in range(REQUESTS)
    ]  # fmt: skip
    write_table(lake, table, pa.Table.from_pylist(segments), "io")


@pytest.mark.slow  # the packet model on 288 clients, three runs per policy (about a minute)
def test_paper000_through_the_trace_path(lake, tmp_path, dxt_table):
    paper000_lake(lake, dxt_table)
    work = {
        "window": window.WINDOW,
        "pattern": "random-pairs",
        "message_bytes": MESSAGE,
        "message_interval_s": THINK,
    }
    chosen = window.scenario(
        tmp_path, work, model="packet", policies=("given", "random-switch"), topo="cab1296"
    )
    table = sn.run(chosen, lake)
    node, switch = window.scores_of(table, "given"), window.scores_of(table, "random-switch")
    assert node["w0.mpi.messages"] == NODES * MESSAGES
    assert node["w0.io.io_bytes"] == NODES * REQUESTS * REQUEST and node["w0.io.io_from_dxt"]
    # 000 §5.1's shape: random-node slows MPI several times more than random-switch
    # 000 §5.1's shape, as tests/replay/test_placement.py holds the jobs workload to it:
    # under random-node the MPI messages share leaf links with the I/O burst (slower by 20 %
    # here: the burst covers the first 21 ms of the MPI job's 55); random-switch removes
    # nearly all of it
    lost = node["w0.mpi.mpi_slowdown"] - 1
    assert lost > 0.05
    assert switch["w0.mpi.mpi_slowdown"] - 1 < 0.2 * lost
    assert node["w0.mpi.mpi_latency_max"] > 10 * switch["w0.mpi.mpi_latency_max"]


# --- the same jobs written by `burstlake synth --preset paper000` -----------------------------

SMALL = {"clients": 72, "messages": 10, "requests": 4}  # make test's size (full: the benchmark)


def synth_replay(root, placement: str, seed: int, **size) -> dict[str, float | None]:
    """``write_paper000`` into a lake under ``root``, then its window replayed (packet model)."""
    import yaml

    from burstlake.paper000_lake import scenario, write_paper000

    lake = root / placement
    write_paper000(lake, placement, seed, **size)
    path = root / f"{placement}.yaml"
    path.write_text(yaml.safe_dump(scenario(seed)))
    scores = window.scores_of(sn.run(sn.load(path), lake))
    return {k.replace("@cab1296", ""): v for k, v in scores.items()}  # job labels name the machine


def test_synth_paper000_replays_with_its_shape(tmp_path):
    """000 §5.1 through the synthesizer's lake at reduced size: the I/O job's bytes all come
    from its DXT segments, every MPI message of node_io is sent, random-node slows MPI and
    random-switch (another seed) takes most of it away. Full size: bench/lake_window_paper000.py
    (random-node 11.6x against packet_vs_codes's 11.7x)."""
    n, m, r = SMALL["clients"], SMALL["messages"], SMALL["requests"]
    node = synth_replay(tmp_path, "random-node", 12345, **SMALL)
    switch = synth_replay(tmp_path, "random-switch", 1, **SMALL)
    for got in (node, switch):
        assert got["w0.mpi.messages"] == n * m  # node_io's 4096 * m each way, halved, / 4096
        assert got["w0.io.io_bytes"] == n * r * 4 * 2**20 and got["w0.io.io_from_dxt"] == 1
        assert got["w0.network_counters"] == 1 and got["w0.dxt_quarantined"] == 0
    lost = node["w0.mpi.mpi_slowdown"] - 1
    assert lost > 0.05
    assert switch["w0.mpi.mpi_slowdown"] - 1 < 0.5 * lost
    assert node["w0.mpi.mpi_latency_max"] > 10 * switch["w0.mpi.mpi_latency_max"]


def test_synth_preset_paper000_writes_the_two_jobs_as_a_lake(tmp_path, capsys):
    """``burstlake synth --preset paper000``: cab1296's compute nodes with their leaves, two
    Slurm jobs of 612 nodes, the MPI job's network bytes (45 messages of 4 KiB each way), the
    I/O job's 16 requests of 4 MiB per rank as DXT segments round robin over the 72 servers;
    random-switch puts the two jobs on disjoint leaves."""
    from burstlake.cli import main
    from burstlake.lake import read_table

    lake = tmp_path / "lake"
    args = ["synth", "--preset", "paper000", "--placement", "random-switch", "--seed", "3"]
    assert main([*args, "--lake", str(lake)]) == 0
    assert "darshan_dxt: 9792" in capsys.readouterr().out  # 612 ranks x 16 requests
    topo = read_table(lake, "topology").to_pylist()
    leaf = {r["node"]: r["switch"] for r in topo}
    assert len(topo) == 1224 and len(set(leaf.values())) == 68  # 72 leaves, 4 hold servers
    held = read_table(lake, "job_nodes").to_pylist()
    leaves = {j: {leaf[r["node"]] for r in held if r["job_id"] == j} for j in ("mpi", "io")}
    assert sum(r["job_id"] == "mpi" for r in held) == 612 == sum(r["job_id"] == "io" for r in held)
    assert leaves["mpi"].isdisjoint(leaves["io"])
    net = read_table(lake, "node_io").to_pylist()
    assert {r["node"] for r in net} == {r["node"] for r in held if r["job_id"] == "mpi"}
    assert {(r["net_rx_bytes"], r["net_tx_bytes"]) for r in net} == {(45 * 4096, 45 * 4096)}
    dxt = read_table(lake, "darshan_dxt").to_pandas()
    assert set(dxt["length"]) == {4 * 2**20} and set(dxt["hostname"]) <= set(leaf)
    rank0 = dxt[dxt["rank"] == 0].sort_values("start_ns")
    servers = (rank0["record_id"] % 72).to_numpy()
    assert ((servers[1:] - servers[:-1]) % 72 == 1).all()  # round robin over the servers
    assert (rank0["start_ns"].diff().dropna() == 2_700_000).all()  # 000 §3.3: 2.7 ms each


@pytest.mark.parametrize(
    "args, match",
    [
        (
            ["--preset", "tiny", "--placement", "random-node"],
            "--placement is for --preset paper000",
        ),
        (["--preset", "paper000", "--days", "1"], "takes no --days"),
        (["--preset", "paper000", "--seed", "-1"], "--seed must be >= 0"),
        (["--preset", "paper000", "--placement", "contiguous"], None),  # argparse's choices
    ],
)
def test_synth_paper000_refuses_what_it_cannot_write(tmp_path, capsys, args, match):
    from burstlake.cli import main

    with pytest.raises(SystemExit) if match is None else nullcontext():
        code = main(["synth", *args, "--lake", str(tmp_path / "lake")])
        assert code == 2
    if match:
        assert match in capsys.readouterr().err
    assert not (tmp_path / "lake" / "jobs").exists()


@pytest.mark.parametrize(
    "size, match",
    [
        ({"placement": "split"}, "--placement must be one of"),
        ({"clients": 0}, "clients must be at least 1"),
        ({"messages": 0}, "messages must be at least 1"),
        ({"requests": -2}, "requests must be at least 1"),
        ({"clients": 613}, "need 1226 nodes"),
    ],
)
def test_write_paper000_refuses_bad_sizes_before_writing(tmp_path, size, match):
    from burstlake.paper000_lake import write_paper000

    with pytest.raises(ValueError, match=match):
        write_paper000(tmp_path / "lake", **size)
    assert not (tmp_path / "lake").exists()
