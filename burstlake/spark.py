"""One way to get a SparkSession for burstlake jobs: local mode by default, any master URL.

The session reads the lake's Delta tables through delta-spark: its SQL extension and catalog
are configured, and its jars (``io.delta:delta-spark``, matching the pinned ``delta-spark``
package) are fetched from Maven Central by Spark at the first start and cached in ``~/.ivy2``.
The resolved jar list is remembered (``~/.cache/burstlake``), so later starts use the cached
jars directly: no resolution, no network, no Ivy report. The driver logs errors only
(``burstlake/log4j2.properties``) and a local session binds to loopback.

Scans split at ``spark.sql.files.maxPartitionBytes`` = 16 MB (Spark's default is 128 MB): a
lake's node_io is one Parquet file per day (about 8 MB a day for the Tianhe-1A month), and the
default packed the month's 24 files into 3 scan tasks for 2 cores, the last one running alone;
at 16 MB a task reads one day (two small ones at most), so both cores stay busy to the end of a
scan of node_io (docs/design.md, "Metrics").

Given a lake, everything the JVM prints goes to the lake's log file (:func:`log_file`), not to
the terminal: log4j's lines, Ivy's report, and the JVM's own "WARNING: Using incubator modules:
jdk.incubator.vector", which the JVM prints because Spark's launcher starts it with
``--add-modules=jdk.incubator.vector`` (``JavaModuleOptions`` in spark-launcher; Spark's
vectorised code uses that module, so the option stays).

Where Apache DataFusion Comet publishes a build for the installed Spark (1.2.0 is built for Spark
4.1, with its native library for Linux on x86-64 and ARM64), the session runs through it: Comet
replaces Spark's scans, projections, joins, aggregations and shuffles with native vectorised
ones and leaves to Spark what it cannot run (a plan's other parts, and every plan on another
platform). Results are Spark's but for the last bits of some doubles (a NUD by up to 1e-14:
Comet's native logarithm and sums round differently; docs/design.md, "Metrics"). Its jar comes
from Maven Central like Delta's; ``BURSTLAKE_SPARK_COMET=0`` runs plain Spark.
"""

from __future__ import annotations

import contextlib
import logging
import os
import platform
import sys
from collections.abc import Iterator
from importlib import metadata, resources
from pathlib import Path

logger = logging.getLogger(__name__)


COMET_VERSION = "1.2.0"
COMET_SPARK = "4.1"  # the Spark minor version the Comet release is built for
COMET_MACHINES = {"x86_64", "amd64", "aarch64", "arm64"}  # its native library's
# Comet's settings: its plugin and shuffle manager (without which Comet turns itself off), and
# the off-heap memory its native operators work in (Comet's "unified" memory mode)
COMET_CONF = {
    "spark.plugins": "org.apache.spark.CometPlugin",
    "spark.shuffle.manager": "org.apache.spark.sql.comet.execution.shuffle.CometShuffleManager",
    "spark.comet.enabled": "true",
    "spark.comet.exec.enabled": "true",
    "spark.comet.shuffle.enabled": "true",
    "spark.comet.exec.inMemoryCache.enabled": "true",  # persisted frames in Arrow, read natively
    "spark.memory.offHeap.enabled": "true",
    "spark.memory.offHeap.size": "2g",
}


def comet_package() -> str | None:
    """The Maven coordinates of the Comet build for this Spark and machine, or None (no build
    for them, or ``BURSTLAKE_SPARK_COMET=0``): then the session is plain Spark."""
    if os.environ.get("BURSTLAKE_SPARK_COMET", "1") == "0":
        return None
    spark = ".".join(metadata.version("pyspark").split(".")[:2])
    if spark != COMET_SPARK or sys.platform != "linux":
        return None
    if platform.machine().lower() not in COMET_MACHINES:
        return None
    return f"org.apache.datafusion:comet-spark-spark{spark}_2.13:{COMET_VERSION}"


def _jar_list(comet: str | None) -> Path:
    """Where the resolved jars (Delta's for the pinned delta-spark and Spark, and those of the
    ``comet`` package if the session uses it) are remembered."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "burstlake"
    with_comet = "-comet-" + COMET_VERSION if comet else ""
    versions = f"delta-spark-{metadata.version('delta-spark')}-spark-{metadata.version('pyspark')}"
    return cache / f"{versions}{with_comet}-jars.txt"


def _cached_jars(comet: str | None) -> str | None:
    """The jars an earlier start resolved, if every one of them is still on disk."""
    try:
        jars = _jar_list(comet).read_text().strip().split(",")
    except OSError:
        return None
    paths = [j.removeprefix("file://") for j in jars if j]
    return ",".join(jars) if paths and all(Path(p).is_file() for p in paths) else None


def _remember_jars(spark, comet: str | None) -> None:
    jars = spark.sparkContext.getConf().get("spark.jars", "")
    if jars:
        remembered = _jar_list(comet)
        try:
            remembered.parent.mkdir(parents=True, exist_ok=True)
            remembered.write_text(jars)
        except OSError as err:  # a read-only home only costs the next start a resolution
            logger.debug("cannot remember the Delta jars: %s", err)


def log_file(lake: Path) -> Path:
    """The lake's log of Spark and JVM output."""
    return lake / "_logs" / "spark.log"


@contextlib.contextmanager
def jvm_output_to(path: Path | None) -> Iterator[None]:
    """Processes started inside (the JVM of a new session) write their standard error to
    ``path`` (appended) for their whole life; nothing changes when ``path`` is None."""
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with path.open("ab") as log_handle:
            os.dup2(log_handle.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def session(
    master: str | None = None,
    app_name: str = "burstlake",
    shuffle_partitions: int = 8,
    log: Path | None = None,
):
    """A SparkSession on ``master`` (default ``local[*]``) set up for the lake: UTC, no UI.
    A new JVM writes its output to ``log`` (see :func:`log_file`) if given."""
    from delta.pip_utils import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    logging.getLogger("py4j").setLevel(logging.WARNING)  # no INFO chatter at interpreter exit
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    master = master or "local[*]"
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    log4j = os.environ.get("BURSTLAKE_SPARK_LOG4J") or str(
        resources.files("burstlake") / "log4j2.properties"
    )
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.files.maxPartitionBytes", "16m")  # a task per day of node_io
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.driver.memory", os.environ.get("BURSTLAKE_SPARK_DRIVER_MEMORY", "4g"))
        .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        # the lake's tables are small logs: rebuild a snapshot in one task, not 50
        .config("spark.databricks.delta.snapshotPartitions", "1")
        .config(
            "spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"
        )
    )
    # the parallel collector: a batch job wants throughput, and G1's concurrent threads took
    # CPU from the two cores the tasks share (docs/design.md, "Metrics")
    java_options = f"-Dlog4j2.configurationFile=file:{log4j} -XX:+UseParallelGC"
    builder = builder.config("spark.driver.extraJavaOptions", java_options)
    comet = comet_package()
    for key, value in (COMET_CONF if comet else {}).items():
        builder = builder.config(key, value)
    jars = _cached_jars(comet)
    with jvm_output_to(log):
        if jars:
            spark = builder.config("spark.jars", jars).getOrCreate()
        else:
            logger.info("resolving the Delta and Comet jars (Maven Central, first start only)")
            extra = [comet] if comet else []
            spark = configure_spark_with_delta_pip(builder, extra_packages=extra).getOrCreate()
            _remember_jars(spark, comet)
    engine = f"through DataFusion Comet {COMET_VERSION}" if comet else "plain (no Comet)"
    logger.info("Spark %s on %s, %s", spark.version, master, engine)
    return spark
