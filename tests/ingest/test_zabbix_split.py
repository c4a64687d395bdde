"""The files of one Zabbix export read as one stream per item (issue 14).

A Zabbix server writes one real-time export file per history syncer and rotates each to
``.old``; an item's values land in whichever syncer's file. However the lines of one export are
split over files, and however the files arrive (one command, one after another, the CLI, the
drop-directory DAG), the lake must hold exactly the node_io rows and the record accounting of
the single concatenated file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow.compute as pc
import pytest

from burstlake.cli import main
from burstlake.jobs.ingest import zabbix
from burstlake.jobs.ingest.accounting import totals
from burstlake.jobs.ingest.landing import ingest
from burstlake.jobs.ingest.zabbix import regions
from burstlake.lake import latest_version, read_table, table_files
from tests.builders.paths import FIXTURES
from tests.builders.zabbix import zabbix_record

MIDNIGHT = 1700006400  # 2023-11-15 00:00:00 UTC: the export crosses a day boundary
START = MIDNIGHT - 400
NODES = ("cn00001", "cn00002", "cn00003", "cn00004", "cn00005")
ITEMS = (  # itemid offset, name, Zabbix value type
    (1, "Lustre read bytes", 3),
    (2, "Lustre write bytes", 3),
    (3, "Network sent bytes", 3),
    (4, "CPU load (1 min average)", 0),
)


def _export(seed: int = 3) -> list[dict]:
    """One export's samples in the order a server writes them: counters with jitter, resets,
    gaps and re-sent values (duplicates), roughly in time order."""
    rng = np.random.default_rng(seed)
    samples = []
    for n, node in enumerate(NODES):
        for offset, name, kind in ITEMS:
            grid = np.arange(0, 800, 10)
            grid = grid[rng.random(grid.size) > 0.08]  # gaps
            jitter = rng.integers(-2 * 10**9, 2 * 10**9, grid.size)
            t_ns = (START + grid) * 10**9 + jitter
            if kind == 0:
                values = np.round(rng.random(grid.size) * 4, 2)
            else:
                values = np.cumsum(rng.integers(0, 9000, grid.size) * (rng.random(grid.size) < 0.7))
                reset = rng.integers(10, grid.size - 10)
                values[reset:] -= values[reset] - rng.integers(0, 50)  # counter reset
            for t, v in zip(t_ns, values, strict=True):
                samples.append(
                    zabbix_record(
                        node,
                        int(t // 10**9),
                        float(v) if kind == 0 else int(v),
                        itemid=1000 + 10 * n + offset,
                        name=name,
                        ns=int(t % 10**9),
                        kind=kind,
                        item_tags=[{"tag": "component", "value": "lustre"}],
                    )
                )
    samples.sort(key=lambda s: s["clock"] + rng.integers(-3, 4))  # syncer queues reorder a bit
    again = rng.choice(len(samples), 15, replace=False)
    for i in sorted(again, reverse=True):  # a value re-sent after a reconnect
        samples.insert(min(len(samples), i + rng.integers(1, 40)), samples[i])
    return samples


def _text(samples: list[dict]) -> str:
    return "".join(json.dumps(s) + "\n" for s in samples)


def _split(samples: list[dict], how: str, rng: np.random.Generator) -> dict[str, list[dict]]:
    """The export's lines over several files, the ways a real server (or a user) splits them."""
    files: dict[str, list[dict]] = {}

    def put(name: str, sample: dict) -> None:
        files.setdefault(name, []).append(sample)

    for s in samples:
        if how == "interleaved":  # each value lands in whichever of 4 syncers took it
            put(f"history-syncer-{rng.integers(1, 5)}.ndjson", s)
        elif how == "items":  # whole items per file
            put(f"history-syncer-{s['itemid'] % 3 + 1}.ndjson", s)
        elif how == "time":  # consecutive periods
            put(f"history-part-{min(2, (s['clock'] - START) // 270)}.ndjson", s)
        elif how == "rotations":  # 2 syncers, each rotated to .old part-way
            put(f"history-syncer-{rng.integers(1, 3)}.ndjson", s)
    if how == "rotations":  # the first 60 % of each syncer's lines went to its .old file
        for name in list(files):
            lines = files.pop(name)
            cut = int(len(lines) * 0.6)
            files[name + ".old"], files[name] = lines[:cut], lines[cut:]
    return files


def _write(folder: Path, files: dict[str, list[dict]]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, lines in files.items():
        (folder / name).write_text(_text(lines))
    return sorted(folder.iterdir())


def _node_io(lake: Path) -> list[tuple]:
    rows = read_table(lake, "node_io").drop_columns(["cluster"]).to_pylist()
    return sorted(tuple(r.values()) for r in rows)


def _accounting(lake: Path) -> tuple[int, int, int]:
    log = read_table(lake, "ingest_log").to_pylist()
    return tuple(sum(r[k] for r in log) for k in ("records_in", "landed", "quarantined"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The single concatenated file's node_io and accounting."""
    root = tmp_path_factory.mktemp("reference")
    samples = _export()
    path = root / "history-all.ndjson"
    path.write_text(_text(samples))
    lake = root / "lake"
    (report,) = ingest(zabbix.SOURCE, [path], lake)
    assert report.quarantined == 15  # the re-sent values, nothing else
    rows = _node_io(lake)
    assert len(rows) > 300 and {r[0] for r in rows} == set(NODES)
    days = {r[1].date() for r in rows}
    assert len(days) == 2  # the stream crosses midnight
    balance = zabbix.stream_balance(lake, {"interval": 10})
    assert balance == _file_traffic(lake)  # one file: its row is the stream
    return {
        "samples": samples,
        "node_io": rows,
        "accounting": _accounting(lake),
        "traffic": _checked_balance(lake),
    }


def _file_traffic(lake: Path) -> dict:
    (row,) = read_table(lake, "ingest_log", columns=["traffic"]).column(0).to_pylist()
    return {t.pop("metric"): {k: v for k, v in t.items() if v} for t in row}


def _checked_balance(lake: Path) -> dict:
    """The stream's byte balance: it adds up, and its landed bytes are node_io's."""
    balance = zabbix.stream_balance(lake, {"interval": 10})
    node_io = read_table(lake, "node_io")
    assert {"read_bytes", "write_bytes", "net_tx_bytes"} <= set(balance)
    for metric, parts in balance.items():
        assert parts["seen"] == sum(v for k, v in parts.items() if k != "seen")
        assert parts["landed"] == pc.sum(node_io.column(metric)).as_py()
    assert balance["read_bytes"]["gap"] > 0 and balance["read_bytes"]["reset"] > 0
    return balance


HOW = ("interleaved", "items", "time", "rotations")


@pytest.mark.parametrize("how", HOW)
def test_split_export_in_one_command_equals_the_single_file(
    reference: dict, tmp_path: Path, how: str
) -> None:
    files = _write(tmp_path / "in", _split(reference["samples"], how, np.random.default_rng(1)))
    assert len(files) >= 3
    lake = tmp_path / "lake"
    reports = ingest(zabbix.SOURCE, files, lake)
    assert _node_io(lake) == reference["node_io"]
    assert _accounting(lake) == reference["accounting"]
    assert totals(reports)["records_in"] == len(reference["samples"])
    assert _checked_balance(lake) == reference["traffic"]


@pytest.mark.parametrize("how", ["interleaved", "rotations"])
def test_split_export_arriving_one_file_at_a_time_in_any_order(
    reference: dict, tmp_path: Path, how: str
) -> None:
    files = _write(tmp_path / "in", _split(reference["samples"], how, np.random.default_rng(2)))
    order = np.random.default_rng(5).permutation(len(files))
    lake = tmp_path / "lake"
    for i in order:
        ingest(zabbix.SOURCE, [files[i]], lake)
    assert _node_io(lake) == reference["node_io"]
    assert _accounting(lake) == reference["accounting"]
    assert _checked_balance(lake) == reference["traffic"]
    # re-ingesting every file again is a no-op
    ingest(zabbix.SOURCE, files, lake)
    assert _node_io(lake) == reference["node_io"]
    assert _accounting(lake) == reference["accounting"]


def test_replacing_one_member_recomputes_what_it_touches(reference: dict, tmp_path: Path) -> None:
    files = _split(reference["samples"], "time", np.random.default_rng(1))
    folder = tmp_path / "in"
    paths = _write(folder, files)
    lake = tmp_path / "lake"
    ingest(zabbix.SOURCE, paths, lake)
    # a corrected version of the first period: one node's read counter rises 1 MB more
    name = "history-part-0.ndjson"
    node = next(s["host"]["host"] for s in files[name] if s["name"] == "Lustre read bytes")
    changed = [dict(s) for s in files[name]]
    for s in changed:
        if s["host"]["host"] == node and s["name"] == "Lustre read bytes":
            s["value"] += 1_000_000 if s["clock"] >= START + 100 else 0
    before = set(table_files(lake, "node_io"))
    version = latest_version(lake, "node_io")
    (folder / name).write_text(_text(changed))
    ingest(zabbix.SOURCE, [folder / name], lake)

    expected_lake = tmp_path / "expected"
    concatenated = tmp_path / "history-all.ndjson"
    concatenated.write_text("".join(_text(changed if n == name else files[n]) for n in files))
    ingest(zabbix.SOURCE, [concatenated], expected_lake)
    got, expected = _node_io(lake), _node_io(expected_lake)
    assert got == expected and got != reference["node_io"]
    assert _accounting(lake) == _accounting(expected_lake)
    # one Delta commit replaced the node_io parts the file reaches (the days within an hour of
    # its samples: an item's own interval is measured per hour)
    assert latest_version(lake, "node_io") == version + 1
    assert before - set(table_files(lake, "node_io"))
    assert len(read_table(lake, "ingest_log").to_pylist()) == len(files)


def test_cli_ingest_of_a_split_export(reference: dict, tmp_path: Path, capsys) -> None:
    folder = tmp_path / "in"
    _write(folder, _split(reference["samples"], "interleaved", np.random.default_rng(3)))
    lake = tmp_path / "lake"
    assert main(["ingest", "zabbix", str(folder), "--lake", str(lake)]) == 0
    assert _node_io(lake) == reference["node_io"]
    records_in, landed, quarantined = reference["accounting"]
    out = capsys.readouterr().out
    assert f"{records_in} records in, {landed} landed, {quarantined} quarantined" in out
    read = reference["traffic"]["read_bytes"]
    assert (
        f"read_bytes: seen {read['seen']} = landed {read['landed']} + gap {read['gap']} + "
        f"reset {read['reset']}" in out.split("zabbix stream in the lake")[1]
    )


@pytest.mark.slow  # Airflow dag.test() of a rotated export, ~40 s
def test_rotation_through_the_drop_directory_dag(reference: dict, tmp_path: Path, run_dag) -> None:
    """Two DAG runs: the syncer files, then the same files rotated to .old with new current
    files holding the later values."""
    samples = reference["samples"]
    rng = np.random.default_rng(4)
    syncer = {id(s): int(rng.integers(1, 4)) for s in samples}
    cut = START + 500
    early = [s for s in samples if s["clock"] < cut]
    late = [s for s in samples if s["clock"] >= cut]
    drop = tmp_path / "drop" / "zabbix"
    drop.mkdir(parents=True)
    for k in (1, 2, 3):
        (drop / f"history-syncer-{k}.ndjson").write_text(
            _text([s for s in early if syncer[id(s)] == k])
        )
    assert run_dag("ingest_zabbix").state == "success"
    for k in (1, 2, 3):
        current = drop / f"history-syncer-{k}.ndjson"
        shutil.move(current, drop / f"history-syncer-{k}.ndjson.old")
        current.write_text(_text([s for s in late if syncer[id(s)] == k]))
    assert run_dag("ingest_zabbix").state == "success"
    lake = Path(os.environ["BURSTLAKE_LAKE"])
    assert _node_io(lake) == reference["node_io"]
    assert _accounting(lake) == reference["accounting"]
    assert _checked_balance(lake) == reference["traffic"]
    assert run_dag("ingest_zabbix").state == "success"  # nothing new: a no-op
    assert _node_io(lake) == reference["node_io"]


def test_lake_option_and_empty_query_answers(tmp_path: Path, capsys) -> None:
    """--lake naming a file, a mistyped --lake, an empty query: one line each, exit 2."""
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    lake = tmp_path / "lake"
    fixture = FIXTURES / "zabbix" / "history-tags.ndjson"
    assert main(["ingest", "zabbix", str(fixture), "--lake", str(lake)]) == 0
    assert "starting a new one" in capsys.readouterr().err
    cases = [
        (["sql", "--lake", str(afile), "SELECT 1"], "is a file, not a lake directory"),
        (["ingest", "zabbix", str(fixture), "--lake", str(afile)], "is a file, not a lake"),
        (["sql", "--lake", str(tmp_path / "lkae"), "SELECT 1"], "no lake at --lake"),
        (["sql", "--lake", str(lake), "  "], "empty query"),
        (["ingest", "zabbix", str(fixture), "--lake", str(tmp_path)], "holds other files"),
    ]
    for argv, message in cases:
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0] and "Traceback" not in err[0], argv
    assert not (tmp_path / "lkae").exists()
    assert main(["sql", "--lake", str(lake), "SELECT count(*) AS n FROM node_io"]) == 0


def test_a_writer_starting_the_same_new_lake_is_not_other_files(tmp_path: Path, monkeypatch):
    """Two ingests start one new lake at once (CI saw it): the one that looks while the other
    is making its folders must not read them as "other files". The other writer is made to
    arrive just after the directory is judged not yet a lake."""
    import argparse

    from burstlake import cli
    from burstlake import lake as lakes

    lake = tmp_path / "lake"
    lake.mkdir()
    real = lakes.is_lake

    def other_writer_arrives(path: Path) -> bool:
        answer = real(path)
        for name in (lakes.LOCKS, "_txn"):
            (path / name).mkdir(exist_ok=True)
        return answer

    monkeypatch.setattr(lakes, "is_lake", other_writer_arrives)
    cli.check_lake(argparse.Namespace(lake=str(lake), lake_must_exist=False))


def test_days_computed_in_one_span_land_what_each_day_alone_lands(
    reference: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pass 2's span of days (both days of the export at once) gives each day's rows, rejects
    and balance exactly as that day's region alone does (regions._span)."""
    files = _write(tmp_path / "in", _split(reference["samples"], "time", np.random.default_rng(1)))
    spans = []
    span = regions._span

    def counted(con, new, bucket, days, *args):
        spans.append(len(days))
        yield from span(con, new, bucket, days, *args)

    monkeypatch.setattr(regions, "_span", counted)
    landed = {}
    default = regions.SPAN_SAMPLES
    for limit in (default, 0):  # 0: every day alone, as before spans
        monkeypatch.setattr(regions, "SPAN_SAMPLES", limit)
        lake = tmp_path / f"lake-{limit}"
        ingest(zabbix.SOURCE, files, lake)
        quarantine = read_table(lake, "quarantine", columns=["location", "raw", "reason"])
        landed[limit] = (
            _node_io(lake),
            _accounting(lake),
            sorted(quarantine.to_pylist(), key=lambda r: (r["location"], r["raw"])),
            sorted(str(t) for t in read_table(lake, "ingest_log").column("traffic").to_pylist()),
        )
    assert max(spans) == 2 and spans.count(2) < len(spans)  # spans of 2 days, then days alone
    assert landed[default] == landed[0]
    assert landed[0][0] == reference["node_io"]


def test_spans_group_consecutive_days_up_to_the_limit() -> None:
    days = {10: 5, 11: 3, 12: 4, 14: 1, 15: 9, 16: 0}
    assert regions._spans(days, 8) == [[10, 11], [12], [14], [15], [16]]  # 15 alone is over 8
    assert regions._spans(days, 100) == [[10, 11, 12], [14, 15, 16]]
    assert regions._spans(days, 0) == [[d] for d in sorted(days)]
    assert regions._spans({}, 8) == []


def test_a_pair_from_before_a_days_window_stays_out_of_that_day_in_a_span(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An item silent for 2 hours before midnight: its pair across midnight starts before the
    second day's window, so neither day's region holds it, in a span as alone."""
    item = {"host": {"host": NODES[0]}, "itemid": 999, "name": "Lustre read bytes", "type": 3}
    rows = [
        item | {"clock": MIDNIGHT + t, "ns": 0, "value": v}
        for t, v in ((-7200, 10), (100, 5000), (110, 9000))
    ]
    path = tmp_path / "history-quiet.ndjson"
    path.write_text(_text(rows))
    traffic = {}
    default = regions.SPAN_SAMPLES
    for limit in (default, 0):
        monkeypatch.setattr(regions, "SPAN_SAMPLES", limit)
        (report,) = ingest(zabbix.SOURCE, [path], tmp_path / f"lake-{limit}")
        traffic[limit] = report.traffic
    assert traffic[default] == traffic[0] == {"read_bytes": {"seen": 4000, "landed": 4000}}
