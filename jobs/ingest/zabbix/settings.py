"""The Zabbix source's parse options, checked (their declaration and defaults:
:mod:`.options`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from burstlake import readonly
from burstlake.jobs.ingest.zabbix import database, options
from burstlake.jobs.ingest.zabbix.mapping import (
    HostNames,
    ItemMapping,
    load_mapping,
    prefix_rewrite,
)


@dataclass(frozen=True)
class Settings:
    """The parse options, checked."""

    mapping: ItemMapping
    interval: int
    hosts: HostNames
    items: Path | None = None
    gap_factor: float = options.GAP_FACTOR
    spill_dir: str | None = None
    memory_limit: str = options.MEMORY_LIMIT
    threads: int = options.THREADS
    latest_clock: int | None = None  # set by a --db read: later clocks are quarantined
    db_source: str | None = None  # set by a --db read: the database its rows come from

    @classmethod
    def from_options(cls, given: dict[str, Any]) -> Settings:
        """Check the options (``None`` or absent: the default of :mod:`.options`; a value:
        its :class:`~burstlake.jobs.ingest.source.Option`'s type and bounds)."""
        items = given.get("items")
        if items is not None and not Path(items).is_file():
            raise FileNotFoundError(f"item table {items} does not exist")
        return cls(
            mapping=load_mapping(given.get("mapping")),
            interval=options.checked(given.get("interval"), options.INTERVAL, options.INTERVAL_S),
            hosts=HostNames(
                strip_domain=not given.get("keep_domain", False),
                prefixes=tuple(prefix_rewrite(p) for p in given.get("host_prefix") or ()),
            ),
            items=Path(items) if items else None,
            gap_factor=options.checked(given.get("gap_factor"), options.GAP, options.GAP_FACTOR),
            spill_dir=given.get("spill_dir"),
            memory_limit=readonly.memory_limit(
                given.get("memory_limit") or options.MEMORY_LIMIT, "--memory-limit"
            ),
            threads=options.checked(given.get("threads"), options.THREAD_COUNT, options.THREADS),
            latest_clock=_latest_clock(given.get("latest_clock")),
            db_source=given.get("db_source"),
        )


def _latest_clock(given: object) -> int | None:
    """The internal option ``latest_clock`` (Unix seconds) a ``--db`` read passes on."""
    if given is None:
        return None
    if not str(given).isdigit():
        raise ValueError(f"latest_clock {given!r} is not Unix seconds")
    return int(str(given))


def check_options(given: Mapping[str, Any]) -> None:
    """The parse options are those :meth:`Settings.from_options` accepts (it raises), and the
    ``--db`` window's."""
    Settings.from_options(dict(given))
    for name in ("since", "until"):
        database.parse_time(given.get(name), name)
    database.future_tolerance(given)
