"""Arrow schema of replay_scores (SPEC §5): written by the replay engine."""

from __future__ import annotations

from .tables import TableSpec

TABLES: tuple[TableSpec, ...] = ()
