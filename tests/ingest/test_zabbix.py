"""Zabbix ingest → node_io: exact hand-computed deltas, quarantine, accounting.

See docs/design.md, 'Sources' and 'The lake'.
"""

from __future__ import annotations

import gzip
import itertools
import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from burstlake.cli import main
from burstlake.jobs.ingest import inputs, zabbix
from burstlake.jobs.ingest.landing import ingest
from burstlake.jobs.ingest.zabbix import decode, regions, stream
from burstlake.jobs.ingest.zabbix.mapping import HostNames, load_mapping, prefix_rewrite
from burstlake.lake import read_table, write_table
from burstlake.schemas.tables import NODE_IO_TRAFFIC
from tests.builders.paths import FIXTURES as ALL_FIXTURES
from tests.builders.zabbix import zabbix_line

FIXTURES = ALL_FIXTURES / "zabbix"
T0 = 1700000000
TRAFFIC = NODE_IO_TRAFFIC


def _ts(offset: int) -> datetime:
    return datetime.fromtimestamp(T0 + offset, UTC)


def _rows(lake: Path) -> list[dict]:
    rows = read_table(lake, "node_io").to_pylist()
    return sorted(rows, key=lambda r: (r["node"], r["ts"]))


def _row(node: str, offset: int, cpu=None, mem=None, **traffic) -> dict:
    return {
        "node": node,
        "cluster": None,  # no --cluster: the unnamed machine
        "ts": _ts(offset),
        "interval_s": 10,
        **{m: traffic.get(m) for m in TRAFFIC},
        "cpu_load": cpu,
        "mem_used_bytes": mem,
    }


def _quarantine(lake: Path) -> list[tuple[str, str]]:
    rows = read_table(lake, "quarantine", columns=["location", "reason"]).to_pylist()
    return sorted((r["location"], r["reason"]) for r in rows)


def _copy(name: str, tmp_path: Path, compress: bool) -> Path:
    source = FIXTURES / name
    if not compress:
        return source
    target = tmp_path / f"{name}.gz"
    target.write_bytes(gzip.compress(source.read_bytes()))
    return target


# ------------------------------------------------------------------ the three input shapes

TAGS_ROWS = [
    # read's own interval is the median spacing, 10 s; each rise is spread over the slots it
    # covers in proportion to time: 1000 -> 1500 over (0, 10.4] gives 480 to slot 0, 20 to 10
    _row("cn00001", 0, cpu=1.5, mem=1000000, read_bytes=480, write_bytes=0),
    # 1500 -> 4000 over (19.7, 30]: 72 to slot 10 (0.3 s of 10.3), 2428 to slot 20
    _row("cn00001", 10, cpu=2.0, read_bytes=20 + 72, write_bytes=800),
    _row("cn00001", 20, cpu=0.25, mem=2000, read_bytes=2428, write_bytes=0),
    # 30: the read counter resets (4000 -> 100), write is flat: no traffic, no row
    _row("cn00001", 40, cpu=3.0, read_bytes=250, write_bytes=0),
    # 50..70: read's 20 s spacing (no sample at 60) is within 3 x 10 s: 1000 spread evenly
    _row("cn00001", 50, mem=5000, read_bytes=500, write_bytes=100),
    _row("cn00001", 60, read_bytes=500, write_bytes=0),
    _row("cn00001", 70, cpu=0.5, read_bytes=50, write_bytes=0),
]
TAGS_QUARANTINE = [
    ("line 14", "empty line"),
    ("line 20", "duplicate sample of line 17"),
    ("line 21", "value type 4 (text) is not numeric (0 float, 3 unsigned)"),
    ("line 22", "item name 'Disk free' is not in the mapping zabbix_mapping.yaml"),
    ("line 30", "value n/a is not a number"),
    ("line 31", "not valid JSON (truncated line?)"),
]


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_item_tags_export_exact_deltas(lake: Path, tmp_path: Path, compress: bool) -> None:
    path = _copy("history-tags.ndjson", tmp_path, compress)
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    assert (report.records_in, report.landed, report.quarantined) == (31, 25, 6)
    assert report.rows == {"node_io": 7}
    assert _rows(lake) == TAGS_ROWS
    assert _quarantine(lake) == TAGS_QUARANTINE
    raw = dict((r["location"], r["raw"]) for r in read_table(lake, "quarantine").to_pylist())
    assert raw["line 31"] == (FIXTURES / "history-tags.ndjson").read_text().splitlines()[30]
    # bytes: read rises 500+2500+250+1000+50 land, 100 since the reset
    assert _traffic(lake) == {
        "read_bytes": {"seen": 4400, "landed": 4300, "quarantined": 0, "gap": 0, "reset": 100},
        "write_bytes": {"seen": 900, "landed": 900, "quarantined": 0, "gap": 0, "reset": 0},
    }


def _traffic(lake: Path) -> dict[str, dict[str, int]]:
    (row,) = read_table(lake, "ingest_log", columns=["traffic"]).column(0).to_pylist()
    return {t.pop("metric"): t for t in row}


def test_applications_form_host_rewrite_and_huge_counters(lake: Path, tmp_path: Path) -> None:
    path = _copy("history-apps.ndjson", tmp_path, True)
    (report,) = ingest(zabbix.SOURCE, [path], lake, {"host_prefix": ["nid=cn"]})
    assert (report.records_in, report.landed, report.quarantined) == (16, 16, 0)
    assert _rows(lake) == [
        _row("cn00002", 0, net_rx_bytes=0, net_tx_bytes=700, read_ops=0, osc_write_bytes=4096),
        _row("cn00002", 10, net_rx_bytes=5000, net_tx_bytes=0, read_ops=4, osc_write_bytes=0),
        _row("cn00002", 20, net_rx_bytes=500, net_tx_bytes=0, read_ops=0, osc_write_bytes=4096),
    ]


DB_ROWS = [
    # write 0 -> 4096 over (0, 10.005]: 4093 to slot 0, 3 to slot 10; the rate's first sample
    # (1000 B/s at 10) only starts its series, as a counter's does
    _row("cn00003", 0, cpu=0.75, write_bytes=4093),
    _row("cn00003", 10, write_bytes=3, net_rx_bytes=0),
    # 20 -> 30: write rises 8192; the rate is 1600 bit/s x 0.125 = 200 B/s for 10 s
    _row("cn00003", 20, write_bytes=8192, net_rx_bytes=2000),
]


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_db_shape_with_item_table_and_rates(lake: Path, tmp_path: Path, compress: bool) -> None:
    mapping = FIXTURES / "mapping-rates.yaml"
    options = {"items": str(FIXTURES / "items.tsv"), "mapping": str(mapping)}
    path = _copy("history_uint.tsv", tmp_path, compress)
    (report,) = ingest(zabbix.SOURCE, [path], lake, options)
    assert (report.records_in, report.landed, report.quarantined) == (13, 8, 5)
    assert _rows(lake) == DB_ROWS
    assert _quarantine(lake) == [
        ("line 14", "duplicate sample of line 4"),
        ("line 6", f"item key 'custom.thing' is not in the mapping {mapping}"),
        ("line 7", "expected 4 fields (itemid, clock, value, ns), found 2"),
        ("line 8", "value type 1 (character) is not numeric (0 float, 3 unsigned)"),
        ("line 9", "itemid 999 is not in the item table"),
    ]


def test_api_rows_match_db_rows(lake: Path) -> None:
    options = {
        "items": str(FIXTURES / "items.tsv"),
        "mapping": str(FIXTURES / "mapping-rates.yaml"),
    }
    (report,) = ingest(zabbix.SOURCE, [FIXTURES / "history-api.ndjson"], lake, options)
    assert (report.records_in, report.landed, report.quarantined) == (13, 8, 5)
    assert _rows(lake) == DB_ROWS
    locations = [loc for loc, _ in _quarantine(lake)]
    assert sorted(locations) == sorted(["line 5", "line 6", "line 7", "line 8", "line 13"])


def _export(itemid: int, clock: object, value: object, ns: object = 0, host="cn7") -> str:
    return zabbix_line(host, clock, value, itemid=itemid, ns=ns, host_name=False)


def test_odd_lines_are_quarantined_with_their_reason(lake: Path, tmp_path: Path) -> None:
    lines = [
        _export(1, T0, 100),
        _export(1, T0, 150),  # same instant, other value
        _export(1, T0 + 10, -5),
        _export(1, "yesterday", 5),
        _export(1, T0 + 10, 5, ns=2_000_000_000),
        "[1, 2]",
        json.dumps({"itemid": 1, "clock": T0, "value": 1}),  # no host, no item table
        _export(1, T0 + 10, "1e3", host=""),
        _export(1, T0 + 10, 400),
    ]
    path = tmp_path / "history-odd.ndjson"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())  # CRLF line ends
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    assert (report.records_in, report.landed, report.quarantined) == (9, 2, 7)
    assert _quarantine(lake) == [
        ("line 2", "duplicate sample of line 1 with another value (kept 100)"),
        ("line 3", "negative value -5"),
        ("line 4", "clock yesterday is not a Unix time in seconds"),
        ("line 5", "ns 2000000000 is not 0..999999999"),
        ("line 6", "not a JSON object"),
        ("line 7", "no host: history rows need the item table (--items FILE)"),
        ("line 8", "empty host name"),
    ]
    assert _rows(lake) == [_row("cn7", 0, read_bytes=300)]


# ------------------------------------------------------------------ whole-file behaviour


def test_reingesting_the_same_file_changes_nothing(lake: Path) -> None:
    path = FIXTURES / "history-tags.ndjson"
    ingest(zabbix.SOURCE, [path], lake)
    ingest(zabbix.SOURCE, [path], lake)
    assert _rows(lake) == TAGS_ROWS
    assert _quarantine(lake) == TAGS_QUARANTINE
    assert read_table(lake, "ingest_log").num_rows == 1


def test_history_rows_without_item_table_are_unusable(lake: Path) -> None:
    (report,) = ingest(zabbix.SOURCE, [FIXTURES / "history_uint.tsv"], lake)
    assert report.error is None
    reasons = {reason for _, reason in _quarantine(lake)}
    assert reasons == {
        "no host: history rows need the item table (--items FILE)",
        "expected 4 fields (itemid, clock, value, ns), found 2",
    }
    assert (report.records_in, report.quarantined) == (13, 13)


def test_unknown_header_is_unusable(lake: Path, tmp_path: Path) -> None:
    path = tmp_path / "history.csv"
    path.write_text("host,when,bytes\ncn1,1,2\n")
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    assert report.error.startswith("neither a Zabbix real-time export (NDJSON) nor history rows")
    assert not read_table(lake, "node_io").num_rows


def test_an_empty_file_is_refused_whole(lake: Path, tmp_path: Path) -> None:
    """The rule of docs/design.md, "Sources": an empty file is refused whole, exit status 1."""
    path = tmp_path / "history-empty.ndjson"
    path.write_bytes(b"")
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    assert report.error == "empty file: no Zabbix history lines"
    assert main(["ingest", "zabbix", str(path), "--lake", str(lake)]) == 1


SACCT_JSON = {"meta": {"plugin": {"type": "openapi/dbv0.0.37"}}, "errors": [], "jobs": [{}]}


@pytest.mark.parametrize("indent", [None, 2], ids=["one-line", "pretty"])
def test_sacct_json_given_to_zabbix_is_refused_whole(
    lake: Path, tmp_path: Path, indent: int | None
) -> None:
    path = tmp_path / "history-sacct.json"
    path.write_text(json.dumps(SACCT_JSON, indent=indent) + "\n")
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    assert report.error.startswith(
        "a multi-line JSON document" if indent else "a JSON document (meta, errors, jobs)"
    )
    assert (report.records_in, report.quarantined) == (1, 1)


def test_a_directory_gives_all_its_files(lake: Path, tmp_path: Path) -> None:
    """``zabbix DIR`` takes every file, whatever its name (not only history*)."""
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "syncer-1.ndjson").write_text(_line("cn5", 0, 0) + "\n" + _line("cn5", 10, 70) + "\n")
    (folder / "history-2.ndjson.old").write_text(_line("cn6", 0, 0) + "\n")
    assert main(["ingest", "zabbix", str(folder), "--lake", str(lake)]) == 0
    files = sorted(
        Path(f).name for f in read_table(lake, "ingest_log", ["file"]).column(0).to_pylist()
    )
    assert files == ["history-2.ndjson.old", "syncer-1.ndjson"]


@pytest.mark.parametrize("cut", [5, 15, 40, -40, -9])
def test_a_cut_gzip_file_says_it_was_cut(lake: Path, tmp_path: Path, cut: int) -> None:
    data = gzip.compress((FIXTURES / "history-tags.ndjson").read_bytes())
    path = tmp_path / "history-cut.ndjson.gz"
    path.write_bytes(data[:cut])
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    reasons = [r for _, r in _quarantine(lake)] + [report.error or ""]
    assert any("truncated" in r or "cut" in r for r in reasons), reasons
    assert report.records_in == report.landed + report.quarantined


@pytest.mark.parametrize("extra", [0, 1, 2000, 3000, 10**6])
def test_counters_at_or_above_2_64_are_refused_alike(
    lake: Path, tmp_path: Path, extra: int
) -> None:
    path = tmp_path / "history-big.ndjson"
    path.write_text(_line("cn5", 0, 5) + "\n" + _line("cn5", 10, 2**64 + extra) + "\n")
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    assert _quarantine(lake) == [("line 2", f"value {2**64 + extra} is beyond 64 bits")]
    assert (report.landed, report.quarantined) == (1, 1)


def test_truncated_gzip_keeps_what_came_before(lake: Path, tmp_path: Path) -> None:
    data = gzip.compress((FIXTURES / "history-tags.ndjson").read_bytes())
    path = tmp_path / "history-cut.ndjson.gz"
    path.write_bytes(data[: len(data) - 12])  # lose the CRC, size and a little deflate data
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    broken = [r for r in _quarantine(lake) if r[0].startswith("byte ")]
    assert len(broken) == 1 and "gzip stream ends early (truncated file)" in broken[0][1]
    assert report.records_in == report.landed + report.quarantined
    assert _rows(lake)[:3] == TAGS_ROWS[:3]


def test_node_missing_from_topology_quarantines_its_samples(lake: Path) -> None:
    topology = pa.table({"node": ["cn00002"], "cabinet": ["cab000"]})
    write_table(lake, "topology", topology, "topo")
    (report,) = ingest(zabbix.SOURCE, [FIXTURES / "history-tags.ndjson"], lake)
    assert (report.records_in, report.landed, report.quarantined) == (31, 0, 31)
    rows = read_table(lake, "quarantine").to_pylist()
    host = [r for r in rows if r["location"].startswith("host ")]
    assert [r["location"] for r in host] == ["host cn00001 (25 samples of this file)"]
    assert "expect_column_values_to_be_in_set" in host[0]["reason"]
    assert not read_table(lake, "node_io").num_rows
    assert _traffic(lake)["read_bytes"] == {
        "seen": 4400, "landed": 0, "quarantined": 4300, "gap": 0, "reset": 100
    }  # fmt: skip


def test_small_blocks_and_batches_give_the_same_rows(
    lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Block, read and batch boundaries fall inside lines and between nodes; nodes spread
    over several pass-2 buckets."""
    monkeypatch.setattr(stream, "NODE_BUCKETS", 3)
    monkeypatch.setattr(decode, "BLOCK_BYTES", 700)
    monkeypatch.setattr(inputs, "READ_BYTES", 333)
    monkeypatch.setattr(regions, "ROWS_PER_BATCH", 2)
    path = tmp_path / "history-both.ndjson.gz"
    text = (FIXTURES / "history-tags.ndjson").read_text().splitlines()[:29]
    text += (FIXTURES / "history-apps.ndjson").read_text().splitlines()
    path.write_bytes(gzip.compress(("\n".join(text) + "\n").encode()))
    (report,) = ingest(zabbix.SOURCE, [path], lake, {"host_prefix": ["nid=cn"]})
    assert (report.records_in, report.quarantined) == (45, 4)
    assert [r for r in _rows(lake) if r["node"] == "cn00001"] == TAGS_ROWS
    assert [r["node"] for r in _rows(lake)].count("cn00002") == 3


def test_cli_ingest_zabbix(lake: Path, capsys: pytest.CaptureFixture) -> None:
    argv = ["ingest", "zabbix", str(FIXTURES / "history-tags.ndjson"), "--lake", str(lake)]
    assert main([*argv, "--interval", "10"]) == 0
    out = capsys.readouterr().out
    assert "31 records in, 25 landed, 6 quarantined" in out
    assert "read_bytes: seen 4400 = landed 4300 + reset 100" in out
    assert main([*argv, "--mapping", str(lake / "missing.yaml")]) == 2


# ------------------------------------------------------------------ independent check


def _export_lines(rng: np.random.Generator) -> tuple[list[str], dict]:
    """Random counters with jitter, resets, gaps, duplicates and shuffled lines."""
    lines, series = [], {}
    for node in ("cn00010", "cn00011"):
        for itemid, name in ((1, "Lustre read bytes"), (2, "Network sent bytes")):
            grid = np.arange(0, 600, 10)
            grid = grid[rng.random(grid.size) > 0.1]  # gaps
            t_ns = (T0 + grid) * 10**9 + rng.integers(-2 * 10**9, 2 * 10**9, grid.size)
            values = np.cumsum(rng.integers(0, 5000, grid.size) * (rng.random(grid.size) < 0.6))
            reset = rng.integers(5, grid.size - 5)
            values[reset:] -= values[reset] - rng.integers(0, 50)  # counter reset / reboot
            itemkey = f"{node}/{itemid}"
            series[itemkey] = (node, name, t_ns, values)
            for t, v in zip(t_ns, values, strict=True):
                lines.append(
                    zabbix_line(
                        node,
                        int(t // 10**9),
                        int(v),
                        itemid=itemid * 100 + int(node[-2:]),
                        name=name,
                        ns=int(t % 10**9),
                        item_tags=[],
                    )
                )
    lines += [lines[i] for i in rng.choice(len(lines), 20, replace=False)]  # duplicates
    rng.shuffle(lines)
    return lines, series


def _expected_deltas(t_ns: np.ndarray, values: np.ndarray, interval: int) -> dict[int, int]:
    """Plain-Python rendering of the rule (zabbix/deltas.py): each rise between consecutive samples
    spread over the grid slots it covers in proportion to time (cumulative floor), unless the
    spacing exceeds 3 x the median spacing of its hour (lower median) or an hour; drops add
    nothing."""
    order = np.argsort(t_ns, kind="stable")
    t = [int(x) for x in t_ns[order]]
    v = [int(x) for x in values[order]]
    hour = 3600 * 10**9
    spacings: dict[int, list[int]] = {}
    for a, b in itertools.pairwise(t):
        if b - a <= hour:
            spacings.setdefault(b // hour, []).append(b - a)
    median = {h: sorted(xs)[(len(xs) - 1) // 2] for h, xs in spacings.items()}
    step = interval * 10**9
    out: dict[int, int] = {}
    for (ta, va), (tb, vb) in itertools.pairwise(zip(t, v, strict=True)):
        rise, span = vb - va, tb - ta
        if rise < 0 or span > hour or span > 3 * median[tb // hour]:
            continue
        for slot in range(ta // step, (tb - 1) // step + 1):
            part = rise * (min(tb, (slot + 1) * step) - ta) // span
            part -= rise * (max(ta, slot * step) - ta) // span
            out[slot * interval - T0] = out.get(slot * interval - T0, 0) + part
    return out


@pytest.mark.parametrize("interval", [10, 30])
def test_deltas_match_an_independent_numpy_computation(
    lake: Path, tmp_path: Path, interval: int
) -> None:
    lines, series = _export_lines(np.random.default_rng(7 + interval))
    path = tmp_path / "history-random.ndjson"
    path.write_text("\n".join(lines) + "\n")
    (report,) = ingest(zabbix.SOURCE, [path], lake, {"interval": interval})
    assert (report.records_in, report.quarantined) == (len(lines), 20)
    column = {"Lustre read bytes": "read_bytes", "Network sent bytes": "net_tx_bytes"}
    expected: dict[tuple[str, int], dict[str, int]] = {}
    for node, name, t_ns, values in series.values():
        for offset, delta in _expected_deltas(t_ns, values, interval).items():
            expected.setdefault((node, offset), {})[column[name]] = delta
    expected = {k: v for k, v in expected.items() if max(v.values()) > 0}
    got = duckdb.sql(
        "SELECT node, CAST(epoch(ts) AS BIGINT) - $t0 AS offset, read_bytes, net_tx_bytes "
        "FROM read_parquet($files) ORDER BY ALL",
        params={"t0": T0, "files": [str(p) for p in (lake / "node_io").rglob("*.parquet")]},
    ).fetchall()
    assert {(n, o): {"read_bytes": r, "net_tx_bytes": x} for n, o, r, x in got} == {
        k: {"read_bytes": v.get("read_bytes"), "net_tx_bytes": v.get("net_tx_bytes")}
        for k, v in expected.items()
    }
    assert len(got) > 20


# ------------------------------------------------------------------ mapping and host names


def test_default_mapping_covers_the_contract() -> None:
    table = load_mapping().table().to_pylist()
    names = {r["ident"]: (r["metric"], r["kind"]) for r in table if r["match"] == "name"}
    keys = {r["ident"]: r["metric"] for r in table if r["match"] == "key"}
    assert names["Lustre OSC read bytes"] == ("osc_read_bytes", "counter")
    assert names["CPU load (1 min average)"] == ("cpu_load", "gauge")
    assert keys["net.if.out[ib0]"] == "net_tx_bytes"
    assert len(names) == len(keys) == 10


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("items: [{metric: iops, names: [x]}]", "metric 'iops' is not one of"),
        ("items: [{metric: cpu_load, kind: counter, names: [x]}]", "must be of kind gauge"),
        ("items: [{metric: read_bytes}]", "at least one item name or key"),
        (
            "items: [{metric: read_bytes, keys: [k]}, {metric: write_bytes, keys: [k]}]",
            "key 'k' mapped more than once",
        ),
        ("items: [{metric: read_bytes, keys: [k], scale: -1}]", "scale must be > 0"),
        ("nothing: here", "expected a top-level 'items' list"),
        ("items: [", "not valid YAML"),
    ],
)
def test_bad_mapping_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "mapping.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_mapping(path)


def test_host_names_become_node_names() -> None:
    hosts = HostNames(prefixes=(prefix_rewrite("nid="), prefix_rewrite("n=cn")))
    assert hosts.node("nid05301.edison.nersc.gov") == "05301"
    assert hosts.node("n042.local") == "cn042"
    assert hosts.node("10.1.2.3") == "10.1.2.3"
    assert HostNames(strip_domain=False).node("cn1.example.org") == "cn1.example.org"
    with pytest.raises(ValueError, match="is not OLD=NEW"):
        prefix_rewrite("nid")


def _line(host: str, t: int, value, itemid: int = 1, name: str = "Lustre read bytes") -> str:
    return zabbix_line(host, T0 + t, value, itemid=itemid, name=name, ensure_ascii=False)


def test_hostile_export_bom_host_names_encodings_and_huge_values(
    lake: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A BOM, host names that give no node or another host's node, Latin-1 bytes, values
    beyond 64 bits: each a one-line reason, the good lines land, no traceback."""
    lines = [
        _line("cn7", 0, 100),  # line 1, after the BOM
        _line("cn7", 10, 600),
        _line("cn7.example.org", 10, 600, itemid=2),  # the same node under a second name
        _line("../../etc/passwd", 10, 5),
        _line(".", 10, 5),
        _line("cn8", 0, 10**30),  # beyond 64 bits
        _line("cn8", 10, 2**64 - 1),  # a legal uint64, but a rise of ~2^64: a re-initialised
        # counter, counted as a reset
        _line("cn8", 0, 5, itemid=3),
        _line("cn8", 10, 2**64 - 10, itemid=3),
    ]
    text = ("\n".join(lines) + "\n").encode()
    latin1 = _line("n\u00f6de9", 10, 5).encode("latin-1")
    path = tmp_path / "history-hostile.ndjson"
    path.write_bytes(b"\xef\xbb\xbf" + text + latin1 + b"\n")
    assert main(["ingest", "zabbix", str(path), "--lake", str(lake)]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    assert _rows(lake) == [_row("cn7", 0, read_bytes=500)]
    assert _quarantine(lake) == [
        ("line 10", "not valid UTF-8 text (Latin-1 or binary bytes)"),
        ("line 3", "host 'cn7.example.org' is node cn7, already named by host 'cn7'"),
        ("line 4", "host name '../../etc/passwd' gives an empty node name"),
        ("line 5", "host name '.' gives an empty node name"),
        ("line 6", "value 1000000000000000000000000000000 is beyond 64 bits"),
    ]
    # cn8's jump of ~2^64 is no count of bytes: nothing seen, nothing landed
    assert _traffic(lake)["read_bytes"] == {
        "seen": 500, "landed": 500, "quarantined": 0, "gap": 0, "reset": 0
    }  # fmt: skip


def test_ignored_items_are_counted_not_quarantined(lake: Path, tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.yaml"
    default = (Path(zabbix.__file__).parent / "zabbix_mapping.yaml").read_text()
    mapping.write_text(default + "ignore: {names: [Disk free]}\n")
    (report,) = ingest(
        zabbix.SOURCE, [FIXTURES / "history-tags.ndjson"], lake, {"mapping": mapping}
    )
    assert (report.records_in, report.landed, report.quarantined) == (31, 26, 5)
    assert "line 22" not in dict(_quarantine(lake))
    assert _rows(lake) == TAGS_ROWS
    twice = tmp_path / "twice.yaml"
    twice.write_text(default + "ignore: {names: [Lustre read bytes]}\n")
    with pytest.raises(ValueError, match="name 'Lustre read bytes' mapped more than once"):
        load_mapping(twice)


# ------------------------------------------------------------------ the item's own interval


def _sparse(lake: Path, tmp_path: Path, every: int, values: list[int], name: str) -> list[dict]:
    """An export of one counter sampled every ``every`` s (a sample None is missing), ingested
    with the default options (the lake's 10 s grid)."""
    lines = [_line("cn5", i * every, v) for i, v in enumerate(values) if v is not None]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    assert report.quarantined == 0
    return [(r["ts"], r["read_bytes"]) for r in _rows(lake)]


def test_a_60s_export_lands_spread_over_the_10s_grid(lake: Path, tmp_path: Path) -> None:
    """Zabbix's default 1-minute items: each minute's rise lands in its six 10 s intervals,
    in proportion to time (600 -> 100 each; 61 -> 10, 10, 10, 10, 10, 11 by cumulative floor)."""
    rows = _sparse(lake, tmp_path, 60, [0, 600, 661, 661, 1261], "history-60s.ndjson")
    assert rows == [(_ts(t), 100) for t in range(0, 60, 10)] + [
        (_ts(60 + t), b) for t, b in zip(range(0, 60, 10), (10, 10, 10, 10, 10, 11), strict=True)
    ] + [(_ts(180 + t), 100) for t in range(0, 60, 10)]
    # 120..180: flat, so zeros, and no row
    assert _traffic(lake)["read_bytes"] == {
        "seen": 1261, "landed": 1261, "quarantined": 0, "gap": 0, "reset": 0
    }  # fmt: skip


def test_a_30s_export_with_an_outage_and_a_reset(lake: Path, tmp_path: Path) -> None:
    """30 s samples (own interval 30 s, gap beyond 3 x 30 s): a 60 s hole is bridged, a 120 s
    outage is a gap, a drop is a reset; seen = landed + gap + reset to the byte."""
    values = [0, 30, 90, None, 150, None, None, None, 1350, 60, 120, 150, 180, 210, 240]
    rows = dict(_sparse(lake, tmp_path, 30, values, "history-30s.ndjson"))
    expected = {0: 10, 10: 10, 20: 10, 30: 20, 40: 20, 50: 20}  # 0 -> 30 -> 90
    expected |= {60 + t: 10 for t in range(0, 60, 10)}  # 90 -> 150 over 60 s
    # 120 -> 240: 150 -> 1350 over 120 s is a gap; 240 -> 270 a reset (1350 -> 60)
    expected |= {270 + t: 20 for t in range(0, 30, 10)}  # 60 -> 120
    expected |= {300 + t: 10 for t in range(0, 120, 10)}  # then 30 per 30 s
    assert rows == {_ts(t): b for t, b in expected.items()}
    assert _traffic(lake)["read_bytes"] == {
        "seen": 240 - 60 + 60 + 1200 + 150, "landed": 150 + 180, "quarantined": 0,
        "gap": 1200, "reset": 60,
    }  # fmt: skip


@pytest.mark.parametrize("factor, landed", [(3.0, 330), (4.0, 1530)])
def test_the_gap_factor_is_a_setting(
    lake: Path, tmp_path: Path, factor: float, landed: int
) -> None:
    values = [0, 30, 90, None, 150, None, None, None, 1350, 60, 120, 150, 180, 210, 240]
    lines = [_line("cn5", i * 30, v) for i, v in enumerate(values) if v is not None]
    path = tmp_path / "history-30s.ndjson"
    path.write_text("\n".join(lines) + "\n")
    ingest(zabbix.SOURCE, [path], lake, {"gap_factor": factor})
    assert _traffic(lake)["read_bytes"]["landed"] == landed
    with pytest.raises(ValueError, match="--gap-factor must be a finite number >= 1"):
        zabbix.check_options({"gap_factor": 0.5})
