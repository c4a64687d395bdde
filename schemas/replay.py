"""Arrow schema of replay_scores (docs/design.md, "Replay"): written by the replay engine
(burstlake.replay), which reads the lake tables named in :data:`INPUTS`.

One row per scenario × machine × policy × metric (× seed, for a scenario replayed on several
seeds); a re-run of a scenario replaces its rows of that machine (the writer's source_id is the
scenario name and the machine's). ``replay_spread`` holds the spread of each score over the
seeds (docs/design.md, "Seeds and spread")."""

from __future__ import annotations

import pyarrow as pa

from .tables import TS, TableSpec, _schema

REPLAY_SCORES = TableSpec(
    name="replay_scores",
    doc="What-if scores: one row per scenario, machine, policy and metric (docs/design.md, "
    "Replay).",
    schema=_schema(
        ("scenario", pa.string(), False),
        ("cluster", pa.string(), True),  # the lake's machine replayed; null: none named or used
        ("policy", pa.string(), False),
        ("metric", pa.string(), False),
        ("value", pa.float64(), True),  # null when undefined (e.g. hops without a hop model)
        ("unit", pa.string(), True),
        ("topology", pa.string(), False),
        ("model", pa.string(), True),  # the contention model: flow or packet (null: flow)
        ("window_start", TS, True),
        ("window_end", TS, True),
        ("computed_at", TS, False),
        ("seed", pa.int64(), True),  # the run's seed of a scenario with ``seeds:``; else null
    ),
    key=("scenario", "cluster", "policy", "metric", "seed"),
)

REPLAY_SPREAD = TableSpec(
    name="replay_spread",
    doc="Spread of each what-if score over a scenario's seeds: per scenario, machine, policy and "
    "metric the mean, standard deviation and 95 % interval; per policy against the first a "
    "paired difference over the same seeds (docs/design.md, Seeds and spread).",
    schema=_schema(
        ("scenario", pa.string(), False),
        ("cluster", pa.string(), True),
        ("policy", pa.string(), False),
        ("against", pa.string(), True),  # null: the policy's score; else the difference to it
        ("metric", pa.string(), False),
        ("unit", pa.string(), True),
        ("runs", pa.int64(), False),  # seeds with a value
        ("mean", pa.float64(), True),
        ("std", pa.float64(), True),  # sample standard deviation (n - 1); null below 2 runs
        ("low", pa.float64(), True),  # the 95 % interval of the mean
        ("high", pa.float64(), True),
        ("interval", pa.string(), False),  # t, bootstrap, identical (all runs equal) or none
        ("within_noise", pa.bool_(), True),  # a difference whose interval holds 0
        ("computed_at", TS, False),
    ),
    key=("scenario", "cluster", "policy", "against", "metric"),
    nonnegative=("runs", "std"),
)

DELTA_GRAPH = TableSpec(
    name="delta_graph",
    doc="Δ-graph points of a phases scenario's sweep (paper 001 §II-C): the I/O time of A and B "
    "per strategy and dt, beside the theoretical proportional-sharing curve.",
    schema=_schema(
        ("scenario", pa.string(), False),
        ("policy", pa.string(), False),
        ("dt", pa.float64(), False),  # seconds B starts after A
        ("phase", pa.string(), False),  # the application's name in the scenario
        ("role", pa.string(), False),  # 'A' (the reference, at 0) or 'B' (at dt)
        ("nodes", pa.int64(), False),
        ("io_time_s", pa.float64(), False),
        ("alone_s", pa.float64(), False),
        ("interference_factor", pa.float64(), False),  # io_time_s / alone_s
        ("theory_io_time_s", pa.float64(), False),  # proportional sharing, 001 §II-C
        ("computed_at", TS, False),
        ("cluster", pa.string(), True),  # the lake's machine replayed; null: none named or used
    ),
    key=("scenario", "cluster", "policy", "dt", "role"),
    nonnegative=("nodes", "io_time_s", "alone_s", "theory_io_time_s"),
)

TABLES: tuple[TableSpec, ...] = (REPLAY_SCORES, REPLAY_SPREAD, DELTA_GRAPH)

INPUTS: tuple[str, ...] = (
    "node_io",
    "jobs",
    "job_nodes",
    "topology",
    "job_io_metrics",  # reallocation predicts jobs from their application's history
    "io_phases",  # the lake's I/O phases, coordinated
)
"""The lake tables a replay reads (replay/workloads/, replay/topologies), each pinned at one
version for the run."""

TRIGGERS: tuple[str, ...] = ("job_io_metrics", "io_phases")
"""The replay DAG runs when the metrics publish these: every change of the other inputs is
also a metrics input, so the replay follows the metrics run and sees both at one state."""
