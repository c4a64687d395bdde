"""Low-variance assignment of traits to applications (shared by workload and behaviour)."""

from __future__ import annotations

import numpy as np


def weighted_pick(
    eligible: np.ndarray,
    weight: np.ndarray,
    share: float,
    rng: np.random.Generator,
    preference: np.ndarray | None = None,
) -> np.ndarray:
    """Mark eligible apps, in random order, until they hold ``share`` of the eligible weight.

    Systematic sampling: the expected share of *jobs* with the trait is ``share`` with far less
    spread than independent draws per app, which matters when a few apps run most jobs.
    With ``preference``, apps are taken in decreasing order of it instead (ties in random
    order; the caller adds any noise).
    """
    picked = np.zeros(len(weight), dtype=bool)
    members = rng.permutation(np.flatnonzero(eligible))
    if preference is not None:
        members = members[np.argsort(-preference[members], kind="stable")]
    if not len(members):
        return picked
    cumulative = np.cumsum(weight[members]) / weight[members].sum()
    picked[members] = cumulative - weight[members] / weight[members].sum() / 2 < share
    return picked
