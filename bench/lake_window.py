"""The lake's jobs at two fidelities (docs/design.md, "The lake's jobs at two fidelities"):
on a synthesized ``tianhe1a`` lake (``BURSTLAKE_BENCH_DAYS``, default the preset's 24 days;
``BURSTLAKE_BENCH_LAKE`` names a lake to reuse, synthesized there when it does not exist):

1. ``busiest``: the flow model's interval replay over the whole span picking the 10-s window
   with the busiest ION (goal: under 60 s over the month);
2. that window replayed request by request under the packet model, every job together and
   (``BURSTLAKE_BENCH_ALONE=1``) each alone (goal: under 5 minutes), with its estimate beside
   the measured peak RSS; then under the flow model, for the two fidelities side by side.

Each step runs in its own process so its peak RSS is its own.
Results: ``bench/results/lake_window.json``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from bench import Goal, load_average, python_step, write_result

SYNTH = """
from burstlake.jobs.synth.run import synthesize
synthesize("tianhe1a", lake={lake!r}, days={days}, seed=1)
"""

BUSIEST = """
import json, time
from burstlake.lake import cluster_of
from burstlake.replay import topologies
from burstlake.replay.windows import busiest

lake = cluster_of({lake!r})
topology = topologies.build({{"name": "lake"}}, lake)
t0 = time.perf_counter()
picked = busiest(lake, topology, 1, 10, "ion")[0]
print(json.dumps({{"busiest_s": time.perf_counter() - t0, "start": picked.start.isoformat(),
                  "end": picked.end.isoformat(), "ion_bytes": picked.value}}))
"""

WINDOW = """
import json, time
from burstlake.lake import cluster_of
from burstlake.replay import models, topologies
from burstlake.replay.workloads import Settings, lake_window

lake = cluster_of({lake!r})
topology = topologies.build({{"name": "lake"}}, lake).with_contention(models.parse({model!r}))
spec = {{"source": "lake_window", "window": {{"start": {start!r}, "end": {end!r}}},
         "request_bytes": 1048576, "message_bytes": 1048576}}
t0 = time.perf_counter()
demand = lake_window.demand(spec, topology, lake)
t1 = time.perf_counter()
scores = lake_window.scores(Settings(spec, job_scores={alone}), topology, demand, None)
t2 = time.perf_counter()
values = {{s.metric: s.value for s in scores}}
jobs = [m[: -len(".io_time")] for m in values if m.endswith(".io_time")]
print(json.dumps({{
    "model": {model!r}, "jobs": len(jobs), "estimate": demand.windows[0].estimate.__dict__,
    "demand_s": t1 - t0, "replay_s": t2 - t1,
    "io_time_sum_s": sum(values[j + ".io_time"] for j in jobs),
    "mpi_latency_mean_max_s": max(
        (values[j + ".mpi_latency_mean"] or 0.0 for j in jobs), default=None),
}}))
"""


def main() -> Path:
    days = int(os.environ.get("BURSTLAKE_BENCH_DAYS", "24"))
    alone = os.environ.get("BURSTLAKE_BENCH_ALONE", "0") == "1"
    given = os.environ.get("BURSTLAKE_BENCH_LAKE")
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-") as scratch:
        lake = given or str(Path(scratch) / "lake")
        synth = None
        if not Path(lake).exists():
            synth = python_step(SYNTH.format(lake=lake, days=days))
        load_before = load_average()
        picked = python_step(BUSIEST.format(lake=lake))
        window = {"start": picked["start"], "end": picked["end"]}
        runs = {
            model: python_step(
                WINDOW.format(lake=lake, model=model, alone=alone, **window), timeout_s=900
            )
            for model in ("packet", "flow")
        }
    packet = runs["packet"]
    goals = [
        Goal(
            f"busiest over the synthesized tianhe1a month in under 60 s ({days} days here)",
            f"{picked['busiest_s']:.1f} s",
            picked["busiest_s"] < 60 and days >= 24,
        ),
        Goal(
            "a 10-second packet window at the busiest period in under 5 minutes",
            f"{packet['step_wall_s']:.0f} s, peak {packet['step_peak_rss_mb']:.0f} MiB",
            packet["step_wall_s"] < 300,
        ),
    ]
    return write_result(
        "lake_window",
        {
            "preset": "tianhe1a",
            "days": days,
            "alone_runs": alone,
            "synth": synth,
            "busiest": picked,
            "window": runs,
            "load_average_1min_before_replays": load_before,
            "notes": [
                "estimate.memory_bytes is the workload's estimate before the run; "
                "step_peak_rss_mb the whole process's peak (Python, Arrow, the lake read)"
            ],
        },
        goals,
    )


if __name__ == "__main__":
    main()
