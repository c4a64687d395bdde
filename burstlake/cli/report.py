"""``burstlake report``: one self-contained HTML file of the lake's figures and what-ifs."""

from __future__ import annotations

import argparse

from burstlake.cli import add_lake_argument
from burstlake.report_dxt import DXT_JOBS


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "report",
        help="write an HTML report of the lake",
        description="Write one self-contained HTML file (images inline, no network) with the "
        "platform summary beside paper 004's values, spatial burstiness over time, a traffic "
        "heatmap, cabinet and I/O-node loads, and every replayed what-if side by side. "
        "Each figure's caption names the paper figure it mirrors.",
    )
    add_lake_argument(parser, existing=True)
    parser.add_argument(
        "--out", default=None, help="where to write the report (default: LAKE/report.html)"
    )
    parser.add_argument(
        "--dxt-jobs",
        type=int,
        default=DXT_JOBS,
        help=f"draw a DXT heat map for this many jobs, those with the most traced bytes "
        f"(default {DXT_JOBS})",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake.report import write

    if args.dxt_jobs < 1:
        raise ValueError(f"--dxt-jobs must be at least 1, not {args.dxt_jobs}")
    print(write(args.lake, args.out, args.dxt_jobs))
    return 0
