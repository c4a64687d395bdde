"""Run every metrics job in dependency order (paper 004 §3, §4, §6; docs/design.md, "Metrics").

job_io_metrics → io_phases → darshan_job_metrics → dxt_job_series (needs job_io) →
interval_metrics → cabinet_load, ion_load →
app_metrics (needs job_io) → platform_summary (needs all). Each result lands in the lake as
the ``metrics`` contribution, replacing the previous run's; the catalog is refreshed at the end.
Each machine of the lake is computed alone, as if it were the only one, and its rows carry its
``cluster`` (docs/design.md, "Several machines in one lake").

A run is one :func:`burstlake.lake.run`: it reads one Delta version of each input table, stamps
every table it commits with its run id and the input versions, and publishes its tables
together at the end, so readers see the previous run's tables until the new ones are all in.
The same code runs in local mode (default) or on any Spark master URL.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from burstlake import catalog
from burstlake import lake as lakes
from burstlake.lake import lake_path
from burstlake.progress import Report, Step, silent
from burstlake.schemas.metrics import INPUTS, NAMES

from . import frames
from .apps import app_metrics
from .darshan_job import darshan_job_metrics, with_clusters
from .dxt_series import dxt_job_series, node_view, with_log_clusters
from .interval import SystemSize, interval_metrics
from .job_io import job_io_metrics
from .loads import level_load
from .phases import io_phase_rows
from .platform import platform_summary
from .settings import MetricSettings, record

TABLES = NAMES  # the tables a run writes, in dependency order
log = logging.getLogger(__name__)


def cabinet_size(places: pa.Table, settings: MetricSettings) -> int | None:
    """Nodes per cabinet for minimal cabinets: the setting, else the largest cabinet of the
    topology's (node, cabinet, ion) rows."""
    if settings.nodes_per_cabinet:
        return settings.nodes_per_cabinet
    sizes = places.group_by("cabinet").aggregate([([], "count_all")])["count_all"]
    return pc.max(sizes).as_py()


class ClusterMetrics:
    """The metrics of one machine, computed lazily and kept (persisted) while later steps use
    them. Its inputs hold that machine's rows only, so the steps are those of a lake with one
    machine (top-k over its own topology size, cabinets of its own size)."""

    def __init__(
        self,
        spark: SparkSession,
        inputs: dict[str, DataFrame],
        settings: MetricSettings,
        scratch: frames.Keep = frames.recompute,
        traced: bool = False,
    ) -> None:
        self.spark, self.inputs, self.settings = spark, inputs, settings
        self.traced = traced  # the lake holds DXT segments
        self.scratch = scratch  # intermediates several steps read, computed once
        self.kept: list[DataFrame] = []
        self.results: dict[str, DataFrame] = {}

    @functools.cached_property
    def places(self) -> pa.Table:
        """The topology's (node, cabinet, ion) rows on the driver (one Spark job): the sizes
        the steps need (cabinet size, the k of each top-k) come from them without more jobs."""
        return self.inputs["topology"].select("node", "cabinet", "ion").toArrow()

    def keep(self, frame: DataFrame) -> DataFrame:
        self.kept.append(frame.persist(StorageLevel.MEMORY_AND_DISK))
        return frame

    def release(self) -> None:
        for frame in self.kept:
            frame.unpersist()

    def steps(self) -> list[tuple[str, Callable[[], DataFrame]]]:
        return [
            ("job_io_metrics", self.job_io),
            ("io_phases", self.phases),
            ("darshan_job_metrics", self.darshan),
            ("dxt_job_series", self.dxt),
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
            cabinet_size(self.places, self.settings),
            self.settings,
            self.keep,
        )
        self.node_bytes = self.keep(result.node_bytes)
        self.per_interval = self.keep(result.per_interval)
        return self.keep(result.metrics)

    def phases(self) -> DataFrame:
        return io_phase_rows(self.per_interval, self.node_bytes, self.settings)

    def darshan(self) -> DataFrame:
        i = self.inputs
        return darshan_job_metrics(i["darshan_jobs"], i["darshan_rank_io"], self.settings)

    def dxt(self) -> DataFrame:
        i = self.inputs
        if not self.traced:  # no DXT segments: no Spark job for them
            return self.spark.createDataFrame([], frames.contract("dxt_job_series"))
        interval = i["node_io"].agg(F.max("interval_s")).first()[0]
        view = node_view(self.per_interval, self.node_bytes, i["jobs"])
        return dxt_job_series(i["darshan_dxt"], interval or self.settings.dxt_interval_s, view)

    def intervals(self) -> DataFrame:
        i = self.inputs
        size = SystemSize.of(self.places, i["node_io"])
        result = interval_metrics(i["node_io"], i["topology"], size, self.settings, self.scratch)
        self.per_level = {"cabinet": result.cabinets, "ion": result.ions}
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


class Pipeline:
    """The metrics of a lake: each machine in it (:func:`burstlake.lake.clusters`) computed
    alone by a :class:`ClusterMetrics`, its rows tagged with its ``cluster``, and every table
    written once with the rows of all machines (docs/design.md, "Several machines in one
    lake")."""

    def __init__(
        self, spark: SparkSession, lake: str | os.PathLike, settings: MetricSettings
    ) -> None:
        """Set up the input frames. Given a ``lake.run`` (a snapshot), every input is read at
        its version and every table is written as the run's."""
        self.spark, self.settings = spark, settings
        self.lake = lake if isinstance(lake, lakes.Snapshot) else lake_path(lake)
        self.inputs = {name: frames.read(spark, self.lake, name) for name in INPUTS}
        # without Darshan logs there is nothing to place: no Spark job for them
        self.darshan = frames.stored(self.lake, "darshan_jobs")
        if self.darshan:
            self.inputs["darshan_jobs"], self.inputs["darshan_rank_io"] = with_clusters(
                self.inputs["darshan_jobs"], self.inputs["darshan_rank_io"], self.inputs["jobs"]
            )
        self.traced = frames.stored(self.lake, "darshan_dxt")
        if self.traced:
            self.inputs["darshan_dxt"] = with_log_clusters(
                self.inputs["darshan_dxt"], self.inputs["darshan_jobs"]
            )

    def clusters(self) -> list[lakes.Cluster]:
        """The lake's machines; an empty lake is one unnamed machine without rows (its tables
        are those of an empty lake, as before)."""
        found = lakes.clusters(self.lake) or [lakes.Cluster(self.lake, None)]
        belongs = " OR ".join(machine.sql() for machine in found)
        logs = self.inputs["darshan_jobs"]
        outside = self.darshan and logs.where(f"NOT coalesce({belongs}, false)").count()
        if outside:
            log.warning(
                "%d Darshan logs belong to no machine of the lake (%s): they are in no "
                "darshan_job_metrics row",
                outside,
                ", ".join(machine.label for machine in found),
            )
        return found

    def one(
        self, cluster: lakes.Cluster, scratch: frames.Scratch, parts: dict, report: Report
    ) -> None:
        """Compute every table of one machine, appending its rows to ``parts``; one step to
        ``report`` per table computed."""
        metrics = ClusterMetrics(
            self.spark,
            {name: frames.one_machine(frame, cluster) for name, frame in self.inputs.items()},
            self.settings,
            scratch.keep,
            self.traced,
        )
        try:
            for name, compute in metrics.steps():
                report(Step("metrics", note=f"{cluster.label} {name}"))
                metrics.results[name] = compute()
                tagged = metrics.results[name].withColumn(
                    "cluster", F.lit(cluster.name).cast("string")
                )
                parts[name].append(frames.to_arrow(tagged, name))
                report(Step("metrics", 1))
        finally:
            metrics.release()

    def run(self, report: Report = silent) -> dict[str, int]:
        """Compute every table for every machine, then land each table once; returns rows
        written per table. ``report`` gets a ``metrics`` task of machines x tables steps."""
        machines = self.clusters()
        parts: dict[str, list[pa.Table]] = {name: [] for name in TABLES}
        report(Step("metrics", total=len(machines) * len(TABLES), unit="table"))
        scratch = frames.Scratch(self.spark, self.lake)
        try:
            for cluster in machines:
                self.one(cluster, scratch, parts, report)
        finally:
            scratch.remove()
        report(Step("metrics", done=True))
        written: dict[str, int] = {}
        for name in TABLES:
            written[name] = frames.write(self.lake, name, pa.concat_tables(parts[name]))
            lakes.checkpoint("metrics-commit")
        return written


def run(
    lake: str | os.PathLike | None = None,
    spark: SparkSession | None = None,
    master: str | None = None,
    settings: MetricSettings | None = None,
    report: Report = silent,
) -> dict[str, int]:
    """All metrics of ``lake`` on ``spark`` (or a new session on ``master``, local by default),
    reporting a step per machine and table computed to ``report`` (:mod:`burstlake.progress`)."""
    from burstlake.spark import log_file, session

    root = lake_path(lake)
    spark = spark or session(master, app_name="burstlake-metrics", log=log_file(root))
    with lakes.run(root, "metrics", INPUTS, publish=True) as current:
        settings = settings or MetricSettings()
        written = Pipeline(spark, current, settings).run(report)
        record(settings, root)  # the replay's scores and the report read the same thresholds
    catalog.refresh(root)
    return written
