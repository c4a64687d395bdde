"""The hand lake: a small lake written row by row, every metric of it worked out by hand (the
figures and their derivation: tests/metrics/test_metrics.py's docstring). The metrics tests,
the metrics DAG's, the standalone Spark cluster's and the lake's fault tests build it.

Topology: 8 nodes cn00000..cn00007 of machine ``hand``, cabinets of 4, IONs of 2; node_io
intervals of 10 s from :data:`T0`; Darshan logs L1..L3 with their DXT segments.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pyarrow as pa

from burstlake import catalog
from burstlake.jobs.metrics.settings import MetricSettings
from burstlake.lake import write_table
from burstlake.presets import ForwardingMachine

T0 = datetime(2024, 1, 1, tzinfo=UTC)
MACHINE = ForwardingMachine("hand", nodes=8, nodes_per_cabinet=4, nodes_per_ion=2, days=1)
# the thresholds the hand-worked figures assume
SETTINGS = MetricSettings(data_intensive_bytes=5000, io_phase_bytes_per_s=1.0)

# (job_id, user, job_name, start_s, end_s, node numbers)
JOBS = [
    ("1", "u1", "a", 5, 105, [0, 1, 2, 3]),
    ("2", "u1", "b", 105, 205, [0]),
    ("3", "u1", "c", 0, 60, [3, 4]),
    ("4", "u1", "d", 200, 300, [1, 2, 3, 4]),
    ("5", "u1", "e", 0, 100, [5, 6]),
    ("6", "u1", "f", 0, None, [7]),
    ("7", "u1", "g", 0, 100, []),
    ("8", "u1", "h", 500, 600, [7, "ghost"]),
    *[(f"app{j}", "u2", "app", 1000 + 100 * j, 1050 + 100 * j, [6, 7]) for j in range(7)],
]

# (ts_s, node number, read, write, net_rx, net_tx)
NODE_IO = [
    (0, 0, 300, 0, None, None),
    (50, 0, 0, 100, None, None),
    (0, 1, 200, 0, None, None),
    (50, 2, 0, 200, None, None),
    (100, 0, 1000, 0, None, None),
    (200, 1, 0, 9600, None, None),
    (250, 2, 200, 0, None, None),
    (290, 3, 0, 200, None, None),
    (300, 3, 0, 777, None, None),
    (0, 5, 0, 3000, 7000, None),
    (50, 5, 0, 3000, None, None),
    (0, 6, 6000, 0, None, 7000),
    (400, 0, 500, 0, None, None),
    (400, 4, 0, 500, None, None),
    (500, "ghost", 100, 0, None, None),
    *[
        (1000 + 100 * j, 6 if j < 3 else 7, 0, 6000 if j < 2 else 1000, None, None)
        for j in range(6)
    ],
]

# (log_id, module, rank, hostname, bytes_read, bytes_written)
RANK_IO = [
    ("L1", "POSIX", 0, "h1", 900, 0),
    ("L1", "POSIX", 1, "h2", 0, 100),
    ("L1", "POSIX", -1, None, 600, 400),
    ("L1", "MPI-IO", 0, "h1", 5000, 0),
    ("L1", "STDIO", 2, "h2", 0, 0),
    ("L2", "STDIO", 0, None, 50, 0),
]
DARSHAN_JOBS = [("L1", "1", 4), ("L2", "2", 1), ("L3", "5", 8)]
# (log_id, job_id, module, rank, op, length, start_s, end_s)
DXT = [
    ("L1", "1", "DXT_POSIX", 0, "read", 900, 2, 12),
    ("L1", "1", "DXT_POSIX", 1, "write", 100, 50, 50),
    ("L1", "1", "DXT_POSIX", 0, "write", 300, 55, 60),
    ("L1", "1", "DXT_MPIIO", 0, "read", 5000, 2, 12),
    ("L2", "2", "DXT_MPIIO", 0, "write", 40, 105, 125),
]


def at(seconds: float) -> datetime:
    """The instant ``seconds`` after :data:`T0`."""
    return T0 + timedelta(seconds=seconds)


def node(i: int | str) -> str:
    """Node number ``i``'s name (a name given as text stays as it is)."""
    return i if isinstance(i, str) else MACHINE.node_name(i)


def build_hand_lake(lake) -> None:
    """Write the hand lake into ``lake`` and refresh its catalog."""
    tables = {
        "jobs": [
            {
                "job_id": j,
                "cluster": "hand",
                "user": u,
                "job_name": n,
                "start": at(s),
                "end": None if e is None else at(e),
                "nnodes": len(ns),
            }
            for j, u, n, s, e, ns in JOBS
        ],
        "job_nodes": [
            {"job_id": j, "cluster": "hand", "node": node(i), "node_index": k}
            for j, _, _, _, _, ns in [*JOBS, ("5", None, None, None, None, [5])]
            for k, i in enumerate(ns)
        ],
        "node_io": [
            {
                "node": node(i),
                "cluster": "hand",
                "ts": at(t),
                "interval_s": 10,
                "read_bytes": r,
                "write_bytes": w,
                "net_rx_bytes": rx,
                "net_tx_bytes": tx,
            }
            for t, i, r, w, rx, tx in reversed(NODE_IO)  # out of time order on purpose
        ],
        "darshan_jobs": [
            {"log_id": log, "job_id": job, "nprocs": n, "partial": False}
            for log, job, n in DARSHAN_JOBS
        ],
        "darshan_rank_io": [
            {
                "log_id": log,
                "module": m,
                "rank": r,
                "hostname": h,
                "bytes_read": br,
                "bytes_written": bw,
            }
            for log, m, r, h, br, bw in RANK_IO
        ],
        "darshan_dxt": [
            {
                "log_id": log,
                "job_id": job,
                "module": m,
                "rank": r,
                "hostname": None,
                "record_id": 1,
                "op": op,
                "offset": 0,
                "length": n,
                "start": at(a),
                "end": at(b),
                "start_ns": int(at(a).timestamp()) * 10**9,
                "end_ns": int(at(b).timestamp()) * 10**9,
            }
            for log, job, m, r, op, n, a, b in DXT
        ],
    }
    topology = MACHINE.topology()
    machine = pa.array(["hand"] * topology.num_rows, pa.string())
    topology = topology.set_column(topology.schema.get_field_index("cluster"), "cluster", machine)
    write_table(lake, "topology", topology, "topo")
    # the Darshan logs name no machine: they join their jobs' (jobs/metrics/darshan_job.py)
    for table, rows in tables.items():
        write_table(lake, table, pa.Table.from_pylist(rows), "hand")
    catalog.refresh(lake)
