"""Arrow schema of synth_truth: the labels the trace synthesizer intended (issue 4)."""

from __future__ import annotations

from .tables import TableSpec

TABLES: tuple[TableSpec, ...] = ()
