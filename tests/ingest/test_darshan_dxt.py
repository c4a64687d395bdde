"""Darshan DXT in the lake (docs/design.md, 'Sources'): ``darshan_dxt`` holds exactly the
segments pydarshan reads from every sample log, bad segments are quarantined alone, and the
trace's bytes balance against the module counters."""

from __future__ import annotations

import struct
import zlib
from collections import defaultdict
from pathlib import Path

import darshan as pydarshan
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from darshan.backend import cffi_backend as backend
from deltalake import DeltaTable, write_deltalake

from burstlake import lake as lakes
from burstlake.catalog import sql
from burstlake.jobs.ingest import darshan
from burstlake.jobs.ingest.landing import ingest
from burstlake.lake import read_table
from tests.builders.paths import SHARED_DATA

GENERATED = "generated"
BIG = "iogen_job4245_8r_4hosts_800k_dxt.darshan"
FPP = "iogen_job4243_4r_fpp_posix_random.darshan"


def _logs(big: bool) -> list[str]:
    folder = SHARED_DATA / "darshan"
    if not folder.is_dir():
        return []
    found = [p.relative_to(folder) for p in folder.glob("*.darshan")]
    found += [p.relative_to(folder) for p in folder.glob(f"{GENERATED}/*.darshan")]
    return sorted(str(p) for p in found if (p.name == BIG) == big)


def _pydarshan_segments(path: Path) -> tuple[dict, int]:
    """Per (module, rank, op): count, bytes, first start and last end (ns after the job's
    start), as pydarshan's own DXT reader gives them; and the job's start in ns."""
    found: dict = defaultdict(lambda: [0, 0, None, None])
    with pydarshan.DarshanReport(str(path), read_all=False) as report:
        job = report.metadata["job"]
        start = job["start_time_sec"] * 10**9 + job.get("start_time_nsec", 0)
        for module in ("DXT_POSIX", "DXT_MPIIO"):
            while (record := backend.log_get_dxt_record(report.log, module)) is not None:
                for op in ("read", "write"):
                    for segment in record[f"{op}_segments"]:
                        entry = found[(module, record["rank"], op)]
                        first = round(segment["start_time"] * 1e9)
                        last = round(segment["end_time"] * 1e9)
                        entry[0] += 1
                        entry[1] += segment["length"]
                        entry[2] = first if entry[2] is None else min(entry[2], first)
                        entry[3] = last if entry[3] is None else max(entry[3], last)
    return dict(found), start


def _lake_segments(lake: Path, path: Path, start: int) -> dict:
    log_id = darshan.identify(path)
    rows = sql(
        lake,
        f"""SELECT module, rank, op, count(*) AS n, sum(length)::BIGINT AS bytes,
                   min(start_ns) AS first, max(end_ns) AS last
            FROM darshan_dxt WHERE log_id = '{log_id}' GROUP BY ALL""",
    ).to_pylist()
    return {
        (r["module"], r["rank"], r["op"]): [
            r["n"],
            r["bytes"],
            r["first"] - start,
            r["last"] - start,
        ]
        for r in rows
    }


def _check_exact(lake: Path, names: list[str]) -> None:
    for name in names:
        path = SHARED_DATA / "darshan" / name
        expected, start = _pydarshan_segments(path)
        assert _lake_segments(lake, path, start) == expected, name


@pytest.mark.slow
def test_every_sample_log_holds_exactly_the_segments_pydarshan_reads(shared_data, tmp_path):
    names = _logs(big=False)
    lake = tmp_path / "lake"
    reports = ingest(darshan.SOURCE, [shared_data / "darshan" / n for n in names], lake)
    assert all(r.error is None and r.quarantined == 0 for r in reports)
    _check_exact(lake, names)
    total = sql(lake, "SELECT count(*) AS n FROM darshan_dxt").to_pylist()[0]["n"]
    # treddy 320 + 256, hdf5 435, generated 7200 + 400 + 100 (pydarshan's counts)
    assert total == 576 + 435 + 7200 + 400 + 100


@pytest.mark.slow
def test_the_800k_segment_log_holds_exactly_the_segments_pydarshan_reads(shared_data, tmp_path):
    lake = tmp_path / "lake"
    name = f"{GENERATED}/{BIG}"
    (report,) = ingest(darshan.SOURCE, [shared_data / "darshan" / name], lake)
    assert report.error is None and report.quarantined == 0
    _check_exact(lake, [name])
    days = sql(lake, "SELECT count(*) AS n, count(DISTINCT hostname) AS h FROM darshan_dxt")
    assert days.to_pylist() == [{"n": 800_000, "h": 4}]


def test_dxt_rows_name_host_file_and_time(shared_data, tmp_path):
    lake = tmp_path / "lake"
    path = shared_data / "darshan" / GENERATED / FPP
    ingest(darshan.SOURCE, [path], lake)
    rows = sql(
        lake,
        """SELECT d.rank, d.hostname, f.path, f.mount_point, f.fs_type, d.op,
                  count(*) AS n, sum(d.length)::BIGINT AS bytes,
                  min(d.start) >= min(j.start) AS after_start,
                  max(d."end") <= max(j."end") AS before_end
           FROM darshan_dxt d JOIN darshan_files f USING (log_id, record_id)
           JOIN darshan_jobs j USING (log_id) GROUP BY ALL ORDER BY d.rank""",
    ).to_pylist()
    # README of the generated logs: 4 ranks on cn00007-cn00010, a file per rank, 100 writes of
    # 4 KiB each at random offsets
    assert [(r["rank"], r["hostname"], r["op"], r["n"], r["bytes"]) for r in rows] == [
        (rank, f"cn{7 + rank:05d}", "write", 100, 100 * 4096) for rank in range(4)
    ]
    assert len({r["path"] for r in rows}) == 4
    assert all(r["path"].startswith(r["mount_point"]) and r["fs_type"] for r in rows)
    assert all(r["after_start"] and r["before_end"] for r in rows)
    partitions = {p.name for p in (lake / "darshan_dxt").glob("day=*")}
    assert len(partitions) == 1


# ------------------------------------------------------------------ bad segments in a real log

RECORD_HEADER = struct.Struct("<Qqq64sqq")  # struct dxt_file_record
SEGMENT = struct.Struct("<qqdd")  # struct segment_info: offset, length, start, end


def _inflate_all(region: bytes) -> bytes:
    """A log region: darshan-util writes it as consecutive zlib streams."""
    out = b""
    while region:
        stream = zlib.decompressobj()
        out += stream.decompress(region)
        region = stream.unused_data
    return out


def _edit_dxt_posix(data: bytes, edit) -> bytes:
    """A Darshan 3.41 log with its DXT_POSIX region rewritten by ``edit(bytearray)``: the
    region is recompressed and the regions after it move by the size change (the map of
    module i is the (offset, length) pair at byte 48 + 16 i; DXT_POSIX is module 10)."""
    at = 48 + 16 * 10
    offset, length = struct.unpack_from("<QQ", data, at)
    raw = bytearray(_inflate_all(data[offset : offset + length]))
    edit(raw)
    region = zlib.compress(bytes(raw), 9)
    moved = len(region) - length
    out = bytearray(data[:offset]) + region + data[offset + length :]
    for map_at in range(32, 48 + 16 * 64, 16):
        where, size = struct.unpack_from("<QQ", out, map_at)
        if size and where > offset:
            struct.pack_into("<Q", out, map_at, where + moved)
    struct.pack_into("<Q", out, at + 8, len(region))
    return bytes(out)


def _spoil_first_record(raw: bytearray) -> None:
    """Rank 0's record (100 writes): segment 0 runs backwards, 1 has a negative offset, 2 ends
    an hour after the job's start."""
    _, rank, _, _, writes, _ = RECORD_HEADER.unpack_from(raw, 0)
    assert (rank, writes) == (0, 100)
    first = RECORD_HEADER.size
    offset, length, start, end = SEGMENT.unpack_from(raw, first)
    SEGMENT.pack_into(raw, first, offset, length, end + 0.5, start)
    offset, length, start, end = SEGMENT.unpack_from(raw, first + SEGMENT.size)
    SEGMENT.pack_into(raw, first + SEGMENT.size, -4096, length, start, end)
    offset, length, start, end = SEGMENT.unpack_from(raw, first + 2 * SEGMENT.size)
    SEGMENT.pack_into(raw, first + 2 * SEGMENT.size, offset, length, start, 3600.0)


def test_bad_segments_are_quarantined_alone_and_the_rank_lands(shared_data, tmp_path):
    spoiled = tmp_path / "spoiled.darshan"
    data = (shared_data / "darshan" / GENERATED / FPP).read_bytes()
    spoiled.write_bytes(_edit_dxt_posix(data, _spoil_first_record))
    lake = tmp_path / "lake"
    (report,) = ingest(darshan.SOURCE, [spoiled], lake)
    assert report.error is None
    assert report.quarantined == 3 and report.landed == report.records_in - 3
    ranks = sql(
        lake, "SELECT rank, count(*) AS n FROM darshan_dxt GROUP BY rank ORDER BY rank"
    ).to_pylist()
    assert ranks == [{"rank": 0, "n": 97}] + [{"rank": r, "n": 100} for r in (1, 2, 3)]
    quarantined = read_table(lake, "quarantine").to_pylist()
    found = {q["location"]: q["reason"] for q in quarantined}
    assert set(found) == {f"DXT_POSIX record 0 (rank 0) write segment {i}" for i in range(3)}
    assert "runs backwards in time" in found["DXT_POSIX record 0 (rank 0) write segment 0"]
    assert "negative offset (-4096)" in found["DXT_POSIX record 0 (rank 0) write segment 1"]
    assert "past the job's end" in found["DXT_POSIX record 0 (rank 0) write segment 2"]
    assert all("\n" not in reason for reason in found.values())
    balance = report.traffic["dxt_posix_bytes_written"]
    assert balance == {"seen": 400 * 4096, "landed": 397 * 4096, "quarantined": 3 * 4096}


def test_reingest_is_a_no_op_and_a_renamed_copy_changes_nothing(shared_data, tmp_path):
    path = shared_data / "darshan" / GENERATED / FPP
    lake = tmp_path / "lake"
    ingest(darshan.SOURCE, [path], lake)
    before = sorted(map(str, read_table(lake, "darshan_dxt").to_pylist()))
    copy = tmp_path / "renamed.darshan"
    copy.write_bytes(path.read_bytes())
    reports = ingest(darshan.SOURCE, [path, copy], lake)
    assert reports[1].same_as == str(path)
    assert sorted(map(str, read_table(lake, "darshan_dxt").to_pylist())) == before


def _negative_nprocs(data: bytes) -> bytes:
    """The log with its job header saying -5 processes (as the hostile-input case
    ``darshan_ending_before_start`` rewrites a header): the job region after the 1328-byte
    header is rewritten and the maps of the regions after it move by the size change."""
    out = bytearray(data)
    header = 1328
    name_map = struct.unpack_from("<Q", out, 32)[0]
    job = bytearray(zlib.decompress(out[header:name_map]))
    struct.pack_into("<q", job, 40, -5)  # struct darshan_job: uid, start s, ns, end s, ns, nprocs
    region = zlib.compress(bytes(job), 9)
    moved = len(region) - (name_map - header)
    for at in range(32, header - 64 * 4, 16):
        offset, length = struct.unpack_from("<QQ", out, at)
        if length:
            struct.pack_into("<Q", out, at, offset + moved)
    return bytes(out[:header]) + region + bytes(out[name_map:])


def test_a_quarantined_header_takes_its_segments_with_it(shared_data, tmp_path):
    """The header of a log of -5 processes fails its 'nprocs >= 0' rule: its DXT segments
    (later batches) are quarantined with it, counted, and none lands."""
    spoiled = tmp_path / "negative.darshan"
    data = (shared_data / "darshan" / GENERATED / FPP).read_bytes()
    spoiled.write_bytes(_negative_nprocs(data))
    lake = tmp_path / "lake"
    (report,) = ingest(darshan.SOURCE, [spoiled], lake)
    assert report.landed == 0 and report.quarantined == report.records_in
    assert not (lake / "darshan_dxt").exists() or read_table(lake, "darshan_dxt").num_rows == 0
    rows = read_table(lake, "quarantine").to_pylist()
    orphans = [r for r in rows if r["location"].startswith("records ")]
    assert len(orphans) == 1
    assert orphans[0]["reason"] == "400 records belong to the log header, which was quarantined"
    balance = report.traffic["dxt_posix_bytes_written"]
    assert balance == {"seen": 400 * 4096, "landed": 0, "quarantined": 400 * 4096}


def test_dxt_bytes_balance_the_module_counters(shared_data, tmp_path):
    lake = tmp_path / "lake"
    treddy = "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"
    names = [f"{GENERATED}/iogen_job4242_4r_3phases_reads.darshan", treddy]
    reports = ingest(darshan.SOURCE, [shared_data / "darshan" / n for n in names], lake)
    for report in reports:
        dxt = {m: p for m, p in report.traffic.items() if m.startswith("dxt_")}
        for metric, parts in dxt.items():
            assert parts["seen"] == parts["landed"] and "gap" not in parts, metric
    four_ranks = reports[0].traffic
    assert four_ranks["dxt_posix_bytes_written"]["seen"] == 4 * 3 * 200 * 65536
    assert four_ranks["dxt_mpiio_bytes_read"]["seen"] == 4 * 3 * 100 * 65536
    logged = read_table(lake, "ingest_log", ["traffic"], filter=pc.field("landed") > 0)
    assert any(t["metric"] == "dxt_mpiio_bytes_read" for t in logged.column(0)[0].as_py())


def _cut_first_record(raw: bytearray) -> None:
    """Rank 0's record keeps its first 90 of 100 writes, as when DXT's memory ran out."""
    header = RECORD_HEADER.unpack_from(raw, 0)
    RECORD_HEADER.pack_into(raw, 0, *header[:4], 90, header[5])
    cut = RECORD_HEADER.size + 90 * SEGMENT.size
    del raw[cut : cut + 10 * SEGMENT.size]


def test_a_partial_trace_is_a_gap_not_a_loss(shared_data, tmp_path):
    """Darshan marks a module partial in the header's partial flags (a bit per module at byte
    24; DXT_POSIX is module 10): the bytes its counters saw beyond the trace are its gap."""
    data = bytearray(_edit_dxt_posix((shared_data / "darshan" / GENERATED / FPP).read_bytes(),
                                     _cut_first_record))  # fmt: skip
    struct.pack_into("<Q", data, 24, 1 << 10)
    partial = tmp_path / "partial.darshan"
    partial.write_bytes(bytes(data))
    lake = tmp_path / "lake"
    (report,) = ingest(darshan.SOURCE, [partial], lake)
    assert report.error is None and report.quarantined == 0
    balance = report.traffic["dxt_posix_bytes_written"]
    assert balance == {"seen": 400 * 4096, "landed": 390 * 4096, "gap": 10 * 4096}
    assert sql(lake, "SELECT count(*) AS n FROM darshan_dxt").to_pylist() == [{"n": 390}]
    assert sql(lake, "SELECT partial FROM darshan_jobs").to_pylist() == [{"partial": True}]


def test_the_readme_query_finds_jobs_writing_small_requests(shared_data, tmp_path):
    """The README's 'more than 1 GB in requests under 64 KiB yesterday', on the day of the
    generated logs and at 1 MB: job 4243 wrote 400 x 4 KiB (1.6 MB); 4242 wrote 64 KiB
    requests, not under 64 KiB; 4244 1 MiB requests."""
    lake = tmp_path / "lake"
    names = ("iogen_job4242_4r_3phases_reads", "iogen_job4243_4r_fpp_posix_random",
             "iogen_job4244_8r_rank0")  # fmt: skip
    ingest(darshan.SOURCE, [shared_data / "darshan" / GENERATED / f"{n}.darshan" for n in names],
           lake)  # fmt: skip
    day = sql(lake, "SELECT min(start)::DATE AS d FROM darshan_dxt").to_pylist()[0]["d"]
    query = f"""SELECT job_id, cluster, sum(length) AS bytes_written FROM darshan_dxt
        WHERE module = 'DXT_POSIX' AND op = 'write' AND length < 64 * 1024
          AND start >= DATE '{day}' AND start < DATE '{day}' + INTERVAL 1 DAY
        GROUP BY ALL HAVING sum(length) > 1e6 ORDER BY bytes_written DESC"""
    assert sql(lake, query).to_pylist() == [
        {"job_id": "4243", "cluster": None, "bytes_written": 400 * 4096}
    ]


# --- the writer's own files (burstlake/lake/files.py) -----------------------------------------


def _stats(table: Path) -> dict[str, dict]:
    """Each partition's add action statistics as delta-rs reads them (one file a partition)."""
    columns = ["num_records", "null_count", "min", "max", "partition"]
    actions = pa.table(DeltaTable(table).get_add_actions(flatten=False)).select(columns)
    found = {}
    for action in actions.to_pylist():
        day = str(action.pop("partition")["day"])
        assert day not in found, "one file per partition"
        found[day] = action
    return found


def _active(table: Path) -> list[str]:
    """The table's active files, relative to it."""
    uris = DeltaTable(table).file_uris()
    return [str(Path(u.removeprefix("file://")).relative_to(table)) for u in uris]


def test_the_writer_lays_out_the_files_delta_rs_would(shared_data, tmp_path):
    """The rows ingested, written by delta-rs itself: the same partitions, the same rows, the
    same statistics in the add actions and the same Parquet columns; DuckDB and delta-rs read
    the table alike, nanoseconds kept."""
    lake = tmp_path / "lake"
    ingest(darshan.SOURCE, [shared_data / "darshan" / GENERATED / FPP], lake)
    ours = DeltaTable(lake / "darshan_dxt")
    rows = pa.table(ours.to_pyarrow_dataset().to_table())
    reference = tmp_path / "reference"
    write_deltalake(reference, rows, partition_by=["day"])
    assert _stats(lake / "darshan_dxt") == _stats(reference)
    key = [("start_ns", "ascending"), ("record_id", "ascending"), ("offset", "ascending")]
    theirs = pa.table(DeltaTable(reference).to_pyarrow_dataset().to_table())
    assert rows.sort_by(key).equals(theirs.sort_by(key))
    assert rows.num_rows == 400
    files = [pq.read_schema(lake / "darshan_dxt" / f) for f in _active(lake / "darshan_dxt")]
    expected = pq.read_schema(reference / _active(reference)[0])
    assert [(f.name, f.type) for f in files[0]] == [(f.name, f.type) for f in expected]
    duck = sql(lake, 'SELECT start_ns, end_ns, "start" FROM darshan_dxt ORDER BY 1, 2')
    order = [("start_ns", "ascending"), ("end_ns", "ascending")]
    mine = rows.select(["start_ns", "end_ns", "start"]).sort_by(order)
    assert duck.column("start_ns").to_pylist() == mine.column("start_ns").to_pylist()
    assert any(v % 1000 for v in duck.column("end_ns").to_pylist())  # not microseconds


def test_a_reingest_removes_its_earlier_files_in_the_same_commit(shared_data, tmp_path):
    """A log landed again: one commit per table removes the earlier file and adds the new one;
    the rows are the same and no file is left active twice."""
    lake = tmp_path / "lake"
    path = shared_data / "darshan" / GENERATED / FPP
    ingest(darshan.SOURCE, [path], lake)
    table = lake / "darshan_dxt"
    before = sorted(map(str, read_table(lake, "darshan_dxt").to_pylist()))
    first, version = _active(table), DeltaTable(table).version()
    ingest(darshan.SOURCE, [path], lake)
    after = DeltaTable(table)
    assert after.version() == version + 1
    assert len(_active(table)) == len(first) and not set(first) & set(_active(table))
    commit = (table / "_delta_log" / f"{after.version():020d}.json").read_text()
    assert all(f'"remove":{{"path":"{f}"' in commit.replace(" ", "") for f in first)
    assert sorted(map(str, read_table(lake, "darshan_dxt").to_pylist())) == before


def _padded(source: Path, target: Path) -> Path:
    """The log with a trailing pad darshan-util ignores, past the grouped size: it lands alone."""
    target.write_bytes(source.read_bytes() + b"\0" * (70 * 1024))
    return target


@pytest.mark.slow  # kills a real ingest
def test_a_landing_killed_with_its_files_moved_but_uncommitted_is_finished(shared_data, tmp_path):
    """Killed after its DXT files moved into the table, before their commit: readers see the
    earlier content, the next ingest finishes the landing as a clean one would, and vacuum
    deletes the files no commit took."""
    from tests.builders.darshan_lake import lake_state
    from tests.builders.processes import cli, kill, paused

    generated = shared_data / "darshan" / GENERATED
    log, lake, clean = tmp_path / "job.darshan", tmp_path / "lake", tmp_path / "clean"
    for target in (lake, clean):
        ingest(darshan.SOURCE, [_padded(generated / FPP, log)], target)
    before = lake_state(lake)
    _padded(generated / "iogen_job4244_8r_rank0.darshan", log)  # new content, same path
    args = cli("ingest", "darshan", str(log), "--lake", str(lake))
    kill(paused(args, "commit-files-darshan_dxt", tmp_path / "p"))
    assert lake_state(lake) == before  # the landing's commits are hidden, its files unreferenced
    table = lake / "darshan_dxt"
    committed = set(_active(table))
    placed = {str(p.relative_to(table)) for p in table.rglob("*.parquet")} - committed
    assert placed  # moved, never committed
    ingest(darshan.SOURCE, [log], lake)  # reconciles: the unchanged file lands again
    ingest(darshan.SOURCE, [log], clean)
    assert lake_state(lake) == lake_state(clean)
    assert not lakes.intents(lake)
    lakes.vacuum(lake, retention_hours=0)
    assert not any((table / p).exists() for p in placed)
    assert lake_state(lake) == lake_state(clean)
