"""The validation rules of the lake tables, derived from their TableSpecs (docs/design.md,
"The lake"), and their Great Expectations suites.

Each table gets: required columns not null, count and byte columns >= 0, time pairs ordered
(earlier <= later where both are known), and node-name columns in ``topology`` when a topology
is loaded. ``EXTRA`` holds table-specific rules beyond what the spec implies.

A rule is declared once, as a :class:`Rule` named by its Great Expectations type;
:func:`expectations` turns the rules into the GX suite, and ``burstlake/validate.py`` evaluates
the same rules as vectorised Arrow checks for the tables declared ``arrow_checks`` (millions
of rows, where GX's pandas engine costs seconds). This module imports GX only when asked for
a suite.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .tables import TableSpec

NOT_NULL = "expect_column_values_to_not_be_null"
BETWEEN = "expect_column_values_to_be_between"
ORDERED = "expect_column_pair_values_a_to_be_greater_than_b"
IN_SET = "expect_column_values_to_be_in_set"
UNIQUE = "expect_compound_columns_to_be_unique"


@dataclass(frozen=True)
class Rule:
    """One expectation: its Great Expectations type and arguments."""

    kind: str
    kwargs: dict[str, Any] = field(default_factory=dict)


EXTRA: dict[str, list[Rule]] = {
    "job_nodes": [Rule(UNIQUE, {"column_list": ["job_id", "cluster", "node"]})],
    "node_io": [Rule(BETWEEN, {"column": "interval_s", "min_value": 1})],
    "darshan_rank_io": [Rule(BETWEEN, {"column": "rank", "min_value": -1})],
}


def rules(spec: TableSpec, topology_nodes: Iterable[str] | None = None) -> list[Rule]:
    """The rules one batch of ``spec``'s table must meet."""
    found = [Rule(NOT_NULL, {"column": f.name}) for f in spec.schema if not f.nullable]
    found += [Rule(BETWEEN, {"column": c, "min_value": 0}) for c in spec.nonnegative]
    found += [
        Rule(
            ORDERED,
            {
                "column_A": later,
                "column_B": earlier,
                "or_equal": True,
                "ignore_row_if": "either_value_is_missing",
            },
        )
        for earlier, later in spec.ordered
    ]
    if topology_nodes is not None:
        names = sorted(set(topology_nodes))
        found += [Rule(IN_SET, {"column": c, "value_set": names}) for c in spec.node_columns]
    return found + list(EXTRA.get(spec.name, []))


def expectation(rule: Rule):
    """The Great Expectations object of a rule."""
    import great_expectations.expectations as gxe

    name = "".join(part.capitalize() for part in rule.kind.split("_"))
    return getattr(gxe, name)(**rule.kwargs)


def expectations(spec: TableSpec, topology_nodes: Iterable[str] | None = None) -> list:
    """The Great Expectations suite one batch of ``spec``'s table must meet."""
    return [expectation(r) for r in rules(spec, topology_nodes)]
