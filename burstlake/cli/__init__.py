"""The ``burstlake`` command: a thin layer over the library (docs/design.md, "Layers").

Each subcommand lives in its own module here and registers itself with
``register(subparsers)``; its handler returns the exit code. The CLI imports the library,
never the reverse, and is the only place that prints."""

from __future__ import annotations

import argparse
import importlib
import sys

MESSAGE_LIMIT = 400  # characters of an error line
COMMANDS = ("ingest", "synth", "metrics", "replay", "flows", "report", "sql", "lake", "demo")


def add_lake_argument(parser: argparse.ArgumentParser, existing: bool = False) -> None:
    """``--lake DIR``. A command that only reads (``existing``) refuses a directory that holds
    no lake, so a mistyped path is an error instead of an empty answer; one that writes says
    when it starts a new lake. A file is never a lake."""
    parser.add_argument(
        "--lake", default=None, help="lake directory (default: $BURSTLAKE_LAKE or ./lake)"
    )
    parser.set_defaults(lake_must_exist=existing)


def check_lake(args: argparse.Namespace) -> None:
    """ValueError with a one-line reason when ``--lake`` cannot be the lake (see
    :func:`add_lake_argument`)."""
    if getattr(args, "lake", None) is None or not hasattr(args, "lake_must_exist"):
        return
    from burstlake.lake import is_lake as lake_at
    from burstlake.lake import lake_path

    text, existing = args.lake, args.lake_must_exist
    path = lake_path(text)
    if path.exists() and not path.is_dir():
        raise ValueError(f"--lake {text} is a file, not a lake directory")
    from burstlake.config import FILE_NAME

    # List first, judge after: a writer starting the same new lake at this moment has made
    # its own folders by the time they are judged, so they never read as "other files".
    others = [p for p in path.iterdir() if p.name != FILE_NAME] if path.is_dir() else []
    is_lake = lake_at(path)
    if existing and not is_lake:
        raise ValueError(
            f"no lake at --lake {text} (mistyped? a lake is made by burstlake ingest, synth "
            "or demo)"
        )
    if not is_lake and others:  # a new lake may hold its deployment file already
        raise ValueError(f"--lake {text} holds other files, not a lake: give a new directory")
    if not path.exists():
        print(f"burstlake: no lake at {text}; starting a new one", file=sys.stderr)


def one_line(err: BaseException, limit: int = MESSAGE_LIMIT) -> str:
    """An error as the one line a user reads: its lines joined, cut at ``limit`` characters
    (a library's multi-line message, such as a YAML or DuckDB parser's, never spills)."""
    text = " ".join(str(err).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
        check_lake(args)
        if hasattr(args, "lake_must_exist"):  # resolved once, before anything is written
            from burstlake.lake import lake_path

            args.lake = lake_path(args.lake).resolve()
        return int(args.handler(args) or 0)
    except (ValueError, OSError) as err:  # bad input, missing file, full disk, read-only lake
        print(f"burstlake {args.command}: {one_line(err)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"burstlake {args.command}: out of memory", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
