"""Great Expectations suites for the lake tables, derived from their TableSpecs (docs/design.md,
"The lake").

Each table gets: required columns not null, count and byte columns >= 0, time pairs ordered
(earlier <= later where both are known), and node-name columns in ``topology`` when a topology
is loaded. ``EXTRA`` holds table-specific expectations beyond what the spec implies.
"""

from __future__ import annotations

from collections.abc import Iterable

import great_expectations.expectations as gxe
from great_expectations.expectations.expectation import Expectation

from .tables import TableSpec

EXTRA: dict[str, list[Expectation]] = {
    "job_nodes": [gxe.ExpectCompoundColumnsToBeUnique(column_list=["job_id", "cluster", "node"])],
    "node_io": [gxe.ExpectColumnValuesToBeBetween(column="interval_s", min_value=1)],
    "darshan_rank_io": [gxe.ExpectColumnValuesToBeBetween(column="rank", min_value=-1)],
}


def expectations(spec: TableSpec, topology_nodes: Iterable[str] | None = None) -> list[Expectation]:
    """The expectations one batch of ``spec``'s table must meet."""
    found: list[Expectation] = [
        gxe.ExpectColumnValuesToNotBeNull(column=f.name) for f in spec.schema if not f.nullable
    ]
    found += [gxe.ExpectColumnValuesToBeBetween(column=c, min_value=0) for c in spec.nonnegative]
    found += [
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(
            column_A=later, column_B=earlier, or_equal=True, ignore_row_if="either_value_is_missing"
        )
        for earlier, later in spec.ordered
    ]
    if topology_nodes is not None:
        names = sorted(set(topology_nodes))
        found += [
            gxe.ExpectColumnValuesToBeInSet(column=c, value_set=names) for c in spec.node_columns
        ]
    return found + list(EXTRA.get(spec.name, []))
