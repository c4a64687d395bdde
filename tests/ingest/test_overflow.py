"""Traffic sums past 64 bits (hostile data: uint64 counters near 2^63): the sample whose pair
would take a sum past 2^63 - 1 bytes is quarantined by line with a one-line reason, the good
samples land, and the byte balance holds to the byte (docs/design.md, 'Sources': accounting).
Before, ``ingest_log``'s balance raised OverflowError in pyarrow and node_io's interval sum a
DuckDB ConversionException: a traceback instead of a reason."""

from __future__ import annotations

from pathlib import Path

import pyarrow.compute as pc
import pytest

from burstlake.cli import main
from burstlake.jobs.ingest.accounting import MAX_BYTES
from burstlake.lake import read_table
from tests.builders.zabbix import zabbix_line

T0 = 1_700_000_000  # on the 10 s grid
HALF = 2**62 + 1  # two of these pass 2^63 - 1


def _line(item: int, name: str, clock: int, value: int, host: str = "cn00001") -> str:
    return zabbix_line(host, clock, value, itemid=item, name=name, groups=["compute"])


def _ingest(tmp_path: Path, lines: list[str], capsys: pytest.CaptureFixture) -> tuple[Path, str]:
    export = tmp_path / "history-huge.ndjson"
    export.write_text("\n".join(lines) + "\n")
    lake = tmp_path / "lake"
    argv = ["ingest", "zabbix", str(export), "--lake", str(lake), "--interval", "10"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert "UNEXPLAINED" not in captured.out
    return lake, captured.out


def _balanced(lake: Path) -> dict[str, dict]:
    (row,) = read_table(lake, "ingest_log").to_pylist()
    assert row["records_in"] == row["landed"] + row["quarantined"]
    traffic = {parts.pop("metric"): parts for parts in row["traffic"]}
    for parts in traffic.values():
        assert (
            parts["seen"] == parts["landed"] + parts["quarantined"] + parts["gap"] + parts["reset"]
        )
        assert 0 <= parts["seen"] <= MAX_BYTES
    return {"row": row, **traffic}


def _node_io_sum(lake: Path, metric: str) -> int:
    return pc.sum(read_table(lake, "node_io").column(metric)).as_py() or 0


def test_a_counter_past_the_file_sum_is_quarantined_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """0 -> 2^63 - 1 -> 2^64 - 2: each rise fits 64 bits, the file's read_bytes (2^64 - 2)
    does not; line 3 is quarantined, the first rise and the write counter land."""
    lines = [
        _line(101, "Lustre read bytes", T0, 0),
        _line(102, "Lustre write bytes", T0, 1000),
        _line(101, "Lustre read bytes", T0 + 10, MAX_BYTES),
        _line(102, "Lustre write bytes", T0 + 10, 1500),
        _line(101, "Lustre read bytes", T0 + 20, 2 * MAX_BYTES),
        _line(102, "Lustre write bytes", T0 + 20, 2500),
    ]
    lake, out = _ingest(tmp_path, lines, capsys)
    assert "6 records in, 5 landed, 1 quarantined" in out
    (reject,) = read_table(lake, "quarantine").to_pylist()
    assert reject["file"] == str(tmp_path / "history-huge.ndjson")
    assert reject["location"] == "line 5"
    assert reject["raw"] == lines[4]
    assert "\n" not in reject["reason"]
    assert reject["reason"].startswith(
        f"read_bytes: its {MAX_BYTES} bytes would take this file's read_bytes traffic past "
        f"{MAX_BYTES} bytes"
    )
    log = _balanced(lake)
    assert log["row"]["quarantined"] == 1
    assert log["read_bytes"]["seen"] == log["read_bytes"]["landed"] == MAX_BYTES
    assert log["write_bytes"]["seen"] == log["write_bytes"]["landed"] == 1500
    assert _node_io_sum(lake, "read_bytes") == MAX_BYTES
    assert _node_io_sum(lake, "write_bytes") == 1500


def test_two_items_past_one_node_io_interval_are_quarantined_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Two read counters of one node each rise 2^62 + 1 in the same 10 s interval: their sum
    would not fit node_io's 64-bit read_bytes (before: a DuckDB ConversionException); the
    second item's rise is quarantined, the first item and a counter of another node land."""
    lines = [
        _line(101, "Lustre read bytes", T0, 0),
        _line(201, "Lustre read bytes", T0, 0),
        _line(301, "Lustre read bytes", T0, 7, host="cn00002"),
        _line(101, "Lustre read bytes", T0 + 10, HALF),
        _line(201, "Lustre read bytes", T0 + 10, HALF),
        _line(301, "Lustre read bytes", T0 + 10, 4103, host="cn00002"),
    ]
    lake, out = _ingest(tmp_path, lines, capsys)
    assert "6 records in, 5 landed, 1 quarantined" in out
    (reject,) = read_table(lake, "quarantine").to_pylist()
    assert (reject["location"], reject["raw"]) == ("line 5", lines[4])
    assert "would take" in reject["reason"] and f"past {MAX_BYTES} bytes" in reject["reason"]
    log = _balanced(lake)
    assert log["read_bytes"]["seen"] == log["read_bytes"]["landed"] == HALF + 4096
    rows = {r["node"]: r["read_bytes"] for r in read_table(lake, "node_io").to_pylist()}
    assert rows == {"cn00001": HALF, "cn00002": 4096}


def test_a_reset_to_a_value_past_64_bits_is_quarantined(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A counter dropping from 2^64 - 1 to 2^64 - 2 counts its value after the drop as
    'reset': 2^64 - 2 bytes, past 64 bits on its own; that line is quarantined and the next
    sample counts from the one before it (a rise of 10)."""
    top = 2**64 - 1
    lines = [
        _line(101, "Lustre read bytes", T0, top - 20),
        _line(101, "Lustre read bytes", T0 + 10, top - 10),
        _line(101, "Lustre read bytes", T0 + 20, top - 11),
        _line(101, "Lustre read bytes", T0 + 30, top),
    ]
    lake, out = _ingest(tmp_path, lines, capsys)
    assert "4 records in, 3 landed, 1 quarantined" in out
    (reject,) = read_table(lake, "quarantine").to_pylist()
    assert reject["location"] == "line 3"
    assert reject["reason"].startswith(f"read_bytes: its {top - 11} bytes would take")
    log = _balanced(lake)
    assert log["read_bytes"] == {"seen": 20, "landed": 20, "quarantined": 0, "gap": 0, "reset": 0}
    assert _node_io_sum(lake, "read_bytes") == 20


def test_a_sample_overflowing_node_io_only_with_an_earlier_file_is_quarantined_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture, caplog: pytest.LogCaptureFixture
) -> None:
    """Two files, each fine alone: the first's read counter rises 2^62 + 1 in an interval, the
    second's other read counter of the same node too. The second file's own sums stay below
    2^63 - 1, but its node_io interval with the first's pairs does not (before: DuckDB's
    ConversionException). Its pass 2 overflows, its rows are discarded and the sample taking
    the node's traffic past 64 bits is quarantined by line, then pass 2 runs again (within the
    one parse); the first file's rows stay. The first file, which overflows nothing, runs pass
    2 once."""
    first = [
        _line(101, "Lustre read bytes", T0, 0),
        _line(101, "Lustre read bytes", T0 + 10, HALF),
    ]
    with caplog.at_level("INFO", logger="burstlake.jobs.ingest"):
        lake, _ = _ingest(tmp_path, first, capsys)
    assert "quarantining the samples taking it there" not in caplog.text
    second = tmp_path / "history-second.ndjson"
    lines = [_line(201, "Lustre read bytes", T0, 0), _line(201, "Lustre read bytes", T0 + 10, HALF)]
    second.write_text("\n".join(lines) + "\n")
    argv = ["ingest", "zabbix", str(second), "--lake", str(lake), "--interval", "10"]
    with caplog.at_level("INFO", logger="burstlake.jobs.ingest"):
        assert main(argv) == 0
    assert "quarantining the samples taking it there" in caplog.text
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    assert "2 records in, 1 landed, 1 quarantined" in captured.out
    (reject,) = [r for r in read_table(lake, "quarantine").to_pylist() if r["file"] == str(second)]
    assert (reject["location"], reject["raw"]) == ("line 2", lines[1])
    assert reject["reason"].startswith(
        f"read_bytes: its {HALF} bytes would take node cn00001's read_bytes traffic past "
        f"{MAX_BYTES} bytes"
    )
    assert _node_io_sum(lake, "read_bytes") == HALF
    logs = {r["file"]: r for r in read_table(lake, "ingest_log").to_pylist()}
    assert (logs[str(second)]["landed"], logs[str(second)]["quarantined"]) == (1, 1)


def test_an_overflow_found_late_in_a_span_of_days_reruns_pass_2_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read counter rises 2^62 + 1 on one day and again the next: the file's read_bytes
    passes 2^63 - 1 only with the second day, which pass 2 computes in the same span as the
    first. Batches of one row make pass 2 stop in the middle of the span; its tables are
    dropped before it runs again without line 4, so the first rise lands as before."""
    from burstlake.jobs.ingest.zabbix import regions

    monkeypatch.setattr(regions, "ROWS_PER_BATCH", 1)
    day = 86_400
    lines = [
        _line(101, "Lustre read bytes", T0, 0),
        _line(101, "Lustre read bytes", T0 + 10, HALF),
        _line(101, "Lustre read bytes", T0 + day, HALF),
        _line(101, "Lustre read bytes", T0 + day + 10, 2 * HALF),
    ]
    lake, out = _ingest(tmp_path, lines, capsys)
    assert "4 records in, 3 landed, 1 quarantined" in out
    (reject,) = read_table(lake, "quarantine").to_pylist()
    assert (reject["location"], reject["raw"]) == ("line 4", lines[3])
    assert reject["reason"].startswith(
        f"read_bytes: its {HALF} bytes would take this file's read_bytes traffic past"
    )
    log = _balanced(lake)
    assert log["read_bytes"]["seen"] == log["read_bytes"]["landed"] == HALF
    assert _node_io_sum(lake, "read_bytes") == HALF


def test_another_sources_file_past_a_64_bit_sum_is_refused_whole_after_one_parse(
    lake: Path, tmp_path: Path
) -> None:
    """The landing engine's own guard (``landing.check_sums``), for a source that cannot name
    the records responsible: two batches whose read_bytes seen adds to 2^63 refuse the file as
    a whole, in one line, parsed once (no second parse: no source re-reads on overflow)."""
    from burstlake.jobs.ingest.landing import WHOLE_FILE, ingest
    from burstlake.jobs.ingest.source import Batch, ParseContext, Source

    parses: list[Path] = []

    def parse(path: Path, context: ParseContext):
        parses.append(path)
        for amount in (MAX_BYTES, 1):
            yield Batch({}, 1, traffic={"read_bytes": {"seen": amount}})

    path = tmp_path / "huge.txt"
    path.write_text("two records\n")
    source = Source(name="slurm", tables=("jobs",), parse=parse)
    (report,) = ingest(source, [path], lake)
    assert parses == [path]
    assert (report.records_in, report.landed, report.quarantined) == (1, 0, 1)
    assert report.error == (
        f"its read_bytes traffic passes {MAX_BYTES} bytes, the most a 64-bit byte count "
        "holds (counter values near 2^63?)"
    )
    (reject,) = read_table(lake, "quarantine").to_pylist()
    assert (reject["location"], reject["reason"]) == (WHOLE_FILE, report.error)
    (log,) = read_table(lake, "ingest_log").to_pylist()  # nothing of the file landed
    assert (log["records_in"], log["landed"], log["quarantined"]) == (1, 0, 1)
    assert not log["traffic"]
