"""Hostile arguments to the commands (issue 25, classes 5 to 7): outputs and inputs that are not
regular files, flows that never finish, JSON nested 100 000 deep, replay windows of centuries,
broken option files and policy paths. Each gets one line naming the file and what is wrong, or
a result that is true; never a traceback, never a replaced device, never ``Infinity``.

Ingest files of every source meet the grid of tests/test_hostile_inputs.py; `burstlake sql`
meets tests/test_sql_readonly.py."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from burstlake.cli import MESSAGE_LIMIT, main
from burstlake.lake import write_table
from burstlake.presets import machine
from burstlake.replay.topologies import build
from burstlake.replay.workloads.lake import _interval_order, lake_demand

T0 = dt.datetime(2024, 3, 1, tzinfo=dt.UTC)


def _one_line(capsys, command: str) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"burstlake {command}"), err
    assert "Traceback" not in err[0] and len(err[0]) <= MESSAGE_LIMIT + 40
    return err[0]


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def _not_regular(tmp_path: Path, fifo: Path) -> list[tuple[Path, str]]:
    """Paths that are not regular files, and what each is called."""
    found = [(tmp_path, "a directory"), (fifo, "a named pipe")]
    if Path("/dev/full").exists():
        found.append((Path("/dev/full"), "a character device"))
    return found


def _flow_file(tmp_path: Path, document: object | str) -> Path:
    path = tmp_path / "flows.json"
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def _strict_json(text: str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


# ------------------------------------------------------------------ class 6: outputs, inputs


def test_report_out_never_replaces_what_is_not_a_regular_file(lake, tmp_path, fifo, capsys):
    write_table(lake, "topology", machine("tiny").topology(), "topo")
    for target, what in _not_regular(tmp_path, fifo):
        mode = target.stat().st_mode
        assert main(["report", "--lake", str(lake), "--out", str(target)]) == 2
        line = _one_line(capsys, "report")
        assert f"--out {target}: {what}; give a regular file or a new path" in line
        assert target.stat().st_mode == mode  # still the device, pipe or folder
    assert not list(tmp_path.glob(".*.partial"))


def test_flows_out_never_replaces_what_is_not_a_regular_file(tmp_path, fifo, capsys):
    path = _flow_file(tmp_path, {"links": {"a": 1}, "flows": []})
    for target, what in _not_regular(tmp_path, fifo):
        kind = stat.S_IFMT(target.stat().st_mode)
        assert main(["flows", str(path), "--out", str(target)]) == 2
        assert f"--out {target}: {what}" in _one_line(capsys, "flows")
        assert stat.S_IFMT(target.stat().st_mode) == kind
    new = tmp_path / "new" / "out.json"
    assert main(["flows", str(path), "--out", str(new)]) == 0
    assert _strict_json(new.read_text())["finish"] == []


def test_a_flow_that_never_finishes_is_null_with_a_reason(tmp_path, capsys):
    # 1e300 B over a link of 1e-320 B/s (positive, finite): the finish overflows a double
    document = {
        "links": {"slow": 1e-320, "fast": 10},
        "flows": [
            {"route": ["slow"], "size": 1e300, "start": 0},
            {"route": ["fast"], "size": 20, "start": 1},
        ],
    }
    assert main(["flows", str(_flow_file(tmp_path, document))]) == 0
    out = _strict_json(capsys.readouterr().out)
    assert out["finish"] == [None, 3.0]
    assert list(out["unfinished"]) == ["0"] and "overflows" in out["unfinished"]["0"]


@pytest.mark.parametrize("capacity", ["0", "-1", "Infinity", "NaN", "1e999", '"10"', "null"])
def test_a_capacity_that_is_not_positive_and_finite_is_refused(tmp_path, capacity, capsys):
    flows = '"flows": [{"route": ["a"], "size": 1, "start": 0}]'
    text = '{"links": {"a": ' + capacity + "}, " + flows + "}"
    path = _flow_file(tmp_path, text)
    assert main(["flows", str(path)]) == 2
    line = _one_line(capsys, "flows")
    assert str(path) in line and "capacity must be a positive number" in line


def test_deep_json_is_one_line(tmp_path, capsys):
    path = _flow_file(tmp_path, "[" * 100_000 + "]" * 100_000)
    assert main(["flows", str(path)]) == 2
    assert f"{path}: JSON nested too deeply" in _one_line(capsys, "flows")


def test_flows_reads_only_regular_files(tmp_path, fifo, capsys):
    for source, what in [(Path("/dev/zero"), "a character device"), (fifo, "a named pipe")]:
        if not source.exists():
            continue
        assert main(["flows", str(source)]) == 2  # neither read forever nor blocked
        assert f"flow file {source}: {what}, not a regular file" in _one_line(capsys, "flows")


@pytest.mark.parametrize("source", ["slurm", "topology", "darshan"])
def test_ingest_names_what_a_path_is(tmp_path, fifo, source, capsys):
    lake = tmp_path / "lake"
    lake.mkdir()
    paths = [fifo, tmp_path / "missing.txt"] + [Path("/dev/zero")] * Path("/dev/zero").exists()
    assert main(["ingest", source, *map(str, paths), "--lake", str(lake)]) == 1
    err = capsys.readouterr().err.splitlines()
    prefix = f"burstlake ingest {source}: "
    reasons = dict(line[len(prefix) :].split(": ", 1) for line in err if line.startswith(prefix))
    assert reasons[str(fifo)] == "a named pipe, not a regular file"
    assert reasons[str(tmp_path / "missing.txt")] == "no such file"
    if Path("/dev/zero").exists():
        assert reasons["/dev/zero"] == "a character device, not a regular file"


# ------------------------------------------------------------------ class 5: replay memory


def _one_node_lake(lake: Path, *moments: dt.datetime) -> None:
    tiny = machine("tiny")
    write_table(lake, "topology", tiny.topology(), "topo")
    rows = {
        "node": [tiny.node_name(k % 3) for k in range(len(moments))],
        "ts": list(moments),
        "interval_s": [10] * len(moments),
        "write_bytes": [1000 * (k + 1) for k in range(len(moments))],
    }
    write_table(lake, "node_io", pa.table(rows), "io")


def _scenario(tmp_path: Path, workload: str, policies: str = "[given]") -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(
        f"name: w\nworkload: {workload}\ntopology: lake\npolicies: {policies}\njob_scores: false\n"
    )
    return path


def test_a_window_of_centuries_costs_what_its_rows_cost(lake, tmp_path, capsys):
    """Ten rows in two minutes, replayed with windows of 200 years and of years 1 to 9999:
    interval 0 is the first holding a row, so the replay spans 10 intervals (before: 3.2 GB,
    and a MemoryError traceback)."""
    _one_node_lake(lake, *(T0 + dt.timedelta(seconds=10 * k) for k in range(10)))
    topology = build({"name": "lake"}, lake)
    for start, end in [("1900-01-01", "2100-01-01"), ("0001-01-01", "9999-12-31")]:
        begin, stop = (dt.datetime.fromisoformat(d).replace(tzinfo=dt.UTC) for d in (start, end))
        demand = lake_demand(lake, topology, begin, stop)
        assert demand.intervals == 10 and demand.start == T0
        window = f"{{source: lake, window: {{start: {start}, end: {end}}}}}"
        assert (
            main(["replay", "--lake", str(lake), "--scenario", str(_scenario(tmp_path, window))])
            == 0
        )
        assert "bytes_served" in capsys.readouterr().out


def test_rows_centuries_apart_are_sorted_without_a_slot_per_interval():
    t = np.array([10**12, 0, 10**12, 5], dtype=np.int64)  # a counting sort would need 8 TB
    node = np.array([1, 2, 0, 0], dtype=np.int64)
    assert _interval_order(t, node, 3).tolist() == [1, 3, 2, 0]


def test_rows_beyond_the_interval_limit_are_refused_in_one_line(lake, tmp_path, capsys):
    far = dt.datetime(9999, 3, 1, tzinfo=dt.UTC)
    _one_node_lake(lake, dt.datetime(1, 3, 1, tzinfo=dt.UTC), far)
    scenario = _scenario(tmp_path, "{source: lake}")
    assert main(["replay", "--lake", str(lake), "--scenario", str(scenario)]) == 2
    line = _one_line(capsys, "replay")
    assert "span 31550636161 intervals of 10 s" in line and "max_intervals" in line
    small = _scenario(tmp_path, "{source: lake, max_intervals: 100}")
    assert main(["replay", "--lake", str(lake), "--scenario", str(small)]) == 2
    assert "at most 100 are replayed" in _one_line(capsys, "replay")
    wide = _scenario(tmp_path, "{source: lake, max_intervals: 100000000000}")
    assert main(["replay", "--lake", str(lake), "--scenario", str(wide)]) == 0
    capsys.readouterr()
    bad = _scenario(tmp_path, "{source: lake, max_intervals: 0}")
    assert main(["replay", "--lake", str(lake), "--scenario", str(bad)]) == 2
    assert "max_intervals must be an integer >= 1, got 0" in _one_line(capsys, "replay")


# ------------------------------------------------------------------ class 7: one line each


def test_policy_path_is_relative_to_the_scenario_folder(lake, tmp_path, monkeypatch, capsys):
    tiny = machine("tiny")
    _one_node_lake(lake, T0, T0 + dt.timedelta(seconds=10))
    folder = tmp_path / "scenarios"
    folder.mkdir()
    topology = tiny.topology().to_pylist()
    (folder / "map.csv").write_text(
        "node,ion\n" + "".join(f"{r['node']},{r['ion']}\n" for r in topology if r.get("ion"))
    )
    scenario = _scenario(folder, "{source: lake}", "[{name: file, path: map.csv}]")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # the working directory holds no map.csv
    assert main(["replay", "--lake", str(lake), "--scenario", str(scenario)]) == 0
    capsys.readouterr()
    missing = _scenario(folder, "{source: lake}", "[{name: file, path: gone.csv}]")
    assert main(["replay", "--lake", str(lake), "--scenario", str(missing)]) == 2
    line = _one_line(capsys, "replay")
    assert f"{missing}: policy file: path {folder / 'gone.csv'}: no such file" in line


def test_broken_mapping_yaml_is_one_line_naming_the_file(tmp_path, capsys):
    mapping = tmp_path / "bad.yaml"
    mapping.write_text("items:\n  - name: [unclosed\n    metric: read_bytes\n")
    history = tmp_path / "history.ndjson"
    history.write_text('{"itemid": "1", "clock": 1700000000, "value": "5"}\n')
    args = ["ingest", "zabbix", str(history), "--mapping", str(mapping)]
    (tmp_path / "lake").mkdir()
    assert main([*args, "--lake", str(tmp_path / "lake")]) == 2
    line = _one_line(capsys, "ingest")
    assert str(mapping) in line and "not valid YAML (line " in line and "unicode" not in line


def test_binary_items_table_is_one_line_naming_the_file(tmp_path, capsys):
    items = tmp_path / "items.csv"
    items.write_bytes(bytes(range(256)) * 12)
    history = tmp_path / "history.ndjson"
    history.write_text('{"itemid": "1", "clock": 1700000000, "value": "5"}\n')
    args = ["ingest", "zabbix", str(history), "--items", str(items)]
    (tmp_path / "lake").mkdir()
    assert main([*args, "--lake", str(tmp_path / "lake")]) == 2
    line = _one_line(capsys, "ingest")
    assert f"item table {items}: binary file" in line and "LINE 1:" not in line


def test_infinite_scale_in_a_mapping_names_the_file(tmp_path, capsys):
    mapping = tmp_path / "inf.yaml"
    mapping.write_text(
        "items:\n  - metric: read_bytes\n    kind: counter\n    names: [Lustre read bytes]\n"
        "    keys: [lustre.read_bytes]\n    scale: .inf\n"
    )
    history = tmp_path / "history.tsv"
    history.write_text("host\tkey_\tclock\tvalue\ncn1\tlustre.read_bytes\t1700000000\t5\n")
    args = ["ingest", "zabbix", str(history), "--mapping", str(mapping)]
    (tmp_path / "lake").mkdir()
    assert main([*args, "--lake", str(tmp_path / "lake")]) == 2
    assert str(mapping) in _one_line(capsys, "ingest")
