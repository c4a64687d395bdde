"""Hostile arguments to the commands (issue 25, classes 5 to 7): outputs and inputs that are not
regular files, flows that never finish, JSON nested 100 000 deep, replay windows of centuries,
broken option files and policy paths. Each gets one line naming the file and what is wrong, or
a result that is true; never a traceback, never a replaced device, never ``Infinity``. Issue
41's memory cases (a deployment file, a topology, a flow file, the report's heat map) run under
an address-space cap (last section).

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
from burstlake.report_parts import MAX_ROWS

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


# ------------------------------------------------------------------ memory under RLIMIT_AS
# Issue 41's memory cases, each run in a subprocess whose address space is capped
# (``resource.setrlimit(RLIMIT_AS)``) at what the same command takes on a small input plus a
# margin far below what the hostile input took before its fix: each finishes within the cap,
# in one line naming the key and the estimate, and the lake holds what it held before.
# (`burstlake sql`'s cases: tests/lake/test_sql_memory.py.)

CAPPED = """import re, sys
from burstlake.cli import main
code = main(sys.argv[1:])
peak = re.search(r"VmPeak:\\s+(\\d+)", open("/proc/self/status").read()).group(1)
print("VmPeak", peak, file=sys.stderr)
sys.exit(code)
"""
MARGIN = 256 << 20  # bytes over the small input's peak


def _capped(argv: list[str], limit: int | None, code: str = CAPPED):
    """``burstlake argv`` (or ``code`` with ``argv``) in a subprocess under ``limit`` bytes of
    address space; (exit code, stderr lines without the VmPeak line, VmPeak in bytes, stdout)."""
    import re
    import resource
    import subprocess
    import sys

    from tests.builders.paths import REPO

    def cap() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=REPO, preexec_fn=cap, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    found = re.search(r"VmPeak (\d+)", done.stderr)
    lines = [line for line in done.stderr.splitlines() if not line.startswith("VmPeak ")]
    assert found, done.stderr[-2000:]
    return done.returncode, lines, int(found.group(1)) << 10, done.stdout


def _within(argv_small: list[str], argv_hostile: list[str], code: str = CAPPED):
    """Run the small input uncapped, then the hostile one capped at its peak + MARGIN."""
    small_code, small_err, baseline, _ = _capped(argv_small, None, code)
    assert "Traceback" not in "\n".join(small_err), small_err
    code_hostile, err, peak, _ = _capped(argv_hostile, baseline + MARGIN, code)
    assert peak <= baseline + MARGIN
    return small_code, code_hostile, err


def _ingest_rows(lake: Path) -> dict[str, int]:
    from burstlake.lake import read_table

    return {t: read_table(lake, t).num_rows for t in ("node_io", "quarantine", "ingest_log")}


@pytest.mark.slow  # one subprocess per case, each importing the whole command
@pytest.mark.parametrize(
    "name, text, said",
    [
        (
            "machines-100000",
            "machines:\n" + "".join(f"  m{i}: {{}}\n" for i in range(100_000)),
            "machines: 100000 machines; at most 1000",
        ),
        (
            "alias-bomb",  # 496 bytes before: each level 9 times the last
            "a: &a [x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{chr(98 + k)}: &{chr(98 + k)} [{', '.join([f'*{chr(97 + k)}'] * 9)}]\n"
                for k in range(8)
            )
            + "machines: {m: {sources: {zabbix: {host_prefix: *i}}}}\n",
            "aliases (*name) are not allowed",
        ),
        ("nested-5000", "x: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 32 deep"),
        (
            "interval-1e23",  # 24 GB, then the OOM killer, before
            "machines: {m: {sources: {zabbix: {interval: 100000000000000000000000}}}}\n",
            "machines.m.sources.zabbix.interval: --interval must be 1..86400 seconds (a day)",
        ),
        (
            "interval-1e9",
            "machines: {m: {sources: {zabbix: {interval: 1000000000}}}}\n",
            "machines.m.sources.zabbix.interval: --interval must be 1..86400 seconds (a day)",
        ),
    ],
)
def test_a_hostile_deployment_file_is_refused_within_a_memory_cap(name, text, said, tmp_path):
    from tests.builders.paths import FIXTURES

    history = FIXTURES / "zabbix" / "history-tags.ndjson"
    small, hostile = tmp_path / "small.yaml", tmp_path / "hostile.yaml"
    small.write_text("machines: {m: {sources: {zabbix: {interval: 30}}}}\n")
    hostile.write_text(text)
    lakes = tmp_path / "small-lake", tmp_path / "lake"
    for each in lakes:
        each.mkdir()
    argv = ["ingest", "zabbix", str(history), "--lake"]
    small_code, code, err = _within(
        [*argv, str(lakes[0]), "--config", str(small)],
        [*argv, str(lakes[1]), "--config", str(hostile)],
    )
    assert small_code == 0 and _ingest_rows(lakes[0])["node_io"] > 0
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"burstlake ingest: {hostile}: ") and said in err[0], err
    assert _ingest_rows(lakes[1]) == {"node_io": 0, "quarantine": 0, "ingest_log": 0}


def _ior(tmp_path: Path, topology: str) -> Path:
    path = tmp_path / f"s{abs(hash(topology))}.yaml"
    path.write_text(
        "name: s\nworkload: {source: ior, nodes: [1, 2], bytes_per_node: 4.0e+6, "
        f"request_bytes: 1.0e+6}}\ntopology: {topology}\npolicies: [block]\n"
    )
    return path


@pytest.mark.slow
@pytest.mark.parametrize(
    "topology, said",
    [
        (
            "{name: fattree, radix: 36, leaves: 100000}",
            "topology fattree: 1,800,000 nodes (about 2.2 GB to build); a topology has at most",
        ),
        (
            "{name: torus, dims: [100000, 100000]}",
            "topology torus: 10,000,000,000 nodes (about 12,000.0 GB to build)",
        ),
    ],
)
def test_a_topology_too_large_is_refused_within_a_memory_cap(topology, said, lake, tmp_path):
    """The small input: the same command refused for a fat-tree of 0 leaves (its imports and
    scenario load, no simulation)."""
    small = _ior(tmp_path, "{name: fattree, radix: 36, leaves: 0}")
    hostile = _ior(tmp_path, topology)
    small_code, code, err = _within(
        ["replay", "--lake", str(lake), "--scenario", str(small)],
        ["replay", "--lake", str(lake), "--scenario", str(hostile)],
    )
    assert small_code == 2
    assert code == 2 and len(err) == 1 and said in err[0], err
    assert err[0].startswith("burstlake replay: ")
    assert sorted(p.name for p in lake.iterdir() if not p.name.startswith("_")) in (
        [],
        ["catalog.duckdb"],
    )  # no table written


@pytest.mark.slow
def test_a_flow_file_too_large_is_refused_within_a_memory_cap(tmp_path):
    """A flow file past MAX_FILE_BYTES (sparse: no disk) is refused by its size, unread."""
    from burstlake.replay.flows import MAX_FILE_BYTES

    small = _flow_file(tmp_path, "{}")
    big = tmp_path / "big.json"
    with big.open("wb") as out:
        out.truncate(MAX_FILE_BYTES + 1)
    small_code, code, err = _within(["flows", str(small)], ["flows", str(big)])
    assert small_code == 2
    assert code == 2 and len(err) == 1, err
    assert f"{big}: {MAX_FILE_BYTES + 1} bytes; a flow file is at most {MAX_FILE_BYTES}" in err[0]


HEATMAP = """import re, sys
from burstlake import lake
from burstlake.report import heatmap_grid
grid, levels, start, span = heatmap_grid(lake.Cluster(sys.argv[1], None))
print(levels, grid.shape[1], float(grid.to_numpy().sum()))
peak = re.search(r"VmPeak:\\s+(\\d+)", open("/proc/self/status").read()).group(1)
print("VmPeak", peak, file=sys.stderr)
"""


def _traffic_lake(path: Path, nodes: int, times: int) -> float:
    """node_io of ``nodes`` nodes (8 per cabinet: 960 make MAX_ROWS cabinets) at ``times``
    instants 288 s apart (300 a day: the lake grows by days, as a machine's does), written in
    batches; returns the bytes it holds."""
    path.mkdir(parents=True)
    names = [f"cn{n:05d}" for n in range(nodes)]
    write_table(
        path,
        "topology",
        pa.table({"node": names, "cabinet": [f"c{n // 8:04d}" for n in range(nodes)]}),
        "topo",
    )

    def batches():
        for t in range(0, times, 100):
            count = min(100, times - t)
            ts = np.repeat(
                np.datetime64("2024-03-01T00:00:00", "us") + np.arange(t, t + count) * 288_000_000,
                nodes,
            )
            yield pa.table(
                {
                    "node": pa.array(names * count),
                    "ts": pa.array(ts).cast(pa.timestamp("us", tz="UTC")),
                    "interval_s": pa.array(np.full(nodes * count, 10, np.int32)),
                    "read_bytes": pa.array(np.full(nodes * count, 3, np.int64)),
                    "write_bytes": pa.array(np.full(nodes * count, 4, np.int64)),
                }
            )

    write_table(path, "node_io", batches(), "traffic")
    return 7.0 * nodes * times


@pytest.mark.slow  # writes a 2.3 M-row node_io
def test_the_report_heatmap_over_8_days_within_the_peak_of_1(tmp_path):
    """The heat map over 8 days of node_io (2.3 M rows) within the 1-day lake's peak + 32 MiB,
    every byte binned. Before: node_io read into pandas (1.8 GB at 4.36 M rows; here 290 MB
    more address space at 8 days than at 1), then an Arrow reader handed to DuckDB (220 MB
    more; peak RSS 446 then 735 MB)."""
    margin = 32 << 20
    small, large = tmp_path / "small", tmp_path / "large"
    expected = (_traffic_lake(small, 960, 300), _traffic_lake(large, 960, 2400))
    code, err, baseline, _ = _capped([str(small)], None, HEATMAP)
    assert code == 0, err
    for lake_dir, total in zip((small, large), expected, strict=True):
        code, err, peak, out = _capped([str(lake_dir)], baseline + margin, HEATMAP)
        assert code == 0 and peak <= baseline + margin, err[-20:]
        levels, bins, got = out.split()
        assert (int(levels), int(bins), float(got)) == (MAX_ROWS, 240, total)  # every byte binned


# ------------------------------------------------------------------ issue 41: the lake's rows
# Issue 41's refusals tested elsewhere at the level of the library (tests/replay/
# test_model_honoured.py, tests/orchestration/test_config.py), here through the command line
# with the lake's rows asserted.


def _replay_rows(lake: Path) -> int:
    from burstlake.lake import read_table

    return sum(read_table(lake, t).num_rows for t in ("replay_scores", "replay_spread"))


@pytest.mark.parametrize(
    "text, said",
    [
        (  # the lake's scores were the flow model's, labelled packet
            "workload: {source: lake}\ntopology: lake\npolicies: [given]\nmodel: packet\n",
            "packet",
        ),
        (  # ran 2 nodes silently
            "workload: {source: ior, nodes: [2.7, 4], bytes_per_node: 4.0e+6, "
            "request_bytes: 1.0e+6}\ntopology: tiny\npolicies: [block]\n",
            "workload ior: nodes[0] must be an integer >= 1, got 2.7",
        ),
        (
            "workload: {source: ior, nodes: [.inf], bytes_per_node: 4.0e+6, "
            "request_bytes: 1.0e+6}\ntopology: tiny\npolicies: [block]\n",
            "workload ior: nodes[0] must be an integer >= 1, got inf",
        ),
        (  # NULL latencies with exit 0
            "workload: {source: ior, nodes: [1, 2], bytes_per_node: 4.0e+6, "
            "request_bytes: 1.0e+6}\ntopology: tiny\npolicies: [block]\n"
            "model: {name: packet, nic_delay: 1.0e+308}\n",
            "nic_delay must be 0..86400 seconds, got 1e+308",
        ),
        (  # reached the packet model, whose refusal named neither file nor key
            "workload: {source: io_alltoall, nodes: [2], message_bytes: 1.0e+30, rounds: 1}\n"
            "topology: tiny\npolicies: [block]\nmodel: packet\n",
            "s.yaml: workload.message_bytes: 1e+30 bytes is beyond the 1e+15 bytes",
        ),
        (
            "workload: {source: ior, nodes: [2], bytes_per_node: 1.0e+30, "
            "request_bytes: 1.0e+30}\ntopology: tiny\npolicies: [block]\nmodel: packet\n",
            "s.yaml: workload.bytes_per_node: 1e+30 bytes is beyond",
        ),
        (  # a size inside a list of jobs is named by its place
            "workload: {source: jobs, jobs: [{name: m, kind: mpi, nodes: 2, "
            "message_bytes: 1.0e+30}]}\ntopology: tiny\npolicies: [block]\n",
            "s.yaml: workload.jobs[0].message_bytes: 1e+30 bytes is beyond",
        ),
    ],
    ids=[
        "packet-on-lake",
        "ior-2.7-nodes",
        "ior-inf-nodes",
        "nic-delay-1e308",
        "message-1e30-bytes",
        "request-1e30-bytes",
        "job-message-1e30-bytes",
    ],
)
def test_a_refused_scenario_writes_no_score(text, said, lake, tmp_path, capsys):
    _one_node_lake(lake, T0, T0 + dt.timedelta(seconds=10))
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\n{text}")
    assert main(["replay", "--lake", str(lake), "--scenario", str(path)]) == 2
    assert said in _one_line(capsys, "replay")
    assert _replay_rows(lake) == 0


def test_a_refused_command_makes_no_lake_and_says_one_line(tmp_path, capsys):
    """A refused deployment file or scenario prints its refusal alone: no "starting a new one"
    before it, and no lake folder after it; an accepted command then starts the lake."""
    from tests.builders.paths import FIXTURES

    history = FIXTURES / "zabbix" / "history-tags.ndjson"
    lake = tmp_path / "lake"
    config = tmp_path / "burstlake.yaml"
    config.write_text("machines: {m: {sources: {zabbix: {interval: 1000000000}}}}\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: s\nworkload: {source: ior, nodes: [1], bytes_per_node: 1.0e+30, "
        "request_bytes: 1.0e+6}\ntopology: tiny\npolicies: [block]\n"
    )
    ingest = ["ingest", "zabbix", str(history), "--lake", str(lake)]
    refused = [
        ([*ingest, "--config", str(config)], "ingest", f"{config}: machines.m.sources.zabbix"),
        (["replay", "--lake", str(lake), "--scenario", str(scenario)], "replay", "s.yaml"),
    ]
    for argv, command, said in refused:
        assert main(argv) == 2
        assert said in _one_line(capsys, command)
        assert not lake.exists()
    assert main(ingest) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"burstlake: no lake at {lake}; starting a new one", err
    assert _ingest_rows(lake)["node_io"] > 0


SACCT = (
    "JobIDRaw|JobName|User|UID|Account|Partition|Submit|Eligible|Start|End|ReqCPUS|AllocCPUS"
    "|NNodes|NodeList|State|ExitCode|Cluster\n"
    "7|a|u|1|x|w|2024-03-01T00:00:00|2024-03-01T00:00:00|2024-03-01T00:10:00|"
    "2024-03-01T01:00:00|8|8|1|cn001|COMPLETED|0:0|m\n"
)


@pytest.mark.parametrize(
    "flags, start",
    [
        (["--tz", "UTC"], dt.datetime(2024, 3, 1, 0, 10, tzinfo=dt.UTC)),  # the default, given
        ([], dt.datetime(2024, 3, 1, 8, 10, tzinfo=dt.UTC)),  # the file's: PST is UTC-8
    ],
    ids=["flag-equal-to-default-wins", "file-when-no-flag"],
)
def test_a_flag_equal_to_its_default_wins_in_the_rows(flags, start, tmp_path):
    """``--tz UTC`` (the default) given on the command line wins over the file's time zone:
    the job's start in the lake is 00:10 UTC, not 08:10 (7-8 h off, before)."""
    from burstlake.lake import read_table

    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "burstlake.yaml").write_text(
        "machines: {m: {sources: {slurm: {tz: America/Los_Angeles}}}}\n"
    )
    sacct = tmp_path / "jobs.sacct"
    sacct.write_text(SACCT)
    argv = ["ingest", "slurm", str(sacct), "--lake", str(lake), "--cluster", "m", *flags]
    assert main(argv) == 0
    rows = read_table(lake, "jobs", ["job_id", "cluster", "start"]).to_pylist()
    assert rows == [{"job_id": "7", "cluster": "m", "start": start}]


def _zabbix_export(path: Path, host: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "".join(
            f'{{"host": {{"host": "{host}"}}, "itemid": 1, "name": "Lustre read bytes", '
            f'"clock": {1700000000 + 30 * i}, "ns": 0, "value": {100 * i}, "type": 3}}\n'
            for i in range(4)
        )
    )
    return path


@pytest.mark.slow  # airflow dags test
@pytest.mark.parametrize(
    "drops, said",
    [
        ("  - {path: ., source: zabbix, machine: m}\n", "is or holds the lake"),
        (
            "  - {path: ../drops/d, source: zabbix, machine: m}\n"
            "  - {path: ../drops/d/, source: zabbix, machine: n}\n",
            "drops[1].path: ",
        ),
    ],
    ids=["drop-is-the-lake", "two-drops-one-folder"],
)
def test_the_ingest_dag_refuses_a_drop_it_must_not_read(
    drops, said, run_dag, lake, tmp_path, capfd
):
    """Before: the DAG ingested the lake's own files (15, then 86, then 500 files in two runs),
    and a file in a folder two drops share landed under the first machine only. Now the run
    fails on the deployment file and the lake keeps its files and rows."""
    from burstlake.lake import read_table

    lake.mkdir(parents=True, exist_ok=True)
    export = _zabbix_export(tmp_path / "first.ndjson", "cn001")
    assert main(["ingest", "zabbix", str(export), "--lake", str(lake)]) == 0
    _zabbix_export(tmp_path / "drops" / "d" / "later.ndjson", "cn002")
    (lake / "burstlake.yaml").write_text("machines: {m: {}, n: {}}\ndrops:\n" + drops)
    files = sorted(p for p in lake.rglob("*") if p.is_file() and "_locks" not in p.parts)
    rows = read_table(lake, "node_io").num_rows
    try:
        state = run_dag("ingest_zabbix").state
    except Exception as err:  # refused while the DAG is built
        assert said in str(err), err
    else:
        out, err = capfd.readouterr()
        assert state == "failed" and "burstlake.yaml: drops[" in out + err, (out + err)[-3000:]
        assert said in out + err
    after = sorted(p for p in lake.rglob("*") if p.is_file() and "_locks" not in p.parts)
    assert [p for p in after if p.name != "catalog.duckdb"] == [
        p for p in files if p.name != "catalog.duckdb"
    ]
    assert read_table(lake, "node_io").num_rows == rows
