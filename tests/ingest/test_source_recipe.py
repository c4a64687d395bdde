"""The source recipe of docs/design.md ("To add a source"), walked with a toy: ``toyio``, lines
``host,epoch,bytes`` (the bytes a node wrote), landing in the existing ``node_io`` table. It is
added through the recipe alone: a module holding ``SOURCE = Source(...)`` with one ``Option``,
its name in ``SOURCES``. The landing engine then screens, lands, quarantines and accounts for
it, and the command line and the deployment file check its option, without a line of their
own. Expected values by hand."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pytest

from burstlake import config
from burstlake.cli import build_parser
from burstlake.cli import ingest as ingest_cli
from burstlake.jobs import ingest as sources
from burstlake.jobs.ingest import inputs, landing
from burstlake.jobs.ingest.source import (
    RECORD,
    Batch,
    Option,
    ParseContext,
    Reject,
    Source,
    UnusableInput,
    record_cluster,
)
from burstlake.lake import read_table, write_table
from burstlake.schemas import spec

INTERVAL = Option(
    "interval",
    "the node_io interval the bytes are summed into",
    type=int,
    default=10,
    bounds=(1, 3600),
    unit="seconds",
)


NOT_A_LINE = "not host,epoch,bytes with an integer epoch and byte count"


def parse(path: Path, context: ParseContext) -> Iterator[Batch]:
    """One batch: a node_io row per line, each its own record (``_record``: the line number);
    a line that is not three fields is rejected, an identical repeat is a duplicate."""
    interval = context.options.get("interval") or INTERVAL.default
    rows: list[dict] = []
    batch = Batch({}, 0)
    first: dict[str, int] = {}  # a line's text -> the line it first came on
    seen = 0
    for number, raw in enumerate(inputs.lines(inputs.text_chunks(path, context.progress)), 1):
        batch.records += 1
        line = inputs.decode_line(raw).strip()  # an Overlong is not in the toy's input
        host, *rest = line.split(",")
        if line in first:
            batch.rejects.append(Reject(f"line {number}", line, f"duplicate of line {first[line]}"))
            continue
        first[line] = number
        try:
            epoch, nbytes = (int(field) for field in rest)
        except ValueError:
            batch.rejects.append(Reject(f"line {number}", line, NOT_A_LINE))
            continue
        start = datetime.fromtimestamp(epoch - epoch % interval, UTC)
        rows.append(
            {
                "node": host,
                "cluster": record_cluster(context.options),
                "ts": start,
                "interval_s": interval,
                "write_bytes": nbytes,
                RECORD: number,
            }
        )
        batch.origins[number] = (f"line {number}", line)
        batch.record_traffic[number] = {"write_bytes": nbytes}
        seen += nbytes
    if not batch.records:
        raise UnusableInput("empty: no host,epoch,bytes line")
    schema = spec("node_io").schema.append(pa.field(RECORD, pa.int64()))
    batch.tables["node_io"] = pa.Table.from_pylist(rows, schema=schema)
    batch.traffic["write_bytes"] = {"seen": seen}
    yield batch


SOURCE = Source("toyio", ("node_io",), parse, options=(INTERVAL,))


@pytest.fixture
def toyio(monkeypatch: pytest.MonkeyPatch) -> Iterator[Source]:
    """The recipe, as a registration the test undoes: ``jobs/ingest/toyio.py`` (a module
    holding ``SOURCE``) and ``toyio`` in ``SOURCES``. ``burstlake/cli/ingest.py`` binds
    ``SOURCES`` at import, so the tuple is replaced there too, as the one edit of the tuple
    in ``jobs/ingest/__init__.py`` would."""
    module = ModuleType("burstlake.jobs.ingest.toyio", "A toy source: lines host,epoch,bytes.")
    module.SOURCE = SOURCE
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(sources, "toyio", module, raising=False)
    monkeypatch.setattr(sources, "SOURCES", (*sources.SOURCES, "toyio"))
    monkeypatch.setattr(ingest_cli, "SOURCES", sources.SOURCES)
    config.source_options.cache_clear()
    yield sources.source_module("toyio").SOURCE
    config.source_options.cache_clear()


T0 = 1704067200  # 2024-01-01 00:00:00 UTC
LINES = [
    f"cn1,{T0 + 70},500",  # line 1: the 00:01:00 minute
    f"cn2,{T0},300",  # line 2
    "cn1,oops,7",  # line 3: malformed
    f"cn2,{T0},300",  # line 4: a duplicate of line 2
    f"cn1,{T0 + 5},200",  # line 5: before line 1 (out of order), the 00:00:00 minute
    f"ghost,{T0 + 10},40",  # line 6: a node the topology does not hold
    "cn2,17040",  # line 7: truncated (the file ends mid-line)
]


def _lake_with_topology(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    nodes = pa.Table.from_pylist(
        [{"node": n, "cabinet": "c0"} for n in ("cn1", "cn2")], schema=spec("topology").schema
    )
    write_table(lake, "topology", nodes, "topo")
    return lake


def test_a_toy_source_lands_quarantines_and_accounts_through_the_engine(
    toyio: Source, tmp_path: Path
) -> None:
    """With ``--interval 60``: cn1's lines 1 and 5 fall in minutes 1 and 0, cn2's line 2 in
    minute 0 (its repeat on line 4 is a duplicate). Line 3 and the cut line 7 are rejected by
    the parser, ghost (line 6) by the engine's node check. 7 records: 3 landed, 4 quarantined.
    Bytes: 500 + 300 + 200 + 40 = 1040 seen (the duplicate is not counted twice), 1000
    landed, 40 quarantined with ghost's record."""
    lake = _lake_with_topology(tmp_path)
    path = tmp_path / "a.toy"
    path.write_text("\n".join(LINES))  # no final line end: line 7 is cut
    (report,) = landing.ingest(toyio, [path], lake, {"interval": 60})
    assert (report.records_in, report.landed, report.quarantined) == (7, 3, 4)
    assert report.error is None and report.rows == {"node_io": 3}

    landed = read_table(lake, "node_io", ["node", "ts", "interval_s", "write_bytes"])
    minute = [datetime(2024, 1, 1, 0, m, tzinfo=UTC) for m in (0, 1)]
    assert sorted(landed.to_pylist(), key=lambda r: (r["node"], r["ts"])) == [
        {"node": "cn1", "ts": minute[0], "interval_s": 60, "write_bytes": 200},
        {"node": "cn1", "ts": minute[1], "interval_s": 60, "write_bytes": 500},
        {"node": "cn2", "ts": minute[0], "interval_s": 60, "write_bytes": 300},
    ]

    quarantined = read_table(lake, "quarantine", ["source", "file", "location", "raw", "reason"])
    rows = sorted(quarantined.to_pylist(), key=lambda r: r["location"])
    assert {(r["source"], r["file"]) for r in rows} == {("toyio", str(path))}
    assert [(r["location"], r["raw"]) for r in rows] == [
        ("line 3", "cn1,oops,7"),
        ("line 4", f"cn2,{T0},300"),
        ("line 6", f"ghost,{T0 + 10},40"),
        ("line 7", "cn2,17040"),
    ]
    reasons = [r["reason"] for r in rows]
    assert reasons[0] == reasons[3] == NOT_A_LINE
    assert reasons[1] == "duplicate of line 2"
    assert reasons[2] == "node_io: failed expect_column_values_to_be_in_set(column=node)"
    assert all("\n" not in reason for reason in reasons)

    (logged,) = read_table(lake, "ingest_log").to_pylist()
    assert (logged["source"], logged["file"], logged["bytes"]) == (
        "toyio",
        str(path),
        path.stat().st_size,
    )
    assert (logged["records_in"], logged["landed"], logged["quarantined"]) == (7, 3, 4)
    assert logged["traffic"] == [
        {"metric": "write_bytes", "seen": 1040, "landed": 1000, "quarantined": 40, "gap": 0,
         "reset": 0}
    ]  # fmt: skip


def test_a_toy_file_empty_again_or_copied(toyio: Source, tmp_path: Path) -> None:
    """An empty file is refused whole in one line; a path ingested again replaces its earlier
    rows; a copy of a landed file lands nothing."""
    lake = _lake_with_topology(tmp_path)
    empty, good, copy = tmp_path / "empty.toy", tmp_path / "b.toy", tmp_path / "b.toy.old"
    empty.write_text("")
    good.write_text(f"cn1,{T0},100\n")
    copy.write_bytes(good.read_bytes())
    reports = landing.ingest(toyio, [empty, good, good, copy], lake)
    assert reports[0].error == "empty: no host,epoch,bytes line"
    assert [(r.records_in, r.landed) for r in reports[1:3]] == [(1, 1), (1, 1)]
    assert reports[3].line() == f"{copy}: same content as {good}, already landed: nothing to do"
    (whole,) = read_table(lake, "quarantine", ["file", "location", "reason"]).to_pylist()
    assert whole == {
        "file": str(empty),
        "location": landing.WHOLE_FILE,
        "reason": "empty: no host,epoch,bytes line",
    }
    landed = read_table(lake, "node_io", ["node", "interval_s", "write_bytes"]).to_pylist()
    assert landed == [{"node": "cn1", "interval_s": 10, "write_bytes": 100}]  # the default


def test_the_toy_option_is_checked_by_the_file_and_the_command_line(
    toyio: Source, tmp_path: Path, capsys
) -> None:
    """The deployment file and the flags check ``interval`` from its ``Option`` alone."""
    path = tmp_path / "burstlake.yaml"
    path.write_text("machines: {m: {sources: {toyio: {interval: 0}}}}\n")
    with pytest.raises(config.ConfigError) as refused:
        config.load(path)
    assert str(refused.value) == (
        f"{path}: machines.m.sources.toyio.interval: --interval must be 1..3600 seconds, not 0"
    )
    path.write_text("machines: {m: {sources: {toyio: {intervall: 60}}}}\n")
    with pytest.raises(config.ConfigError, match=r"toyio\.intervall: not an option of toyio"):
        config.load(path)
    path.write_text("machines: {m: {sources: {toyio: {interval: 60}}}}\n")
    assert config.load(path).options("toyio", "m") == {"interval": 60, "cluster": "m"}

    parse = build_parser().parse_args
    with pytest.raises(SystemExit) as code:
        parse(["ingest", "toyio", "a.toy", "--interval", "3601"])
    assert code.value.code == 2
    assert "--interval must be 1..3600 seconds, not 3601" in capsys.readouterr().err
    given = parse(["ingest", "toyio", "a.toy", "--lake", str(tmp_path), "--interval", "60"])
    assert ingest_cli.options_of(given) == {"cluster": None, "interval": 60}
    with pytest.raises(SystemExit):
        parse(["ingest", "toyio", "--help"])
    assert "--interval" in capsys.readouterr().out


def test_the_toy_leaves_the_shipped_sources_alone() -> None:
    assert "toyio" not in sources.SOURCES and "toyio" not in ingest_cli.SOURCES
    with pytest.raises(ValueError, match="unknown source 'toyio'"):
        sources.source_module("toyio")
