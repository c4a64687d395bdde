"""Fixtures of the replay's tests."""

from __future__ import annotations

import pytest

from tests.builders.lake_window import DXT


@pytest.fixture
def dxt_table(monkeypatch):
    """The ``darshan_dxt`` contract, declared here when this branch's lake lacks it."""
    from burstlake.schemas import REGISTRY
    from burstlake.schemas.tables import TableSpec, _schema

    if "darshan_dxt" not in REGISTRY:
        spec = TableSpec(
            name="darshan_dxt",
            schema=_schema(*DXT),
            key=("log_id", "module", "record_id", "rank", "op", "start_ns", "offset"),
            partition_by="start",
            replace_key=("log_id",),
        )
        monkeypatch.setitem(REGISTRY, "darshan_dxt", spec)
    return "darshan_dxt"
