"""A source's options are checked once, by the source, before any file is read, whoever calls
ingest: the command line, the drop-directory DAG or the demo (docs/design.md, "Sources")."""

from __future__ import annotations

import pytest

from burstlake.jobs.ingest import source_module
from burstlake.jobs.ingest.landing import ingest
from tests.builders.paths import FIXTURES


@pytest.mark.parametrize(
    ("source", "fixture", "options", "reason"),
    [
        ("slurm", "slurm/het_array.sacct", {"tz": "Mars/Olympus"}, "unknown time zone"),
        ("slurm", "slurm/het_array.sacct", {"cluster": " "}, "cannot be empty"),
        ("zabbix", "zabbix/history-tags.ndjson", {"interval": 0}, "must be 1..86400 seconds"),
        ("zabbix", "zabbix/history_uint.tsv", {"items": "no/such/items.tsv"}, "does not exist"),
        ("topology", "topology/small.csv", {"ion_per_cabinet": "yes"}, "is a flag"),
    ],
)
def test_bad_options_are_refused_before_any_file(lake, source, fixture, options, reason):
    with pytest.raises((ValueError, FileNotFoundError), match=reason):
        ingest(source_module(source).SOURCE, [FIXTURES / fixture], lake, options)
    assert not any(lake.iterdir())  # nothing read, nothing written


def test_good_options_pass_the_same_check(lake):
    [report] = ingest(
        source_module("topology").SOURCE,
        [FIXTURES / "topology/small.csv"],
        lake,
        {"ion_per_cabinet": True},
    )
    assert report.landed == 4
