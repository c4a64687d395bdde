"""The full paper-000 placement scenario (docs/design.md, "Placement"; paper 000 §3, §5.1): on
the ``cab1296`` fat-tree an MPI job (612 nodes, 4 KB to a random partner 500 μs after the last
message completed) and a checkpoint I/O job (612 clients, 4 MB requests back to back, Lustre
round robin over the 72 servers), 1,000 scored requests per client after 50 warm-up ones
(``BURSTLAKE_BENCH_REQUESTS`` to change), random-node placement and isolated-target servers.
One what-if = the jobs' demand, each job's baseline run, the interference run and the scores,
through the ``jobs`` workload exactly as a scenario runs it. The goal: under 5 minutes.

Results: ``bench/results/placement.json``.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from bench import python_step, write_result

RUN = """
import json, resource, time
from burstlake.replay.events import Requests, simulate
from burstlake.replay.solver import Paths
from burstlake.replay.topologies import build
from burstlake.replay.workloads import jobs
import numpy as np

per_client = {requests}
spec = {{"seed": 0, "placement": "random-node", "jobs": [
    {{"name": "mpi", "kind": "mpi", "nodes": 612, "messages": per_client}},
    {{"name": "io", "kind": "io", "nodes": 612, "requests": per_client}},
]}}
w0 = time.perf_counter()
topology = build({{"name": "cab1296"}})
tiny = Requests(np.zeros(1, dtype=np.int64), np.ones(1), np.zeros(1), Paths.from_lists([[0]]))
simulate(tiny, topology.resources.capacity)  # compile, or load Numba's cached code
t0 = time.perf_counter()
demand = jobs.demand(spec, topology)
t1 = time.perf_counter()
runs = jobs.replay(topology, demand)
t2 = time.perf_counter()
scores = {{s.metric: s.value for s in jobs.job_scores(demand, runs)}}
t3 = time.perf_counter()
print(json.dumps({{
    "requests_interference_run": len(runs.routed.job),
    "events_interference_run": runs.shared.events,
    "events_baseline_runs": sum(a.events for a in runs.alone),
    "setup_s": t0 - w0, "demand_s": t1 - t0, "replay_s": t2 - t1, "scores_s": t3 - t2,
    "what_if_s": t3 - t0,
    "scores": scores,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
}}))
"""


def main() -> Path:
    requests = int(os.environ.get("BURSTLAKE_BENCH_REQUESTS", "1000"))
    run = python_step(RUN.format(requests=requests))
    load = os.getloadavg()
    result = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count()},
        "load_average_after": load,
        "requests_per_client": requests,
        "run": run,
        "goal_under_300s": run["what_if_s"] < 300,
    }
    return write_result("placement", result)


if __name__ == "__main__":
    print(main())
