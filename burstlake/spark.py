"""One way to get a SparkSession for burstlake jobs: local mode by default, any master URL.

The session reads the lake's Delta tables through delta-spark: its SQL extension and catalog
are configured, and its jars (``io.delta:delta-spark``, matching the pinned ``delta-spark``
package) are fetched from Maven Central by Spark at the first start and cached in ``~/.ivy2``.
"""

from __future__ import annotations

import logging
import os
import sys


def session(master: str | None = None, app_name: str = "burstlake", shuffle_partitions: int = 8):
    """A SparkSession on ``master`` (default ``local[*]``) set up for the lake: UTC, no UI."""
    from delta.pip_utils import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    logging.getLogger("py4j").setLevel(logging.WARNING)  # no INFO chatter at interpreter exit
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master or "local[*]")
        .appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
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
    spark = configure_spark_with_delta_pip(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
