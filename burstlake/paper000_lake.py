"""Paper 000's two jobs written as a lake (000 §3.1-§3.3, §5's MPI configuration) for
``burstlake synth --preset paper000``, so the trace path (``lake_window`` under the packet
model) can be held to the benchmark that replays the same jobs from their description
(``bench/packet_vs_codes.py``).

The machine is ``cab1296`` (its compute nodes as ``topology`` rows, each with its leaf in the
``switch`` column); the MPI and I/O jobs are Slurm jobs (``jobs``, ``job_nodes``) on the nodes
the ``jobs`` workload's placement draws (``random-node`` or ``random-switch``, from ``seed``);
the MPI job's messages are its nodes' ``node_io`` network bytes (every message counted at both
ends); the I/O job's requests are ``darshan_dxt`` segments, one file per request, rank r's
k-th request on server (first_r + k) mod servers (000 §3.2's round robin, as Lustre's striping
rule of one 1 MiB-striped OST places a file whose record id is that server modulo the count).
Each segment is recorded at the time it would start back to back (000 §3.3: 2.7 ms a
request with all clients writing).
"""

from __future__ import annotations

import datetime as dt
import os

import numpy as np
import pyarrow as pa

from burstlake.lake import write_table
from burstlake.replay import paper000 as paper

CLUSTER = "cab1296"
EPOCH = dt.datetime(2018, 1, 1, tzinfo=dt.UTC)  # the window's start
INTERVAL_S = 10  # one node_io interval holds both jobs
NS = 1_000_000_000


def window(epoch: dt.datetime = EPOCH) -> dict[str, str]:
    """The ``lake_window`` window that holds the two jobs."""
    return {
        "start": epoch.isoformat(),
        "end": (epoch + dt.timedelta(seconds=INTERVAL_S)).isoformat(),
    }


def write_paper000(
    lake: str | os.PathLike | None,
    placement: str = "random-node",
    seed: int = paper.SEED,
    clients: int = paper.CLIENTS,
    messages: int = 45,
    requests: int = 16,
    study: paper.Study = paper.MPI_STUDY,
) -> dict[str, int]:
    """Write the two jobs of ``study`` (``clients`` nodes each, ``messages`` per MPI client,
    ``requests`` per I/O client) placed by ``placement`` from ``seed``; rows written per
    table."""
    from burstlake.replay import topologies
    from burstlake.replay.workloads import jobs as jw

    if placement not in paper.PLACEMENTS:
        raise ValueError(f"--placement must be one of {list(paper.PLACEMENTS)}, not {placement!r}")
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, not {seed}")
    for key, value in (("clients", clients), ("messages", messages), ("requests", requests)):
        if value < 1:
            raise ValueError(f"paper000: {key} must be at least 1, not {value}")
    topology = topologies.build(paper.TOPOLOGY)
    spec = paper.workload(placement, messages, requests, seed=seed, study=study)
    for job in spec["jobs"]:
        job["nodes"] = clients
    placed = jw.demand(spec, topology)
    names, leaf = topology.nodes, topology.groups()
    rows = [
        {"node": n, "cabinet": f"pod{leaf[i] // 36}", "switch": f"leaf{leaf[i]:02d}",
         "node_type": "compute", "cluster": CLUSTER}
        for i, n in enumerate(names)
    ]  # fmt: skip
    written = {"topology": write_table(lake, "topology", pa.Table.from_pylist(rows), "paper000")}
    end = EPOCH + dt.timedelta(seconds=INTERVAL_S)
    held = {job.name: [names[i] for i in job.nodes] for job in placed.jobs}
    written["jobs"] = write_table(
        lake,
        "jobs",
        pa.Table.from_pylist(
            [
                {
                    "job_id": name,
                    "cluster": CLUSTER,
                    "start": EPOCH,
                    "end": end,
                    "nnodes": len(nodes),
                    "state": "COMPLETED",
                }
                for name, nodes in held.items()
            ]
        ),
        "paper000",
    )
    written["job_nodes"] = write_table(
        lake,
        "job_nodes",
        pa.Table.from_pylist(
            [
                {"job_id": name, "cluster": CLUSTER, "node": node, "node_index": k}
                for name, nodes in held.items()
                for k, node in enumerate(nodes)
            ]
        ),
        "paper000",
    )
    written["node_io"] = _node_io(lake, held["mpi"], study.mpi_bytes * messages)
    written["darshan_dxt"] = _segments(
        lake, held["io"], requests, study.io_bytes, len(topology.ions), seed
    )
    return written


def _node_io(lake: str | os.PathLike | None, nodes: list[str], sent: float) -> int:
    """Each MPI node sends and receives ``sent`` bytes (random pairs: as much each way)."""
    from burstlake.schemas import spec

    rows = [
        {"node": n, "cluster": CLUSTER, "ts": EPOCH, "interval_s": INTERVAL_S,
         "net_rx_bytes": int(sent), "net_tx_bytes": int(sent)}
        for n in nodes
    ]  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=spec("node_io").schema)
    return write_table(lake, "node_io", table, "paper000")


def _segments(
    lake: str | os.PathLike | None,
    hosts: list[str],
    requests: int,
    request_bytes: int,
    servers: int,
    seed: int,
) -> int:
    """The I/O job's requests as DXT segments: rank r's k-th on server (first_r + k) mod
    ``servers``, first_r drawn from ``seed``; recorded back to back."""
    from burstlake.schemas import spec

    first = np.random.default_rng(seed).integers(0, servers, len(hosts))
    start_ns = round(EPOCH.timestamp() * NS)
    step_ns = round(paper.IO_REQUEST_S * NS)
    rows = []
    for r, host in enumerate(hosts):
        for k in range(requests):
            begin = start_ns + k * step_ns
            record = (int(first[r]) + k) % servers + servers * (r * requests + k)
            rows.append(
                {"log_id": "io", "cluster": CLUSTER, "job_id": "io", "module": "DXT_POSIX",
                 "rank": r, "hostname": host, "record_id": record, "op": "write",
                 "offset": 0, "length": request_bytes,
                 "start": dt.datetime.fromtimestamp(begin / NS, dt.UTC),
                 "end": dt.datetime.fromtimestamp((begin + step_ns) / NS, dt.UTC),
                 "start_ns": begin, "end_ns": begin + step_ns}
            )  # fmt: skip
    table = pa.Table.from_pylist(rows, schema=spec("darshan_dxt").schema)
    return write_table(lake, "darshan_dxt", table, "paper000")


def scenario(seed: int = paper.SEED, study: paper.Study = paper.MPI_STUDY) -> dict:
    """The replay scenario of the lake :func:`write_paper000` writes: its window under the
    packet model on the benchmark's topology and settings (``nic_delay`` 0, as CODES' fat-tree
    applies none; events tied by ``seed``), the MPI messages paced as 000 §3.2's job."""
    return {
        "name": f"paper000_{seed}",
        "cluster": CLUSTER,
        "workload": {
            "source": "lake_window",
            "window": window(),
            "pattern": "random-pairs",
            "message_bytes": study.mpi_bytes,
            "message_interval_s": study.mpi_interval_s,
            "seed": seed,
        },
        "topology": dict(paper.TOPOLOGY),
        "model": {"name": "packet", "nic_delay": 0.0, "tie_seed": seed},
        "policies": ["given"],
    }
