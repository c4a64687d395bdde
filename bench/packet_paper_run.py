"""Paper 000's own run length on the packet model (§3.3: 1,000 requests per client): the
random-node case of ``bench/packet_vs_codes.py`` (612 MPI + 612 I/O clients on ``cab1296``,
servers on leaves 34, 35, 70, 71) until every I/O client wrote 1,000 requests of 4 MiB (3.8 s
simulated here, 4.1 billion packet hops). Measures wall and CPU time, events per second and
peak memory: the model's state follows packets in flight, not packets sent, so the peak is
mostly the requests and their routes. ``BURSTLAKE_BENCH_REQUESTS`` sets the requests per I/O
client (default 1000).

Results: ``bench/results/packet_paper_run.json``.
"""

from __future__ import annotations

import os

from bench import python_step, write_result
from burstlake.replay import paper000 as paper

RUN = """
import json, time
import numpy as np
from burstlake.replay import traffic as tr
from burstlake.replay.packet import PacketSettings, simulate
from burstlake.replay.topologies import build
from burstlake.replay.workloads import jobs

requests = {requests}
topology = build({topology!r})
spec = {spec!r}
demand = jobs.demand(spec, topology)
routed = tr.requests(topology, [(job.traffic, job.nodes) for job in demand.jobs])
t0, c0 = time.perf_counter(), time.process_time()
timeline = simulate(routed.requests, topology.resources.capacity, PacketSettings(nic_delay=0.0),
                    switch_port=topology.resources.is_switch_port)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
mpi = (routed.requests.kind == "mpi") & ~routed.warmup
print(json.dumps({{
    "requests_per_io_client": requests, "simulated_s": float(np.nanmax(timeline.end)),
    "events": timeline.events, "simulate_wall_s": wall, "simulate_cpu_s": cpu,
    "events_per_cpu_s": timeline.events / cpu, "peak_packets": timeline.peak_packets,
    "mpi_latency_mean_us": float(timeline.latency[mpi].mean() * 1e6),
}}))
"""


def main():
    requests = int(os.environ.get("BURSTLAKE_BENCH_REQUESTS", "1000"))
    messages = max(1, paper.messages_while_writing(requests))
    spec = paper.workload("random-node", messages, requests, mpi_warmup=10)
    code = RUN.format(requests=requests, topology=paper.TOPOLOGY, spec=spec)
    return write_result("packet_paper_run", python_step(code))


if __name__ == "__main__":
    print(main())
