"""Slurm ingest: sacct -P text and sacct --json into jobs, job_steps, job_nodes.

See docs/design.md, 'Sources' and 'The lake'.

Real Spark-free path: the real parser, base.ingest, Great Expectations, Parquet and DuckDB.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from burstlake import catalog
from burstlake.cli import main
from burstlake.jobs.ingest import slurm
from burstlake.jobs.ingest.landing import ingest
from burstlake.jobs.ingest.source import ParseContext
from burstlake.lake import read_table
from tests.builders.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "slurm"
EDISON = "slurm/edison_job4478544.sacct"


def _ingest(lake, *paths, **options):
    reports = ingest(
        slurm.SOURCE, [FIXTURES / p if isinstance(p, str) else p for p in paths], lake, options
    )
    return reports[0] if len(reports) == 1 else reports


def _rows(lake, table, *keys):
    rows = read_table(lake, table).to_pylist()
    return {tuple(r[k] for k in keys): r for r in rows}


def _utc(*args):
    return datetime(*args, tzinfo=UTC)


def _quarantine(lake):
    return sorted((r["location"], r["reason"]) for r in read_table(lake, "quarantine").to_pylist())


# ---------------------------------------------------------------- the real Edison sample


def test_edison_job_lands_with_its_128_nodes_in_order_and_10_steps(lake, shared_data):
    report = _ingest(lake, shared_data / EDISON)
    assert (report.records_in, report.landed, report.quarantined) == (11, 11, 0)
    assert report.rows == {"jobs": 1, "job_steps": 10, "job_nodes": 128}
    job = read_table(lake, "jobs").to_pylist()[0]
    assert job["job_id"] == "4478544" and job["job_name"] == "tokio-abc-edison-scratch2"
    assert (job["start"], job["end"]) == (_utc(2017, 3, 20, 1, 59, 2), _utc(2017, 3, 20, 2, 11, 38))
    assert (job["nnodes"], job["alloc_cpus"], job["state"]) == (128, 6144, "COMPLETED")
    nodes = read_table(lake, "job_nodes").sort_by("node_index").to_pylist()
    assert [n["node"] for n in nodes] == [f"nid{n:05d}" for n in range(5301, 5429)]
    assert [n["node_index"] for n in nodes] == list(range(128))
    steps = _rows(lake, "job_steps", "step_id")
    assert set(steps) == {("batch",), ("extern",)} | {(str(i),) for i in range(8)}
    assert steps[("batch",)]["nnodes"] == 1 and steps[("batch",)]["nodelist"] == "nid05301"
    assert steps[("6",)]["step_name"] == "vpicio_uni" and steps[("6",)]["alloc_cpus"] == 2048
    assert steps[("extern",)]["end"] == _utc(2017, 3, 20, 2, 11, 39)


def test_ingesting_twice_leaves_the_same_rows(lake, shared_data):
    _ingest(lake, shared_data / EDISON)
    first = {t: read_table(lake, t).to_pylist() for t in ("jobs", "job_steps", "job_nodes")}
    _ingest(lake, shared_data / EDISON)
    again = {t: read_table(lake, t).to_pylist() for t in ("jobs", "job_steps", "job_nodes")}
    assert {t: len(r) for t, r in again.items()} == {"jobs": 1, "job_steps": 10, "job_nodes": 128}
    key = lambda r: tuple(str(v) for v in r.values())  # noqa: E731
    assert {t: sorted(r, key=key) for t, r in again.items()} == {
        t: sorted(r, key=key) for t, r in first.items()
    }
    assert read_table(lake, "quarantine").num_rows == 0


def test_cli_ingests_with_time_zone_and_cluster_and_prints_counts(lake, shared_data, capsys):
    path = str(shared_data / EDISON)
    code = main(["ingest", "slurm", path, "--lake", str(lake), "--tz", "America/Los_Angeles",
                 "--cluster", "edison"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert f"{path}: 11 records in, 11 landed, 0 quarantined" in out
    assert "slurm: 1 files, 11 records in, 11 landed, 0 quarantined" in out
    job = read_table(lake, "jobs").to_pylist()[0]
    assert job["cluster"] == "edison"
    assert job["start"] == _utc(2017, 3, 20, 8, 59, 2)  # PDT = UTC-7 on 2017-03-20
    assert set(read_table(lake, "job_nodes").column("cluster").to_pylist()) == {"edison"}


def test_duckdb_catalog_agrees_with_the_arrow_read(lake, shared_data):
    _ingest(lake, shared_data / EDISON)
    arrow = read_table(lake, "job_nodes").sort_by("node_index")
    sql = catalog.sql(lake, "SELECT node, node_index FROM job_nodes ORDER BY node_index")
    assert sql.column("node").to_pylist() == arrow.column("node").to_pylist()
    steps = catalog.sql(lake, "SELECT count(*) AS n, min(start) AS s FROM job_steps").to_pylist()
    assert steps == [{"n": 10, "s": _utc(2017, 3, 20, 1, 59, 2)}]


# ---------------------------------------------------------------- shapes of sacct text


def test_the_synthesizer_header_shape_ingests_every_field(lake):
    report = _ingest(lake, "synth_shape.sacct", tz="Asia/Shanghai")
    assert (report.records_in, report.landed, report.quarantined) == (5, 5, 0)
    jobs = _rows(lake, "jobs", "job_id")
    vasp = jobs[("1001",)]
    assert (vasp["cluster"], vasp["user"], vasp["uid"], vasp["account"]) == (
        "th1a", "alice", 5001, "chem")  # fmt: skip
    assert (vasp["partition"], vasp["req_cpus"], vasp["alloc_cpus"], vasp["nnodes"]) == (
        "work", 64, 64, 5)  # fmt: skip
    assert vasp["submit"] == _utc(2017, 3, 19, 16, 0, 0)  # Shanghai is UTC+8
    assert vasp["eligible"] == _utc(2017, 3, 19, 16, 0, 1)
    assert (vasp["start"], vasp["end"]) == (_utc(2017, 3, 19, 17), _utc(2017, 3, 19, 18))
    lammps = jobs[("1002",)]
    assert (lammps["state"], lammps["cancelled_by"], lammps["exit_code"]) == (
        "CANCELLED", 1234, "0:15")  # fmt: skip
    pending = jobs[("1003",)]
    assert (pending["eligible"], pending["start"], pending["end"]) == (None, None, None)
    assert (pending["nnodes"], pending["state"], pending["cancelled_by"]) == (4, "PENDING", None)
    nodes = _rows(lake, "job_nodes", "job_id", "node")
    assert {k: r["node_index"] for k, r in nodes.items()} == {
        ("1001", "cn001"): 0,
        ("1001", "cn002"): 1,
        ("1001", "cn003"): 2,
        ("1001", "cn004"): 3,
        ("1001", "cn010"): 4,
        ("1002", "cn010"): 0,
        ("1002", "gpu7"): 1,
    }
    steps = _rows(lake, "job_steps", "job_id", "step_id")
    assert set(steps) == {("1001", "batch"), ("1001", "0")}
    assert steps[("1001", "0")]["step_name"] == "vasp_std"
    assert steps[("1001", "0")]["cluster"] == "th1a"


def test_het_components_array_tasks_and_steps_before_their_allocation(lake):
    report = _ingest(lake, "het_array.sacct")
    assert (report.records_in, report.landed, report.quarantined) == (10, 10, 0)
    assert set(_rows(lake, "jobs", "job_id")) == {
        ("200",), ("300+0",), ("300+1",), ("400_7",), ("400_[8-10]",)}  # fmt: skip
    assert set(_rows(lake, "job_steps", "job_id", "step_id")) == {
        ("200", "0"), ("200", "batch"), ("300+0", "0"), ("300+1", "batch"),
        ("400_7", "batch")}  # fmt: skip
    # without JobIDRaw the raw id of a task or component is unknown; a plain job's is its own
    raw = {k[0]: r["job_id_raw"] for k, r in _rows(lake, "jobs", "job_id").items()}
    assert raw == {"200": "200", "300+0": None, "300+1": None, "400_7": None, "400_[8-10]": None}
    nodes = _rows(lake, "job_nodes", "job_id", "node")
    assert {k: r["node_index"] for k, r in nodes.items() if k[0] in ("200", "300+1")} == {
        ("200", "rack1-node01"): 0,
        ("200", "rack1-node02"): 1,
        ("200", "rack2-node01"): 2,
        ("200", "rack2-node02"): 3,
        ("300+1", "gpu1"): 0,  # written gpu[2,1]: sorted by name
        ("300+1", "gpu2"): 1,
    }
    assert not [k for k in nodes if k[0] == "400_[8-10]"]  # None assigned: no nodes
    assert _rows(lake, "job_steps", "job_id", "step_id")[("200", "0")]["nnodes"] == 4


def test_parse_streams_batches_and_finds_duplicates_across_them(monkeypatch):
    monkeypatch.setattr(slurm, "BATCH_RECORDS", 2)
    batches = list(slurm.parse(FIXTURES / "duplicate.sacct", ParseContext()))
    assert [b.records for b in batches] == [2, 2, 1]
    rejects = [(r.location, r.reason) for b in batches for r in b.rejects]
    assert rejects == [
        ("line 4", "duplicate of line 2"),
        ("line 6", "11 conflicts with line 5 (same id and start, other fields)"),
    ]


def test_concatenated_parsable_output_with_bom_and_trailing_pipes(lake, tmp_path):
    header = "JobID|NodeList|State|"
    day1 = f"\ufeff{header}\n31|cn[1-2]|COMPLETED|\n31.0|cn[1-2]|COMPLETED|\n"
    day2 = f"{header}\n\n32|cn3|FAILED|\r\n"
    path = tmp_path / "two_days.sacct"
    path.write_text(day1 + day2, encoding="utf-8")
    report = _ingest(lake, path)
    assert (report.records_in, report.landed, report.quarantined) == (3, 3, 0)
    assert {k: r["state"] for k, r in _rows(lake, "jobs", "job_id").items()} == {
        ("31",): "COMPLETED",
        ("32",): "FAILED",
    }
    assert read_table(lake, "job_nodes").num_rows == 3


# ---------------------------------------------------------------- sacct --json


def test_sacct_json_v0040_shape(lake):
    report = _ingest(lake, "sacct_v0040.json")
    assert (report.records_in, report.landed, report.quarantined) == (4, 3, 1)
    assert _quarantine(lake) == [
        ("jobs[3]", "bad nodelist: hostlist 'nid[003005-': '[' is never closed")
    ]
    jobs = _rows(lake, "jobs", "job_id")
    assert set(jobs) == {("5000",), ("6000_7",), ("7000+1",)}
    assert {k[0]: r["job_id_raw"] for k, r in jobs.items()} == {
        "5000": "5000", "6000_7": "6007", "7000+1": "7001"}  # fmt: skip
    ior = jobs[("5000",)]
    assert (ior["cluster"], ior["user"], ior["account"], ior["partition"]) == (
        "perlmutter", "alice", "nstaff", "regular")  # fmt: skip
    assert (ior["req_cpus"], ior["alloc_cpus"], ior["nnodes"], ior["exit_code"]) == (
        512, 512, 4, "0:0")  # fmt: skip
    assert (ior["submit"], ior["start"]) == (
        _utc(2023, 11, 14, 22, 13, 20),
        _utc(2023, 11, 14, 22, 15),
    )
    sweep = jobs[("6000_7",)]
    assert (sweep["state"], sweep["cancelled_by"]) == ("CANCELLED", 4242)
    assert jobs[("7000+1",)]["nnodes"] == 2  # no allocation_nodes: counted from the hostlist
    steps = _rows(lake, "job_steps", "job_id", "step_id")
    assert set(steps) == {("5000", "batch"), ("5000", "0"), ("6000_7", "batch")}
    assert (steps[("5000", "0")]["state"], steps[("5000", "0")]["exit_code"]) == ("FAILED", "1:0")
    assert steps[("5000", "0")]["start"] == _utc(2023, 11, 14, 22, 15, 10)
    assert steps[("6000_7", "batch")]["end"] is None  # {"set": false}
    nodes = _rows(lake, "job_nodes", "job_id", "node")
    assert nodes[("5000", "nid001010")]["node_index"] == 3
    assert nodes[("7000+1", "nid003001")]["node_index"] == 1


def test_sacct_json_slurm_21_shape(lake):
    report = _ingest(lake, "sacct_2108.json")
    assert (report.records_in, report.landed, report.quarantined) == (1, 1, 0)
    job = read_table(lake, "jobs").to_pylist()[0]
    assert (job["job_id"], job["state"], job["exit_code"], job["alloc_cpus"]) == (
        "123456", "COMPLETED", "0:0", 8)  # fmt: skip
    assert job["end"] == _utc(2023, 6, 6, 21, 55, 38)
    steps = _rows(lake, "job_steps", "step_id")
    assert set(steps) == {("batch",), ("0",)}
    assert steps[("0",)]["nodelist"] == "cn-a[001-002]" and steps[("0",)]["nnodes"] == 2
    assert read_table(lake, "job_nodes").num_rows == 2


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("fixture", "counts", "jobs", "quarantined"),
    [
        (
            "duplicate.sacct",
            (5, 3, 2),
            2,
            [("line 4", "duplicate of line 2"),
             ("line 6", "11 conflicts with line 5 (same id and start, other fields)")],
        ),
        ("truncated.sacct", (2, 1, 1), 1,
         [("line 3", "truncated last line: 4 fields, the header has 6")]),
        (
            "columns.sacct",
            (3, 1, 2),
            1,
            [("line 3", "7 fields, the header has 6"), ("line 4", "5 fields, the header has 6")],
        ),
        (
            "bad_hostlist.sacct",
            (3, 1, 2),
            1,
            [("line 2", "bad nodelist: hostlist 'cn[1-3': '[' is never closed"),
             ("line 3", "bad nodelist: hostlist 'cn[5-2]': range '5-2' runs backwards")],
        ),
        (
            "bad_time.sacct",
            (2, 1, 1),
            1,
            [("line 2", "bad start: '2020-13-45T00:00:00' is not a time "
                        "(YYYY-MM-DDTHH:MM:SS, Unknown or None)")],
        ),
        ("header_only.sacct", (0, 0, 0), 0, []),
    ],
)  # fmt: skip
def test_bad_lines_are_quarantined_with_location_and_reason(
    lake, fixture, counts, jobs, quarantined
):
    report = _ingest(lake, fixture)
    assert (report.records_in, report.landed, report.quarantined) == counts
    assert report.error is None
    assert _quarantine(lake) == quarantined
    assert read_table(lake, "jobs").num_rows == jobs


def test_end_before_start_is_caught_by_the_expectation_suite(lake):
    """Job 22 fails; job 23's step fails, and a job's records land or fail together, so job
    23's allocation (line 3, standing for its step's line 4 too) is quarantined with it."""
    report = _ingest(lake, "end_before_start.sacct")
    assert (report.records_in, report.landed, report.quarantined) == (3, 0, 3)
    rows = read_table(lake, "quarantine").sort_by("location").to_pylist()
    assert [r["location"] for r in rows] == ["line 2", "line 3"]
    assert rows[0]["reason"].startswith("jobs: failed expect_column_pair_values_a_to_be_greater")
    assert rows[1]["reason"].startswith("job_steps: failed expect_column_pair_values_a_to_be")
    assert all("column_A=end" in r["reason"] and "column_B=start" in r["reason"] for r in rows)
    assert rows[0]["raw"].startswith("22|a|COMPLETED|2020-01-01T02:00:00")
    assert not read_table(lake, "jobs").num_rows
    assert not read_table(lake, "job_nodes").num_rows  # no orphan rows
    assert read_table(lake, "job_steps").num_rows == 0


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("empty.sacct", b"", "empty file: no sacct header line"),
        ("blank.sacct", b"\n  \n", "empty file: no sacct header line"),
        ("topology.csv", b"node,cabinet,ion\ncn1,cab1,ion1\n",
         "not sacct -P output: the first line is not a header with JobID or JobIDRaw "
         "(got 'node,cabinet,ion')"),
        ("other.txt", b"JobName|State\nx|COMPLETED\n",
         "not sacct -P output: the first line is not a header with JobID or JobIDRaw "
         "(got 'JobName|State')"),
        ("twice.sacct", b"JobID|State|jobid\n1|COMPLETED|1\n",
         "sacct header names the field 'jobid' twice"),
        ("log.darshan", b"\x1f\x8b\x00\x00binary", "binary file, not sacct output"),
        ("broken.json", b'{"jobs": [', "Expecting value at byte 10: not valid sacct --json output"),
        ("squeue.json", b'{"meta": {}, "nodes": []}',
         "JSON without a 'jobs' list: not sacct --json output"),
    ],
)  # fmt: skip
def test_a_file_that_is_not_sacct_is_unusable_as_a_whole(lake, tmp_path, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    report = _ingest(lake, path)
    assert report.error.startswith(reason)
    assert (report.records_in, report.landed, report.quarantined) == (1, 0, 1)
    assert [(r["location"], r["reason"]) for r in read_table(lake, "quarantine").to_pylist()] == [
        ("whole file", report.error)
    ]
    assert all(read_table(lake, t).num_rows == 0 for t in ("jobs", "job_steps", "job_nodes"))


def test_cli_exits_non_zero_with_a_one_line_reason_for_a_non_sacct_file(lake, capsys):
    path = FIXTURES / "not_sacct.csv"
    assert main(["ingest", "slurm", str(path), "--lake", str(lake)]) == 1
    captured = capsys.readouterr()
    assert f"{path}: 1 records in, 0 landed, 1 quarantined" in captured.out
    assert captured.err.strip().splitlines() == [
        f"burstlake ingest slurm: {path}: not sacct -P output: the first line is not a header "
        "with JobID or JobIDRaw (got 'node,cabinet,ion')"
    ]


def test_cli_rejects_an_unknown_time_zone(lake, capsys):
    argv = ["ingest", "slurm", str(FIXTURES / "het_array.sacct"), "--tz", "Mars/Olympus"]
    assert main([*argv, "--lake", str(lake)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("burstlake ingest:") and "unknown time zone 'Mars/Olympus'" in line


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("123", ("123", None)),
        ("123.batch", ("123", "batch")),
        ("123.extern", ("123", "extern")),
        ("123+1", ("123+1", None)),
        ("123+1.0", ("123+1", "0")),
        ("123.0+1", ("123", "0+1")),
        ("123_7", ("123_7", None)),
        ("123_7.batch", ("123_7", "batch")),
        ("123_[8-10]", ("123_[8-10]", None)),
    ],
)
def test_job_ids(text, parsed):
    assert slurm.split_job_id(text) == parsed


@pytest.mark.parametrize("text", ["", "abc", "123.", "123..0", "123_", "12 3", "123+x"])
def test_bad_job_ids(text):
    with pytest.raises(ValueError, match="is not a Slurm job id"):
        slurm.split_job_id(text)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("CANCELLED by 1234", ("CANCELLED", 1234)),
        ("COMPLETED", ("COMPLETED", None)),
        ("OUT_OF_MEMORY", ("OUT_OF_MEMORY", None)),
        ("CANCELLED+", ("CANCELLED", None)),
        ("", (None, None)),
    ],
)
def test_states(text, parsed):
    assert slurm.parse_state(text) == parsed


# ---------------------------------------------------------------- hostile input (issue 14)


def test_concatenated_dump_with_a_header_in_another_order(lake, tmp_path):
    path = tmp_path / "two-dumps.sacct"
    path.write_text(
        "JobID|JobName|NodeList|AllocCPUS\n"
        "1|a|cn1|4\n"
        "AllocCPUS|NodeList|JobName|JobID\n"  # the second dump's own header
        "8|cn2|b|2\n"
    )
    report = ingest(slurm.SOURCE, [path], lake)[0]
    assert (report.records_in, report.landed, report.quarantined) == (2, 2, 0)
    jobs = _rows(lake, "jobs", "job_id")
    assert (jobs[("2",)]["job_name"], jobs[("2",)]["alloc_cpus"]) == ("b", 8)
    assert jobs[("2",)]["nodelist"] == "cn2"


def test_a_job_lands_or_fails_with_its_steps(lake, tmp_path):
    """Job 5's nodes are not in the topology: its allocation and its steps are quarantined
    together (no orphan steps); job 7's bad nodelist takes its step with it."""
    import pyarrow as pa

    from burstlake.lake import write_table

    write_table(lake, "topology", pa.table({"node": ["cn1"], "cabinet": ["c0"]}), "topo")
    path = tmp_path / "jobs.sacct"
    path.write_text(
        "JobID|NodeList|AllocCPUS\n"
        "4|cn1|1\n4.0|cn1|1\n"
        "5|cn9|1\n5.batch|cn9|1\n5.0|cn9|1\n"
        "7|cn[3-|1\n7.0|cn3|1\n"
        f"8|cn1|{10**30}\n"
    )
    report = ingest(slurm.SOURCE, [path], lake)[0]
    assert (report.records_in, report.landed, report.quarantined) == (8, 2, 6)
    assert set(_rows(lake, "jobs", "job_id")) == {("4",)}
    assert set(_rows(lake, "job_steps", "job_id", "step_id")) == {("4", "0")}
    reasons = dict(_quarantine(lake))
    assert reasons["line 4"].startswith("job_nodes: failed expect_column_values_to_be_in_set")
    assert reasons["line 7"] == "bad nodelist: hostlist 'cn[3-': '[' is never closed"
    assert reasons["line 8"] == "the allocation of 7 (line 7) was quarantined"
    assert reasons["line 9"].endswith("is beyond the 64-bit range")


def test_deeply_nested_json_is_unusable_not_a_crash(lake, tmp_path, capsys):
    path = tmp_path / "nested.json"
    path.write_text('{"jobs": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["ingest", "slurm", str(path), "--lake", str(lake)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"burstlake ingest slurm: {path}: JSON nested too deeply: not valid sacct --json output"
    ]


def test_array_tasks_keep_the_raw_id_darshan_records(lake, tmp_path):
    """sacct -o JobID,JobIDRaw: task 400_7 ran as SLURM_JOB_ID 407, the id in its Darshan
    logs; its steps land under 400_7 and the raw id of a step line is its job's."""
    path = tmp_path / "array.sacct"
    path.write_text(
        "JobID|JobIDRaw|NodeList|Start|End\n"
        "400_7|407|cn9|2020-01-01T11:30:00|2020-01-01T12:00:00\n"
        "400_7.batch|407.batch|cn9|2020-01-01T11:30:00|2020-01-01T12:00:00\n"
        "401|401|cn8|2020-01-01T11:30:00|2020-01-01T12:00:00\n"
    )
    report = ingest(slurm.SOURCE, [path], lake)[0]
    assert (report.records_in, report.landed, report.quarantined) == (3, 3, 0)
    jobs = _rows(lake, "jobs", "job_id")
    assert {k[0]: r["job_id_raw"] for k, r in jobs.items()} == {"400_7": "407", "401": "401"}
    assert set(_rows(lake, "job_steps", "job_id", "step_id")) == {("400_7", "batch")}


def test_darshan_logs_join_jobs_on_the_raw_id(lake, shared_data):
    """The real Edison pair: the Darshan logs' job id is the allocation's raw id."""
    from burstlake.jobs.ingest import darshan

    _ingest(lake, shared_data / EDISON)
    logs = sorted((shared_data / "darshan").glob("edison_*job4478544.darshan"))
    ingest(darshan.SOURCE, logs, lake)
    joined = catalog.sql(
        lake,
        "SELECT j.job_id, count(*) AS logs FROM darshan_jobs d "
        "JOIN jobs j ON d.job_id = j.job_id_raw GROUP BY 1",
    )
    assert joined.to_pylist() == [{"job_id": "4478544", "logs": 2}]


def test_json_is_read_as_a_stream_and_a_cut_document_lands_what_came_before(lake, tmp_path):
    job = {"job_id": 1, "name": "a", "time": {"start": 1, "end": 2}, "steps": []}
    jobs = [{**job, "job_id": i} for i in range(1, 6)]
    text = json.dumps({"meta": {"plugins": ["x"]}, "jobs": jobs, "warnings": [1, 2]})
    whole = tmp_path / "sacct.json"
    whole.write_text(text)
    report = ingest(slurm.SOURCE, [whole], lake)[0]
    assert (report.records_in, report.landed, report.quarantined) == (5, 5, 0)
    # cut inside the fourth job: three land; the rest is lost from the byte where it starts
    cut = tmp_path / "cut.json"
    cut.write_text(text[: text.index('"job_id": 4') + 5])
    report = ingest(slurm.SOURCE, [cut], lake)[0]
    assert (report.records_in, report.landed, report.quarantined) == (4, 3, 1)
    where, reason = _quarantine(lake)[-1]
    fourth = text.index('{"job_id": 4')
    assert where == f"byte {fourth}"
    assert reason.endswith(f"at byte {fourth} after jobs[2]; the rest is lost")
    # a scalar where a job belongs is one bad record; keys after the list are not jobs
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps({"jobs": [7, {**job, "job_id": 9}], "after": [1, 2]}))
    report = ingest(slurm.SOURCE, [odd], lake)[0]
    assert (report.records_in, report.landed, report.quarantined) == (2, 1, 1)


def test_json_numbers_beyond_64_bits_and_of_the_wrong_type(lake, tmp_path):
    job = {"job_id": 1, "name": "a", "time": {"start": 1, "end": 2}, "steps": []}
    jobs = [
        job,
        {**job, "job_id": 2, "required": {"CPUs": 10**30}},
        {**job, "job_id": 3, "time": {"start": 1e30}},
        {**job, "job_id": 4, "allocation_nodes": "many"},
    ]
    path = tmp_path / "sacct.json"
    path.write_text(json.dumps({"jobs": jobs}))
    report = ingest(slurm.SOURCE, [path], lake)[0]
    assert (report.records_in, report.landed, report.quarantined) == (4, 1, 3)
    reasons = dict(_quarantine(lake))
    assert reasons["jobs[1]"] == f"bad job: {10**30} is beyond the 64-bit range"
    assert reasons["jobs[2]"] == "bad job: time 1e+30 is not epoch seconds"
    assert reasons["jobs[3]"] == "bad job: 'many' is not a number"


def test_gzip_and_truncated_gzip_dumps(lake, tmp_path):
    """The shared plain/gzip reader: a compressed dump lands like the plain one; a truncated
    one lands what came before and says where the rest was lost."""
    import gzip

    text = "JobID|NodeList\n" + "".join(f"{i}|cn{i}\n" for i in range(1, 2001))
    whole = tmp_path / "sacct.txt.gz"
    whole.write_bytes(gzip.compress(text.encode()))
    report = ingest(slurm.SOURCE, [whole], lake)[0]
    assert (report.records_in, report.landed, report.quarantined) == (2000, 2000, 0)
    cut = tmp_path / "cut.txt.gz"
    cut.write_bytes(whole.read_bytes()[:-200])
    report = ingest(slurm.SOURCE, [cut], lake)[0]
    assert report.error is None and report.quarantined >= 1 and report.landed > 1000
    reasons = [r for loc, r in _quarantine(lake) if loc.startswith("byte ")]
    assert reasons == ["gzip stream ends early (truncated file); the rest of the file is lost"]
