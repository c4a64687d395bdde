"""Requeued jobs in ``sacct -D`` output: every run lands, numbered by start (docs/design.md,
"Run identity"; paper 004 §2.2 joins each job's nodes and times with per-node traffic).

Hand-built dumps in the shapes ``sacct -D -P`` and ``sacct -D --json`` print: the earlier runs
of a job (REQUEUED, NODE_FAIL ...) with their own Start/End/NodeList, each followed by its steps.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pyarrow as pa

from burstlake import catalog
from burstlake.jobs.ingest import slurm
from burstlake.jobs.ingest.landing import ingest
from burstlake.lake import read_table, write_table
from tests.builders.sacct import sacct_text

HEADER = "JobID|JobIDRaw|JobName|State|Start|End|NNodes|NodeList"
RUN0 = [
    "500|500|sim|REQUEUED|2020-01-01T00:00:00|2020-01-01T00:30:00|2|cn[1-2]",
    "500.batch|500.batch|batch|CANCELLED|2020-01-01T00:00:00|2020-01-01T00:30:00|1|cn1",
    "500.0|500.0|ior|CANCELLED|2020-01-01T00:01:00|2020-01-01T00:30:00|2|cn[1-2]",
]
RUN1 = [
    "500|500|sim|NODE_FAIL|2020-01-01T01:00:00|2020-01-01T01:10:00|2|cn[3-4]",
    "500.batch|500.batch|batch|CANCELLED|2020-01-01T01:00:00|2020-01-01T01:10:00|1|cn3",
]
LAST = [
    "500|500|sim|COMPLETED|2020-01-01T02:00:00|2020-01-01T03:00:00|2|cn[5-6]",
    "500.batch|500.batch|batch|COMPLETED|2020-01-01T02:00:00|2020-01-01T03:00:00|1|cn5",
    "500.0|500.0|ior|COMPLETED|2020-01-01T02:01:00|2020-01-01T02:59:00|2|cn[5-6]",
]
OTHER = ["600|600|post|COMPLETED|2020-01-01T04:00:00|2020-01-01T04:10:00|1|cn7"]


def _dump(tmp_path, name, *blocks):
    path = tmp_path / name
    path.write_text(sacct_text(HEADER, [line for block in blocks for line in block]))
    return path


def _ingest(lake, path):
    return ingest(slurm.SOURCE, [path], lake, {})[0]


def _table(lake, table, *columns):
    return sorted(
        (tuple(r[c] for c in columns) for r in read_table(lake, table).to_pylist()),
        key=repr,
    )


def _runs(lake):
    """(job_id, run) -> (state, start hour, nodes, steps) of every run in the lake."""
    nodes, steps = {}, {}
    for job_id, run, node in _table(lake, "job_nodes", "job_id", "run", "node"):
        nodes.setdefault((job_id, run), []).append(node)
    for job_id, run, step in _table(lake, "job_steps", "job_id", "run", "step_id"):
        steps.setdefault((job_id, run), []).append(step)
    return {
        (job_id, run): (state, start.hour, nodes.get((job_id, run)), steps.get((job_id, run)))
        for job_id, run, state, start in _table(lake, "jobs", "job_id", "run", "state", "start")
    }


EXPECTED = {  # earlier runs 0, 1 by start; the last run (what sacct prints without -D) null
    ("500", 0): ("REQUEUED", 0, ["cn1", "cn2"], ["0", "batch"]),
    ("500", 1): ("NODE_FAIL", 1, ["cn3", "cn4"], ["batch"]),
    ("500", None): ("COMPLETED", 2, ["cn5", "cn6"], ["0", "batch"]),
    ("600", None): ("COMPLETED", 4, ["cn7"], None),
}


def test_every_run_of_a_requeued_job_lands_with_its_nodes_and_steps(lake, tmp_path):
    report = _ingest(lake, _dump(tmp_path, "d.sacct", RUN0, RUN1, LAST, OTHER))
    assert (report.records_in, report.landed, report.quarantined) == (9, 9, 0)
    assert _runs(lake) == EXPECTED
    # node_index restarts in each run's own allocation
    index = _table(lake, "job_nodes", "run", "node", "node_index")
    assert [(r, i) for r, n, i in index if n in ("cn2", "cn4", "cn6")] == [
        (0, 1),
        (1, 1),
        (None, 1),
    ]


def test_runs_printed_out_of_order_are_numbered_by_start(lake, tmp_path):
    _ingest(lake, _dump(tmp_path, "d.sacct", LAST, OTHER, RUN1, RUN0))
    assert _runs(lake) == EXPECTED


def test_a_dump_without_d_then_one_with_d_keeps_one_row_per_run(lake, tmp_path):
    # before the requeue, sacct (no -D) printed run 0 as the job's only, still running, run
    running = [RUN0[0].replace("REQUEUED", "RUNNING").replace("2020-01-01T00:30:00", "Unknown")]
    _ingest(lake, _dump(tmp_path, "early.sacct", running, RUN0[1:2]))
    assert _runs(lake) == {("500", None): ("RUNNING", 0, ["cn1", "cn2"], ["batch"])}
    # later: without -D only the last run; with -D every run. Both name the last run null.
    _ingest(lake, _dump(tmp_path, "late.sacct", LAST, OTHER))
    _ingest(lake, _dump(tmp_path, "all.sacct", RUN0, RUN1, LAST, OTHER))
    assert _runs(lake) == EXPECTED  # the running row was replaced, nothing counted twice
    _ingest(lake, _dump(tmp_path, "all.sacct", RUN0, RUN1, LAST, OTHER))  # again: a no-op
    assert _runs(lake) == EXPECTED


def test_bad_runs_are_quarantined_with_file_and_line(lake, tmp_path):
    never = ["700|700|x|REQUEUED|Unknown|2020-01-01T05:00:00|0|None assigned"]
    conflict = [RUN1[0].replace("01:10:00", "01:20:00")]
    path = _dump(tmp_path, "bad.sacct", RUN0, RUN1, RUN0[:1], conflict, never, LAST)
    path.write_text(path.read_text() + OTHER[0][:20])  # a dump cut in the middle of a run
    report = _ingest(lake, path)
    reasons = sorted(
        (r["location"], r["reason"]) for r in read_table(lake, "quarantine").to_pylist()
    )
    assert reasons == [
        ("line 13", "truncated last line: 4 fields, the header has 8"),
        ("line 7", "duplicate of line 2"),
        ("line 8", "500 conflicts with line 5 (same id and start, other fields)"),
        ("line 9", "REQUEUED run of 700 without a Start: a requeued run has one"),
    ]
    assert report.quarantined == 4
    assert {k: v for k, v in _runs(lake).items() if k[0] == "500"} == {
        k: v for k, v in EXPECTED.items() if k[0] == "500"
    }


def _epoch(hour, minute=0):
    return int(datetime(2020, 1, 1, hour, minute, tzinfo=UTC).timestamp())


def _json_run(state, hour, end_hour, nodes, steps):
    """One element of ``jobs`` as ``sacct -D --json`` (data_parser v0.0.40) prints a run."""
    return {
        "job_id": 500,
        "name": "sim",
        "state": {"current": [state]},
        "time": {"start": _epoch(hour), "end": _epoch(end_hour), "submission": _epoch(0)},
        "nodes": nodes,
        "allocation_nodes": 2,
        "steps": [
            {
                "step": {"id": f"500.{step}", "name": step},
                "state": [state],
                "time": {"start": _epoch(hour), "end": _epoch(end_hour)},
                "nodes": {"count": 1, "range": nodes.split("[")[0] + nodes[-2]},
            }
            for step in steps
        ],
    }


def test_sacct_json_runs_land_each_with_its_steps(lake, tmp_path):
    jobs = [
        _json_run("COMPLETED", 2, 3, "cn[5-6]", ["batch", "0"]),  # printed first: still last
        _json_run("REQUEUED", 0, 0, "cn[1-2]", ["batch"]),
        _json_run("REQUEUED", 0, 0, "cn[1-2]", ["batch"]),  # the same run twice
    ]
    path = tmp_path / "d.json"
    path.write_text(json.dumps({"meta": {}, "jobs": jobs, "errors": []}))
    report = _ingest(lake, path)
    assert (report.records_in, report.landed, report.quarantined) == (3, 2, 1)
    quarantine = read_table(lake, "quarantine").to_pylist()
    assert [(q["location"], q["reason"]) for q in quarantine] == [
        ("jobs[2]", "duplicate of jobs[1]")
    ]
    assert _runs(lake) == {
        ("500", 0): ("REQUEUED", 0, ["cn1", "cn2"], ["batch"]),
        ("500", None): ("COMPLETED", 2, ["cn5", "cn6"], ["0", "batch"]),
    }


def test_the_readme_darshan_join_gives_each_log_one_run(lake, tmp_path):
    _ingest(lake, _dump(tmp_path, "d.sacct", RUN0, RUN1, LAST))
    logs = [  # (log, start hour:minute): in run 0, in the last run, and without a start
        {"log_id": "L0", "job_id": "500", "start": datetime(2020, 1, 1, 0, 5, tzinfo=UTC)},
        {"log_id": "L2", "job_id": "500", "start": datetime(2020, 1, 1, 2, 5, tzinfo=UTC)},
        {"log_id": "LX", "job_id": "500", "start": None, "partial": False},
    ]
    rows = [{"partial": False, **log} for log in logs]
    write_table(lake, "darshan_jobs", pa.Table.from_pylist(rows), "logs")
    catalog.refresh(lake)
    joined = catalog.sql(
        lake,
        """SELECT d.log_id, j.run FROM darshan_jobs d JOIN jobs j ON d.job_id = j.job_id_raw
             AND (d.start IS NULL AND j.run IS NULL
                  OR d.start >= j.start AND (j."end" IS NULL OR d.start <= j."end"))""",
    ).to_pylist()
    assert sorted((r["log_id"], r["run"]) for r in joined) == [
        ("L0", 0), ("L2", None), ("LX", None)]  # fmt: skip
