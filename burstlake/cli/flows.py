"""``burstlake flows FILE.json [--out FILE]``: completion times of flows sharing links max-min
fairly (the flow model of paper 000 §3; see :mod:`burstlake.replay.flows`)."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "flows",
        help="flow-level max-min simulator: completion time of each flow",
        description="Simulate flows over links shared max-min fairly (the flow model of paper 000 "
        "§3: SimGrid's max-min network model with zero latency). "
        'Input JSON: {"links": '
        '{"name": bytes_per_s, ...}, "flows": [{"route": ["name", ...], "size": bytes, '
        '"start": seconds}, ...]}. Output JSON: "finish" (seconds, one per flow, input '
        'order; null for a flow whose finish overflows, its reason under "unfinished") and '
        '"wall_s" (solver seconds).',
    )
    parser.add_argument("file", help="flow file (JSON)")
    parser.add_argument("--out", default=None, help="write the result here instead of stdout")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake import paths
    from burstlake.replay.flows import finish_times, load, result

    if args.out:
        paths.output_file(args.out)  # refused before the work
    finish, wall = finish_times(load(args.file))
    text = json.dumps(result(finish, wall), allow_nan=False)
    if args.out:
        paths.write_text(args.out, text + "\n")
    else:
        print(text)
    return 0
