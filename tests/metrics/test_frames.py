"""The metrics jobs' reader (``jobs/metrics/frames.py``): the Parquet files of the pinned Delta
version, through Spark's Parquet reader, give exactly the rows the lake's other readers give."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from burstlake import lake as lakes
from burstlake.jobs.metrics import frames
from burstlake.lake import read_table, write_table
from burstlake.schemas import spec


def jobs_of(spark, lake) -> list[tuple]:
    return sorted((r.job_id, r.job_id_raw) for r in frames.read(spark, lake, "jobs").collect())


def test_a_table_never_written_is_empty_with_its_contract_columns(lake, spark):
    frame = frames.read(spark, lake, "darshan_jobs")
    assert frame.columns == spec("darshan_jobs").schema.names
    assert frame.count() == 0
    assert not frames.stored(lake, "darshan_jobs")


def test_replaced_rows_are_read_once_and_the_pinned_version_only(lake, spark):
    """A contribution written twice is read with its second rows only (the first commit's files
    are removed in the log, not on disk); a commit after the run pinned its snapshot is not
    seen inside the run."""
    write_table(lake, "jobs", pa.table({"job_id": ["1", "2"]}), "a")
    write_table(lake, "jobs", pa.table({"job_id": ["1"], "job_id_raw": ["r1"]}), "a")
    write_table(lake, "jobs", pa.table({"job_id": ["3"]}), "b")
    assert frames.stored(lake, "jobs")
    expected = sorted((r["job_id"], r["job_id_raw"]) for r in read_table(lake, "jobs").to_pylist())
    assert jobs_of(spark, lake) == expected == [("1", "r1"), ("3", None)]
    with lakes.run(lake, "frames-test", ["jobs"]) as run:
        write_table(lake, "jobs", pa.table({"job_id": ["4"]}), "c")
        assert jobs_of(spark, run) == [("1", "r1"), ("3", None)]
    assert jobs_of(spark, lake) == [("1", "r1"), ("3", None), ("4", None)]


def test_a_file_older_than_a_column_reads_it_as_nulls(lake, spark):
    """jobs written before ``job_id_raw`` existed: its files lack the column, which reads as
    null beside the newer rows that have it."""
    jobs = spec("jobs").schema
    old = jobs.remove(jobs.get_field_index("job_id_raw")).append(
        pa.field(lakes.SOURCE, pa.string())
    )
    rows = pa.Table.from_pylist([{"job_id": "1", lakes.SOURCE: "old"}], schema=old)
    write_deltalake(str(lakes.table_dir(lake, "jobs")), rows)
    assert jobs_of(spark, lake) == [("1", None)]
    write_table(lake, "jobs", pa.table({"job_id": ["2"], "job_id_raw": ["2"]}), "new")
    assert jobs_of(spark, lake) == [("1", None), ("2", "2")]


def test_scratch_keeps_a_frame_as_parquet_and_leaves_nothing_behind(lake, spark):
    """An intermediate kept in the scratch folder reads back with its rows; a second frame of
    the same name (a second machine) gets its own folder; remove leaves no staging folder."""
    lake.mkdir(parents=True, exist_ok=True)
    scratch = frames.Scratch(spark, lake)
    first = scratch.keep(spark.createDataFrame([("a", 1), ("b", None)], "k string, v long"), "x")
    second = scratch.keep(spark.createDataFrame([("c", 3)], "k string, v long"), "x")
    assert sorted(tuple(r) for r in first.collect()) == [("a", 1), ("b", None)]
    assert [tuple(r) for r in second.collect()] == [("c", 3)]
    folders = list((lake / lakes.STAGING).iterdir())
    assert len(folders) == 1 and folders[0].name.startswith("metrics-")
    scratch.remove()
    assert not (lake / lakes.STAGING).exists()
