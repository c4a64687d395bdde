"""Ingest: one module per input source, all landing through :mod:`.landing` (docs/design.md,
"Sources").

Each source module defines ``SOURCE`` (a :class:`~burstlake.jobs.ingest.source.Source`, the
contract), whose ``options`` (:class:`~burstlake.jobs.ingest.source.Option` records) are its
command-line flags and deployment-file keys, and arrive as the parse options.
"""

from __future__ import annotations

import importlib
from types import ModuleType

SOURCES = ("slurm", "zabbix", "darshan", "topology")


def source_module(name: str) -> ModuleType:
    """The module of an ingest source, e.g. ``source_module('slurm').SOURCE``."""
    if name not in SOURCES:
        raise ValueError(f"unknown source {name!r}; choose one of {', '.join(SOURCES)}")
    return importlib.import_module(f"burstlake.jobs.ingest.{name}")
