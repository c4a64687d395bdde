"""``burstlake ingest slurm|zabbix|darshan|topology PATH...`` (SPEC §6)."""

from __future__ import annotations

import argparse
import sys

from burstlake.cli import add_lake_argument
from burstlake.jobs.ingest import SOURCES, source_module


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ingest",
        help="land raw input files in the lake",
        description="Parse input files, validate them with Great Expectations, land the good "
        "records and quarantine the rest. Re-ingesting a file replaces what it contributed.",
    )
    sources = parser.add_subparsers(dest="source", required=True, metavar="SOURCE")
    for name in SOURCES:
        module = source_module(name)
        sub = sources.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        sub.add_argument("paths", nargs="+", metavar="PATH", help="files or directories")
        add_lake_argument(sub)
        module.add_arguments(sub)
        sub.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake.jobs.ingest.base import describe, expand_paths, ingest, totals

    module = source_module(args.source)
    options = {k: v for k, v in vars(args).items() if k not in ("paths", "lake", "handler")}
    files = expand_paths(args.paths, getattr(module, "FILE_PATTERN", "*"))
    if not files:
        print(
            f"burstlake ingest {args.source}: no input files in {' '.join(args.paths)}",
            file=sys.stderr,
        )
        return 2
    reports = ingest(module.SOURCE, files, args.lake, options, progress=sys.stderr.isatty())
    for report in reports:
        print(report.line())
    print(f"{args.source}: {describe(totals(reports))}")
    unusable = [r for r in reports if r.error]
    for r in unusable:
        print(f"burstlake ingest {args.source}: {r.file}: {r.error}", file=sys.stderr)
    return 1 if unusable else 0
