"""How much of a what-if's answer is noise (docs/design.md, "Seeds and spread"): a scenario's
``seeds:`` runs every policy on several seeds, and each policy's score is reported with its
mean, standard deviation and 95 % interval over the seeds, each policy against the scenario's
first policy as a paired difference over the same seeds, "within noise" when that interval
holds 0. Paper 000 (§3.1) draws its random placements once; CODES and SimGrid give one run.

The interval is Student's t on the mean (``t``), or a percentile bootstrap of the mean
(``bootstrap``) where the values are skewed (:data:`SKEWED`, with enough runs to resample).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
from scipy import stats

from burstlake.schemas.replay import REPLAY_SPREAD

LEVEL = 0.95  # the interval's coverage
SKEWED = 1.0  # |sample skewness| above which the interval is bootstrapped
BOOTSTRAP_RUNS = 8  # fewest runs a bootstrap resamples (below: the t-interval)
RESAMPLES = 10_000  # bootstrap resamples of the mean (seeded: one answer per input)
MAX_SEEDS = 1_000  # a scenario's seeds; beyond, a typo (``seeds: 10000``) rather than a plan


@dataclass(frozen=True)
class Interval:
    """A score over the runs: how many, mean, standard deviation (n - 1), the interval and
    how it was drawn (``t``, ``bootstrap``; ``identical`` when every run gave one value,
    ``none`` below two runs or without values)."""

    runs: int
    mean: float | None
    std: float | None
    low: float | None
    high: float | None
    method: str

    @property
    def holds_zero(self) -> bool | None:
        """Whether the interval holds 0 (None without one)."""
        if self.low is None or self.high is None:
            return None
        return self.low <= 0.0 <= self.high


def seeds_of(value: Any, where: str = "seeds") -> tuple[int, ...]:
    """A scenario's ``seeds:``: a count N (seeds 0 … N-1) or a list of distinct integers
    >= 0; anything else is refused in one line naming the key."""
    if isinstance(value, bool) or value is None:
        raise ValueError(f"{where}: a count >= 1 or a list of integers >= 0, got {value!r}")
    if isinstance(value, int):
        if not 1 <= value <= MAX_SEEDS:
            raise ValueError(f"{where}: a count of runs from 1 to {MAX_SEEDS}, got {value}")
        return tuple(range(value))
    if not isinstance(value, list) or not value:
        raise ValueError(f"{where}: a count >= 1 or a non-empty list of integers, got {value!r}")
    if len(value) > MAX_SEEDS:
        raise ValueError(f"{where}: at most {MAX_SEEDS} seeds, got {len(value)}")
    for i, seed in enumerate(value):
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"{where}[{i}]: a seed is an integer >= 0, got {seed!r}")
    repeated = sorted({s for s in value if value.count(s) > 1})
    if repeated:
        raise ValueError(f"{where}: seeds given twice: {repeated}")
    return tuple(value)


def derived_seed(run: int, own: int) -> int:
    """The seed a random part of a scenario draws with in run ``run``: the run's seed for a
    part without a seed of its own (``own`` 0), else one drawn from the seed sequence
    (run, own), so two parts built equal but with different seeds draw independently."""
    if own == 0:
        return run
    return int(np.random.SeedSequence([run, own]).generate_state(1, np.uint32)[0])


def interval(values: Iterable[float | None], level: float = LEVEL) -> Interval:
    """Mean, standard deviation and ``level`` interval of the mean of ``values`` (None and
    non-finite values left out): Student's t, or the percentile bootstrap where skewed."""
    x = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = len(x)
    if n == 0:
        return Interval(0, None, None, None, None, "none")
    mean = float(x.mean())
    if n == 1:
        return Interval(1, mean, None, None, None, "none")
    std = float(x.std(ddof=1))
    if std == 0.0 or np.ptp(x) <= 1e-12 * max(abs(mean), 1e-300):
        return Interval(n, mean, 0.0, mean, mean, "identical")
    if n >= BOOTSTRAP_RUNS and abs(float(stats.skew(x, bias=False))) > SKEWED:
        rng = np.random.default_rng(0)
        means = x[rng.integers(0, n, size=(RESAMPLES, n))].mean(axis=1)
        tail = (1.0 - level) / 2.0
        low, high = np.quantile(means, [tail, 1.0 - tail])
        return Interval(n, mean, std, float(low), float(high), "bootstrap")
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * std / math.sqrt(n)
    return Interval(n, mean, std, mean - half, mean + half, "t")


def paired(a: dict[int, float | None], b: dict[int, float | None]) -> Interval:
    """The interval of ``b - a`` over the seeds both have a value for (a paired difference)."""
    common = [s for s in a if s in b and a[s] is not None and b[s] is not None]
    return interval(b[s] - a[s] for s in common)  # type: ignore[operator]


def summary(scores: pa.Table) -> pa.Table:
    """The ``replay_spread`` rows of one scenario's ``replay_scores`` rows over its seeds: per
    machine, policy and metric its interval (``against`` null), and per policy after the first
    its paired difference against the first (``against``: the first's label), ``within_noise``
    when that interval holds 0."""
    rows = scores.select(
        ["scenario", "cluster", "policy", "metric", "unit", "seed", "value"]
    ).to_pylist()
    cells: dict[tuple, dict[int, float | None]] = {}
    units: dict[str, str | None] = {}
    policies: dict[tuple, list[str]] = {}
    for row in rows:
        where = (row["scenario"], row["cluster"])
        order = policies.setdefault(where, [])
        if row["policy"] not in order:
            order.append(row["policy"])
        seed = -1 if row["seed"] is None else row["seed"]
        cells.setdefault((*where, row["policy"], row["metric"]), {})[seed] = row["value"]
        units[row["metric"]] = row["unit"]
    out = []
    for (scenario, cluster, policy, metric), values in cells.items():
        spread = interval(values.values())
        out.append(_row(scenario, cluster, policy, None, metric, units[metric], spread))
        first = policies[scenario, cluster][0]
        if policy != first:
            base = cells.get((scenario, cluster, first, metric), {})
            spread = paired(base, values)
            out.append(_row(scenario, cluster, policy, first, metric, units[metric], spread))
    now = datetime.now(UTC)
    rows = [{**r, "computed_at": now} for r in out]
    return pa.Table.from_pylist(rows, schema=REPLAY_SPREAD.schema)


def _row(
    scenario: str,
    cluster: str | None,
    policy: str,
    against: str | None,
    metric: str,
    unit: str | None,
    spread: Interval,
) -> dict:
    return {
        "scenario": scenario,
        "cluster": cluster,
        "policy": policy,
        "against": against,
        "metric": metric,
        "unit": unit,
        "runs": spread.runs,
        "mean": spread.mean,
        "std": spread.std,
        "low": spread.low,
        "high": spread.high,
        "interval": spread.method,
        "within_noise": None if against is None else spread.holds_zero,
    }
