"""Zabbix ingest: the fast NDJSON decoder (pyarrow's JSON reader, whole blocks) lands exactly
what the line-by-line decoder (DuckDB's JSON functions) lands: rows, quarantine rows and
reasons, record counts and the byte balance (jobs/ingest/zabbix/decode.py)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pytest

from burstlake.jobs.ingest import accounting, inputs, zabbix
from burstlake.jobs.ingest.landing import ingest
from burstlake.jobs.ingest.zabbix import classify, decode
from burstlake.lake import read_table
from tests.builders.zabbix import zabbix_line

T0 = 1700000000


def _line(host: object, t: int, value: object, itemid: object = 1, **extra: object) -> str:
    return zabbix_line(host, T0 + t, value, itemid=itemid, ns=5, **extra)


def _export(path: Path) -> Path:
    """Good lines of every member type the fast path reads, with bad lines mixed in (some
    only line by line, some valid JSON that the fast path rejects and checks again)."""
    lines = []
    for node in range(4):
        host = f"cn{node}"
        for k in range(40):
            lines.append(_line(host, 10 * k, 1000 * k * (node + 1), itemid=node * 10 + 1))
            value = 7.25 * k if node % 2 else str(300 * k)  # floats and API-style text
            lines.append(_line(host, 10 * k + 3, value, itemid=node * 10 + 2, name="Memory used"))
    bad = [
        (5, _line("cn0", 20, -5)),  # valid JSON, rejected: checked again line by line
        (17, _line("cn1", 30, 10, name="Disk free")),  # not in the mapping
        (29, _line("cn1", 30, 999, itemid=11)),  # cn1's instant 30 once more
        (41, ""),  # an empty line: this block goes line by line
        (90, '{"host": {"host": "cn2"}, "itemid": 21, "clock": '),  # truncated
        (120, "[1, 2]"),
        (150, _line("cn3", 25, float("nan"))),  # NaN: JSON to DuckDB, no number
        (200, _line("cn2", 400, 2**64 - 1)),  # a uint64 a double cannot hold
        (230, _line("cn3", 55, "1e3", itemid="31")),  # itemid as text, value as text
        (260, _line({"name": "cn3"}, 60, 5)),  # a host object without host
        (300, _line("cn0", 70, 1.5e300)),  # beyond 64 bits, as a double
        (310, _line("cn0", 75, 5, clock_extra=1)),  # an unknown member: ignored
    ]
    for at, text in sorted(bad):  # each lands as line at + 1
        lines.insert(at, text)
    path.write_text("\n".join(lines) + "\n")
    return path


def _landed(lake: Path, path: Path, **options: object) -> dict:
    (report,) = ingest(zabbix.SOURCE, [path], lake, options=options or None)
    rows = read_table(lake, "node_io").to_pylist()
    quarantine = read_table(lake, "quarantine", columns=["location", "raw", "reason"])
    return {
        "counts": (report.records_in, report.landed, report.quarantined),
        "traffic": report.traffic,
        "node_io": sorted(rows, key=lambda r: (r["node"], r["ts"])),
        "quarantine": sorted(quarantine.to_pylist(), key=lambda r: r["location"]),
    }


@pytest.mark.parametrize("threads", [1, 2])
def test_fast_and_line_by_line_decoders_land_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    monkeypatch.setattr(decode, "BLOCK_BYTES", 4000)  # blocks of ~25 lines
    monkeypatch.setattr(inputs, "READ_BYTES", 1000)
    path = _export(tmp_path / "history-mixed.ndjson")
    fast_blocks = []
    read_block = decode._read_block

    def counted(*args: object) -> pa.Table | None:
        found = read_block(*args)
        fast_blocks.append(found is not None)
        return found

    monkeypatch.setattr(decode, "_read_block", counted)
    fast = _landed(tmp_path / "fast", path, threads=threads)
    assert any(fast_blocks) and not all(fast_blocks)  # both paths ran
    monkeypatch.setattr(decode, "_read_block", lambda *args: None)
    slow = _landed(tmp_path / "slow", path, threads=threads)
    assert fast == slow
    assert fast["counts"] == (332, 323, 9)  # the unknown member is no fault
    reasons = {r["location"]: r["reason"] for r in fast["quarantine"]}
    assert reasons["line 6"] == "negative value -5"
    assert reasons["line 42"] == "empty line"
    assert reasons["line 92"] == "duplicate sample of line 30 with another value (kept 999)"
    assert reasons["line 151"] == "value NaN is not a number"
    assert reasons["line 301"] == "value 1.5e300 is not a number"
    for parts in fast["traffic"].values():
        assert parts["seen"] == sum(parts.get(r, 0) for r in accounting.TRAFFIC_REASONS)


@pytest.mark.parametrize(
    "text",
    [
        b'{"itemid": 1}\n\n{"itemid": 2}',  # a blank line
        b'{"itemid": 1} {"itemid": 2}\n{"itemid": 3}',  # two objects on a line
        b'{"itemid": 1} {\n"itemid": 2}',  # an object across lines
        b'{"itemid": 1}\n[1]',
        b'{"itemid": 1}\n{"itemid": 2',
        b'{"value": NaN}',
        b'{"value": 18446744073709551615}',
        b'{"value": [1]}',
        b'{"host": "a"}\n{"host": {"host": "b"}}',
        '{"host": "\ufffd"}'.encode(),
    ],
)
def test_blocks_the_fast_path_cannot_read_line_by_line_go_line_by_line(text: bytes) -> None:
    lines = decode._lines(text, 1)
    table = decode._read_block(text, lines)
    assert table is None or decode._members(table, lines) is None


@pytest.mark.parametrize(
    "records",
    [
        [  # the real-time export: numbers, host objects (one without host), other members
            {"host": {"host": "cn1"}, "itemid": 7, "name": "n", "clock": T0, "ns": 0, "value": 12},
            {"host": {"name": "cn3"}, "value": None, "extra": [1, {"a": 2}]},
            {"host": {"host": "cn4"}, "value": -3, "ns": 999999999, "type": 0},
        ],
        [  # history.get objects: every member text
            {"host": "cn2", "itemid": "8", "key_": "k", "clock": "1", "value": "x", "type": "0"},
            {"host": "{not an object}", "itemid": "9", "value": "1.5", "ns": "12"},
        ],
    ],
)
def test_fast_members_are_the_text_duckdb_reads(records: list[dict]) -> None:
    text = "\n".join(json.dumps(r) for r in records).encode()
    lines = decode._lines(text, 1)
    fast = decode._members(decode._read_block(text, lines), lines)
    assert fast is not None
    with duckdb.connect() as con:
        con.register("lines", lines)
        query = decode._NDJSON_FIELDS.format(members=decode._JSON_MEMBERS)
        slow = con.execute(query).fetch_arrow_table()
        con.register("members", fast)
        query = decode._NDJSON_FIELDS.format(members="SELECT * FROM members")
        assert con.execute(query).fetch_arrow_table().to_pylist() == slow.to_pylist()


def test_threads_must_be_a_positive_count() -> None:
    with pytest.raises(ValueError, match=r"--threads must be 1\.\.256"):
        zabbix.check_options({"threads": 0})


def _typed_lines() -> list[str]:
    """Lines of the export's own member types: samples, and lines each typed check must send
    to the classifier (or count as ignored)."""
    good = {"host": {"host": "cn1", "name": "cn1"}, "itemid": 7, "name": "Lustre read bytes"}
    good |= {"clock": T0, "ns": 5, "value": 12, "type": 3}
    variants = [
        {},
        {"type": 0},
        {"ns": None},
        {"value": 0},
        {"host": {"host": " cn2"}},
        {"host": {"host": "cn3.example.org"}},
        {"name": "Memory used", "value": 2**62 - 1},  # a gauge beyond the margin
        {"name": "Memory used", "value": 2**63 - 1},  # a gauge beyond 64 bits
        {"name": "Memory used", "value": 2**40},
        {"name": "Lustre write bytes", "value": 2**63 - 1},  # a counter: within 64 bits
        {"name": "Disk free"},  # ignored (--mapping below)
        {"name": "Disk free", "clock": -1},  # a bad clock before the ignore list
        {"name": "Not mapped"},
        {"name": None},
        {"key_": "lustre.read_bytes"},
        {"itemid": None},
        {"host": {"host": ""}},
        {"host": {"host": "\t"}},
        {"host": {"name": "cn4"}},
        {"host": None},
        {"clock": None},
        {"clock": -1},
        {"clock": 4102444800},
        {"ns": -1},
        {"ns": 10**9},
        {"value": -1},
        {"value": None},
        {"type": 1},
        {"type": 4},
        {"type": None},
    ]
    return [json.dumps(good | variant) for variant in variants]


def test_typed_samples_are_the_classifiers(tmp_path: Path) -> None:
    """Every line the typed checks vouch for is the sample the classifier SQL makes of it,
    every line they count as ignored is one the classifier ignores, and they vouch for some
    lines and leave others to the classifier."""
    mapping = tmp_path / "mapping.yaml"
    default = Path(decode.__file__).with_name("zabbix_mapping.yaml").read_text()
    mapping.write_text(default + "ignore: {names: [Disk free]}\n")
    settings = zabbix.Settings.from_options({"mapping": str(mapping)})
    text = "\n".join(_typed_lines()).encode()
    lines = decode._lines(text, 1)
    table = decode._read_block(text, lines)
    assert table is not None and classify.typed(table)
    rules = classify.Rules.of(settings.mapping.table(), settings.interval)
    sure, others, ignored = classify.split(table, lines, rules)
    with duckdb.connect() as con:
        con.register("mapping", settings.mapping.table())
        decode._load_items(con, None)
        con.register("lines", lines)
        classified = con.execute(
            classify.CLASSIFY.format(decoder=decode._decoder(None)),
            classify.params(settings),
        )
        by_line = {r["line_no"]: r for r in classified.fetch_arrow_table().to_pylist()}
    assert 0 < sure.num_rows < lines.num_rows and ignored == 1
    # both readings are generated from the one list of classes
    assert classify.reason_sql(classify.CHECKS) in classify.CLASSIFY
    assert classify.CLASSIFY.count("\n         WHEN ") == len(classify.CHECKS) - 1
    columns = ("host", "item", "metric", "kind", "t_ns", "value")
    for row in sure.to_pylist():
        reference = by_line[row["line_no"]]
        assert reference["reason"] is None
        assert {c: row[c] for c in columns} == {c: reference[c] for c in columns}
    decided = set(sure.column("line_no").to_pylist())
    left = {lines.column("line_no")[int(i)].as_py() for i in others}
    assert not decided & left
    assert [n for n in by_line if n not in decided | left] == [
        n for n, r in by_line.items() if r["reason"] == "ignore"
    ]
