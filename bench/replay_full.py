"""Replay engine throughput and memory (SPEC §5).

1. Interval replay on a synthesized ``tianhe1a`` lake (``BURSTLAKE_BENCH_DAYS``, default the
   preset's 24 days): node-intervals/s of one replay (cyclic mapping, trace only), and the wall
   time of one whole what-if (trace + every job alone + scores), the goal being < 60 s.
2. Event-driven replay on the ``cab1296`` fat-tree: every compute node writes
   ``BURSTLAKE_BENCH_REQUESTS`` (default 10) 4 MB requests round-robin over the 72 I/O
   servers (paper 000 §3.2), so about 1,224 flows are in flight at once: flow events/s.

Each measurement runs in its own process so its peak RSS is its own.
Results: ``bench/results/replay_full.json``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import write_result

SYNTH = """
from burstlake.jobs.synth.run import synthesize
synthesize("tianhe1a", lake={lake!r}, days={days}, seed=1)
"""

INTERVALS = """
import json, resource, time
from burstlake.replay import scenario
from burstlake.replay.intervals import IntervalReplay
from burstlake.replay.policies import policy
from burstlake.replay.topologies import build
from burstlake.replay.workload import lake_demand

lake = {lake!r}
t0 = time.perf_counter()
topology = policy("cyclic").apply(build({{"name": "tianhe1a"}}), None)[0]
demand = lake_demand(lake, topology)
t1 = time.perf_counter()
driver = IntervalReplay(topology, demand.interval_s)
served = sum(len(s.t) for s in driver.run(demand.rows))
t2 = time.perf_counter()
spec = scenario.Scenario("bench", {{"source": "lake"}}, {{"name": "tianhe1a"}},
                         (policy("cyclic"),))
scenario.run(spec, lake)
t3 = time.perf_counter()
print(json.dumps({{
    "node_intervals": len(demand.rows), "intervals": demand.intervals,
    "solved_rows": served, "sweeps": driver.sweeps,
    "load_s": t1 - t0, "replay_s": t2 - t1,
    "node_intervals_per_s": len(demand.rows) / (t2 - t1),
    "what_if_s": t3 - t2,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}}))
"""

EVENTS = """
import json, resource, time
import numpy as np
from burstlake.replay.events import Requests, simulate
from burstlake.replay.solver import Paths
from burstlake.replay.topologies import build

per_node = {requests}
t = build({{"name": "cab1296"}})
rng = np.random.default_rng(0)
servers = len(t.ions)
first = rng.integers(0, servers, len(t.nodes))
node = np.repeat(np.arange(len(t.nodes)), per_node)
target = (first[node] + np.tile(np.arange(per_node), len(t.nodes))) % servers
routes = Paths.from_lists([t.router.io_route(int(n), int(s)) for n, s in zip(node, target)])
requests = Requests(node, np.full(len(node), 4.0 * 2**20), np.zeros(len(node)), routes)
t0 = time.perf_counter()
timeline = simulate(requests, t.resources.capacity)
t1 = time.perf_counter()
print(json.dumps({{
    "requests": len(node), "concurrent_flows": len(t.nodes), "events": timeline.events,
    "simulate_s": t1 - t0, "events_per_s": timeline.events / (t1 - t0),
    "simulated_s": float(np.nanmax(timeline.end)),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}}))
"""


def _python(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"benchmark step failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else {}


def main() -> Path:
    days = float(os.environ.get("BURSTLAKE_BENCH_DAYS", "24"))
    requests = int(os.environ.get("BURSTLAKE_BENCH_REQUESTS", "10"))
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-replay-") as tmp:
        lake = str(Path(tmp) / "lake")
        started = time.perf_counter()
        _python(SYNTH.format(lake=lake, days=days))
        synth_s = time.perf_counter() - started
        intervals = _python(INTERVALS.format(lake=lake))
    events = _python(EVENTS.format(requests=requests))
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "tianhe1a_days": days,
        "synth_s": synth_s,
        "interval_replay": intervals,
        "event_replay": events,
        "goal_what_if_under_60s": intervals["what_if_s"] < 60,
    }
    return write_result("replay_full", result)


if __name__ == "__main__":
    print(main())
