"""I/O traffic distribution divergence of an application (paper 004 §6.3, Def. 4).

For M ≥ 2 jobs of one application, each with its vector of per-node traffic shares ordered by
node_index, the divergence is the mean Euclidean distance over the C(M, 2) pairs. The one
definition in burstlake is :func:`divergence_of` (NumPy): the reallocation's prediction from
the jobs that ended before a job starts (:mod:`burstlake.replay.workloads.lake_jobs`) and
``app_metrics`` over all of an application's jobs (:func:`divergences`, on the driver from
the collected share vectors) both use it. The pairs are quadratic in an application's jobs
(the Tianhe-1A month has one of 5,087 jobs: 12.9 M pairs), so they are walked in row blocks
of bounded size; in Spark, a self-join of the vectors with per-element lambdas (``zip_with``)
made app_metrics take 39 s of task CPU on that month, against about a second here
(docs/design.md, "Metrics").
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

BLOCK_VALUES = 1 << 22  # doubles of pair differences held at once (32 MiB)


def divergence_of(vectors: list[np.ndarray] | np.ndarray) -> float:
    """Def. 4 of the share vectors (one per job, equal lengths, at least two)."""
    stack = np.stack(vectors)
    jobs, width = stack.shape
    rows = max(1, BLOCK_VALUES // max(1, jobs * width))
    total = 0.0
    for first in range(0, jobs - 1, rows):
        block = stack[first : first + rows]
        gaps = block[:, None, :] - stack[None, :, :]
        distance = np.sqrt((gaps**2).sum(axis=2))
        later = np.arange(jobs)[None, :] > np.arange(first, first + len(block))[:, None]
        total += distance[later].sum()
    return float(total / (jobs * (jobs - 1) / 2))


def divergences(vectors: pa.Table) -> list[tuple[str, float]]:
    """Def. 4 per application of ``(app_id, shares)`` rows (one per job): (app_id, divergence)
    for each application with at least two vectors."""
    ordered = vectors.sort_by("app_id")
    apps = ordered["app_id"].to_numpy(zero_copy_only=False)
    if not len(apps):
        return []
    starts = np.flatnonzero(np.r_[True, apps[1:] != apps[:-1]])
    ends = np.r_[starts[1:], len(apps)]
    shares = ordered["shares"].combine_chunks()
    result = []
    for start, end in zip(starts, ends, strict=True):
        if end - start < 2:
            continue
        part = shares.slice(start, end - start)
        matrix = pc.list_flatten(part).to_numpy().reshape(end - start, -1)
        result.append((str(apps[start]), divergence_of(matrix)))
    return result
