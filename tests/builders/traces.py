"""Tianhe-1A traces written straight into a lake's jobs, job_nodes, node_io and topology (the
scenario tests: block against cyclic ION mapping on spatially bursty traces, paper 004 §7.4.1)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pyarrow as pa

from burstlake.lake import write_table
from burstlake.presets import machine

T0 = dt.datetime(2018, 1, 1, tzinfo=dt.UTC)


def write_jobs(lake: Path, jobs: list[tuple[str, int, int, list[str]]], step: int) -> None:
    """jobs: (job_id, first interval, last interval + 1, nodes)."""
    write_table(
        lake,
        "jobs",
        pa.Table.from_pylist(
            [
                {
                    "job_id": j,
                    "cluster": "th",
                    "start": T0 + dt.timedelta(seconds=s * step),
                    "end": T0 + dt.timedelta(seconds=e * step),
                    "nnodes": len(nodes),
                }
                for j, s, e, nodes in jobs
            ]
        ),
        "jobs",
    )
    write_table(
        lake,
        "job_nodes",
        pa.Table.from_pylist(
            [
                {"job_id": j, "cluster": "th", "node": node, "node_index": k}
                for j, _, _, nodes in jobs
                for k, node in enumerate(nodes)
            ]
        ),
        "jobs",
    )


def write_io(lake: Path, node: list[str], t: list[int], traffic: list[int], step: int) -> None:
    """node_io write bytes: ``traffic[i]`` on ``node[i]`` in interval ``t[i]`` of ``step`` s."""
    write_table(
        lake,
        "node_io",
        pa.table(
            {
                "node": node,
                "ts": [T0 + dt.timedelta(seconds=int(i) * step) for i in t],
                "interval_s": [step] * len(t),
                "write_bytes": traffic,
            }
        ),
        "io",
    )


def bursty_lake(lake: Path, seed: int = 2) -> float:
    """Two hours of Tianhe-1A traces: back-to-back jobs on adjacent nodes (as Slurm packs
    them), I/O phases on all their nodes or rank 0 only. Returns the total bytes."""
    m = machine("tianhe1a")
    rng = np.random.default_rng(seed)
    write_table(lake, "topology", m.topology(), "topo")
    intervals, jobs, io = 720, [], {"node": [], "t": [], "bytes": []}
    for slot in range(4):  # four waves of jobs, each packed from a random start node
        first = int(rng.integers(0, m.nodes - 2000))
        begin, end = slot * 180, slot * 180 + 180
        for k in range(12):
            size = int(rng.choice([4, 16, 64, 128]))
            nodes = list(range(first, first + size))
            first += size
            jobs.append((f"{slot}{k:02d}", begin, end, [m.node_name(i) for i in nodes]))
            writers = nodes[:1] if rng.random() < 0.3 else nodes
            for t in range(begin + int(rng.integers(0, 30)), end, 30):
                for i in writers:
                    io["node"].append(m.node_name(i))
                    io["t"].append(t)
                    io["bytes"].append(int(rng.integers(1e8, 1e9)))
    write_jobs(lake, jobs, 10)
    write_io(lake, io["node"], io["t"], io["bytes"], 10)
    assert intervals == 720
    return float(sum(io["bytes"]))
