"""Topology ingest: CSV and Cray xtdb2proc, with bad input and row accounting.

See docs/design.md, 'Sources'.
"""

from __future__ import annotations

import gzip
import shutil

import pytest

from burstlake import catalog
from burstlake.jobs.ingest import topology
from burstlake.jobs.ingest.landing import ingest
from burstlake.lake import read_table
from tests.builders.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "topology"
EDISON_JOB_NODES = [f"nid{i:05d}" for i in range(5301, 5429)]


def _ingest(lake, *paths, **options):
    return ingest(topology.SOURCE, list(paths), lake, options)


def _quarantine(lake) -> list[tuple[str, str]]:
    rows = read_table(lake, "quarantine").sort_by("location").to_pylist()
    return [(r["location"], r["reason"]) for r in rows]


def test_edison_xtdb2proc_gives_cabinets_of_job_4478544(lake, shared_data):
    [report] = _ingest(lake, shared_data / "topology" / "edison.xtdb2proc.gz")
    assert (report.records_in, report.landed, report.quarantined) == (499, 499, 0)
    cabinets = catalog.sql(
        lake,
        "SELECT cabinet, count(*) AS n, min(node) AS lo, max(node) AS hi FROM topology "
        f"WHERE node IN {tuple(EDISON_JOB_NODES)} GROUP BY cabinet ORDER BY cabinet",
    ).to_pylist()
    # nid05184-05375 sit in cabinet c3-3 (cab_position=3, cab_row=3), 05376-05499 in c4-3
    assert cabinets == [
        {"cabinet": "c3-3", "n": 75, "lo": "nid05301", "hi": "nid05375"},
        {"cabinet": "c4-3", "n": 53, "lo": "nid05376", "hi": "nid05428"},
    ]
    row = catalog.sql(lake, "SELECT * FROM topology WHERE node = 'nid05000'").to_pylist()[0]
    assert (row["switch"], row["x"], row["y"], row["z"], row["ion"]) == ("c2-3c0s2", 13, 0, 2, None)


def test_ion_per_cabinet_assumes_one_hypothetical_ion(lake, shared_data):
    _ingest(lake, shared_data / "topology" / "edison.xtdb2proc.gz", ion_per_cabinet=True)
    ions = catalog.sql(lake, "SELECT count(DISTINCT ion) AS n FROM topology").column("n")[0]
    cabinets = catalog.sql(lake, "SELECT count(DISTINCT cabinet) AS n FROM topology").column("n")[0]
    assert ions.as_py() == cabinets.as_py() == 4


def test_csv_in_any_row_order_with_extra_columns(lake):
    [report] = _ingest(lake, FIXTURES / "small.csv")
    assert (report.records_in, report.landed, report.quarantined) == (4, 4, 0)
    rows = read_table(lake, "topology").sort_by("node").to_pylist()
    assert [(r["node"], r["cabinet"], r["ion"], r["col"]) for r in rows] == [
        ("cn001", "cab0", "ion0", 0),
        ("cn002", "cab0", "ion0", 1),
        ("cn003", "cab0", "ion0", 0),
        ("cn010", "cab1", "ion1", 0),
    ]


def test_malformed_truncated_and_duplicated_records_are_quarantined(lake, tmp_path):
    text = (FIXTURES / "small.csv").read_text()
    bad = tmp_path / "bad.csv"
    bad.write_text(
        text + "cn011,cab1,ion1,sw1,one,0,e\n"  # row not an integer
        "cn001,cab9,ion9,sw9,9,9,f\n"  # the same node elsewhere: contradicts line 3
        "cn012,,ion1,sw1,1,1,g\n"  # cabinet missing: fails the GX suite
        "cn013,cab1,io"  # truncated last line
    )
    [report] = _ingest(lake, bad)
    assert (report.records_in, report.landed, report.quarantined) == (8, 3, 5)
    conflict = (
        "conflicts with line 3 (cabinet 'cab9' vs 'cab0', ion 'ion9' vs 'ion0', switch 'sw9' "
        "vs 'sw0'): both quarantined"
    )
    assert _quarantine(lake) == [
        ("line 3", "conflicts with line 7"),
        ("line 6", "malformed record: invalid literal for int() with base 10: 'one'"),
        ("line 7", conflict),
        ("line 8", "topology: failed expect_column_values_to_not_be_null(column=cabinet)"),
        ("line 9", "malformed record: 3 fields, header has 7"),
    ]
    assert sorted(read_table(lake, "topology").column("node").to_pylist()) == [
        "cn002",
        "cn003",
        "cn010",
    ]


def test_a_line_repeated_is_a_duplicate_and_the_node_lands_once(lake, tmp_path):
    text = (FIXTURES / "small.csv").read_text()
    again = tmp_path / "again.csv"
    again.write_text(text + text.splitlines()[1] + "\n")
    [report] = _ingest(lake, again)
    assert (report.records_in, report.landed, report.quarantined) == (5, 4, 1)
    assert _quarantine(lake) == [("line 6", "duplicate of line 2")]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "no topology records"),
        (b"# only a comment\n", "no topology records"),
        (b"JobID|State\n1|RUNNING\n", "neither an xtdb2proc dump nor a CSV"),
        (b"\x1f\x8b\x08\x00garbage", "corrupt gzip"),
        (b"\xff\xfe\x00binary", "not text"),
    ],
)
def test_unusable_files_land_one_quarantine_row_and_an_error(lake, tmp_path, content, reason):
    path = tmp_path / "topo.dat"
    path.write_bytes(content)
    [report] = _ingest(lake, path)
    assert report.error is not None and reason in report.error
    assert (report.records_in, report.landed, report.quarantined) == (1, 0, 1)
    [(location, why)] = _quarantine(lake)
    assert location == "whole file" and reason in why
    assert read_table(lake, "topology").num_rows == 0


def test_reingest_is_idempotent_and_a_changed_file_replaces_its_rows(lake, tmp_path):
    path = tmp_path / "topo.csv"
    shutil.copy(FIXTURES / "small.csv", path)
    _ingest(lake, path)
    _ingest(lake, path)
    assert read_table(lake, "topology").num_rows == 4
    assert read_table(lake, "ingest_log").num_rows == 1
    path.write_text("node,cabinet\ncn001,cabZ\n")
    _ingest(lake, path)
    assert read_table(lake, "topology").to_pylist()[0]["cabinet"] == "cabZ"
    assert read_table(lake, "topology").num_rows == 1
    assert read_table(lake, "ingest_log").num_rows == 1


def test_same_content_under_two_names_lands_once(lake, tmp_path):
    first, second = tmp_path / "a.csv", tmp_path / "copy-of-a.csv"
    shutil.copy(FIXTURES / "small.csv", first)
    shutil.copy(first, second)
    _ingest(lake, first)
    _ingest(lake, second)
    assert read_table(lake, "topology").num_rows == 4
    assert read_table(lake, "ingest_log").num_rows == 1


def test_a_newer_file_supersedes_older_rows_of_the_same_node(lake, tmp_path):
    old, new = tmp_path / "old.csv.gz", tmp_path / "new.csv"
    old.write_bytes(gzip.compress((FIXTURES / "small.csv").read_bytes()))
    new.write_text("node,cabinet,ion\ncn002,cab7,ion7\ncn099,cab7,ion7\n")
    _ingest(lake, old)
    [report] = _ingest(lake, new)
    assert report.superseded == 1
    rows = {r["node"]: r["cabinet"] for r in read_table(lake, "topology").to_pylist()}
    assert rows == {
        "cn001": "cab0",
        "cn002": "cab7",
        "cn003": "cab0",
        "cn010": "cab1",
        "cn099": "cab7",
    }


def test_bom_and_integers_beyond_64_bits(lake, tmp_path):
    """A UTF-8 BOM (Excel's CSV) is dropped; an integer too large for its column is one
    quarantined line, not a crash."""
    path = tmp_path / "bom.csv"
    huge = "1" + "0" * 30
    text = f"node,cabinet,row,col\ncn1,cab0,0,1\ncn2,cab0,{huge},2\ncn3,cab1,1,{2**31}\n"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    [report] = _ingest(lake, path)
    assert (report.records_in, report.landed, report.quarantined) == (3, 1, 2)
    assert report.error is None
    assert read_table(lake, "topology").column("node").to_pylist() == ["cn1"]
    assert _quarantine(lake) == [
        ("line 3", f"malformed record: {huge} is out of range for a 32-bit integer"),
        ("line 4", f"malformed record: {2**31} is out of range for a 32-bit integer"),
    ]


def test_a_ten_megabyte_csv_field_is_one_quarantined_line(lake, tmp_path):
    path = tmp_path / "big.csv"
    path.write_text('node,cabinet\ncn1,cab0\ncn2,"' + "x" * 10_000_000 + '"\ncn3,cab0\n')
    [report] = _ingest(lake, path)
    assert (report.records_in, report.landed, report.quarantined) == (3, 2, 1)
    [(location, reason)] = _quarantine(lake)
    assert location == "line 3" and "a line beyond the limit of 1048576 bytes" in reason


def test_rows_that_landed_before_their_topology_are_checked_when_it_arrives(lake, tmp_path, capsys):
    """Zabbix lands first (no topology to check against); the topology arrives without one of
    its nodes: that is reported by the CLI and by the drop-directory landing."""
    from burstlake.cli import main
    from burstlake.jobs.ingest.dropdir import land_files

    export = ALL_FIXTURES / "zabbix" / "history-tags.ndjson"
    assert main(["ingest", "zabbix", str(export), "--lake", str(lake)]) == 0
    path = tmp_path / "topo.csv"
    path.write_text("node,cabinet\ncn2,cab0\n")
    capsys.readouterr()
    assert main(["ingest", "topology", str(path), "--lake", str(lake)]) == 0
    out = capsys.readouterr().out
    assert (
        "topology check of rows landed earlier: node_io: 1 node names not in topology (cn00001)"
        in out
    )
    path.write_text("node,cabinet\ncn2,cab0\ncn3,cab0\n")
    result = land_files("topology", [str(path)], lake)
    assert result["not_in_topology"] == ["node_io: 1 node names not in topology (cn00001)"]
    path.write_text("node,cabinet\ncn00001,cab0\n")
    assert land_files("topology", [str(path)], lake)["not_in_topology"] == []
