"""Records win by their content (issue 25, item 4): of two versions of a job, the later state in
Slurm's order (PENDING < RUNNING < terminal), then the later end, then the later dump, whatever
the order the dumps arrive in; an older dump ingested later changes nothing and says so. A
Darshan log is one record whatever its bytes. ``lake clean`` finishing an interrupted ingest
checks what ingest checks. Concurrent conflicting ingests end as any sequential order does.
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
from pathlib import Path

import pytest

from burstlake.cli import main
from burstlake.jobs.ingest import darshan, slurm
from burstlake.jobs.ingest.landing import content_id, ingest
from burstlake.lake import read_table
from tests.builders.processes import cli, kill, paused
from tests.builders.sacct import sacct_text

HEADER = "JobIDRaw|JobName|Submit|Start|End|NNodes|NodeList|State|Cluster"
RUNNING = ("8001", "RUNNING", "Unknown")
DONE = ("8001", "COMPLETED", "2024-03-01T01:00:00")
PENDING = ("8001", "PENDING", "Unknown")


def _dump(path: Path, *jobs: tuple[str, str, str], node: str = "cn001") -> Path:
    """An ``sacct -P`` dump: per job (id, state, end) its allocation line and a step 0 line."""
    lines = []
    for job, state, end in jobs:
        start = "Unknown" if state == "PENDING" else "2024-03-01T00:10:00"
        nodes = "None assigned" if state == "PENDING" else node
        lines.append(f"{job}|app|2024-03-01T00:00:00|{start}|{end}|1|{nodes}|{state}|th")
        if state != "PENDING":
            lines.append(f"{job}.0|step||{start}|{end}|1|{node}|{state}|th")
    path.write_text(sacct_text(HEADER, lines))
    return path


def _content(lake: Path) -> dict[str, list[tuple]]:
    """The job tables' rows, sorted: equal means the same content."""
    return {
        table: sorted(
            tuple(str(v) for v in r.values()) for r in read_table(lake, table).to_pylist()
        )
        for table in ("jobs", "job_steps", "job_nodes")
    }


def _job(lake: Path) -> dict:
    [row] = read_table(lake, "jobs", columns=["job_id", "state", "end"]).to_pylist()
    return {"state": row["state"], "end": None if row["end"] is None else str(row["end"])}


def test_an_older_dump_ingested_again_changes_nothing_and_says_so(tmp_path, capsys):
    """The sweep: job 8001 RUNNING, then COMPLETED, then the RUNNING dump again."""
    lake = tmp_path / "lake"
    running = _dump(tmp_path / "running.sacct", RUNNING)
    done = _dump(tmp_path / "done.sacct", DONE)
    for dump in (running, done):
        assert main(["ingest", "slurm", str(dump), "--lake", str(lake)]) == 0
    after = _content(lake)
    capsys.readouterr()
    assert main(["ingest", "slurm", str(running), "--lake", str(lake)]) == 0
    out = capsys.readouterr().out
    assert (
        f"{running}: 2 records in, 0 landed, 0 quarantined, 2 older than the lake's "
        "(kept out: nothing changed)"
    ) in out.splitlines()
    assert _content(lake) == after
    assert _job(lake) == {"state": "COMPLETED", "end": "2024-03-01 01:00:00+00:00"}
    log = read_table(lake, "ingest_log", columns=["file", "landed", "stale"]).to_pylist()
    assert {"file": str(running), "landed": 0, "stale": 2} in log


@pytest.mark.parametrize(
    "versions",
    [(PENDING, RUNNING, DONE), (RUNNING, PENDING), (DONE, RUNNING), (DONE, PENDING, RUNNING)],
    ids=lambda v: "-".join(s for _, s, _ in v),
)
def test_the_later_state_wins_in_every_order(tmp_path, versions):
    """PENDING < RUNNING < terminal: the latest state lands whichever dump comes last, with
    its steps and nodes (they follow their job's row)."""
    best = max(versions, key=lambda v: (PENDING, RUNNING, DONE).index(v))
    reference = tmp_path / "reference"
    ingest(slurm.SOURCE, [_dump(tmp_path / "best.sacct", best)], reference)
    for order in itertools.permutations(range(len(versions))):
        lake = tmp_path / ("lake-" + "".join(map(str, order)))
        dumps = [_dump(tmp_path / f"{lake.name}-{i}.sacct", versions[i]) for i in order]
        for dump in dumps:
            ingest(slurm.SOURCE, [dump], lake)
        assert _content(lake) == _content(reference), order


def test_same_state_the_later_end_then_the_later_dump_wins(tmp_path):
    """Two COMPLETED versions: the later end wins; with the same end, the dump naming the
    later time (its own time: the latest time it records) wins, in either order."""
    early = ("8001", "COMPLETED", "2024-03-01T00:50:00")
    for first, second in ((early, DONE), (DONE, early)):
        lake = tmp_path / f"end-{first[2][-8:-6]}"
        for i, version in enumerate((first, second)):
            ingest(slurm.SOURCE, [_dump(tmp_path / f"{lake.name}-{i}.sacct", version)], lake)
        assert _job(lake)["end"] == "2024-03-01 01:00:00+00:00"
    # the same job and end; the newer dump also holds a job ending later, and a node changed
    older = _dump(tmp_path / "older.sacct", DONE, node="cn001")
    newer = _dump(tmp_path / "newer.sacct", DONE, ("8002", "COMPLETED", "2024-03-02T00:00:00"))
    newer.write_text(newer.read_text().replace("|cn001|", "|cn002|"))
    for order in ((older, newer), (newer, older)):
        lake = tmp_path / f"dump-{order[0].stem}"
        for dump in order:
            ingest(slurm.SOURCE, [dump], lake)
        nodes = read_table(lake, "job_nodes", columns=["job_id", "node"]).to_pylist()
        assert {"job_id": "8001", "node": "cn002"} in nodes and len(nodes) == 2, order


def test_a_darshan_log_with_bytes_flipped_that_reads_the_same_is_one_record(
    shared_data, tmp_path, capsys
):
    """8 bytes flipped where the reader does not look (bytes 96-103 of this log): other
    bytes, the same log as read, so one darshan_jobs row, replaced in place."""
    sample = shared_data / "darshan" / "mpi-io-test-x86_64-3.4.7.darshan"
    flipped = tmp_path / "flipped.darshan"
    data = bytearray(sample.read_bytes())
    data[96:104] = bytes(b ^ 0xFF for b in data[96:104])
    flipped.write_bytes(bytes(data))
    assert content_id(flipped) != content_id(sample)
    assert darshan.identify(flipped) == darshan.identify(sample)
    lake = tmp_path / "lake"
    ingest(darshan.SOURCE, [sample], lake)
    before = read_table(lake, "darshan_rank_io").num_rows
    reports = ingest(darshan.SOURCE, [flipped], lake)
    assert [r.error for r in reports] == [None]
    assert read_table(lake, "darshan_jobs").num_rows == 1
    assert read_table(lake, "darshan_rank_io").num_rows == before
    # a copy of the same bytes is the no-op it was; a different log is another record
    copy = tmp_path / "copy.darshan"
    shutil.copy(sample, copy)
    other = shared_data / "darshan" / "mpi-io-test-ppc64-3.1.8.darshan"
    assert [r.same_as for r in ingest(darshan.SOURCE, [copy, other], lake)] == [str(sample), None]
    assert read_table(lake, "darshan_jobs").num_rows == 2


def _topology(path: Path) -> Path:
    path.write_text("node,cluster,cabinet\ncn001,th,cab0\ncn002,th,cab0\n")
    return path


@pytest.mark.slow  # a kill test
def test_lake_clean_finishing_an_interrupted_ingest_checks_nodes_as_ingest_does(tmp_path):
    """An ingest killed between its commits and finished by ``lake clean`` quarantines the
    job whose node the topology does not know, as a normal ingest does."""
    from burstlake.jobs.ingest import topology

    lake, reference = tmp_path / "lake", tmp_path / "reference"
    topo = _topology(tmp_path / "topology.csv")
    dump = _dump(tmp_path / "jobs.sacct", DONE)
    text = dump.read_text() + "8003|app|2024-03-01T00:00:00|2024-03-01T00:10:00|"
    dump.write_text(text + "2024-03-01T01:00:00|1|cn999|COMPLETED|th\n")
    for target in (lake, reference):
        ingest(topology.SOURCE, [topo], target)
    ingest(slurm.SOURCE, [dump], reference)
    proc = paused(
        cli("ingest", "slurm", str(dump), "--lake", str(lake)), "ingest-commit", tmp_path / "p"
    )
    kill(proc)
    assert main(["lake", "clean", "--lake", str(lake)]) == 0
    assert _content(lake) == _content(reference)
    assert {r["job_id"] for r in read_table(lake, "jobs").to_pylist()} == {"8001"}
    reasons = [r["location"] for r in read_table(lake, "quarantine").to_pylist()]
    assert reasons == [r["location"] for r in read_table(reference, "quarantine").to_pylist()]
    assert len(reasons) == 1


@pytest.mark.slow  # real concurrent processes
def test_concurrent_conflicting_ingests_end_as_any_sequential_order(tmp_path):
    """Three dumps holding three versions of jobs 8001 and 8002 (and a job of their own),
    ingested at once by three processes, three times: the content equals a sequential
    ingest in every order."""
    versions = [
        (PENDING, ("8002", "COMPLETED", "2024-03-01T02:00:00"), ("9001", *DONE[1:])),
        (DONE, ("8002", "RUNNING", "Unknown"), ("9002", *DONE[1:])),
        (RUNNING, ("8002", "PENDING", "Unknown"), ("9003", *DONE[1:])),
    ]
    dumps = [_dump(tmp_path / f"v{i}.sacct", *jobs) for i, jobs in enumerate(versions)]
    sequential = []
    for order in itertools.permutations(dumps):
        lake = tmp_path / ("seq-" + "-".join(d.stem for d in order))
        for dump in order:
            ingest(slurm.SOURCE, [dump], lake)
        sequential.append(_content(lake))
    assert all(content == sequential[0] for content in sequential)
    states = {r["job_id"]: r["state"] for r in read_table(lake, "jobs").to_pylist()}
    assert states == {"8001": "COMPLETED", "8002": "COMPLETED", **dict.fromkeys(
        ("9001", "9002", "9003"), "COMPLETED")}  # fmt: skip
    for attempt in range(3):
        lake = tmp_path / f"concurrent-{attempt}"
        procs = [
            subprocess.Popen(
                cli("ingest", "slurm", str(d), "--lake", str(lake)),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for d in dumps
        ]
        for proc in procs:
            assert proc.wait(timeout=900) == 0, proc.stderr.read()
        assert _content(lake) == sequential[0], attempt
