"""The ``burstlake`` command: a thin layer over the library (docs/design.md, "Layers").

Each subcommand lives in its own module here and registers itself with
``register(subparsers)``; its handler returns the exit code. The CLI imports the library,
never the reverse, and is the only place that prints."""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = ("ingest", "synth", "metrics", "replay", "flows", "report", "sql", "lake", "demo")


def add_lake_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--lake", default=None, help="lake directory (default: $BURSTLAKE_LAKE or ./lake)"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="burstlake",
        description="HPC I/O trace lake: ingest Slurm, Zabbix, Darshan and topology; compute "
        "burstiness metrics with Spark; replay traces through a contention simulator.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"burstlake.cli.{name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except (ValueError, OSError) as err:  # bad input, missing file, full disk, read-only lake
        print(f"burstlake {args.command}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
