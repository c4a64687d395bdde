"""I/O traffic distribution divergence of an application (paper 004 §6.3, Def. 4).

For M ≥ 2 jobs of one application, each with its vector of per-node traffic shares ordered by
node_index, the divergence is the mean Euclidean distance over the C(M, 2) pairs. The one
definition in burstlake: :func:`divergence_of` for NumPy (the reallocation's prediction from
the jobs that ended before a job starts, :mod:`burstlake.replay.workloads.lake_jobs`) and
:func:`divergence` for Spark (``app_metrics`` over all of an application's jobs); the tests
check the two against each other and against hand-computed values.
"""

from __future__ import annotations

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def divergence_of(vectors: list[np.ndarray] | np.ndarray) -> float:
    """Def. 4 of the share vectors (one per job, equal lengths, at least two)."""
    stack = np.stack(vectors)
    gaps = stack[:, None, :] - stack[None, :, :]
    distance = np.sqrt((gaps**2).sum(axis=2))
    upper = np.triu_indices(len(stack), k=1)
    return float(distance[upper].mean())


def divergence(vectors: DataFrame) -> DataFrame:
    """Def. 4 per application of ``(app_id, job, shares)`` rows: (app_id, divergence)."""
    a, b = vectors.alias("a"), vectors.alias("b")
    pairs = a.join(b, (F.col("a.app_id") == F.col("b.app_id")) & (F.col("a.job") < F.col("b.job")))
    squares = F.zip_with("a.shares", "b.shares", lambda x, y: (x - y) * (x - y))
    distance = F.sqrt(F.aggregate(squares, F.lit(0.0), lambda total, v: total + v))
    return pairs.groupBy(F.col("a.app_id").alias("app_id")).agg(F.avg(distance).alias("divergence"))
