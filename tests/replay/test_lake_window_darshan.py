"""The lake_window workload on real Darshan logs (../shared/data/darshan/generated, written by
Darshan's runtime): their DXT segments, read here with pydarshan into ``darshan_dxt`` rows,
replayed on a Slurm allocation this test writes for them. Each job runs alone in its window,
so its I/O time is its bytes over its bottleneck (its ION) and no less."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from burstlake.lake import write_table
from burstlake.replay import scenario as sn
from tests.builders.lake_window import ION, scores_of

LOGS = {  # job id: (log file, the hosts its ranks ran on: the allocation, in rank order)
    "4242": ("iogen_job4242_4r_3phases_reads.darshan", [f"nid{100 + i:05d}" for i in range(4)]),
    "4243": ("iogen_job4243_4r_fpp_posix_random.darshan", [f"cn{7 + i:05d}" for i in range(4)]),
    "4244": ("iogen_job4244_8r_rank0.darshan", [f"nid{200 + i:05d}" for i in range(8)]),
    "4245": ("iogen_job4245_8r_4hosts_800k_dxt.darshan", [f"nid{300 + i:05d}" for i in range(4)]),
}
MARGIN = dt.timedelta(milliseconds=100)  # the window around a job's run


def _signed(record_id: int) -> int:
    return record_id - (1 << 64) if record_id >= 1 << 63 else record_id


def dxt_rows(path: Path, job_id: str) -> tuple[pa.Table, int, int]:
    """The log's DXT_POSIX segments as ``darshan_dxt`` rows, its start and end (ns)."""
    darshan = pytest.importorskip("darshan")
    report = darshan.DarshanReport(str(path), read_all=False)
    job = report.metadata["job"]
    start = job["start_time_sec"] * 10**9 + job["start_time_nsec"]
    end = job["end_time_sec"] * 10**9 + job["end_time_nsec"]
    report.mod_read_all_dxt_records("DXT_POSIX")
    columns: dict[str, list] = {k: [] for k in ("rank", "hostname", "record_id", "op")}
    columns |= {k: [] for k in ("offset", "length", "start_ns", "end_ns")}
    for record in report.records["DXT_POSIX"]:
        for op in ("read", "write"):
            for seg in record[f"{op}_segments"]:
                columns["rank"].append(record["rank"])
                columns["hostname"].append(record["hostname"])
                columns["record_id"].append(_signed(record["id"]))
                columns["op"].append(op)
                columns["offset"].append(seg["offset"])
                columns["length"].append(seg["length"])
                columns["start_ns"].append(start + round(seg["start_time"] * 1e9))
                columns["end_ns"].append(start + round(seg["end_time"] * 1e9))
    n = len(columns["rank"])
    utc = pa.timestamp("us", tz="UTC")
    table = pa.table(
        {
            "log_id": [path.name] * n,
            "job_id": [job_id] * n,
            "module": ["DXT_POSIX"] * n,
            **columns,
            "start": pa.array([t // 1000 for t in columns["start_ns"]], pa.int64()).cast(utc),
            "end": pa.array([t // 1000 for t in columns["end_ns"]], pa.int64()).cast(utc),
        }
    )
    return table, start, end


def _moment(ns: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC)


def real_lake(lake: Path, logs: Path, jobs: list[str], table: str) -> dict[str, tuple]:
    """The logs' segments, their jobs on the allocation above, each job's hosts behind its own
    ION; each job's window, bytes."""
    topology, slurm, nodes, out = [], [], [], {}
    for job_id in jobs:
        name, hosts = LOGS[job_id]
        rows, start, end = dxt_rows(logs / name, job_id)
        write_table(lake, table, rows, name)
        topology += [{"node": h, "cabinet": "c0", "ion": f"ion{job_id}"} for h in hosts]
        slurm.append({"job_id": job_id, "start": _moment(start), "end": _moment(end)})
        nodes += [{"job_id": job_id, "node": h, "node_index": k} for k, h in enumerate(hosts)]
        window = (_moment(start) - MARGIN, _moment(end) + MARGIN)
        out[job_id] = (window, float(pa.compute.sum(rows["length"]).as_py()))
    write_table(lake, "topology", pa.Table.from_pylist(topology), "topo")
    write_table(lake, "jobs", pa.Table.from_pylist(slurm), "slurm")
    write_table(lake, "job_nodes", pa.Table.from_pylist(nodes), "slurm")
    return out


def replay_alone(tmp_path, lake, windows: dict[str, tuple], model: str = "flow") -> dict:
    import yaml

    spec = {
        "name": f"darshan_{model}",
        "workload": {
            "source": "lake_window",
            "windows": [
                {"start": a.isoformat(), "end": b.isoformat()} for (a, b), _ in windows.values()
            ],
        },
        "topology": "lake",
        "model": model,
        "policies": ["given"],
    }
    path = tmp_path / f"darshan_{model}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return scores_of(sn.run(sn.load(path), lake))


def check_alone(got: dict, jobs: list[str], windows: dict[str, tuple]) -> None:
    for w, job_id in enumerate(jobs):
        name = f"w{w}.{job_id}"
        moved = windows[job_id][1]
        assert got[f"w{w}.jobs"] == 1, job_id  # nothing else runs in its window
        assert got[f"{name}.io_from_dxt"] == 1 and got[f"w{w}.dxt_quarantined"] == 0
        assert got[f"{name}.io_bytes"] == moved
        floor = moved / ION
        assert got[f"{name}.io_time"] >= floor * (1 - 1e-9), job_id
        assert got[f"{name}.io_time"] == pytest.approx(floor, rel=0.05), job_id
        assert got[f"{name}.io_time_alone"] == pytest.approx(got[f"{name}.io_time"])


@pytest.fixture
def logs(shared_data: Path) -> Path:
    folder = shared_data / "darshan" / "generated"
    if not (folder / LOGS["4242"][0]).exists():
        pytest.skip(f"the generated Darshan logs are not in {folder}")
    return folder


def test_real_logs_alone_take_their_bytes_over_their_bottleneck(lake, tmp_path, logs, dxt_table):
    jobs = ["4242", "4243", "4244"]
    windows = real_lake(lake, logs, jobs, dxt_table)
    check_alone(replay_alone(tmp_path, lake, windows), jobs, windows)


def test_a_real_log_under_the_packet_model(lake, tmp_path, logs, dxt_table):
    """Rank 0's 50 writes of 1 MiB: 256 packets each through the ION, within 5 % of the
    bytes over the ION's rate (the packet model adds NIC delays and per-hop latency)."""
    windows = real_lake(lake, logs, ["4244"], dxt_table)
    check_alone(replay_alone(tmp_path, lake, windows, "packet"), ["4244"], windows)


@pytest.mark.slow
def test_the_800k_segment_log_alone(lake, tmp_path, logs, dxt_table):
    windows = real_lake(lake, logs, ["4245"], dxt_table)
    check_alone(replay_alone(tmp_path, lake, windows), ["4245"], windows)
