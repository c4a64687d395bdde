"""`burstlake demo` end to end: the real samples joined across sources, then the synthetic
machine through replay (the `make demo` path, on a temporary lake)."""

from __future__ import annotations

import pytest

from burstlake import demo


@pytest.mark.slow
def test_demo_prints_the_edison_summary_and_the_what_if(lake, shared_data, capsys, monkeypatch):
    monkeypatch.setenv("BURSTLAKE_SAMPLES", str(shared_data))
    demo.run(lake)
    out = capsys.readouterr().out
    assert "job 4478544 spans 2 cabinets: c3-3 (75 nodes), c4-3 (53 nodes)" in out
    assert "its Darshan logs: vpicio_uni in step vpicio_uni, dbscan_read in step dbscan_read" in out
    assert "15 files, 2563 records in, 2563 landed, 0 quarantined" in out
    shares = next(line for line in out.splitlines() if line.startswith("top10_ion_share "))
    block, cyclic = (float(v) for v in shares.split()[-2:])
    assert cyclic < block
