"""`burstlake demo` end to end: the real samples joined across sources, then the synthetic
machine through replay (the `make demo` path, on a temporary lake)."""

from __future__ import annotations

import nbformat
import pytest

from burstlake import demo


@pytest.mark.slow
def test_demo_reports_the_edison_summary_and_the_what_if(lake, shared_data, monkeypatch):
    monkeypatch.setenv("BURSTLAKE_SAMPLES", str(shared_data))
    lines: list[str] = []
    report = demo.run(lake, progress=lines.append)
    out = "\n".join([*lines, report])
    assert "job 4478544 spans 2 cabinets: c3-3 (75 nodes), c4-3 (53 nodes)" in out
    assert "its Darshan logs: vpicio_uni in step vpicio_uni, dbscan_read in step dbscan_read" in out
    # the 15 logs from other centres and the 4 of generated/; every DXT segment and name
    # record is a record (docs/design.md, "Darshan DXT")
    assert "19 files, 813623 records in, 813623 landed, 0 quarantined" in out
    shares = next(line for line in out.splitlines() if line.startswith("top10_ion_share "))
    block, cyclic = (float(v) for v in shares.split()[-2:])
    assert cyclic < block
    optimizable = next(line for line in out.splitlines() if line.startswith("optimizable_jobs"))
    assert optimizable.split()[2:4] == ["0.063", "0.24"]  # the paper's values beside the lake's
    notebook = nbformat.read(lake / "notebooks" / "spatial_burstiness.ipynb", as_version=4)
    images = [
        o for c in notebook.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert len(images) >= 7  # Figs. 2, 4, 5, 7, 8, 10, 11
    # The HTML report is written into the lake, with the what-if the demo replayed.
    assert f"write_report           wrote {lake / 'report.html'}" in out
    assert 'data-figure="replay-demo_ion_remap"' in (lake / "report.html").read_text()
    assert out.rstrip().endswith(f"report: {lake / 'report.html'}")  # the last line
    # one summary per machine, and all of it on one screen of progress plus results
    assert "platform summary of machine edison" in out and "platform summary of machine tiny" in out
    assert len(out.splitlines()) <= 60, out


def test_summary_without_samples_leaves_out_the_sample_job(lake):
    from burstlake.jobs.synth.run import synthesize

    synthesize("tiny", lake=lake, seed=0, days=0.2)
    text = demo.summary(lake)
    assert text.startswith(f"lake {lake}: ")
    assert demo.DEMO_JOB not in text and "cabinets" not in text
