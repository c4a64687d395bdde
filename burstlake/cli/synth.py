"""``burstlake synth --preset tianhe1a|cs19|tiny [--days N] [--seed S] [--lake DIR | --raw DIR]``
(paper 004 calibration; docs/design.md, "Synthesizer"), or ``--preset paper000 --placement
random-node|random-switch [--seed S]``: paper 000's two jobs as a lake (docs/design.md, "The
lake's jobs at two fidelities")."""

from __future__ import annotations

import argparse

from burstlake.cli import add_lake_argument, starting
from burstlake.presets import PRESETS
from burstlake.replay.paper000 import PLACEMENTS
from burstlake.replay.paper000 import SYNTH_PRESET as PAPER000


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "synth",
        help="synthesize a machine-wide trace calibrated to paper 004",
        description="Generate jobs, node allocations and per-node Lustre/network traffic whose "
        "statistics match what paper 004 measured on Tianhe-1A and CS19, with the intended "
        "labels in the synth_truth table. --lake writes the lake tables directly (full scale); "
        "--raw writes sacct text, a Zabbix export and a topology CSV for `burstlake ingest`. "
        "--preset paper000 writes paper 000's MPI and I/O jobs on cab1296 instead (Slurm jobs, "
        "node_io network bytes, DARSHAN DXT segments), placed by --placement from --seed.",
    )
    parser.add_argument("--preset", required=True, choices=sorted([*PRESETS, PAPER000]))
    parser.add_argument(
        "--placement",
        choices=PLACEMENTS,
        default=None,
        help="paper000 only: how the jobs' nodes are drawn (default random-node, 000 §3.1)",
    )
    parser.add_argument("--days", type=float, default=None, help="trace length (default: preset)")
    parser.add_argument(
        "--seed", type=int, default=None, help="random seed (default 0; paper000: 12345, CODES')"
    )
    target = parser.add_mutually_exclusive_group()
    add_lake_argument(target)
    target.add_argument("--raw", default=None, metavar="DIR", help="write raw files here instead")
    parser.add_argument(
        "--params", default=None, metavar="FILE.yaml", help="calibration overrides (YAML mapping)"
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one calibration parameter (repeatable; after --params); uneven_nud and "
        "data_intensive_bytes are the metrics thresholds synth_truth's labels follow: give "
        "`burstlake metrics --set` the same values",
    )
    parser.add_argument(
        "--cluster",
        default=None,
        metavar="NAME",
        help="the machine's name in the lake (default: the preset's), e.g. a second machine "
        "from the same preset beside the first",
    )
    parser.add_argument("--progress", action="store_true", help="show progress even without a TTY")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.preset == PAPER000:
        return run_paper000(args)
    if args.placement is not None:
        raise ValueError(f"--placement is for --preset {PAPER000}, not --preset {args.preset}")
    from burstlake.cli.bars import rendered
    from burstlake.jobs.synth.calibration import parse_assignments
    from burstlake.jobs.synth.run import synthesize
    from burstlake.lake import lake_path

    if not args.raw:
        starting(args)
    with rendered(True if args.progress else None) as report:
        written = synthesize(
            args.preset,
            lake=None if args.raw else lake_path(args.lake),
            raw=args.raw,
            days=args.days,
            seed=0 if args.seed is None else args.seed,
            params_file=args.params,
            overrides=parse_assignments(args.set),
            report=report,
            cluster=args.cluster,
        )
    print(", ".join(f"{name}: {count}" for name, count in written.items()))
    return 0


def run_paper000(args: argparse.Namespace) -> int:
    from burstlake.lake import lake_path
    from burstlake.paper000_lake import write_paper000
    from burstlake.replay.paper000 import SEED

    ignored = [
        flag
        for flag, given in (("--raw", args.raw), ("--days", args.days), ("--params", args.params),
                            ("--set", args.set), ("--cluster", args.cluster))
        if given
    ]  # fmt: skip
    if ignored:
        raise ValueError(f"--preset {PAPER000} takes no {ignored[0]} (it writes one lake window)")
    seed = SEED if args.seed is None else args.seed
    starting(args)
    written = write_paper000(lake_path(args.lake), args.placement or PLACEMENTS[0], seed)
    print(", ".join(f"{name}: {count}" for name, count in written.items()))
    return 0
