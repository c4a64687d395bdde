"""The Great Expectations runner: row-level verdicts, including the gated range checks."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa

from burstlake.validate import node_keys, validate

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def _topology(*nodes: str, cluster: str | None = None) -> list[str]:
    """The topology's (cluster, node) keys, as ingest reads them from the lake."""
    clusters = pa.array([cluster] * len(nodes), pa.string())
    return node_keys(clusters, pa.array(nodes, pa.string())).to_pylist()


def _row(**values):
    return {"node": "cn1", "ts": T0, "interval_s": 10, "read_bytes": 5, "write_bytes": 0, **values}


def test_clean_batch_passes():
    rows = pa.Table.from_pylist([_row(), _row(node="cn2")])
    assert validate("node_io", rows, _topology("cn1", "cn2", "cn3")).ok


def test_every_failing_row_gets_each_of_its_reasons():
    rows = pa.Table.from_pylist(
        [
            _row(),
            _row(read_bytes=-1),  # gated range check, row level on failure
            _row(node=None, interval_s=0),  # two reasons on one row
            _row(node="cn9"),  # not in topology
            _row(write_bytes=-3, read_bytes=-2),
        ]
    )
    verdict = validate("node_io", rows, _topology("cn1"))
    between = "failed expect_column_values_to_be_between(column={}, min_value={})"
    assert verdict.reasons == {
        1: between.format("read_bytes", 0.0),
        2: "failed expect_column_values_to_not_be_null(column=node); "
        + between.format("interval_s", 1.0),
        3: "failed expect_column_values_to_be_in_set(column=node)",
        4: between.format("read_bytes", 0.0) + "; " + between.format("write_bytes", 0.0),
    }


def test_time_pairs_must_be_ordered_where_both_are_known():
    job = {"job_id": "1", "submit": T0, "start": T0.replace(hour=2), "end": T0.replace(hour=1)}
    rows = pa.Table.from_pylist([job, {**job, "job_id": "2", "end": None}])
    assert validate("jobs", rows).reasons == {
        0: "failed expect_column_pair_values_a_to_be_greater_than_b("
        "column_A=end, column_B=start, ignore_row_if=either_value_is_missing, or_equal=True)"
    }


def test_node_names_are_not_checked_without_a_topology():
    assert validate("node_io", pa.Table.from_pylist([_row(node="anything")])).ok


def test_node_names_are_checked_per_machine_null_safely():
    """Two machines both have cn1: a row resolves only in its own machine's topology, and a
    row of the unnamed machine (null cluster) only among the unnamed machine's nodes."""
    known = _topology("cn1", cluster="a") + _topology("cn2")
    rows = pa.Table.from_pylist(
        [
            _row(cluster="a"),  # a/cn1: known
            _row(cluster="b"),  # b/cn1: machine b has no topology row cn1
            _row(),  # unnamed/cn1: only a has cn1
            _row(node="cn2"),  # unnamed/cn2: known
            _row(node="cn2", cluster="a"),  # a/cn2: only the unnamed machine has cn2
        ]
    )
    in_set = "failed expect_column_values_to_be_in_set(column=node)"
    assert validate("node_io", rows, known).reasons == {1: in_set, 2: in_set, 4: in_set}


def _reason_sets(verdict) -> dict[int, set[str]]:
    return {i: set(r.split("; ")) for i, r in verdict.reasons.items()}


def _dxt_row(**values):
    row = {
        "log_id": "a", "cluster": None, "job_id": "1", "module": "DXT_POSIX", "rank": 0,
        "hostname": "h1", "record_id": 7, "op": "write", "offset": 0, "length": 4096,
        "start": T0, "end": T0, "start_ns": 5, "end_ns": 6,
    }  # fmt: skip
    return {**row, **values}


def test_arrow_checks_refuse_what_great_expectations_refuses():
    """One definition of each rule (schemas/expectations.py), two engines: the vectorised
    Arrow checks give GX's verdict, row for row and reason for reason."""
    from burstlake.validate import arrow_verdict, prepared, suite_verdict

    cases = {
        "darshan_dxt": [
            _dxt_row(),
            _dxt_row(log_id=None, offset=-1),
            _dxt_row(length=-3, end_ns=4),  # negative and backwards
            _dxt_row(end_ns=None, rank=None),
            _dxt_row(start_ns=9, end_ns=9),  # or_equal: a zero-length segment passes
            _dxt_row(op=None, module=None, offset=-5, length=-1),
        ],
        "node_io": [
            _row(),
            _row(read_bytes=-1),
            _row(node=None, interval_s=0),
            _row(node="cn9"),
            _row(write_bytes=-3, read_bytes=None),
        ],
        "darshan_rank_io": [
            {"log_id": "a", "module": "POSIX", "rank": -1, "bytes_read": 5, "read_time": 0.5},
            {"log_id": "a", "module": "POSIX", "rank": -2, "bytes_read": -1, "meta_time": -0.1},
            {"log_id": None, "module": "POSIX", "rank": 3, "writes": -4, "opens": None},
        ],
        "darshan_jobs": [
            {"log_id": "a", "partial": False, "start": T0, "end": T0, "nprocs": 4},
            {"log_id": "b", "partial": None, "start": T0.replace(hour=2), "end": T0},
            {"log_id": "c", "partial": True, "nprocs": -1, "run_time": -2.5, "bytes_read": -1},
        ],
        "jobs": [
            {"job_id": "1", "submit": T0, "start": T0.replace(hour=2), "end": T0.replace(hour=1)},
            {"job_id": "2", "submit": T0, "start": T0, "end": None},
            {"job_id": None, "submit": T0.replace(hour=3), "start": T0, "end": T0},
        ],
    }
    for table, records in cases.items():
        rows = pa.Table.from_pylist(records)
        table_spec, rows, nodes = prepared(table, rows, _topology("cn1", "cn2"))
        arrow = arrow_verdict(table_spec, rows, nodes)
        suite = suite_verdict(table_spec, rows, nodes)
        assert _reason_sets(arrow) == _reason_sets(suite), table
        assert len(arrow.reasons) >= 2, table  # the cases do refuse rows


def test_every_arrow_checked_table_has_only_vectorised_rules():
    """A row of nulls runs every rule of each ``arrow_checks`` table through the Arrow engine."""
    from burstlake.schemas import tables
    from burstlake.validate import arrow_verdict

    checked = [t for t in vars(tables).values() if getattr(t, "arrow_checks", False)]
    assert {t.name for t in checked} >= {"darshan_dxt", "darshan_rank_io", "darshan_files"}
    for table_spec in checked:
        rows = pa.table({f.name: pa.nulls(1, f.type) for f in table_spec.schema})
        assert arrow_verdict(table_spec, rows).reasons, table_spec.name


def test_dxt_batches_are_checked_without_great_expectations():
    import subprocess
    import sys

    code = (
        "import sys, pyarrow as pa\n"
        "from burstlake.validate import validate\n"
        "from datetime import UTC, datetime\n"
        "t = datetime(2024, 1, 1, tzinfo=UTC)\n"
        f"row = {_dxt_row(start=None, end=None)!r}\n"
        "row.update(start=t, end=t, offset=-1)\n"
        "v = validate('darshan_dxt', pa.Table.from_pylist([row]))\n"
        "assert list(v.reasons) == [0], v\n"
        "print('great_expectations' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
