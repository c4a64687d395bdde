"""I/O phases from the lake (paper 001's unit of coordination): detection from node_io in Spark
against hand-derived phases and an independent NumPy path, and the lake_phases what-if.

Hand node_io (10 s intervals; an interval is in an I/O phase at ≥ 50 B/s, i.e. ≥ 500 B):
  job 1 on nodes 0, 1 (0-300 s): node 0 writes 1000 B at 0, 10, 20 s, node 1 reads 500 B at
    10 s; node 0 writes 2000 B at 60 and 70 s; node 1 reads 100 B at 100 s (below the rate:
    quiet); node 1 writes 4000 B at 120 s. Busy runs [0, 30), [60, 80), [120, 130): the gaps
    are 30 s and 40 s, not shorter than io_phase_gap_s = 30 s, so three phases:
    (0-30 s, 3500 B, 2 active nodes), (60-80 s, 4000 B, 1), (120-130 s, 4000 B, 1).
  job 2 on nodes 2, 3, 4 (0-100 s): 600 B on each at 0 s, 600 B on node 2 at 20 s: the 10 s gap
    merges them: one phase 0-30 s, 2400 B, N = 3, 800 B per node.
  job 3 on node 5 moves nothing: no phase.
With io_phase_gap_s = 50 s job 1's runs merge into one phase 0-130 s of 11500 B.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from burstlake.catalog import sql
from burstlake.jobs.metrics import frames
from burstlake.jobs.metrics.job_io import job_io_metrics
from burstlake.jobs.metrics.phases import io_phase_rows
from burstlake.jobs.metrics.settings import MetricSettings
from burstlake.lake import write_table
from burstlake.presets import ForwardingMachine, machine
from burstlake.replay.scenario import load, run

T0 = datetime(2024, 1, 1, tzinfo=UTC)
INPUTS = ("jobs", "job_nodes", "node_io", "topology")
MACHINE = ForwardingMachine("hand", nodes=8, nodes_per_cabinet=4, nodes_per_ion=2, days=1)
SETTINGS = MetricSettings(io_phase_bytes_per_s=50.0)
JOBS = [("1", 0, 300, [0, 1]), ("2", 0, 100, [2, 3, 4]), ("3", 0, 100, [5])]
# (ts_s, node, read, write)
NODE_IO = [
    (0, 0, 0, 1000),
    (10, 0, 0, 1000),
    (10, 1, 500, 0),
    (20, 0, 0, 1000),
    (60, 0, 0, 2000),
    (70, 0, 0, 2000),
    (100, 1, 100, 0),
    (120, 1, 0, 4000),
    (0, 2, 0, 600),
    (0, 3, 0, 600),
    (0, 4, 0, 600),
    (20, 2, 600, 0),
]


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


@pytest.fixture(scope="module")
def hand_lake(tmp_path_factory) -> Path:
    lake = tmp_path_factory.mktemp("phases") / "lake"
    write_table(lake, "topology", MACHINE.topology(), "topo")
    jobs = [{"job_id": j, "cluster": "c", "start": at(s), "end": at(e)} for j, s, e, _ in JOBS]
    write_table(lake, "jobs", pa.Table.from_pylist(jobs), "hand")
    held = [
        {"job_id": j, "cluster": "c", "node": MACHINE.node_name(n), "node_index": k}
        for j, _, _, nodes in JOBS
        for k, n in enumerate(nodes)
    ]
    write_table(lake, "job_nodes", pa.Table.from_pylist(held), "hand")
    rows = [
        {
            "node": MACHINE.node_name(n),
            "ts": at(t),
            "interval_s": 10,
            "read_bytes": r,
            "write_bytes": w,
        }
        for t, n, r, w in NODE_IO
    ]
    write_table(lake, "node_io", pa.Table.from_pylist(rows), "hand")
    return lake


@pytest.fixture(scope="module")
def job_io(spark, hand_lake):
    """The job × interval traffic and job × node rows of the metrics run (job_io_metrics)."""
    read = {name: frames.read(spark, hand_lake, name) for name in INPUTS}
    result = job_io_metrics(
        read["jobs"], read["job_nodes"], read["node_io"], read["topology"], 4, SETTINGS
    )
    kept = replace(
        result, per_interval=result.per_interval.cache(), node_bytes=result.node_bytes.cache()
    )
    yield kept
    kept.per_interval.unpersist()
    kept.node_bytes.unpersist()


def spark_phases(job_io, settings: MetricSettings) -> list[dict]:
    """The io_phases rows as the metrics run computes them."""
    rows = io_phase_rows(job_io.per_interval, job_io.node_bytes, settings)
    return frames.to_arrow(rows, "io_phases").to_pylist()


def numpy_phases(settings: MetricSettings) -> list[tuple]:
    """The same phases by an independent path: per job and interval (midpoint in the run) sum
    the bytes, keep the intervals at the rate, split where the quiet gap reaches the setting."""
    out = []
    for job, begin, end, nodes in JOBS:
        traffic: dict[int, int] = {}
        for t, n, r, w in NODE_IO:
            if n in nodes and begin <= t + 5 < end:
                traffic[t] = traffic.get(t, 0) + r + w
        busy = sorted(t for t, b in traffic.items() if b >= 10 * settings.io_phase_bytes_per_s)
        if not busy:
            continue
        ts = np.asarray(busy)
        cut = np.flatnonzero(ts[1:] - (ts[:-1] + 10) >= settings.io_phase_gap_s) + 1
        for k, run_ in enumerate(np.split(ts, cut)):
            size = sum(traffic[int(t)] for t in run_)
            out.append((job, k, int(run_[0]), int(run_[-1]) + 10, size, len(nodes), len(run_)))
    return out


def as_tuples(rows: list[dict]) -> list[tuple]:
    return [
        (
            r["job_id"],
            r["phase"],
            int((r["start"] - T0).total_seconds()),
            int((r["end"] - T0).total_seconds()),
            r["bytes"],
            r["nodes"],
            r["intervals"],
        )
        for r in rows
    ]


@pytest.mark.slow  # reads a Delta lake and computes job_io_metrics in Spark
def test_detected_phases_by_hand_and_by_numpy(job_io) -> None:
    rows = spark_phases(job_io, SETTINGS)
    expected = [
        ("1", 0, 0, 30, 3500, 2, 3),
        ("1", 1, 60, 80, 4000, 2, 2),
        ("1", 2, 120, 130, 4000, 2, 1),
        ("2", 0, 0, 30, 2400, 3, 2),
    ]
    assert as_tuples(rows) == expected == numpy_phases(SETTINGS)
    first = rows[0]
    assert (first["read_bytes"], first["write_bytes"], first["active_nodes"]) == (500, 3000, 2)
    assert first["duration_s"] == 30.0 and first["bytes_per_node"] == 1750.0
    assert rows[3]["bytes_per_node"] == 800.0 and rows[3]["active_nodes"] == 3

    merged = MetricSettings(io_phase_bytes_per_s=50.0, io_phase_gap_s=50.0)
    rows = spark_phases(job_io, merged)
    assert as_tuples(rows)[0] == ("1", 0, 0, 130, 11500, 2, 6)
    assert as_tuples(rows) == numpy_phases(merged)


def test_gap_setting_is_checked() -> None:
    with pytest.raises(ValueError, match="io_phase_gap_s"):
        MetricSettings(io_phase_gap_s=-1)
    assert MetricSettings().with_overrides(["io_phase_gap_s=60"]).io_phase_gap_s == 60.0


LAKE_SCENARIO = """
name: lake_coordination
workload: {source: lake_phases, cores_per_node: 1, request_bytes: 1.25e8}
topology: {name: tiny, capacities: {node_link: 1.0e15, ion: 1.0e15, storage: 1.0e9}}
policies: [interfere, fcfs, interrupt, dynamic]
"""


def test_lake_phases_what_if(tmp_path, lake) -> None:
    """Two detected phases on one shared 1 GB/s storage, cores_per_node 1 (CPU-hours count
    nodes): job A on 4 nodes, 4e9 B from 0 s (T_alone 4 s; it ran 100 s in the trace), job B on
    4 other nodes, 1e9 B from 1 s (T_alone 1 s; it ran 50 s). By hand, in node-seconds:
      interfere: B meets A's remaining 3 s at half speed: T_B = 2, T_A = 5 → 28, ΣI = 3.25;
      fcfs:      T_A = 4, T_B = 3 + 1 = 4                                  → 32, ΣI = 5;
      interrupt / dynamic (dt = 1 < T_A − T_B = 3): T_A = 5, T_B = 1       → 24, ΣI = 2.25;
      as ran:    4·100 + 4·50 = 600 node-s, ΣI = 100/4 + 50/1 = 75."""
    tiny = machine("tiny")
    write_table(lake, "topology", tiny.topology(), "topo")
    held = [
        {"job_id": j, "cluster": "c", "node": tiny.node_name(n), "node_index": n % 4}
        for j, first in (("A", 0), ("B", 4))
        for n in range(first, first + 4)
    ]
    write_table(lake, "job_nodes", pa.Table.from_pylist(held), "hand")
    phases = [
        {"job_id": "A", "cluster": "c", "phase": 0, "start": at(0), "end": at(100),
         "duration_s": 100.0, "nodes": 4, "active_nodes": 4, "read_bytes": 0,
         "write_bytes": 4_000_000_000, "bytes": 4_000_000_000, "bytes_per_node": 1e9,
         "intervals": 10},
        {"job_id": "B", "cluster": "c", "phase": 0, "start": at(1), "end": at(51),
         "duration_s": 50.0, "nodes": 4, "active_nodes": 4, "read_bytes": 0,
         "write_bytes": 1_000_000_000, "bytes": 1_000_000_000, "bytes_per_node": 2.5e8,
         "intervals": 5},
    ]  # fmt: skip
    write_table(lake, "io_phases", pa.Table.from_pylist(phases), "metrics")
    path = tmp_path / "lake.yaml"
    path.write_text(LAKE_SCENARIO)
    run(load(path), lake)
    got = {
        (r["policy"], r["metric"]): r["value"]
        for r in sql(lake, "SELECT policy, metric, value FROM replay_scores").to_pylist()
    }
    expected = {"interfere": (28, 3.25), "fcfs": (32, 5.0), "interrupt": (24, 2.25)}
    expected["dynamic"] = expected["interrupt"]
    for strategy, (node_s, factors) in expected.items():
        assert got[(strategy, "io_cpu_hours")] == pytest.approx(node_s / 3600, rel=1e-9)
        assert got[(strategy, "sum_interference_factor")] == pytest.approx(factors, rel=1e-9)
        assert got[(strategy, "io_cpu_hours_as_ran")] == pytest.approx(600 / 3600, rel=1e-9)
        assert got[(strategy, "sum_interference_factor_as_ran")] == pytest.approx(75, rel=1e-9)
        assert got[(strategy, "phases")] == 2


def test_lake_phases_needs_detected_phases(tmp_path, lake) -> None:
    write_table(lake, "topology", machine("tiny").topology(), "topo")
    path = tmp_path / "lake.yaml"
    path.write_text(LAKE_SCENARIO)
    with pytest.raises(ValueError, match="run `burstlake metrics` on the lake first"):
        run(load(path), lake)
