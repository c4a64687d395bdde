"""Arrow schema of replay_scores (docs/design.md, "Replay"): written by the replay engine
(burstlake.replay), which reads the lake tables named in :data:`INPUTS`.

One row per scenario × policy × metric; a re-run of a scenario replaces its rows (the writer's
source_id is the scenario name)."""

from __future__ import annotations

import pyarrow as pa

from .tables import TS, TableSpec, _schema

REPLAY_SCORES = TableSpec(
    name="replay_scores",
    doc="What-if scores: one row per scenario, policy and metric (docs/design.md, Replay).",
    schema=_schema(
        ("scenario", pa.string(), False),
        ("policy", pa.string(), False),
        ("metric", pa.string(), False),
        ("value", pa.float64(), True),  # null when undefined (e.g. hops without a hop model)
        ("unit", pa.string(), True),
        ("topology", pa.string(), False),
        ("window_start", TS, True),
        ("window_end", TS, True),
        ("computed_at", TS, False),
    ),
    key=("scenario", "policy", "metric"),
)

TABLES: tuple[TableSpec, ...] = (REPLAY_SCORES,)

INPUTS: tuple[str, ...] = ("node_io", "jobs", "job_nodes", "topology")
"""The lake tables a replay reads (replay/workloads/, replay/topologies): the replay DAG runs
when any of them changes."""
