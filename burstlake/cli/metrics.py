"""``burstlake metrics``: compute every metrics table of the lake with Spark (SPEC §4)."""

from __future__ import annotations

import argparse

from burstlake.cli import add_lake_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    from burstlake.jobs.metrics.run import add_arguments, execute

    parser = subparsers.add_parser(
        "metrics",
        help="compute burstiness metrics with Spark",
        description="Compute the metrics tables (job_io_metrics, darshan_job_metrics, "
        "interval_metrics, cabinet_load, ion_load, app_metrics, platform_summary) from the "
        "lake's jobs, job_nodes, node_io, topology and Darshan tables, in dependency order. "
        "Each run replaces the previous one. Local Spark by default; --spark-master runs the "
        "same jobs on a cluster.",
    )
    add_lake_argument(parser, existing=True)
    add_arguments(parser)
    parser.set_defaults(handler=execute)
