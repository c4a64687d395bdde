"""The lake's headline figures beside the paper's (paper 004 §3, §4.1, §6.2, Table 3).

Each :class:`Figure` is one aggregate over one metrics table (jobs, intervals or applications)
with the number of rows it is over (``basis``) and the paper's Tianhe-1A / CS19 values where it
gives them. Interval distributions (p10, median, p90) are over intervals with traffic, the
"traffic-weighted" shares are Σ top bytes / Σ system bytes. Temporal burstiness counts every
interval of the trace's time grid, from the first interval with traffic to the last, at the
shortest interval length, so silent intervals count as zero throughput.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from burstlake.schemas import spec

from .settings import MetricSettings


@dataclass(frozen=True)
class Figure:
    name: str
    section: str
    description: str
    value: Column  # an aggregate over the source
    basis: Column  # how many rows it is over
    unit: str = "fraction"
    tianhe1a: float | None = None
    cs19: float | None = None


def mean_of(flag: str, where: Column | None = None) -> tuple[Column, Column]:
    """(share of rows with ``flag``, rows) among rows where ``where`` holds and flag is known."""
    known = F.col(flag).isNotNull() if where is None else where & F.col(flag).isNotNull()
    return F.avg(F.when(known, F.col(flag).cast("double"))), F.count(F.when(known, 1))


def job_figures(settings: MetricSettings) -> list[Figure]:
    """Job-level figures of 004 §3.2, §3.3 and Table 3."""
    multi = F.col("nodes") > 1
    traffic_share = F.sum(F.when(F.col("data_intensive"), F.col("io_bytes"))) / F.sum("io_bytes")
    low = settings.uneven_nud
    rows = [
        (
            "rank0_jobs",
            "3.2.1",
            "multi-node jobs with traffic doing rank-0 I/O",
            mean_of("rank0"),
            0.257,
            0.066,
        ),
        (
            "even_io_all_rank",
            "3.2.2",
            f"all-rank jobs with even I/O (io_nud <= {low})",
            mean_of("even_io"),
            0.619,
            0.529,
        ),
        (
            "in_min_cabinets",
            "3.3.1",
            "multi-node jobs in a minimal number of cabinets",
            mean_of("in_min_cabinets", multi),
            0.704,
            0.492,
        ),
        (
            "uneven_nodes",
            "3.3.2",
            f"multi-cabinet jobs with uneven nodes (cabinet_nud > {low})",
            mean_of("uneven_nodes"),
            0.507,
            0.713,
        ),
        (
            "data_intensive_jobs",
            "6.2, Table 3",
            f"jobs moving more than {settings.data_intensive_bytes} bytes",
            mean_of("data_intensive"),
            0.072,
            0.301,
        ),
        (
            "data_intensive_traffic",
            "6.2",
            "share of all job traffic from data-intensive jobs",
            (traffic_share, F.count(F.lit(1))),
            0.981,
            0.910,
        ),
        (
            "all_rank_jobs",
            "Table 3",
            "jobs with all-rank I/O (multi-node, traffic, not rank 0)",
            mean_of("all_rank"),
            0.427,
            0.444,
        ),
        (
            "low_comm_jobs",
            "Table 3",
            "jobs with more I/O than communication bytes",
            mean_of("low_comm"),
            0.933,
            0.953,
        ),
        (
            "optimizable_jobs",
            "Table 3",
            "data-intensive, all-rank and low-communication jobs",
            mean_of("optimizable"),
            0.063,
            0.240,
        ),
        (
            "io_phase_fraction",
            "1",
            "mean fraction of a job's run spent in I/O phases",
            (F.avg("io_phase_fraction"), F.count("io_phase_fraction")),
            None,
            None,
        ),
    ]
    return [
        Figure(name, section, text, value, basis, tianhe1a=th, cs19=cs)
        for name, section, text, (value, basis), th, cs in rows
    ]


def share_figures(column: str, what: str, section: str, weighted: tuple) -> list[Figure]:
    """Traffic-weighted share of the busiest ``what`` plus its p10 / median / p90 over intervals."""
    share = F.col(column)
    basis = F.count(share)
    total = F.sum(F.when(share.isNotNull(), F.col("system_bytes")))
    figures = [
        Figure(
            column,
            section,
            f"share of system traffic from the busiest {what}",
            F.sum(share * F.col("system_bytes")) / total,
            basis,
            tianhe1a=weighted[0],
            cs19=weighted[1],
        )
    ]
    for label, q in (("p10", 0.1), ("median", 0.5), ("p90", 0.9)):
        figures.append(
            Figure(
                f"{column}_{label}",
                section,
                f"{label} over intervals of the busiest {what}' share",
                F.percentile(share, q),
                basis,
            )
        )
    return figures


def interval_figures(settings: MetricSettings) -> list[Figure]:
    """Spatial (004 §4.1, §7.4, §7.5) and temporal burstiness figures."""
    ts_s = F.unix_micros(F.col("ts")) / F.lit(1e6)
    step = F.min("interval_s")
    grid = (F.max(ts_s) - F.min(ts_s)) / step + 1
    rate = F.col("system_bytes") / F.col("interval_s")
    busy = F.count(F.when(rate >= F.lit(settings.low_throughput_fraction) * F.col("peak_rate"), 1))
    mean_rate = F.sum("system_bytes") / (grid * step)
    pct = round(settings.top_node_fraction * 100, 3)
    return [
        *share_figures("top_node_share", f"{pct:g} % of nodes", "4.1", (0.908, 0.966)),
        *share_figures(
            "top_cabinet_share",
            f"{settings.top_cabinet_fraction * 100:g} % of cabinets",
            "4.1, Fig. 8",
            (0.80, 0.80),
        ),
        *share_figures(
            "top_ion_share",
            f"{settings.top_ion_fraction * 100:g} % of I/O nodes",
            "7.4.1, Fig. 15c",
            (0.586, None),
        ),
        Figure(
            "top_node_ions_median",
            "7.5, Fig. 17a",
            f"median I/O nodes serving the busiest {pct:g} % of nodes",
            F.percentile("top_node_ions", 0.5),
            F.count(F.lit(1)),
            unit="count",
        ),
        Figure(
            "low_throughput_intervals",
            "1 (Intrepid: 0.992)",
            f"intervals below {settings.low_throughput_fraction:g} of peak system throughput",
            (grid - busy) / grid,
            grid.cast("long"),
        ),
        Figure(
            "peak_to_mean",
            "1",
            "peak over mean system throughput",
            F.max(rate) / mean_rate,
            grid.cast("long"),
            unit="ratio",
        ),
    ]


def app_figures(settings: MetricSettings) -> list[Figure]:
    """Application figures of 004 §6.3 (Figs. 10, 11)."""
    value, basis = mean_of("consistent_distribution")
    figures = [
        Figure(
            "consistent_apps",
            "6.3, Fig. 11",
            f"applications with divergence <= {settings.divergence_consistent}",
            value,
            basis,
            tianhe1a=1 - 0.294,
            cs19=1 - 0.236,
        )
    ]
    for flag in ("data_intensive", "all_rank", "low_comm"):
        column = f"consistency_{flag}"
        figures.append(
            Figure(
                f"{column}_median",
                "6.3, Fig. 10",
                f"median consistency degree of {flag} over applications",
                F.percentile(column, 0.5),
                F.count(column),
            )
        )
    return figures


def evaluate(source: DataFrame, figures: list[Figure]) -> list[dict]:
    """One aggregation pass computing every figure of one source."""
    row = source.agg(
        *[f.value.alias(f"{i}_value") for i, f in enumerate(figures)],
        *[f.basis.alias(f"{i}_basis") for i, f in enumerate(figures)],
    ).first()
    return [
        {
            "figure": f.name,
            "section": f.section,
            "description": f.description,
            "value": None if row[f"{i}_value"] is None else float(row[f"{i}_value"]),
            "tianhe1a": f.tianhe1a,
            "cs19": f.cs19,
            "unit": f.unit,
            "basis": int(row[f"{i}_basis"] or 0),
        }
        for i, f in enumerate(figures)
    ]


def platform_summary(
    spark: SparkSession,
    job_io: DataFrame,
    intervals: DataFrame,
    apps: DataFrame,
    settings: MetricSettings,
) -> DataFrame:
    """platform_summary: one row per figure."""
    jobs = job_io.withColumn("even_io", F.when(F.col("all_rank"), ~F.col("uneven_io")))
    peak = F.max(F.col("system_bytes") / F.col("interval_s")).over(Window.partitionBy())
    rows = (
        evaluate(jobs, job_figures(settings))
        + evaluate(intervals.withColumn("peak_rate", peak), interval_figures(settings))
        + evaluate(apps, app_figures(settings))
    )
    return spark.createDataFrame(rows, from_arrow_schema(spec("platform_summary").schema))
