"""``burstlake ingest slurm|zabbix|darshan|topology PATH...`` (docs/design.md, 'Command line')."""

from __future__ import annotations

import argparse
import sys

from burstlake.cli import add_lake_argument
from burstlake.jobs.ingest import SOURCES, source_module


def register(subparsers: argparse._SubParsersAction) -> None:
    from burstlake.jobs.ingest.base import add_cluster_argument

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
        add_cluster_argument(sub)
        module.add_arguments(sub)
        sub.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake.jobs.ingest.base import IngestFailed, describe, expand_paths, ingest, totals

    module = source_module(args.source)
    options = {k: v for k, v in vars(args).items() if k not in ("paths", "lake", "handler")}
    files = expand_paths(args.paths, getattr(module, "FILE_PATTERN", "*"))
    if not files:
        print(
            f"burstlake ingest {args.source}: no input files in {' '.join(args.paths)}",
            file=sys.stderr,
        )
        return 2
    try:
        reports = ingest(module.SOURCE, files, args.lake, options, progress=sys.stderr.isatty())
    except IngestFailed as err:  # what landed and what did not, then the one-line error
        for report in err.reports:
            print(report.line())
        raise
    for report in reports:
        print(report.line())
        for line in report.traffic_lines():
            print(line)
    print(f"{args.source}: {describe(totals(reports))}")
    _print_traffic(args, reports)
    if args.source == "topology":
        from burstlake.jobs.ingest.topology import describe_unknown, unknown_nodes

        for line in describe_unknown(unknown_nodes(args.lake)):
            print(f"topology check of rows landed earlier: {line}")
    unusable = [r for r in reports if r.error]
    for r in unusable:
        print(f"burstlake ingest {args.source}: {r.file}: {r.error}", file=sys.stderr)
    return 1 if unusable else 0


def _print_traffic(args: argparse.Namespace, reports: list) -> None:
    """Bytes seen in the input and where they went, per traffic metric (issue: a loss of bytes
    must never pass as 'all landed'). For Zabbix, the whole stream of the lake's export files."""
    from burstlake.jobs.ingest.base import describe_traffic

    if args.source == "zabbix":
        from burstlake.jobs.ingest.zabbix import stream_balance

        traffic = stream_balance(args.lake, args.interval)
        title = "zabbix stream in the lake (all export files)"
    else:
        traffic: dict[str, dict[str, int]] = {}
        for report in reports:
            for metric, parts in report.traffic.items():
                for reason, amount in parts.items():
                    into = traffic.setdefault(metric, {})
                    into[reason] = into.get(reason, 0) + amount
        title = f"{args.source} traffic"
    if traffic:
        print(f"{title}:")
        for metric, parts in sorted(traffic.items()):
            print(f"  {metric}: {describe_traffic(parts)}")
