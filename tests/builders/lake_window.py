"""Hand-built lakes for the lake_window workload (replay/workloads/lake_window.py): a machine's
IONs and nodes, jobs, node_io rows, a scenario file over them, and the scores of a replay."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa

from burstlake.lake import write_table
from burstlake.replay import scenario as sn

T0 = dt.datetime(2018, 1, 1, tzinfo=dt.UTC)
STEP = 10  # seconds per node_io interval
ION = 1.5e9  # the forwarding family's ION capacity (bytes/s)

TS = pa.timestamp("us", tz="UTC")
# darshan_dxt as the Darshan DXT landing declares it (schemas/tables.py on its branch); used
# only while the lake contract on this branch has no such table
DXT = [
    ("log_id", pa.string(), False),
    ("cluster", pa.string(), True),
    ("job_id", pa.string(), True),
    ("module", pa.string(), False),
    ("rank", pa.int64(), False),
    ("hostname", pa.string(), True),
    ("record_id", pa.int64(), False),
    ("op", pa.string(), False),
    ("offset", pa.int64(), False),
    ("length", pa.int64(), False),
    ("start", TS, False),
    ("end", TS, False),
    ("start_ns", pa.int64(), False),
    ("end_ns", pa.int64(), False),
]


def machine(lake: Path, ions: dict[str, list[str]]) -> None:
    """The lake's topology: each ION and the nodes it serves."""
    rows = [
        {"node": n, "cabinet": "c0", "ion": ion, "switch": f"s{ion}"}
        for ion, nodes in ions.items()
        for n in nodes
    ]
    write_table(lake, "topology", pa.Table.from_pylist(rows), "topo")


def jobs(lake: Path, runs: dict[str, tuple[dt.datetime, dt.datetime, list[str]]]) -> None:
    """The lake's jobs and job_nodes: each job id's (start, end, nodes), all completed."""
    write_table(
        lake,
        "jobs",
        pa.Table.from_pylist(
            [
                {"job_id": j, "start": a, "end": b, "nnodes": len(n), "state": "COMPLETED"}
                for j, (a, b, n) in runs.items()
            ]
        ),
        "jobs",
    )
    write_table(
        lake,
        "job_nodes",
        pa.Table.from_pylist(
            [
                {"job_id": j, "node": node, "node_index": k}
                for j, (_, _, n) in runs.items()
                for k, node in enumerate(n)
            ]
        ),
        "jobs",
    )


def node_io(lake: Path, rows: list[dict]) -> None:
    """node_io rows of :data:`STEP`-second intervals (columns not given are null)."""
    from burstlake.schemas import spec

    schema = spec("node_io").schema  # from_pylist would take the columns of the first row
    table = pa.Table.from_pylist([{"interval_s": STEP, **r} for r in rows], schema=schema)
    write_table(lake, "node_io", table, "io")


def scenario(tmp_path: Path, workload: dict, *, model="flow", policies=("given",), topo="lake"):
    """A lake_window scenario of ``workload``'s settings, written to a file and loaded."""
    import yaml

    spec = {
        "name": f"win_{model}",
        "workload": {"source": "lake_window", **workload},
        "topology": topo,
        "model": model,
        "policies": list(policies),
    }
    path = tmp_path / f"win_{model}.yaml"
    path.write_text(yaml.safe_dump(spec, default_flow_style=False))
    return sn.load(path)


def scores_of(table: pa.Table, policy: str = "given") -> dict[str, float | None]:
    """A replay's scores under ``policy``: {metric: value}."""
    rows = table.filter(pa.compute.equal(table["policy"], policy)).to_pylist()
    return {r["metric"]: r["value"] for r in rows}


WINDOW = {"start": T0.isoformat(), "end": (T0 + dt.timedelta(seconds=STEP)).isoformat()}


def switched(lake: Path, switches: dict[str, list[str]]) -> None:
    """The lake's topology: each switch (a fat-tree leaf, a dragonfly router) and its nodes."""
    rows = [
        {"node": n, "cabinet": "c0", "switch": switch}
        for switch, nodes in switches.items()
        for n in nodes
    ]
    write_table(lake, "topology", pa.Table.from_pylist(rows), "topo")
