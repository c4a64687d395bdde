"""Run every metrics job in dependency order (paper 004 §3, §4, §6; docs/design.md, "Metrics").

job_io_metrics → io_phases → darshan_job_metrics → interval_metrics → cabinet_load, ion_load →
app_metrics (needs job_io) → platform_summary (needs all). Each result lands in the lake as
the ``metrics`` contribution, replacing the previous run's; the catalog is refreshed at the end.

A run is one :func:`burstlake.lake.run`: it reads one Delta version of each input table, stamps
every table it commits with its run id and the input versions, and publishes its tables
together at the end, so readers see the previous run's tables until the new ones are all in.
The same code runs in local mode (default) or on any Spark master URL.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from tqdm import tqdm

from burstlake import catalog
from burstlake import lake as lakes
from burstlake.lake import lake_path
from burstlake.schemas.metrics import INPUTS, NAMES

from . import frames
from .apps import app_metrics
from .darshan_job import darshan_job_metrics
from .interval import SystemSize, interval_metrics
from .job_io import job_io_metrics
from .loads import level_load
from .phases import io_phase_rows
from .platform import platform_summary
from .settings import MetricSettings

TABLES = NAMES  # the tables a run writes, in dependency order


def cabinet_size(topology: DataFrame, settings: MetricSettings) -> int | None:
    """Nodes per cabinet for minimal cabinets: the setting, else the largest cabinet."""
    if settings.nodes_per_cabinet:
        return settings.nodes_per_cabinet
    row = topology.groupBy("cabinet").count().agg(F.max("count")).first()
    return row[0]


class Pipeline:
    """The metrics of one lake, computed lazily and kept (persisted) while later steps use them."""

    def __init__(
        self, spark: SparkSession, lake: str | os.PathLike, settings: MetricSettings
    ) -> None:
        """Set up the input frames; build it inside a ``lake.run`` so they share one snapshot."""
        self.spark, self.lake, self.settings = spark, lake_path(lake), settings
        self.inputs = {name: frames.read(spark, self.lake, name) for name in INPUTS}
        self.kept: list[DataFrame] = []
        self.results: dict[str, DataFrame] = {}

    def keep(self, frame: DataFrame) -> DataFrame:
        self.kept.append(frame.persist(StorageLevel.MEMORY_AND_DISK))
        return frame

    def steps(self) -> list[tuple[str, Callable[[], DataFrame]]]:
        return [
            ("job_io_metrics", self.job_io),
            ("io_phases", self.phases),
            ("darshan_job_metrics", self.darshan),
            ("interval_metrics", self.intervals),
            ("cabinet_load", lambda: self.load("cabinet")),
            ("ion_load", lambda: self.load("ion")),
            ("app_metrics", self.apps),
            ("platform_summary", self.platform),
        ]

    def job_io(self) -> DataFrame:
        i = self.inputs
        result = job_io_metrics(
            i["jobs"],
            i["job_nodes"],
            i["node_io"],
            i["topology"],
            cabinet_size(i["topology"], self.settings),
            self.settings,
        )
        self.node_bytes = self.keep(result.node_bytes)
        self.per_interval = self.keep(result.per_interval)
        return self.keep(result.metrics)

    def phases(self) -> DataFrame:
        return io_phase_rows(self.per_interval, self.node_bytes, self.settings)

    def darshan(self) -> DataFrame:
        i = self.inputs
        return darshan_job_metrics(i["darshan_jobs"], i["darshan_rank_io"], self.settings)

    def intervals(self) -> DataFrame:
        i = self.inputs
        size = SystemSize.of(i["topology"], i["node_io"])
        result = interval_metrics(i["node_io"], i["topology"], size, self.settings)
        self.per_level = {"cabinet": self.keep(result.cabinets), "ion": self.keep(result.ions)}
        return self.keep(result.metrics)

    def load(self, level: str) -> DataFrame:
        return level_load(self.inputs["topology"], self.per_level[level], level)

    def apps(self) -> DataFrame:
        return self.keep(
            app_metrics(self.results["job_io_metrics"], self.node_bytes, self.settings)
        )

    def platform(self) -> DataFrame:
        r = self.results
        return platform_summary(
            self.spark, r["job_io_metrics"], r["interval_metrics"], r["app_metrics"], self.settings
        )

    def run(self, progress: bool) -> dict[str, int]:
        """Compute and land every table; returns rows written per table."""
        written: dict[str, int] = {}
        steps = tqdm(self.steps(), desc="metrics", unit="table", disable=not progress)
        try:
            for name, step in steps:
                steps.set_postfix_str(name)
                self.results[name] = step()
                written[name] = frames.write(self.lake, name, self.results[name])
                lakes.checkpoint("metrics-commit")
        finally:
            for frame in self.kept:
                frame.unpersist()
        return written


def run(
    lake: str | os.PathLike | None = None,
    spark: SparkSession | None = None,
    master: str | None = None,
    settings: MetricSettings | None = None,
    progress: bool | None = None,
) -> dict[str, int]:
    """All metrics of ``lake`` on ``spark`` (or a new session on ``master``, local by default)."""
    from burstlake.spark import log_file, session

    root = lake_path(lake)
    spark = spark or session(master, app_name="burstlake-metrics", log=log_file(root))
    show = sys.stderr.isatty() if progress is None else progress
    with lakes.run(root, "metrics", INPUTS, publish=True):
        written = Pipeline(spark, root, settings or MetricSettings()).run(show)
    catalog.refresh(root)
    return written
