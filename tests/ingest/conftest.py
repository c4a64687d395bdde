"""Fixtures of the ingest tests, built through tests/builders."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.builders.zabbix_db import PASSWORD, loaded_history, zabbix_server


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A PostgreSQL server with Zabbix 6.0's schema (:func:`.zabbix_server`); its URL."""
    with zabbix_server() as url:
        yield url


@pytest.fixture
def loaded(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The server's zabbix database holding the generated history (emptied afterwards), the
    password in $ZBX_PASSWORD."""
    monkeypatch.setenv("ZBX_PASSWORD", PASSWORD)
    with loaded_history(server) as url:
        yield url
