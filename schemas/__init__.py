"""The lake contract: one Arrow schema per table and the expectations on them (docs/design.md,
"The lake")."""

from __future__ import annotations

import pyarrow as pa

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


def conform(table: pa.Table | pa.RecordBatch, table_spec: TableSpec) -> pa.Table:
    """Cast ``table`` to the spec's schema; missing nullable columns become null.

    Raises ValueError naming the column when a required column is missing or cannot be cast.
    """
    if isinstance(table, pa.RecordBatch):
        table = pa.Table.from_batches([table])
    columns = []
    for field in table_spec.schema:
        if field.name in table.column_names:
            column = table.column(field.name)
            try:
                columns.append(column.cast(field.type) if column.type != field.type else column)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                raise ValueError(
                    f"{table_spec.name}.{field.name}: cannot cast {column.type} "
                    f"to {field.type}: {err}"
                ) from err
        elif field.nullable:
            columns.append(pa.nulls(table.num_rows, field.type))
        else:
            raise ValueError(f"{table_spec.name}: required column {field.name!r} is missing")
    return pa.Table.from_arrays(columns, schema=table_spec.schema)
