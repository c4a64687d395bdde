"""The paper-000 placement study at full size under the packet model (docs/design.md,
"Placement"; paper 000 §3, §5.1, §5.2), through ``burstlake replay`` exactly as a user runs it:
on the ``cab1296`` fat-tree (servers on leaves 34, 35, 70, 71, as the CODES driver of
``bench/packet_vs_codes.py``) an MPI job (612 nodes, 4 KiB to a random partner 500 µs after the
last message completed) and a checkpoint I/O job (612 clients, 4 MiB requests back to back,
Lustre round robin over the 72 servers), over about CODES' 20 ms window: 10 warm-up and 30
scored messages per MPI client, 1 warm-up and 6 scored requests per I/O client
(``BURSTLAKE_BENCH_REQUESTS`` scales the I/O requests, e.g. 1000 for the paper's run of about
2.7 s simulated). Every placement and server policy, each with both baseline runs and the
interference run. ``BURSTLAKE_BENCH_ARBITRATION`` picks the packet model's arbitration
(``fcfs``, its default and CODES' fat-tree rule, or ``round-robin``). The goal: under 5
minutes, with a progress bar.

Results: ``bench/results/placement.json`` (``placement_round-robin.json`` under round robin).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import yaml

from bench import Goal, measure, write_result
from burstlake.catalog import sql
from burstlake.replay import paper000 as paper
from burstlake.replay.packet import ARBITRATIONS

POLICIES = [
    "given",
    {"name": "random-switch", "seed": 1},
    "spread-target",
    {"name": "random-target", "seed": 1},
    {
        "name": "combine",
        "label": "spread+random-switch",
        "policies": ["spread-target", "random-switch"],
    },
]


def scenario(requests: int, arbitration: str) -> dict:
    messages = max(30, paper.messages_while_writing(requests))  # MPI talks while I/O runs
    return {
        "name": "placement_full",
        "workload": {
            "source": "jobs",
            **paper.workload("random-node", messages, requests, mpi_warmup=10, io_warmup=1),
        },
        "topology": paper.TOPOLOGY,
        "model": {"name": "packet", "arbitration": arbitration},
        "policies": POLICIES,
    }


def main() -> Path:
    requests = int(os.environ.get("BURSTLAKE_BENCH_REQUESTS", "6"))
    arbitration = os.environ.get("BURSTLAKE_BENCH_ARBITRATION", ARBITRATIONS[0])
    burstlake = str(Path(sys.executable).with_name("burstlake"))
    with tempfile.TemporaryDirectory() as work:
        path = Path(work) / "placement_full.yaml"
        path.write_text(yaml.safe_dump(scenario(requests, arbitration)))
        lake = Path(work) / "lake"
        step = measure([burstlake, "replay", "--lake", str(lake), "--scenario", str(path)])
        rows = sql(
            lake,
            "SELECT policy, metric, value FROM replay_scores WHERE metric IN "
            "('mpi_slowdown', 'io_slowdown', 'mpi_latency_mean', 'mpi_latency_max', "
            "'mpi_baseline_latency_mean', 'io_completion_time')",
        ).to_pylist()
    scores: dict[str, dict[str, float]] = {}
    for row in rows:
        scores.setdefault(row["policy"], {})[row["metric"]] = row["value"]
    result = {
        "io_requests_per_client": requests,
        "arbitration": arbitration,
        "wall_s": step.wall_s,
        "cpu_s": step.cpu_s,
        "peak_rss_mb": step.peak_mb,
        "scores": scores,
        "goal_under_300s": step.wall_s < 300,
    }
    default = arbitration == ARBITRATIONS[0]
    goals = [
        Goal("the whole study under 5 minutes", f"{step.wall_s:.1f} s wall", step.wall_s < 300)
    ]
    return write_result("placement" if default else f"placement_{arbitration}", result, goals)


if __name__ == "__main__":
    print(main())
