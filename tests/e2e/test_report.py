"""`burstlake report` on a lake with traffic, metrics and a replayed what-if, opened in a real
headless Chromium: every figure decodes and the console shows no errors."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pytest

from burstlake import report
from burstlake.cli import main

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
FIGURES = {"platform", "burstiness", "heatmap", "loads", "nud", "dxt", "replay-report_ion_remap"}


@pytest.fixture(scope="module")
def full_lake(tiny_metrics_lake, tmp_path_factory) -> Path:
    """A tiny synthesized day with its metrics (a copy of the shared one), a block-vs-cyclic
    ION replay and hand-built DXT traces."""
    import shutil

    from burstlake.lake import clusters
    from burstlake.replay.scenario import SCENARIOS, load
    from burstlake.replay.scenario import run as replay
    from tests.builders.dxt import write_dxt

    lake = tmp_path_factory.mktemp("report") / "lake"
    shutil.copytree(tiny_metrics_lake, lake)
    (machine,) = clusters(lake)
    write_dxt(lake, machine.name)
    scenario = load(SCENARIOS / "ion_remap.yaml")
    replay(
        dataclasses.replace(
            scenario, name="report_ion_remap", topology={**scenario.topology, "name": "tiny"}
        ),
        lake,
    )
    return lake


@pytest.mark.slow  # synthesizes a machine and runs every metric
def test_report_is_self_contained_with_every_figure(full_lake, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--lake", str(full_lake), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    text = out.read_text()
    shown = set(re.findall(r'data-figure="([^"]+)"', text))
    assert shown == FIGURES
    # Self-contained: nothing fetched from anywhere, no script to run.
    assert not re.search(r'(src|href)="(?!data:)', text)
    assert "<script" not in text
    # Every figure has a caption naming the paper it mirrors.
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", text, flags=re.S)
    # and the answers at the top, and papers 002's and 003's sections saying what fills them
    assert len(captions) == len(FIGURES) + 3
    assert all("paper" in c for c in captions)
    # The page opens on the answers: the machine's traffic and each what-if's verdict.
    assert re.findall(r'<section id="([^"]+)"', text)[:2] == ["answers", "platform"]
    answers = text[: text.index('<section id="platform"')]
    assert "GB of node traffic" in answers and " against " in answers and " model)" in answers
    # The platform table carries the paper's values beside the lake's (004 Table 3).
    assert "25.7 %" in text and "6.6 %" in text  # rank-0 jobs, Tianhe-1A and CS19
    # The ION what-if's table carries 004 Fig. 15c's block and cyclic shares under its own.
    assert re.search(
        r"paper \(004 Fig\. 15c, Tianhe-1A\)</i></td><td>0\.586</td><td>0\.379</td>", text
    )


def test_empty_lake_report_says_what_fills_each_section(lake, tmp_path):
    text = report.render(lake)
    assert "data:image/png" not in text
    assert "run `burstlake metrics`" in text
    assert "run `burstlake replay`" in text
    assert "ingest Zabbix or run `burstlake synth`" in text
    assert "no DXT segments: run `burstlake ingest darshan`" in text
    assert "002&#x27;s scenarios not replayed: run `burstlake replay --scenario`" in text
    assert "no bridge-node what-if: run `burstlake replay --scenario" in text


def test_missing_lake_is_one_line(tmp_path, capsys):
    assert main(["report", "--lake", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("burstlake report: no lake at") and "\n" not in err


@pytest.mark.slow
def test_report_renders_in_headless_chromium(full_lake, tmp_path):
    if not (CHROMIUM and CHROMEDRIVER):
        missing = "Debian's chromium and chromium-driver are missing (`make test` installs them)"
        if os.environ.get("CI"):
            pytest.fail(missing)
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    out = report.write(full_lake, tmp_path / "report.html")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1200,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.get(out.as_uri())
        images = driver.execute_script(
            "return [...document.images].map(i => [i.dataset.figure, i.complete, i.naturalWidth])"
        )
        height = driver.execute_script("return document.body.scrollHeight")
        driver.set_window_size(1200, min(height, 12000))
        shot = tmp_path / "report.png"
        assert driver.save_screenshot(str(shot))
        errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    finally:
        driver.quit()
    assert {name for name, *_ in images} == FIGURES
    assert all(complete and width > 100 for _, complete, width in images), images
    assert images[0][0] == "platform"  # the first figure: the busiest machine's, with data
    assert errors == []
    assert shot.stat().st_size > 20_000  # a real rendering, not a blank page


def test_machines_without_traffic_are_one_line_and_the_busiest_comes_first(tmp_path):
    from burstlake.lake import write_table

    lake = tmp_path / "lake"
    ts = pa.array([1700000000 * 10**6], pa.int64()).cast(pa.timestamp("us", tz="UTC"))
    for machine, nbytes in (("small", 10), ("big", 10**9)):
        rows = pa.table(
            {
                "node": ["cn1"],
                "cluster": [machine],
                "ts": ts,
                "interval_s": pa.array([10], pa.int32()),
                "read_bytes": pa.array([nbytes], pa.int64()),
            }
        )
        write_table(lake, "node_io", rows, machine)
    idle = pa.table({"node": ["x1"], "cabinet": ["c0"], "cluster": ["quiet"]})
    write_table(lake, "topology", idle, "topo")
    text = report.render(lake)
    ids = re.findall(r'<section id="([^"]+)"', text)
    assert ids[0] == "answers" and ids[1] == "platform-big"
    assert ids.index("replay") < ids.index("platform-small")
    assert "without node traffic (no figures drawn): quiet" in text
    assert not any(i.endswith("-quiet") for i in ids)


def _scores(scenario: str, values: dict[str, dict[str, float]], unit: str = "") -> pa.Table:
    """``replay_scores`` rows of one scenario: policy → metric → value."""
    rows = [(p, m, v) for p, scored in values.items() for m, v in scored.items()]
    return pa.table(
        {
            "scenario": [scenario] * len(rows),
            "policy": [p for p, _, _ in rows],
            "metric": [m for _, m, _ in rows],
            "value": pa.array([v for _, _, v in rows], pa.float64()),
            "unit": [unit] * len(rows),
            "topology": ["quartz186" if scenario.startswith("split") else "mira512"] * len(rows),
            "model": ["flow"] * len(rows),
            "computed_at": pa.array([datetime.now(UTC)] * len(rows), pa.timestamp("us", "UTC")),
        }
    )


def _foms(amg: float, umt: float, pf3d: float) -> dict[str, float]:
    """Two jobs per application, as the split_tapered scenarios name them."""
    return {
        f"{app}{i}_figure_of_merit": fom
        for app, fom in (("amg", amg), ("umt", umt), ("pf3d", pf3d))
        for i in (0, 1)
    }


def _cells(text: str, comparison: str, placement: str) -> list[str]:
    row = re.search(rf"<tr><td>{re.escape(comparison)}</td><td>{placement}</td>(.*?)</tr>", text)
    assert row, f"no row {comparison} / {placement}"
    return re.findall(r"<td>(.*?)</td>", row.group(1))


def test_paper_002_and_003_sections_show_the_lake_beside_the_paper(tmp_path):
    """002 Tables 2 and 3 and 003's counters computed from the lake's replay_scores rows, each
    cell beside the paper's own (the report replays nothing)."""
    from burstlake.lake import write_table

    lake = tmp_path / "lake"
    block = {
        "control": _foms(1.0, 2.0, 1.0),
        "split3": _foms(0.98, 2.0, 1.083),
        "random": _foms(1.0, 1.9, 0.5),
    }
    cyclic = {"control": _foms(1.035, 2.06, 1.2), "split3": _foms(1.035, 2.06, 1.2)}
    bully = {"control": _foms(1.0, 1.0, 1.0), "split2": _foms(1.001, 0.997, 1.0)}
    for name, values in (
        ("split_tapered", block),
        ("split_tapered_cyclic", cyclic),
        ("split_bully", bully),
    ):
        write_table(lake, "replay_scores", _scores(name, values, "1/s"), f"scenario-{name}")
    bridges = {
        "given": {"write_time": 30.0, "bridge_messages_through_mean": 761.0,
                  "bridge_messages_sent_sd": 0.09},
        "bridge-route": {"write_time": 15.0, "bridge_messages_through_mean": 0.0,
                         "bridge_messages_sent_sd": 0.02},
    }  # fmt: skip
    write_table(lake, "replay_scores", _scores("bridges_x", bridges), "scenario-bridges_x")
    text = report.render(lake)
    assert 'data-figure="paper-002"' in text and 'data-figure="paper-003"' in text
    # ours, 002's for AMG, UMT, pF3D, then the table cited
    assert _cells(text, "block, against Control", "split3") == [
        "-2.0 %", "-2.1 %", "0.0 %", "-0.1 %", "+8.3 %", "+8.3 %", "Table 2"
    ]  # fmt: skip
    assert _cells(text, "block, against Control", "random")[:6] == [
        "0.0 %", "-1.5 %", "-5.0 %", "-0.1 %", "-50.0 %", "+5.7 %"
    ]  # fmt: skip
    assert _cells(text, "cyclic, against Control", "split3")[1] == "-0.2 %"
    assert _cells(text, "cyclic over block", "control")[:2] == ["+3.5 %", "+3.5 %"]
    assert _cells(text, "cyclic over block", "control")[4:6] == ["+20.0 %", "+9.8 %"]
    # the cyclic replay has no random placement: ours is blank beside 002's
    assert _cells(text, "cyclic over block", "random")[:2] == ["–", "+4.9 %"]
    bully_row = _cells(text, "block, split 2 ways beside MPIBW", "split2")
    assert bully_row == ["+0.1 %", "+0.1 %", "-0.3 %", "-0.3 %", "0.0 %", "+0.4 %",
                         "Table 2, Bully MPIBW"]  # fmt: skip
    # 003: write time and bridge-node counters, given → bridge-route beside 003's
    section = text[text.index('id="paper-003"') :]
    assert "<td>bridges_x</td><td>write time (s)</td><td>30 → 15</td><td>-50.0 %</td>" in section
    assert "<td>-60 % (average)</td>" in section
    assert "<td>0.09 → 0.02</td><td>-77.8 %</td><td>512 nodes, 1 rank/node, 64 KB</td>" in section
    assert "<td>761 → 0</td><td>-100.0 %</td><td>–</td><td>12.7 → 8.5</td>" in section


def test_paper_sections_without_control_or_boot_say_what_fills_them(tmp_path):
    """A split replay without Control, a bridge replay without its boot assignment: nothing to
    compare, so each paper's section names the command that fills it."""
    from burstlake.lake import write_table

    lake = tmp_path / "lake"
    split = _scores("split_tapered", {"split3": _foms(1.0, 1.0, 1.0)})
    write_table(lake, "replay_scores", split, "scenario-split_tapered")
    bridge = _scores("bridges_x", {"bridge-route": {"bridge_messages_sent_sd": 0.0}})
    write_table(lake, "replay_scores", bridge, "scenario-bridges_x")
    text = report.render(lake)
    assert 'data-figure="paper-' not in text
    assert "002&#x27;s scenarios not replayed" in text and "no bridge-node what-if" in text


@pytest.mark.slow  # replays 002's and 003's shipped scenarios (about 25 s)
def test_paper_sections_from_the_shipped_replays(tmp_path):
    """The shipped split_tapered, split_tapered_cyclic and bridges_mira512_all scenarios
    replayed into a lake: the report's cells are the replays' own figures and show 002's and
    003's shapes (issue 23's thresholds)."""
    from burstlake.replay import splits
    from burstlake.replay.scenario import SCENARIOS, load
    from burstlake.replay.scenario import run as replay

    lake = tmp_path / "lake"
    tables = {
        name: replay(load(SCENARIOS / f"{name}.yaml"), lake).to_pandas()
        for name in ("split_tapered", "split_tapered_cyclic", "bridges_mira512_all")
    }
    text = report.render(lake)
    scored = {
        p: dict(zip(f.metric, f.value, strict=True))
        for p, f in tables["split_tapered"].groupby("policy")
    }
    table2 = splits.versus_control(splits.applications(scored))
    for placement in ("split3", "split6", "random"):
        cells = _cells(text, "block, against Control", placement)
        for column, app in enumerate(("amg", "umt", "pf3d")):
            shown = float(cells[2 * column].replace(" %", ""))
            assert shown == pytest.approx(table2[placement][app], abs=0.051)
            if app != "pf3d":  # 002: AMG and UMT minimally affected
                assert -5 <= shown <= 10
    bridges = tables["bridges_mira512_all"].set_index(["policy", "metric"]).value
    lower = 1 - bridges["bridge-route", "write_time"] / bridges["given", "write_time"]
    assert lower >= 0.30  # 003: whole-partition writes at least 30 % faster
    assert f"<td>{-100 * lower:+.1f} %</td>" in text[text.index('id="paper-003"') :]


def test_the_report_uses_the_lakes_thresholds_and_embeds_no_benchmark(tmp_path):
    """The NUD figure's line is the uneven_nud the lake's metrics ran with (recorded in the
    lake), and the MPI table shows the lake's replays beside paper 000's figure only: CODES'
    latencies are the benchmark's results, not the product's."""
    import pandas as pd

    from burstlake import report
    from burstlake.jobs.metrics.settings import MetricSettings, record
    from burstlake.lake import Cluster

    assert "NUD > 0.05" in report.nud_section(Cluster(tmp_path, None)).caption  # the default
    record(MetricSettings(uneven_nud=0.08), tmp_path)
    assert "NUD > 0.08" in report.nud_section(Cluster(tmp_path, None)).caption
    scores = pd.DataFrame(
        {
            "scenario": ["p"] * 2,
            "policy": ["random-node"] * 2,
            "metric": ["mpi_latency_mean", "mpi_slowdown"],
            "value": [2e-6, 3.0],
            "model": ["packet"] * 2,
        }
    )
    (section,) = report.models_section(scores)
    assert "paper 000 §5.1" in section.table_html and "8×" in section.table_html
    assert "p (random-node), packet model" in section.table_html and "3×" in section.table_html
    assert "CODES, paper" not in section.table_html
    assert report.models_section(scores.iloc[0:0]) == []
