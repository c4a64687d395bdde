"""The ``burstlake`` command: a thin layer over the library (docs/design.md, "Layers").

Each subcommand lives in its own module here and registers itself with
``register(subparsers)``; its handler returns the exit code. The CLI imports the library,
never the reverse, and is the only place that prints."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import threading
import time

MESSAGE_LIMIT = 400  # characters of an error line
COMMANDS = ("ingest", "synth", "metrics", "replay", "flows", "report", "sql", "lake", "demo")


def add_lake_argument(parser: argparse.ArgumentParser, existing: bool = False) -> None:
    """``--lake DIR``. A command that only reads (``existing``) refuses a directory that holds
    no lake, so a mistyped path is an error instead of an empty answer; one that writes says
    when it starts a new lake (:func:`starting`). A file is never a lake."""
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
    args.new_lake = None if path.exists() else text  # said by starting(), once input is checked


def starting(args: argparse.Namespace) -> None:
    """Say, once, that the command starts a new lake. A writing command calls it when its input
    (deployment file, scenario, options) is checked and it is about to write, so a refused
    command prints its one-line refusal alone and makes no lake."""
    text = getattr(args, "new_lake", None)
    if text is not None:
        print(f"burstlake: no lake at {text}; starting a new one", file=sys.stderr)
        args.new_lake = None


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


class Terminated(BaseException):
    """SIGTERM, raised where the command is, so what it holds is undone as on Ctrl-C."""


def _terminate(_signum: int, _frame: object) -> None:
    raise Terminated


def _landed_since(args: argparse.Namespace, start: float) -> str:
    """What landed in the lake since ``start``: the ``ingest_log`` rows written since."""
    lake = getattr(args, "lake", None)
    with contextlib.suppress(Exception):  # a line about an interrupt never fails itself
        from burstlake.lake import lake_path, read_table

        times = read_table(lake_path(lake), "ingest_log", ["file", "ingested_at"]).to_pylist()
        files = [r["file"] for r in times if r["ingested_at"].timestamp() >= start]
        if not files:
            return "nothing landed; the file in progress was undone"
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        return f"{len(files)} file(s) landed ({shown}); the file in progress was undone"
    return "the file in progress was undone"


def _interrupted(args: argparse.Namespace, start: float, what: str) -> None:
    said = _landed_since(args, start) if getattr(args, "command", "") == "ingest" else ""
    print(
        f"burstlake {args.command}: stopped by {what}{'; ' + said if said else ''}", file=sys.stderr
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    start = time.time()
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        check_lake(args)
        if hasattr(args, "lake_must_exist"):  # resolved once, before anything is written
            from burstlake.lake import lake_path

            args.lake = lake_path(args.lake).resolve()
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except (ValueError, OSError) as err:  # bad input, missing file, full disk, read-only lake
        print(f"burstlake {args.command}: {one_line(err)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"burstlake {args.command}: out of memory", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        _interrupted(args, start, "Ctrl-C")
        return 130
    except Terminated:
        _interrupted(args, start, "SIGTERM")
        return 128 + signal.SIGTERM
    except Exception as err:
        if type(err).__name__ != "InterruptException":  # DuckDB's on Ctrl-C
            raise
        _interrupted(args, start, "Ctrl-C")
        return 130
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
