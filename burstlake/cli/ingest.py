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

from burstlake.cli import add_lake_argument, starting
from burstlake.cli.bars import rendered
from burstlake.jobs.ingest import SOURCES, source_module
from burstlake.jobs.ingest.source import CLUSTER, Option, Source


def add_config_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        default=None,
        help="deployment file (default: $BURSTLAKE_CONFIG, else <lake>/burstlake.yaml if any)",
    )


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
        sub.add_argument("paths", nargs="*", metavar="PATH", help="files or directories")
        add_lake_argument(sub)
        add_config_argument(sub)
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
        for option in _options(module.SOURCE):
            add_option(sub, option)
        sub.set_defaults(handler=run)


def _options(source: Source) -> tuple[Option, ...]:
    """The parse options of a source's files: ``--cluster`` (every source's), then its own."""
    return (CLUSTER, *source.options)


def add_option(parser: argparse.ArgumentParser, option: Option) -> None:
    """The flag of an :class:`Option`. It has no default in the namespace: a flag absent from
    it was not given, so one given wins over the deployment file whatever its value."""
    common = {"dest": option.name, "default": argparse.SUPPRESS, "help": option.help}
    if option.flag:
        parser.add_argument(option.flag_name, action="store_true", **common)
        return
    parser.add_argument(
        option.flag_name,
        action="append" if option.repeated else "store",
        type=_converter(option),
        metavar=option.metavar,
        **common,
    )


def _converter(option: Option):
    def convert(text: str) -> object:
        try:
            return option.convert(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    convert.__name__ = option.type.__name__  # argparse names the type in its messages
    return convert


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

    options = _options(source_module(args.source).SOURCE)
    defaults = {option.name: option.initial for option in options}
    given = {o.name: getattr(args, o.name) for o in options if hasattr(args, o.name)}
    deployment = load(args.config, args.lake)
    return {**defaults, **deployment.options(args.source, given.get("cluster")), **given}


def run(args: argparse.Namespace) -> int:
    from burstlake.jobs.ingest.landing import IngestFailed, check_parallel, expand_paths, ingest
    from burstlake.lake import lake_path

    source = source_module(args.source).SOURCE
    check_parallel(source, getattr(args, "workers", 1), args.spark_master)  # before any pull
    options = options_of(args)
    files = expand_paths(args.paths, source.file_pattern)
    with tempfile.TemporaryDirectory(prefix=f"burstlake-{args.source}-") as scratch:
        pull = source.stream.pull if source.stream is not None else None
        pulled = pull(options, lake_path(args.lake), Path(scratch)) if pull else None
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
        starting(args)
        try:
            with rendered() as report:
                reports = ingest(
                    source,
                    files,
                    args.lake,
                    options,
                    report=report,
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
