"""Metrics of a requeued job: each run (jobs.run, docs/design.md "Run identity") is measured
on its own nodes over its own time (paper 004 §3.2), in Spark and in the DuckDB cross-check.

Hand lake: 8 nodes, cabinets of 4, intervals of 10 s from T0. Job 9 ran twice:
- run 0 (REQUEUED) on cn0, cn1 over 0..100 s: cn0 990, cn1 10 bytes -> 1000, shares
  (0.99, 0.01): max share 0.99 > rank0_share 0.95 -> rank 0.
- the last run (run null) on cn2, cn3 over 200..300 s: 300 + 300 -> 600, even: NUD 0.
- cn0's 999 bytes at 250 s belong to no run: cn0 is not the last run's node.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest

from burstlake import catalog
from burstlake.jobs.metrics.headline_sql import headline
from burstlake.jobs.metrics.run import run
from burstlake.jobs.metrics.settings import MetricSettings
from burstlake.lake import read_table, write_table
from burstlake.presets import ForwardingMachine

pytestmark = pytest.mark.slow  # a second full metrics run in Spark (~70 s alone)

MACHINE = ForwardingMachine("hand", nodes=8, nodes_per_cabinet=4, nodes_per_ion=2, days=1)
SETTINGS = MetricSettings(data_intensive_bytes=5000, io_phase_bytes_per_s=1.0)
T0 = datetime(2024, 1, 1, tzinfo=UTC)
RUN_SCHEMA = pa.int32()


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_each_run_of_a_requeued_job_gets_its_own_nodes_traffic(spark, tmp_path):
    lake = tmp_path / "lake"
    runs = [(0, "REQUEUED", 0, 100, [0, 1]), (None, "COMPLETED", 200, 300, [2, 3])]
    jobs = [
        {"job_id": "9", "cluster": "hand", "run": r, "user": "u", "job_name": "sim",
         "state": state, "start": _at(s), "end": _at(e), "nnodes": len(nodes)}
        for r, state, s, e, nodes in runs
    ]  # fmt: skip
    job_nodes = [
        {"job_id": "9", "cluster": "hand", "run": r, "node": MACHINE.node_name(n),
         "node_index": k}
        for r, _, _, _, nodes in runs for k, n in enumerate(nodes)
    ]  # fmt: skip
    node_io = [
        {"node": MACHINE.node_name(n), "ts": _at(t), "interval_s": 10, "read_bytes": b}
        for t, n, b in [(0, 0, 990), (50, 1, 10), (200, 2, 300), (250, 3, 300), (250, 0, 999)]
    ]
    write_table(lake, "topology", MACHINE.topology(), "topo")
    for table, rows in (("jobs", jobs), ("job_nodes", job_nodes), ("node_io", node_io)):
        schema = pa.Table.from_pylist(rows).schema
        if "run" in schema.names:
            schema = schema.set(schema.get_field_index("run"), pa.field("run", RUN_SCHEMA))
        write_table(lake, table, pa.Table.from_pylist(rows, schema=schema), "hand")
    catalog.refresh(lake)
    run(lake, spark=spark, settings=SETTINGS)

    metrics = {r["run"]: r for r in read_table(lake, "job_io_metrics").to_pylist()}
    assert set(metrics) == {0, None}
    first, last = metrics[0], metrics[None]
    assert (first["nodes"], first["io_bytes"], first["read_bytes"]) == (2, 1000, 1000)
    assert first["max_node_share"] == pytest.approx(0.99) and first["rank0"] is True
    assert (first["start"], first["end"]) == (_at(0), _at(100))
    assert (last["nodes"], last["io_bytes"], last["max_node_share"]) == (2, 600, 0.5)
    assert last["io_nud"] == pytest.approx(0.0) and last["rank0"] is False
    phases = {(r["run"], r["phase"]): r["bytes"] for r in read_table(lake, "io_phases").to_pylist()}
    assert sum(b for (r, _), b in phases.items() if r == 0) == 1000
    assert sum(b for (r, _), b in phases.items() if r is None) == 600
    # the independent DuckDB path reads the runs apart too: one rank-0 job of two
    assert headline(lake, SETTINGS)["rank0_jobs"] == pytest.approx(0.5)
