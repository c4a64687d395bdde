"""`burstlake report` on a lake with traffic, metrics and a replayed what-if, opened in a real
headless Chromium: every figure decodes and the console shows no errors."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from pathlib import Path

import pytest

from burstlake import report
from burstlake.cli import main

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
FIGURES = {"platform", "burstiness", "heatmap", "loads", "nud", "replay-report_ion_remap"}


@pytest.fixture(scope="module")
def full_lake(tiny_metrics_lake, tmp_path_factory) -> Path:
    """A tiny synthesized day with its metrics (a copy of the shared one) and a
    block-vs-cyclic ION replay."""
    import shutil

    from burstlake.replay.scenario import SCENARIOS, load
    from burstlake.replay.scenario import run as replay

    lake = tmp_path_factory.mktemp("report") / "lake"
    shutil.copytree(tiny_metrics_lake, lake)
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
    assert len(captions) == len(FIGURES) + 1  # and the answers at the top
    assert all("paper" in c for c in captions)
    # The page opens on the answers: the machine's traffic and each what-if's verdict.
    assert re.findall(r'<section id="([^"]+)"', text)[:2] == ["answers", "platform"]
    answers = text[: text.index('<section id="platform"')]
    assert "GB of node traffic" in answers and " against " in answers and " model)" in answers
    # The platform table carries the paper's values beside the lake's (004 Table 3).
    assert "25.7 %" in text and "6.6 %" in text  # rank-0 jobs, Tianhe-1A and CS19
    # The ION what-if's table carries 004 Fig. 15c's block and cyclic shares under its own.
    assert re.search(r"paper \(004 Fig\. 15c\)</i></td><td>0\.586</td><td>0\.379</td>", text)


def test_empty_lake_report_says_what_fills_each_section(lake, tmp_path):
    text = report.render(lake)
    assert "data:image/png" not in text
    assert "run `burstlake metrics`" in text
    assert "run `burstlake replay`" in text
    assert "ingest Zabbix or run `burstlake synth`" in text


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
    import pyarrow as pa

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
