"""Arrow schemas of the metrics tables (SPEC §4): written by the Spark jobs in jobs/metrics."""

from __future__ import annotations

from .tables import TableSpec

TABLES: tuple[TableSpec, ...] = ()
