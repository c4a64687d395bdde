"""Progress as data: library code reports :class:`Step` values to a callback the caller gives.

Library modules never draw bars or print; the command line renders the steps
(:func:`burstlake.cli.bars.rendered`), a notebook or an Airflow task may log them or drop them.
A stage takes ``report: Report = silent`` and calls it as work advances.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Step:
    """Work advanced on one task, e.g. ``Step("ingest slurm", 4096, total=1e6, unit="B")``.

    ``what`` names the task (one bar each); ``advance`` is the work done since the task's last
    step, in ``unit``; ``total`` is the task's whole work once known; ``note`` says what is
    being worked on now (e.g. a machine and a table)."""

    what: str
    advance: float = 0.0
    total: float | None = None
    unit: str = ""
    note: str = ""
    done: bool = False  # the task finished: its bar closes


Report = Callable[[Step], None]


def silent(step: Step) -> None:
    """The default report: progress goes nowhere."""
