"""The thresholds a lake's metrics ran with, recorded in the lake (jobs/metrics/settings.py:
record, recorded) so the replay's scores and the report use the same ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from burstlake.jobs.metrics.settings import RECORD, MetricSettings, record, recorded


def test_recorded_settings_round_trip_and_default(tmp_path: Path) -> None:
    assert recorded(tmp_path) == MetricSettings()  # metrics never ran: the defaults
    assert recorded(None) == MetricSettings()
    chosen = MetricSettings().with_overrides(
        ["top_ion_fraction=0.2", "uneven_nud=0.08", "darshan_modules=POSIX"]
    )
    assert record(chosen, tmp_path) == tmp_path / RECORD
    assert recorded(tmp_path) == chosen
    assert recorded(tmp_path).darshan_modules == ("POSIX",)
    assert not list(tmp_path.glob(f".{RECORD}*"))  # no scratch file left behind


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not the metric settings"),
        ('{"top_ion_fracton": 0.2}', "keys must be among"),
        ('{"top_ion_fraction": 2}', r"must be in \(0, 1\]"),
        ("[1]", "keys must be among"),
        ("", "not the metric settings"),
    ],
)
def test_a_bad_record_is_one_line_naming_the_file(tmp_path: Path, text: str, message: str) -> None:
    (tmp_path / RECORD).write_text(text)
    with pytest.raises(ValueError, match=message) as err:
        recorded(tmp_path)
    assert str(tmp_path / RECORD) in str(err.value) and "\n" not in str(err.value)
