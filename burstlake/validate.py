"""Run a table's Great Expectations suite on a batch and say, row by row, what failed.

One ephemeral GX context per process (its import and start-up cost seconds). GX's pandas
engine checks ``ExpectColumnValuesToBeBetween`` with a Python call per value, about 30k rows/s;
so each such expectation is first gated by its aggregate twin ``ExpectColumnMinToBeBetween`` /
``ExpectColumnMaxToBeBetween`` (vectorised), and the row-level expectation runs only for the
columns whose gate failed. Same expectations, same verdicts; clean batches stay fast.

A table declared ``arrow_checks`` (``darshan_dxt``: millions of rows a log) is checked by
:func:`arrow_verdict` instead: the same rules (``schemas/expectations.py``), evaluated as
vectorised Arrow compute over the batch, with the same reasons; neither GX nor pandas is loaded
for it. ``tests/ingest/test_validate.py`` holds the two engines to the same verdicts.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from burstlake.lake.clusters import checked_keys, node_keys  # noqa: F401 - node_keys re-exported

if TYPE_CHECKING:
    import pandas as pd

    from burstlake.schemas import TableSpec
    from burstlake.schemas.expectations import Rule

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")


@dataclass(frozen=True)
class Verdict:
    """Which rows of a batch failed, and why (row index -> '; '-joined reasons)."""

    reasons: dict[int, str]

    @property
    def ok(self) -> bool:
        return not self.reasons


@cache
def _context():
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


@cache
def _batch_definition(table: str):
    context = _context()
    try:
        source = context.data_sources.get("burstlake")
    except (KeyError, ValueError):
        source = context.data_sources.add_pandas("burstlake")
    return source.add_dataframe_asset(table).add_batch_definition_whole_dataframe("batch")


def _describe(result) -> str:
    config = result.expectation_config
    kwargs = {k: v for k, v in config.kwargs.items() if k not in ("value_set", "batch_id")}
    args = ", ".join(f"{k}={v}" for k, v in sorted(kwargs.items()) if v is not None)
    return f"{config.type}({args})"


def _gates(expectations: list) -> tuple[list, dict[int, object]]:
    """Split off the per-value range checks: (suite to run now, gate index -> range check)."""
    import great_expectations.expectations as gxe

    now, gated = [], {}
    for expectation in expectations:
        if isinstance(expectation, gxe.ExpectColumnValuesToBeBetween):
            column = expectation.column
            if expectation.min_value is not None:
                gated[len(now)] = expectation
                now.append(
                    gxe.ExpectColumnMinToBeBetween(column=column, min_value=expectation.min_value)
                )
            if expectation.max_value is not None:
                gated[len(now)] = expectation
                now.append(
                    gxe.ExpectColumnMaxToBeBetween(column=column, max_value=expectation.max_value)
                )
        else:
            now.append(expectation)
    return now, gated


def _run(table: str, frame: pd.DataFrame, expectations: list) -> list:
    """Validate ``frame`` against ``expectations``; results in the same order."""
    import great_expectations as gx

    batch_definition = _batch_definition(table)  # creates the GX context suites need
    suite = gx.ExpectationSuite(name=f"{table}-suite")
    for expectation in expectations:
        suite.add_expectation(expectation)
    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame})
    report = batch.validate(suite, result_format={"result_format": "COMPLETE"})
    for result in report.results:
        if result.exception_info and result.exception_info.get("raised_exception"):
            message = result.exception_info.get("exception_message")
            raise RuntimeError(
                f"expectation {_describe(result)} on {table} could not run: {message}"
            )
    by_key = {
        _key(r.expectation_config.type, r.expectation_config.kwargs): r for r in report.results
    }
    return [by_key[_key(e.expectation_type, e.configuration.kwargs)] for e in expectations]


def _key(kind: str, kwargs: dict) -> str:
    """Identity of an expectation in a report (GX does not keep the suite's order)."""
    return kind + json.dumps(
        {k: v for k, v in kwargs.items() if k != "batch_id"}, sort_keys=True, default=str
    )


def _present(rows: pa.Table, columns: tuple[str, ...], known: list[str]) -> list[str]:
    """The known names that occur in ``rows``: the same verdict as the whole set, and GX copies
    its expectations' arguments many times per run, so a machine-sized set costs seconds."""
    present: set[str] = set()
    for column in columns:
        present.update(v for v in pc.unique(rows.column(column)).to_pylist() if v is not None)
    return sorted(present.intersection(known))


def _keyed(rows: pa.Table, columns: tuple[str, ...], topology_nodes: list[str]) -> pa.Table:
    """``rows`` with each node column replaced by its :func:`checked_keys` (for the topology
    check only: the verdict names the column, never the key)."""
    for column in columns:
        at = rows.schema.get_field_index(column)
        keys = checked_keys(rows.column("cluster"), rows.column(column), topology_nodes)
        rows = rows.set_column(at, column, keys)
    return rows


def _described(rule: Rule) -> str:
    """A rule as :func:`_describe` names its GX result (GX keeps range bounds as floats)."""
    from burstlake.schemas.expectations import BETWEEN

    kwargs = dict(rule.kwargs)
    if rule.kind == BETWEEN:
        kwargs.update({k: float(v) for k, v in kwargs.items() if k.endswith("_value")})
    kwargs.pop("value_set", None)
    args = ", ".join(f"{k}={v}" for k, v in sorted(kwargs.items()) if v is not None)
    return f"{rule.kind}({args})"


def _failing(rule: Rule, rows: pa.Table) -> pa.Array:
    """The rows a rule refuses (a boolean mask; nulls are not refused but by NOT_NULL, as GX
    skips missing values in its column-map expectations)."""
    from burstlake.schemas.expectations import BETWEEN, IN_SET, NOT_NULL, ORDERED

    k = rule.kwargs
    if rule.kind == NOT_NULL:
        return pc.is_null(rows.column(k["column"]))
    if rule.kind == BETWEEN:
        column, masks = rows.column(k["column"]), []
        if k.get("min_value") is not None:
            masks.append(pc.less(column, k["min_value"]))
        if k.get("max_value") is not None:
            masks.append(pc.greater(column, k["max_value"]))
        mask = masks[0] if len(masks) == 1 else pc.or_(*masks)
    elif rule.kind == ORDERED and k.get("ignore_row_if") == "either_value_is_missing":
        compare = pc.less if k.get("or_equal") else pc.less_equal
        mask = compare(rows.column(k["column_A"]), rows.column(k["column_B"]))
    elif rule.kind == IN_SET:
        column = rows.column(k["column"])
        known = pc.is_in(column, value_set=pa.array(k["value_set"], column.type))
        mask = pc.and_(pc.invert(known), pc.is_valid(column))
    else:
        raise ValueError(f"{rule.kind} has no vectorised check; validate this table with GX")
    return pc.fill_null(mask, False)


def arrow_verdict(table_spec: TableSpec, rows: pa.Table, topology_nodes=None) -> Verdict:
    """The verdict of ``table_spec``'s rules on ``rows`` (conformed), evaluated as vectorised
    Arrow checks: the failing rows, each with its reasons named as GX names them."""
    from burstlake.schemas.expectations import rules

    reasons: dict[int, list[str]] = {}
    for rule in rules(table_spec, topology_nodes):
        mask = _failing(rule, rows)
        if not pc.any(mask).as_py():
            continue
        for index in pc.indices_nonzero(mask).to_pylist():
            reasons.setdefault(index, []).append(f"failed {_described(rule)}")
    return Verdict({i: "; ".join(r) for i, r in sorted(reasons.items())})


def suite_verdict(table_spec: TableSpec, rows: pa.Table, topology_nodes=None) -> Verdict:
    """The verdict of ``table_spec``'s GX suite on ``rows`` (conformed)."""
    from burstlake.schemas.expectations import expectations

    frame = rows.to_pandas().reset_index(drop=True)
    table = table_spec.name
    now, gated = _gates(expectations(table_spec, topology_nodes))
    results = _run(table, frame, now)
    failed_gates = {
        id(gated[i]): gated[i] for i, r in enumerate(results) if i in gated and not r.success
    }
    results = [r for i, r in enumerate(results) if i not in gated]
    if failed_gates:
        results += _run(table, frame, list(failed_gates.values()))
    reasons: dict[int, list[str]] = {}
    for result in results:
        for index in [] if result.success else result.result.get("unexpected_index_list") or []:
            reasons.setdefault(int(index), []).append(f"failed {_describe(result)}")
    return Verdict({i: "; ".join(r) for i, r in sorted(reasons.items())})


def prepared(
    table: str, rows: pa.Table, topology_nodes: list[str] | None = None
) -> tuple[TableSpec, pa.Table, list[str] | None]:
    """(spec, rows, topology names) as the engines take them: rows conformed to the table's
    schema, node columns keyed for the topology check and the names cut to those present."""
    from burstlake.schemas import conform, spec

    table_spec = spec(table)
    rows = conform(rows, table_spec)
    if topology_nodes is not None and table_spec.node_columns:
        rows = _keyed(rows, table_spec.node_columns, topology_nodes)
        topology_nodes = _present(rows, table_spec.node_columns, topology_nodes)
    return table_spec, rows, topology_nodes


def validate(table: str, rows: pa.Table, topology_nodes: list[str] | None = None) -> Verdict:
    """Validate ``rows`` of lake table ``table`` with its suite; return the failing rows.

    ``topology_nodes``: the :func:`node_keys` of the topology, to check the node columns
    against (None: no topology loaded, no check). A table declared ``arrow_checks`` is
    checked by :func:`arrow_verdict`, every other by GX (:func:`suite_verdict`)."""
    if rows.num_rows == 0:
        return Verdict({})
    table_spec, rows, topology_nodes = prepared(table, rows, topology_nodes)
    engine = arrow_verdict if table_spec.arrow_checks else suite_verdict
    return engine(table_spec, rows, topology_nodes)
