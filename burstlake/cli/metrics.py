"""``burstlake metrics``: compute every metrics table of the lake with Spark (paper 004 §3, §4,
§6; docs/design.md, "Metrics").

Also the entry point for ``spark-submit``: ``python -m burstlake.cli.metrics --lake DIR``.
"""

from __future__ import annotations

import argparse
import sys

from burstlake.cli import add_lake_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    from burstlake.schemas.metrics import INPUTS, NAMES

    parser = subparsers.add_parser(
        "metrics",
        help="compute burstiness metrics with Spark",
        description=f"Compute the metrics tables ({', '.join(NAMES)}) of paper 004 (Yu et al., "
        f"TPDS 2020, §3, §4, §6) from the lake's {', '.join(INPUTS)} tables, in dependency "
        "order. Each run replaces the previous one. Local Spark by default; --spark-master runs "
        "the same jobs on a cluster. Where each figure is defined: docs/design.md.",
    )
    add_arguments(parser)
    parser.set_defaults(handler=run)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``burstlake metrics``."""
    from burstlake.jobs.metrics.settings import MetricSettings

    add_lake_argument(parser, existing=True)
    parser.add_argument(
        "--spark-master",
        default=None,
        help="Spark master URL, e.g. spark://host:7077 (default: local[*])",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a threshold, e.g. --set data_intensive_bytes=1e9 --set rank0_share=0.9 "
        f"(settings: {', '.join(MetricSettings().__dataclass_fields__)})",
    )
    parser.add_argument("--progress", action="store_true", help="show progress even without a TTY")


def run(args: argparse.Namespace) -> int:
    """Run the metrics for parsed arguments and print rows per table."""
    from burstlake.cli.bars import rendered
    from burstlake.jobs.metrics.run import run as compute
    from burstlake.jobs.metrics.settings import MetricSettings

    settings = MetricSettings().with_overrides(args.overrides)
    with rendered(True if args.progress else None) as report:
        written = compute(args.lake, master=args.spark_master, settings=settings, report=report)
    for name, rows in written.items():
        print(f"{name}: {rows} rows")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m burstlake.cli.metrics ...`` (for spark-submit) is ``burstlake metrics ...``."""
    from burstlake.cli import main as burstlake

    return burstlake(["metrics", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
