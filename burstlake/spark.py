"""One way to get a SparkSession for burstlake jobs: local mode by default, any master URL."""

from __future__ import annotations

import logging
import os
import sys


def session(master: str | None = None, app_name: str = "burstlake", shuffle_partitions: int = 8):
    """A SparkSession on ``master`` (default ``local[*]``) set up for the lake: UTC, no UI."""
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
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
