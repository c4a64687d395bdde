"""``burstlake demo``: run the main job end to end into a lake and summarise it."""

from __future__ import annotations

import argparse

from burstlake.cli import add_lake_argument, starting


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run the whole pipeline on the bundled defaults",
        description="Ingest the real samples (when $BURSTLAKE_SAMPLES, or ../shared/data seen "
        "from the working directory, is present), synthesize a tiny machine for node-level "
        "traffic, compute the metrics of paper 004 (Yu et al., TPDS 2020), execute the "
        "notebook and replay block vs cyclic I/O-node mapping (004 §5.1). Needs nothing but the "
        "installed package. Stages: docs/design.md.",
    )
    add_lake_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake.demo import run as run_demo
    from burstlake.lake import lake_path

    starting(args)
    print(run_demo(lake_path(args.lake), progress=lambda line: print(line, flush=True)))
    return 0
