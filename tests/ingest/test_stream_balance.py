"""One balance (issue 25, item 3): bytes of records quarantined are kept apart from landed
bytes in the per-file balance and in the balance of the lake's whole Zabbix stream alike,
and 'landed' is what ``node_io`` holds (docs/design.md, 'Sources': accounting)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from burstlake.cli import main
from burstlake.jobs.ingest import zabbix
from burstlake.jobs.ingest.landing import ingest
from burstlake.lake import read_table, write_table
from tests.builders.paths import FIXTURES as TESTS_FIXTURES

FIXTURES = TESTS_FIXTURES / "zabbix"
TAGS = FIXTURES / "history-tags.ndjson"  # node cn00001 only
# cn00001's read counter: 4,400 bytes seen, a reset of 100; every other byte would land (the
# 20 s hole is within 3 × its own 10 s interval), so with the node unknown all 4,300 are
# quarantined
BALANCE = "read_bytes: seen 4400 = landed 0 + quarantined 4300 + reset 100"


def _topology(lake: Path, *nodes: str) -> None:
    rows = pa.table({"node": list(nodes), "cabinet": ["cab000"] * len(nodes)})
    write_table(lake, "topology", rows, "topo")


def test_every_node_unknown_counts_its_bytes_quarantined_in_the_stream_too(
    lake: Path, capsys: pytest.CaptureFixture
) -> None:
    """The sweep: a topology, every node of the file unknown to it: the file's line and the
    'zabbix stream in the lake' line agree (landed 0), and node_io holds nothing."""
    _topology(lake, "cn00002")
    argv = ["ingest", "zabbix", str(TAGS), "--lake", str(lake), "--interval", "10"]
    assert main(argv) == 0
    out = capsys.readouterr().out.splitlines()
    stream = out.index("zabbix stream in the lake (all export files):")
    assert f"  {BALANCE}" in out[:stream]  # the file's own balance
    assert f"  {BALANCE}" in out[stream:]  # the stream's
    assert read_table(lake, "node_io").num_rows == 0
    balance = zabbix.stream_balance(lake, {"interval": 10})
    for metric, parts in balance.items():
        assert parts.get("landed", 0) == 0, metric
        assert parts["seen"] == sum(parts.get(r, 0) for r in ("quarantined", "gap", "reset"))


def test_stream_landed_bytes_are_the_bytes_node_io_holds(lake: Path, tmp_path: Path) -> None:
    """Two nodes, one known: the stream's landed bytes per metric equal node_io's sums, the
    unknown node's bytes are quarantined, and the per-file balances add up to the stream's."""
    both = tmp_path / "history-both.ndjson"
    text = TAGS.read_text().splitlines()[:29]
    text += (FIXTURES / "history-apps.ndjson").read_text().splitlines()
    both.write_text("\n".join(text) + "\n")
    _topology(lake, "cn00002")
    (report,) = ingest(zabbix.SOURCE, [both], lake, {"host_prefix": ["nid=cn"]})
    rows = read_table(lake, "node_io")
    assert set(rows.column("node").to_pylist()) == {"cn00002"}
    balance = zabbix.stream_balance(lake, {"interval": 10})
    for metric, parts in balance.items():
        held = pc.sum(rows.column(metric)).as_py() or 0
        assert parts.get("landed", 0) == held, metric
        assert parts == {k: v for k, v in report.traffic[metric].items() if v or k in parts}
    assert balance["read_bytes"]["quarantined"] == 4300
