"""``burstlake flows FILE.json [--out FILE]``: completion times of flows sharing links, max-min
fairly (the flow model of paper 000 §3) or as lossless packets (the packet model, 000 §2.5);
see :mod:`burstlake.replay.flows`."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "flows",
        help="link-level simulator (flow or packet model): completion time of each flow",
        description="Simulate flows over named links. "
        'Input JSON: {"links": '
        '{"name": bytes_per_s, ...}, "flows": [{"route": ["name", ...], "size": bytes, '
        '"start": seconds}, ...], "model": ...}. "model" is optional and takes a scenario\'s '
        '"model" values: "flow" (the default: links shared max-min fairly, the flow model of '
        "paper 000 §3, SimGrid's max-min network model with zero latency), \"packet\" (CODES' "
        "lossless packets, buffers and credits, 000 §2.5: every flow is one message sent at its "
        "start and finished when its last byte arrives; a flow file names links, not a topology, "
        "so every hop is on virtual channel 0), or a mapping with settings, e.g. "
        '{"name": "packet", "packet_bytes": 4096, "buffer_bytes": 65536, '
        '"router_delay": 6e-08, "nic_delay": 1e-06, "tie_seed": 0, "arbitration": "fcfs"} '
        "(those are the defaults; tie_seed orders simultaneous events, arbitration is fcfs or "
        "round-robin). "
        'Output JSON: "model" (the model that ran, with its settings), "finish" (seconds, one '
        "per flow, input order; null for a flow whose finish overflows, its reason under "
        '"unfinished") and "wall_s" (the model\'s seconds).',
    )
    parser.add_argument("file", help="flow file (JSON)")
    parser.add_argument("--out", default=None, help="write the result here instead of stdout")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake import paths
    from burstlake.replay.flows import finish_times, load, result

    if args.out:
        paths.output_file(args.out)  # refused before the work
    flows = load(args.file)
    events = [0]

    def progress(done: int) -> None:  # the CLI draws; the library only counts
        events[0] += done
        if sys.stderr.isatty():
            print(f"\r{events[0]:,} events", end="", file=sys.stderr, flush=True)

    try:
        finish, wall = finish_times(flows, progress)
    except ValueError as err:  # e.g. the packet model's deadlock on a cycle of routes
        raise ValueError(f"{args.file}: {err}") from None
    if sys.stderr.isatty() and events[0]:
        print(file=sys.stderr)
    text = json.dumps(result(finish, wall, flows.model), allow_nan=False)
    if args.out:
        paths.write_text(args.out, text + "\n")
    else:
        print(text)
    return 0
