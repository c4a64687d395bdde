"""``burstlake ingest SOURCE PATH...`` (docs/design.md, 'Command line').

The options of a source's files come from the deployment file (:mod:`burstlake.config`: the
machine's options for that source) with the flags given here on top. Every source-specific
step is one of the source's hooks (``Source.after_landing``, ``Source.traffic``)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from burstlake.cli import add_lake_argument
from burstlake.jobs.ingest import SOURCES, source_module

_NOT_OPTIONS = (
    "paths", "lake", "handler", "lake_must_exist", "command", "source", "config", "workers",
    "spark_master",
)  # fmt: skip


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=None,
        help="deployment file (default: $BURSTLAKE_CONFIG, else <lake>/burstlake.yaml if any)",
    )


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
        sub.add_argument("paths", nargs="*", metavar="PATH", help="files or directories")
        add_lake_argument(sub)
        add_config_argument(sub)
        add_cluster_argument(sub)
        if module.SOURCE.grouped:
            sub.add_argument(
                "--workers",
                type=_positive,
                default=1,
                metavar="N",
                help="parse the files in N processes while this one validates and commits "
                "(default 1: parse here)",
            )
        sub.add_argument(
            "--spark-master",
            default=None,
            metavar="URL",
            help="parse, validate and stage the files as Spark tasks on this master, e.g. "
            "spark://host:7077, while this process commits (executors must see the lake at "
            "its path: a shared filesystem)"
            if module.SOURCE.grouped
            else "refused: this source's files land one at a time in this process",
        )
        module.SOURCE.add_arguments(sub)
        defaults = {}
        for action in sub._actions:  # a flag absent from the namespace was not given
            if action.dest not in _NOT_OPTIONS and action.dest != "help":
                defaults[action.dest] = action.default
                action.default = argparse.SUPPRESS
        sub.set_defaults(handler=run, flag_defaults=defaults)


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, not {value}")
    return value


def options_of(args: argparse.Namespace) -> dict[str, Any]:
    """The parse options: the defaults, then the deployment file's for this source and
    machine, then every flag given on the command line (whatever its value, its default's
    too)."""
    from burstlake.config import load

    defaults = args.flag_defaults
    given = {k: v for k, v in vars(args).items() if k in defaults and k not in _NOT_OPTIONS}
    deployment = load(args.config, args.lake)
    return {**defaults, **deployment.options(args.source, given.get("cluster")), **given}


def run(args: argparse.Namespace) -> int:
    from burstlake.jobs.ingest.base import IngestFailed, check_parallel, expand_paths, ingest
    from burstlake.lake import lake_path

    source = source_module(args.source).SOURCE
    check_parallel(source, getattr(args, "workers", 1), args.spark_master)  # before any pull
    options = options_of(args)
    files = expand_paths(args.paths, source.file_pattern)
    with tempfile.TemporaryDirectory(prefix=f"burstlake-{args.source}-") as scratch:
        pulled = source.pull(options, lake_path(args.lake), Path(scratch)) if source.pull else None
        if pulled is not None:
            files += pulled.files
            options = {**options, **pulled.options}
            for note in pulled.notes:
                print(note)
        if not files and pulled is None:
            print(
                f"burstlake ingest {args.source}: no input files in {' '.join(args.paths)}",
                file=sys.stderr,
            )
            return 2
        try:
            reports = ingest(
                source,
                files,
                args.lake,
                options,
                progress=sys.stderr.isatty(),
                workers=getattr(args, "workers", 1),
                spark_master=args.spark_master,
            )
        except IngestFailed as err:  # what landed and what did not, then the one-line error
            for report in err.reports:
                print(report.line())
            raise
        code = _tell(args, source, options, reports)
    if pulled is not None and pulled.error:
        print(
            f"burstlake ingest {args.source}: {pulled.error}; what came before it landed, "
            "run again to continue",
            file=sys.stderr,
        )
        return 1
    return code


def _tell(args: argparse.Namespace, source, options: dict[str, Any], reports: list) -> int:
    """Print each file's accounting, the totals, the byte balance and the source's checks of
    rows landed earlier; the exit code (1 when a file was unusable)."""
    from burstlake.jobs.ingest.accounting import describe, describe_traffic, totals
    from burstlake.lake import lake_path

    for report in reports:
        print(report.line())
        for line in report.traffic_lines():
            print(line)
    print(f"{args.source}: {describe(totals(reports))}")
    title, traffic = source.traffic(args.lake, options, reports)
    if traffic:
        print(f"{title}:")
        for metric, parts in sorted(traffic.items()):
            print(f"  {metric}: {describe_traffic(parts)}")
    for lines in source.after_landing(lake_path(args.lake)).values():
        for line in lines:
            print(f"{args.source} check of rows landed earlier: {line}")
    unusable = [r for r in reports if r.error]
    for r in unusable:
        print(f"burstlake ingest {args.source}: {r.file}: {r.error}", file=sys.stderr)
    return 1 if unusable else 0
