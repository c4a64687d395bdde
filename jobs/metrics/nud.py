"""The normalized unevenness degree, NUD = 1 − H(X)/ln n (paper 004 §3.1, Defs. 1-2).

The one definition of the NUD in burstlake: :func:`nud_of` for NumPy arrays (the synthesizer
and its calibration checks use it) and :func:`nud` for Spark columns (the metrics jobs). The
DuckDB SQL of :mod:`.headline_sql` is the deliberate independent cross-check.

For values x_1..x_n with total T > 0 and p_i = x_i / T, the entropy is
H = -Σ p_i ln p_i = ln T - (Σ x_i ln x_i) / T, so one aggregation pass (Σ x, Σ x ln x, n)
gives NUD = 1 - H / ln n. NUD is null when n = 1 (ln n = 0) or T = 0 (no distribution).
Items with x = 0 add nothing to either sum: nodes without traffic only raise n.
"""

from __future__ import annotations

import numpy as np
from pyspark.sql import Column
from pyspark.sql import functions as F


def nud_of(values: np.ndarray) -> np.ndarray | float:
    """NUD of the distribution(s) along the last axis of ``values`` (NaN for n = 1 or T = 0).

    ``values`` are amounts or shares (they are normalised here); a 1-D input gives a float.
    """
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[-1]
    total = values.sum(axis=-1, keepdims=True)
    p = values / np.where(total > 0, total, 1.0)
    entropy = -np.sum(p * np.log(np.where(p > 0, p, 1.0)), axis=-1)
    defined = (n > 1) & (total[..., 0] > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        degree = np.where(defined, 1 - entropy / np.log(max(n, 1)), np.nan)
    return float(degree) if degree.ndim == 0 else degree


def xlogx(value: Column) -> Column:
    """x ln x with 0 ln 0 = 0, the summand of the one-pass entropy."""
    return F.when(value > 0, value * F.log(value)).otherwise(F.lit(0.0))


def ordered_sum(value: Column) -> Column:
    """The sum of a group's doubles added in ascending order: the same bits whatever order the
    rows arrive in. A plain sum follows the plan (a broadcast or a shuffled join, the
    partitions), and a NUD near 0, where the entropy is near ln n, shows that order in its
    last digits; sums of these sums (per cabinet, then per job) stay independent of it."""
    return F.aggregate(F.array_sort(F.collect_list(value)), F.lit(0.0), lambda x, y: x + y)


def xlogx_sum(value: Column) -> Column:
    """Σ x ln x over a group (:func:`ordered_sum`)."""
    return ordered_sum(xlogx(value))


def nud(total: Column, xlogx_sum: Column, n: Column) -> Column:
    """NUD from Σ x, Σ x ln x and the number of possible values n; null if n <= 1 or T = 0."""
    entropy = F.log(total) - xlogx_sum / total
    value = F.lit(1.0) - entropy / F.log(n)
    return F.when((n > 1) & (total > 0), F.least(F.lit(1.0), F.greatest(F.lit(0.0), value)))


def share(part: Column, total: Column) -> Column:
    """part / total, null when the total is zero."""
    return F.when(total > 0, part / total)


def distribution(value: Column, prefix: str) -> list[Column]:
    """Aggregations over one item per row: ``<prefix>_total``, ``_xlogx``, ``_max``, ``_items``
    (rows) and ``_active`` (rows with a positive value)."""
    amount = value.cast("double")
    return [
        F.sum(amount).alias(f"{prefix}_total"),
        xlogx_sum(amount).alias(f"{prefix}_xlogx"),
        F.max(amount).alias(f"{prefix}_max"),
        F.count(F.lit(1)).alias(f"{prefix}_items"),
        F.count(F.when(amount > 0, 1)).alias(f"{prefix}_active"),
    ]


def distribution_metrics(prefix: str, n: Column) -> tuple[Column, Column]:
    """(NUD, max share) of the aggregates made by :func:`distribution`, over n values."""
    total = F.col(f"{prefix}_total")
    return nud(total, F.col(f"{prefix}_xlogx"), n), share(F.col(f"{prefix}_max"), total)
