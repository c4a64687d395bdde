"""Replay engine throughput and memory (docs/design.md, "Replay").

1. Interval replay on a synthesized ``tianhe1a`` lake (``BURSTLAKE_BENCH_DAYS``, default the
   preset's 24 days; ``BURSTLAKE_BENCH_LAKE`` names a lake to reuse, synthesized there when it
   does not exist): node-intervals/s of one replay (cyclic mapping, trace only), and the wall
   time and peak RSS of the month what-if, the shipped ``ion_remap`` scenario (block vs cyclic,
   the trace and every job alone under each, scores written to the lake), the goal being < 60 s.
2. Event-driven replay of the paper 000 §3.2 workload on the ``cab1296`` fat-tree: 612 I/O
   clients each issue ``BURSTLAKE_BENCH_REQUESTS`` (default 1,000) 4 MB requests round-robin
   over the 72 I/O servers, back to back; the other 612 nodes, paired at random, each send as
   many 512 KB messages to their partner, 1 ms after the previous one completes. Up to 1,224
   flows in flight; the goal is the whole run in under 5 minutes.

Each measurement runs in its own process so its peak RSS is its own.
Results: ``bench/results/replay_full.json``.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench import Goal, python_step, write_result

SYNTH = """
from burstlake.jobs.synth.run import synthesize
synthesize("tianhe1a", lake={lake!r}, days={days}, seed=1)
"""

INTERVALS = """
import json, resource, time
from burstlake.replay.intervals import IntervalReplay
from burstlake.replay.policies import policy
from burstlake.replay.topologies import build
from burstlake.replay.workloads.lake import lake_demand

lake = {lake!r}
t0 = time.perf_counter()
topology = policy("cyclic").apply(build({{"name": "tianhe1a"}}), None)[0]
demand = lake_demand(lake, topology)
t1 = time.perf_counter()
driver = IntervalReplay(topology, demand.interval_s)
served = sum(len(s.t) for s in driver.run(demand.rows))
t2 = time.perf_counter()
print(json.dumps({{
    "node_intervals": len(demand.rows), "intervals": demand.intervals,
    "solved_rows": served, "sweeps": driver.sweeps,
    "load_s": t1 - t0, "replay_s": t2 - t1,
    "node_intervals_per_s": len(demand.rows) / (t2 - t1),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}}))
"""

WHAT_IF = """
import json, logging, resource, time
from bench import load_average
from burstlake.replay import scenario
from burstlake.replay.workloads import lake as workload

spec = scenario.load(scenario.SCENARIOS / "ion_remap.yaml")
notes = logging.getLogger(workload.__name__)  # the alone replay's count of replayed jobs
notes.setLevel(logging.INFO)
notes.addHandler(handler := logging.Handler())
handler.emit = lambda record: replayed.append(record.getMessage())
replayed = []
before = load_average()
t0, cpu = time.perf_counter(), time.process_time()
table = scenario.run(spec, {lake!r})
print(json.dumps({{
    "scenario": spec.name, "policies": [p.label for p in spec.policies],
    "what_if_s": time.perf_counter() - t0, "what_if_cpu_s": time.process_time() - cpu,
    "alone_replay": replayed, "scores": table.num_rows,
    "load_average_1min": [before, load_average()],  # before, after
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}}))
"""

EVENTS = """
import json, resource, time
import numpy as np
from burstlake.replay.events import simulate
from burstlake.replay.requests import Requests
from burstlake.replay.solver import Paths
from burstlake.replay.topologies import build

per_client = {requests}
t = build({{"name": "cab1296"}})
rng = np.random.default_rng(0)
nodes, servers = len(t.nodes), len(t.ions)
order = rng.permutation(nodes)
io, mpi = order[: nodes // 2], order[nodes // 2 :]
partner = np.empty(nodes, dtype=np.int64)
pairs = rng.permutation(mpi).reshape(-1, 2)
partner[pairs[:, 0]], partner[pairs[:, 1]] = pairs[:, 1], pairs[:, 0]
# one route per (client, server) and per MPI pair, then one row per request
io_routes = Paths.from_lists([t.router.io_route(int(n), s) for n in io for s in range(servers)])
mpi_routes = Paths.from_lists([t.router.route(int(n), int(partner[n])) for n in mpi])
first = rng.integers(0, servers, len(io))
k = np.arange(per_client)
io_rows = (np.arange(len(io))[:, None] * servers + (first[:, None] + k) % servers).ravel()
io_paths = io_routes.take(io_rows)
mpi_paths = mpi_routes.take(np.repeat(np.arange(len(mpi)), per_client))
indptr = np.r_[io_paths.indptr, io_paths.indptr[-1] + mpi_paths.indptr[1:]]
paths = Paths(indptr, np.r_[io_paths.indices, mpi_paths.indices])
stream = np.repeat(np.arange(nodes), per_client)
size = np.repeat([4.0 * 2**20, 512.0 * 2**10], [len(io) * per_client, len(mpi) * per_client])
gap = np.zeros((nodes, per_client))
gap[len(io):, :] = 1e-3
gap[len(io):, 0] = rng.uniform(0, 1e-3, len(mpi))
requests = Requests(stream, size, gap.ravel(), paths)
tiny = Requests(stream[:1], size[:1], gap.ravel()[:1], paths.take([0]))
w0 = time.perf_counter()
simulate(tiny, t.resources.capacity)  # compile, or load the compiled code from Numba's cache
t0 = time.perf_counter()
timeline = simulate(requests, t.resources.capacity)
t1 = time.perf_counter()
print(json.dumps({{
    "io_clients": len(io), "mpi_clients": len(mpi), "requests": len(stream),
    "events": timeline.events, "rates_solved": timeline.resolved,
    "jit_load_s": t0 - w0, "simulate_s": t1 - t0, "events_per_s": timeline.events / (t1 - t0),
    "simulated_s": float(np.nanmax(timeline.end)),
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}}))
"""


def main() -> Path:
    days = float(os.environ.get("BURSTLAKE_BENCH_DAYS", "24"))
    requests = int(os.environ.get("BURSTLAKE_BENCH_REQUESTS", "1000"))
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-replay-") as tmp:
        lake = os.environ.get("BURSTLAKE_BENCH_LAKE") or str(Path(tmp) / "lake")
        started = time.perf_counter()
        if not Path(lake).exists():
            python_step(SYNTH.format(lake=lake, days=days))
        synth_s = time.perf_counter() - started
        intervals = python_step(INTERVALS.format(lake=lake))
        what_if = python_step(WHAT_IF.format(lake=lake))
    events = python_step(EVENTS.format(requests=requests))
    result = {
        "tianhe1a_days": days,
        "synth_s": synth_s,
        "interval_replay": intervals,
        "what_if": what_if,
        "event_replay": events,
        "goal_what_if_under_60s": what_if["what_if_s"] < 60,
        "goal_paper000_events_under_300s": events["simulate_s"] < 300,
    }
    goals = [
        Goal(
            "the ion_remap what-if under 60 s",
            f"{what_if['what_if_s']:.1f} s",
            what_if["what_if_s"] < 60,
        ),
        Goal(
            "the paper 000 event workload under 300 s",
            f"{events['simulate_s']:.1f} s",
            events["simulate_s"] < 300,
        ),
    ]
    return write_result("replay_full", result, goals)


if __name__ == "__main__":
    print(main())
