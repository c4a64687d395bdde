"""Darshan ingest (docs/design.md, 'Sources' and 'The lake'): every real sample log lands,
totals match pydarshan's own, damaged logs are quarantined and the batch goes on."""

from __future__ import annotations

import functools
import os
import shutil
import signal
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import darshan as pydarshan
import pyarrow.compute as pc
import pytest
from darshan.backend import cffi_backend as backend

from burstlake.catalog import sql
from burstlake.jobs.ingest import darshan
from burstlake.jobs.ingest.landing import ingest
from burstlake.jobs.ingest.source import ParseContext, UnusableInput
from burstlake.lake import read_table
from tests.builders.paths import SHARED_DATA

EDISON = ("edison_vpicio_uni_job4478544.darshan", "edison_dbscan_read_job4478544.darshan")
DXT = "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"
VERSIONS = ("x86_64-3.0.0", "ppc64-3.1.8", "x86_64-3.4.7")
PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO", "H5D": "H5D"}


@pytest.fixture(scope="module")
def samples(shared_data) -> list[Path]:
    return sorted((shared_data / "darshan").glob("*.darshan"))


@pytest.fixture(scope="module")
def landed(samples, tmp_path_factory):
    """Every real sample log, ingested once into one lake for the module."""
    lake = tmp_path_factory.mktemp("darshan") / "lake"
    reports = ingest(darshan.SOURCE, samples, lake)
    return lake, {Path(r.file).name: r for r in reports}


@functools.cache
def _log_ids(folder: Path) -> dict[str, str]:
    """log_id -> file name of every sample log (the id of what a log says, not its bytes)."""
    return {darshan.identify(p): p.name for p in folder.glob("*.darshan")}


def _jobs(lake: Path) -> dict[str, dict]:
    names = _log_ids(SHARED_DATA / "darshan")
    rows = sql(lake, "SELECT * FROM darshan_jobs").to_pylist()
    return {names[r["log_id"]]: r for r in rows}


def _rank_rows(lake: Path, name: str, module: str) -> dict[int, dict]:
    log_id = _jobs(lake)[name]["log_id"]
    rows = read_table(
        lake,
        "darshan_rank_io",
        filter=(pc.field("log_id") == log_id) & (pc.field("module") == module),
    ).to_pylist()
    return {r["rank"]: r for r in rows}


def _name_records(path: Path) -> dict[int, str]:
    """pydarshan's name records of a log (record id -> path): each is a darshan_files row."""
    with pydarshan.DarshanReport(str(path), read_all=False) as report:
        return backend.log_get_name_records(report.log)


def test_every_sample_log_lands_whole(landed, samples):
    lake, reports = landed
    assert sorted(reports) == sorted(p.name for p in samples)
    for name, report in reports.items():
        assert report.error is None, name
        assert report.quarantined == 0, name
        assert report.landed == report.records_in > report.rows["darshan_rank_io"], name
    assert read_table(lake, "quarantine").num_rows == 0
    jobs = _jobs(lake)
    assert len(jobs) == len(samples)
    assert len({j["log_id"] for j in jobs.values()}) == len(samples)


def test_log_header_lands_in_darshan_jobs(landed, shared_data):
    lake, _ = landed
    vpic = _jobs(lake)[EDISON[0]]
    assert vpic["log_id"] == darshan.identify(shared_data / "darshan" / EDISON[0])
    assert vpic["job_id"] == "4478544"
    assert vpic["nprocs"] == 2048
    assert vpic["start"] == datetime(2017, 3, 20, 9, 7, 47, tzinfo=UTC)  # epoch 1490000867
    assert vpic["end"] == datetime(2017, 3, 20, 9, 9, 43, tzinfo=UTC)
    assert vpic["run_time"] == 117.0
    assert vpic["darshan_version"] == "3.1.3"
    assert vpic["modules"] == ["POSIX", "MPI-IO", "LUSTRE", "STDIO"]
    # POSIX wrote 2 TiB + 4416 B to the shared file, STDIO 3309 B; MPI-IO is not counted twice
    assert vpic["bytes_written"] == 2 * 2**40 + 4416 + 3309
    assert vpic["bytes_read"] == 0
    assert vpic["partial"] is False


def test_edison_logs_join_their_slurm_job_and_steps(landed, shared_data):
    """Edison's sacct times are Pacific; read so, each log falls inside its own job step."""
    from burstlake.jobs.ingest import slurm

    lake, _ = landed
    sacct = shared_data / "slurm" / "edison_job4478544.sacct"
    ingest(slurm.SOURCE, [sacct], lake, options={"tz": "America/Los_Angeles"})
    steps = sql(
        lake,
        """SELECT d.nprocs, s.step_name, j.nnodes FROM darshan_jobs d
           JOIN jobs j USING (job_id)
           JOIN job_steps s ON s.job_id = d.job_id AND s.step_id NOT IN ('batch', 'extern')
            AND d.start >= s.start AND d."end" <= s."end"
           ORDER BY d.start""",
    ).to_pylist()
    assert steps == [
        {"nprocs": 2048, "step_name": "vpicio_uni", "nnodes": 128},
        {"nprocs": 2048, "step_name": "dbscan_read", "nnodes": 128},
    ]


def test_empty_and_partial_logs(landed):
    lake, reports = landed
    jobs = _jobs(lake)
    empty = jobs["empty_log.darshan"]
    assert (empty["modules"], empty["bytes_read"], empty["bytes_written"]) == ([], 0, 0)
    assert reports["empty_log.darshan"].rows["darshan_rank_io"] == 0
    partial = {name for name, j in jobs.items() if j["partial"]}
    assert partial == {"imbalanced-io.darshan", "partial_data_stdio.darshan"}


def _pydarshan_totals(path: Path) -> dict[tuple[str, int], dict[str, float]]:
    """Independent per-(module, rank) sums from pydarshan's own record dataframes."""
    report = pydarshan.DarshanReport(str(path), read_all=False)
    report.read_all_generic_records()
    totals = {}
    for module, prefix in PREFIX.items():
        if module not in report.records:
            continue
        frame = report.records[module].to_df()["counters"]
        grouped = frame.groupby("rank")[[f"{prefix}_BYTES_READ", f"{prefix}_BYTES_WRITTEN"]].sum()
        for rank, row in grouped.iterrows():
            totals[(module, int(rank))] = tuple(int(v) for v in row)
    return totals


def test_rank_totals_match_pydarshan_for_every_log(landed, samples):
    lake, _ = landed
    jobs = _jobs(lake)
    compared = 0
    for path in samples:
        expected = _pydarshan_totals(path)
        rows = read_table(
            lake, "darshan_rank_io", filter=pc.field("log_id") == jobs[path.name]["log_id"]
        ).to_pylist()
        got = {
            (r["module"], r["rank"]): (r["bytes_read"], r["bytes_written"])
            for r in rows
            if r["module"] in PREFIX
        }
        assert got == expected, path.name
        compared += len(expected)
    assert compared == 966  # every rank of every byte-moving module of every sample log


def test_the_same_test_reads_alike_from_darshan_3_0_to_3_4(landed):
    lake, _ = landed
    jobs = _jobs(lake)
    for version in VERSIONS:
        name = f"mpi-io-test-{version}.darshan"
        assert jobs[name]["darshan_version"] == version.split("-")[1]
        assert jobs[name]["nprocs"] == 4
        shared = _rank_rows(lake, name, "POSIX")[-1]  # 4 ranks x 16 MiB, written then read
        assert (shared["bytes_written"], shared["bytes_read"]) == (64 * 2**20, 64 * 2**20)
        mpiio = _rank_rows(lake, name, "MPI-IO")[-1]
        assert (mpiio["bytes_written"], mpiio["opens"]) == (64 * 2**20, 8)


def test_rank_minus_one_is_the_shared_file_reduced_over_ranks(landed):
    lake, _ = landed
    posix = _rank_rows(lake, EDISON[1], "POSIX")
    assert list(posix) == [-1]
    assert posix[-1]["bytes_read"] == 1649291067392
    assert posix[-1]["reads"] == 75776
    assert posix[-1]["hostname"] is None


def test_imbalanced_log_keeps_its_rank0_pattern(landed):
    lake, _ = landed
    posix = _rank_rows(lake, "imbalanced-io.darshan", "POSIX")
    per_rank = {r: row["bytes_read"] + row["bytes_written"] for r, row in posix.items() if r >= 0}
    assert len(per_rank) == 496
    assert max(per_rank, key=per_rank.get) == 0
    assert per_rank[0] / sum(per_rank.values()) > 0.99


def test_counters_darshan_did_not_record_are_left_out_not_summed(landed):
    lake, _ = landed
    # 3.1.3 has no STDIO_FDOPENS (-1): opens are STDIO_OPENS alone (2 files on rank 0);
    # one record's STDIO_F_WRITE_TIME is a bogus -2662.7 s: rank 0's write time is unknown
    stdio = _rank_rows(lake, EDISON[0], "STDIO")
    assert stdio[0]["opens"] == 2
    assert stdio[0]["bytes_written"] == 280 + 3029
    assert stdio[0]["write_time"] is None
    assert stdio[16]["write_time"] == 0.0
    # PnetCDF file-level bytes are not recorded (-1) by Darshan 3.3.1: null, not -3
    pnetcdf = _rank_rows(lake, "e3sm_io_heatmap_only.darshan", "PNETCDF_FILE")
    assert pnetcdf[-1]["bytes_read"] is None
    assert pnetcdf[-1]["opens"] == 3 * 512


def test_heatmaps_land_as_time_bins_that_match_pydarshan(landed, shared_data):
    lake, reports = landed
    name = "e3sm_io_heatmap_only.darshan"
    # records: header + 60 module x rank totals + 3 heatmaps (POSIX, MPIIO, STDIO) x 512 ranks
    # + the name records (darshan_files)
    names = len(_name_records(shared_data / "darshan" / name))
    assert names == 11
    assert reports[name].records_in == 1 + 60 + 3 * 512 + names
    report = pydarshan.DarshanReport(str(shared_data / "darshan" / name), read_all=False)
    report.read_all_heatmap_records()
    log_id = _jobs(lake)[name]["log_id"]
    for module, heatmap in (("POSIX", "POSIX"), ("MPI-IO", "MPIIO"), ("STDIO", "STDIO")):
        rows = read_table(
            lake,
            "darshan_heatmap",
            filter=(pc.field("log_id") == log_id) & (pc.field("module") == module),
        )
        for op, column in (("read", "bytes_read"), ("write", "bytes_written")):
            frame = report.heatmaps[heatmap].to_df(ops=[op], interval_index=False)
            assert pc.sum(rows.column(column)).as_py() == int(frame.to_numpy().sum()), module
    mpiio = read_table(
        lake, "darshan_heatmap", filter=(pc.field("log_id") == log_id) & (pc.field("rank") == 0)
    ).to_pylist()
    start = datetime(2022, 3, 2, 19, 52, 46, tzinfo=UTC)  # epoch 1646250766, 6.4 s bins
    assert {r["interval_s"] for r in mpiio} == {6.4}
    bins = [(r["ts"] - start).total_seconds() / 6.4 for r in mpiio]
    assert all(abs(b - round(b)) < 1e-6 for b in bins) and min(bins) >= 0
    assert all(r["bytes_read"] + r["bytes_written"] > 0 for r in mpiio)  # sparse


def test_dxt_gives_each_rank_its_hostname(landed):
    lake, _ = landed
    posix = _rank_rows(lake, DXT, "POSIX")
    assert sorted(posix) == list(range(32))
    assert {row["hostname"] for row in posix.values()} == {"sn362.localdomain"}
    h5 = _rank_rows(lake, "hdf5_diagonal_write_half_ranks_dxt.darshan", "H5F")
    assert len(h5) == 10 and all(row["hostname"] for row in h5.values())
    vpic = _rank_rows(lake, EDISON[0], "STDIO")
    assert all(row["hostname"] is None for row in vpic.values())  # no DXT in that log


def _lake_state(lake: Path) -> dict[str, list]:
    return {
        table: sorted(map(str, read_table(lake, table).to_pylist()))
        for table in ("darshan_jobs", "darshan_rank_io", "quarantine")
    }


def test_reingest_duplicates_and_order_change_nothing(shared_data, tmp_path, lake):
    logs = [shared_data / "darshan" / f"mpi-io-test-{v}.darshan" for v in VERSIONS[:2]]
    ingest(darshan.SOURCE, logs, lake)
    before = _lake_state(lake)
    copy = tmp_path / "copy.darshan"
    shutil.copy(logs[0], copy)
    reports = ingest(darshan.SOURCE, [logs[1], copy], lake)  # again, reversed, under a new name
    assert [r.error for r in reports] == [None, None]
    assert _lake_state(lake) == before
    assert read_table(lake, "darshan_jobs").num_rows == 2


def _quarantine(lake: Path) -> dict[str, dict]:
    return {Path(r["file"]).name: r for r in read_table(lake, "quarantine").to_pylist()}


def test_damaged_logs_are_quarantined_and_the_batch_goes_on(shared_data, tmp_path, lake):
    good = shared_data / "darshan" / DXT
    data = good.read_bytes()
    (tmp_path / "truncated.darshan").write_bytes(data[: len(data) * 2 // 3])
    (tmp_path / "header-only.darshan").write_bytes(data[:1000])
    (tmp_path / "random.darshan").write_bytes(os.urandom(4096))
    (tmp_path / "empty.darshan").write_bytes(b"")
    bad_magic = bytearray(data)
    bad_magic[8:16] = b"\0" * 8
    (tmp_path / "bad-magic.darshan").write_bytes(bytes(bad_magic))
    names = ["truncated", "header-only", "random", "empty", "bad-magic"]
    files = [tmp_path / f"{n}.darshan" for n in names]
    reports = ingest(darshan.SOURCE, [*files, good], lake)

    assert [r.error is not None for r in reports] == [True] * 5 + [False]
    assert all((r.records_in, r.landed, r.quarantined) == (1, 0, 1) for r in reports[:5])
    # 97 header and module x rank records, its name records, 320 + 256 DXT segments
    landed = 97 + len(_name_records(good)) + 320 + 256
    assert reports[5].landed == landed and reports[5].quarantined == 0
    quarantined = _quarantine(lake)
    assert sorted(quarantined) == sorted(f"{n}.darshan" for n in names)
    assert {q["location"] for q in quarantined.values()} == {"whole file"}
    assert {q["source"] for q in quarantined.values()} == {"darshan"}
    assert "truncated or corrupt" in quarantined["truncated.darshan"]["reason"]
    assert "failed to read module DXT_POSIX" in quarantined["truncated.darshan"]["reason"]
    assert "truncated or corrupt" in quarantined["header-only.darshan"]["reason"]
    for name in ("random.darshan", "empty.darshan", "bad-magic.darshan"):
        assert "not a Darshan log darshan-util can read" in quarantined[name]["reason"], name
    assert read_table(lake, "darshan_jobs").column("job_id").to_pylist() == ["4373053"]


def test_a_log_that_crashes_the_reader_is_unusable_and_the_next_reads(shared_data, tmp_path):
    """darshan-util can die on a damaged log; the worker process dies instead of the ingest."""
    darshan.parse(shared_data / "darshan" / EDISON[0], ParseContext())  # worker is up
    worker = darshan._READER._worker
    fifo = tmp_path / "never-written.darshan"
    os.mkfifo(fifo)
    failure: list[Exception] = []

    def read_fifo() -> None:
        try:
            list(darshan.parse(fifo, ParseContext()))
        except UnusableInput as err:
            failure.append(err)

    reader = threading.Thread(target=read_fifo)
    reader.start()
    time.sleep(0.3)  # the worker blocks opening the FIFO
    os.kill(worker.pid, signal.SIGSEGV)
    reader.join(timeout=30)
    assert not reader.is_alive()
    assert len(failure) == 1
    assert "darshan-util crashed reading this log (SIGSEGV)" in str(failure[0])
    batches = list(darshan.parse(shared_data / "darshan" / EDISON[1], ParseContext()))
    assert batches[0].tables["darshan_jobs"].column("job_id").to_pylist() == ["4478544"]


def test_cli_ingests_a_directory_of_logs(shared_data, tmp_path, lake, capsys):
    from burstlake.cli import main

    folder = tmp_path / "logs"
    folder.mkdir()
    for name in EDISON:
        shutil.copy(shared_data / "darshan" / name, folder / name)
    (folder / "notes.txt").write_text("not a log, not matched by *.darshan")
    assert main(["ingest", "darshan", str(folder), "--lake", str(lake)]) == 0
    records = 262 + sum(len(_name_records(folder / name)) for name in EDISON)  # no DXT in them
    expected = f"darshan: 2 files, {records} records in, {records} landed, 0 quarantined"
    assert expected in capsys.readouterr().out
    assert sql(lake, "SELECT DISTINCT job_id FROM darshan_jobs").to_pylist() == [
        {"job_id": "4478544"}
    ]


def test_ingest_log_byte_balance_matches_darshan_jobs(landed):
    """Bytes seen in each log (storage-layer rank records) all land, and equal the log's
    darshan_jobs totals, which pydarshan's module totals give independently."""
    lake, _ = landed
    traffic = {
        Path(r["file"]).name: r["traffic"]
        for r in read_table(lake, "ingest_log", ["file", "traffic"]).to_pylist()
    }
    rows = [{**row, "traffic": traffic[name]} for name, row in _jobs(lake).items()]
    assert any(r["traffic"] for r in rows)
    for row in rows:
        balance = {t["metric"]: t for t in row["traffic"] or []}
        for measure in ("bytes_read", "bytes_written"):
            parts = balance.get(measure, {"seen": 0, "landed": 0})
            assert parts["seen"] == parts["landed"] == row[measure]
