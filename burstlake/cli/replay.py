"""``burstlake replay --scenario FILE.yaml``: compare what-if policies on a replay
(docs/design.md, "Replay")."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from burstlake.cli import add_lake_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="replay traces through the contention simulator under what-if policies",
        description="Replay a scenario (YAML: workload, topology, policies, window) through the "
        "topology-aware contention simulator, print a metric × policy comparison and write "
        "the scores to the lake's replay_scores table. Example scenarios ship in "
        "burstlake/replay/scenarios/ (ion_remap.yaml, ior_cs19.yaml, placement_fattree.yaml, "
        "throttle_fattree.yaml, split_tapered.yaml, split_tapered_cyclic.yaml, split_bully.yaml, "
        "realloc_lake.yaml, realloc_incremental.yaml, "
        "realloc_alltoall.yaml, bridges_mira512.yaml, bridges_mira512_all.yaml, "
        "calciom_pair.yaml, calciom_sizes.yaml, calciom_locality.yaml: I/O "
        "phases coordinated as in paper 001, whose sweeps also fill the delta_graph table).",
    )
    parser.add_argument("--scenario", required=True, help="scenario YAML file")
    parser.add_argument(
        "--cluster",
        help="the machine of a lake holding several to replay (overrides the scenario's "
        "cluster; default: each machine in turn)",
    )
    parser.add_argument(
        "--progress", action="store_true", help="show a progress bar even when not on a TTY"
    )
    add_lake_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from burstlake.formatting import format_table
    from burstlake.replay.scenario import check_cluster, comparison, load
    from burstlake.replay.scenario import run as run_scenario

    scenario = load(args.scenario)
    for note in scenario.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.cluster is not None:
        scenario = replace(scenario, cluster=check_cluster(args.cluster))
    show = args.progress or sys.stderr.isatty()
    with tqdm(desc=f"replay {scenario.name}", unit="step", disable=not show) as bar:
        table = run_scenario(scenario, args.lake, progress=bar.update)
    columns, rows = comparison(table)
    print(format_table(columns, rows, len(rows)))
    return 0
