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
