"""The lake contract: one Arrow schema per table (SPEC §3) and the expectations on them."""

from __future__ import annotations

from . import metrics, replay, synth, tables
from .tables import TableSpec

REGISTRY: dict[str, TableSpec] = {
    spec.name: spec for module in (tables, metrics, replay, synth) for spec in module.TABLES
}


def spec(name: str) -> TableSpec:
    """The TableSpec of a lake table, or a ValueError naming the known tables."""
    try:
        return REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(REGISTRY))
        raise ValueError(f"unknown lake table {name!r}; known tables: {known}") from None
