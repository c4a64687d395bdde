"""Run a table's Great Expectations suite on a batch and say, row by row, what failed.

One ephemeral GX context per process (its import and start-up cost seconds, a validation
then about 0.1 s). Rows that fail any expectation come back with a one-line reason per row.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache

import pyarrow as pa

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
    args = ", ".join(f"{k}={v}" for k, v in kwargs.items() if v is not None)
    return f"{config.type}({args})"


def validate(table: str, rows: pa.Table, topology_nodes: list[str] | None = None) -> Verdict:
    """Validate ``rows`` of lake table ``table`` with its suite; return the failing rows."""
    import great_expectations as gx

    from burstlake.schemas import spec
    from burstlake.schemas.expectations import expectations

    if rows.num_rows == 0:
        return Verdict({})
    batch_definition = _batch_definition(table)  # creates the GX context suites need
    suite = gx.ExpectationSuite(name=f"{table}-suite")
    for expectation in expectations(spec(table), topology_nodes):
        suite.add_expectation(expectation)
    frame = rows.to_pandas(types_mapper=None, timestamp_as_object=False).reset_index(drop=True)
    batch = batch_definition.get_batch(batch_parameters={"dataframe": frame})
    report = batch.validate(suite, result_format={"result_format": "COMPLETE"})
    reasons: dict[int, list[str]] = {}
    for result in report.results:
        if result.success:
            continue
        if result.exception_info and result.exception_info.get("raised_exception"):
            message = result.exception_info.get("exception_message")
            raise RuntimeError(
                f"expectation {_describe(result)} on {table} could not run: {message}"
            )
        for index in result.result.get("unexpected_index_list") or []:
            reasons.setdefault(int(index), []).append(f"failed {_describe(result)}")
    return Verdict({i: "; ".join(r) for i, r in sorted(reasons.items())})
