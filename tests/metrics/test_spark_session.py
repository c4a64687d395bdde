"""The session runs its plans through DataFusion Comet where a build exists for the installed
Spark and machine, and is plain Spark elsewhere (burstlake/spark.py; docs/design.md, "Metrics").
Comet turns itself off with only a warning when a setting it needs is
missing (its shuffle manager, for one), which the session's error-only log hides: the test reads
the executed plan, so that a run silently back on plain Spark fails here."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from burstlake import spark as sessions


def executed_plan(frame) -> str:
    frame.write.format("noop").mode("overwrite").save()  # AQE's final plan exists once it ran
    return frame._jdf.queryExecution().executedPlan().toString()


def test_comet_is_used_where_it_is_built_for(spark, tmp_path):
    if sessions.comet_package() is None:
        pytest.skip("no Comet build for this Spark or machine: the session is plain Spark")
    path = tmp_path / "node_io.parquet"
    pq.write_table(pa.table({"ts": [1, 1, 2, 3], "io": [5, 7, 11, 13]}), path)
    frame = spark.read.parquet(str(path)).groupBy("ts").agg(F.sum("io").alias("io"))
    plan = executed_plan(frame)
    assert "CometNativeScan" in plan and "CometHashAggregate" in plan, plan
    assert "CometExchange" in plan, plan  # Comet's shuffle, without which it turns itself off
    assert sorted(map(tuple, frame.orderBy("ts").collect())) == [(1, 12), (2, 11), (3, 13)]


def test_cached_frames_are_read_natively(spark, tmp_path):
    """Persisted frames (the allocations, the job × node bytes) are kept in Comet's Arrow format
    and read by its native scan: Spark's own cache format sent the whole per-job roll-up back
    to Spark."""
    if sessions.comet_package() is None:
        pytest.skip("no Comet build for this Spark or machine: the session is plain Spark")
    path = tmp_path / "alloc.parquet"
    pq.write_table(pa.table({"job": [1, 1, 2], "bytes": [3, 4, 5]}), path)
    kept = spark.read.parquet(str(path)).persist()
    try:
        frame = kept.groupBy("job").agg(F.sum("bytes").alias("bytes"))
        plan = executed_plan(frame)
        assert "CometInMemoryTableScan" in plan, plan  # Spark's format: a plain InMemoryTableScan
        assert "CometHashAggregate [job#" in plan.split("CometExchange")[1], plan  # partial too
        assert sorted(map(tuple, frame.collect())) == [(1, 7), (2, 5)]
    finally:
        kept.unpersist()


@pytest.mark.parametrize(
    ("version", "system", "machine", "switch", "expected"),
    [
        ("4.1.4", "linux", "x86_64", None, "comet-spark-spark4.1_2.13:1.2.0"),
        ("4.1.0", "linux", "aarch64", None, "comet-spark-spark4.1_2.13:1.2.0"),
        ("4.1.4", "linux", "x86_64", "0", None),  # turned off by the user
        ("4.2.0", "linux", "x86_64", None, None),  # no Comet build for Spark 4.2
        ("4.1.4", "darwin", "arm64", None, None),  # no native library for macOS in the jar
        ("4.1.4", "linux", "riscv64", None, None),
    ],
)
def test_comet_package(monkeypatch, version, system, machine, switch, expected):
    monkeypatch.setattr(sessions.metadata, "version", lambda name: version)
    monkeypatch.setattr(sessions.sys, "platform", system)
    monkeypatch.setattr(sessions.platform, "machine", lambda: machine)
    if switch is None:
        monkeypatch.delenv("BURSTLAKE_SPARK_COMET", raising=False)
    else:
        monkeypatch.setenv("BURSTLAKE_SPARK_COMET", switch)
    package = sessions.comet_package()
    if expected is None:
        assert package is None
    else:
        assert package == f"org.apache.datafusion:{expected}"
