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
        'burstlake/replay/scenarios/ (docs/design.md, "Replay"). The scores use the '
        "thresholds the lake's metrics last ran with (burstlake metrics --set), which --set "
        "overrides here.",
    )
    parser.add_argument("--scenario", required=True, help="scenario YAML file")
    parser.add_argument(
        "--cluster",
        help="the machine of a lake holding several to replay (overrides the scenario's "
        "cluster; default: each machine in turn)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a metrics threshold the scores use, e.g. --set top_ion_fraction=0.2 "
        "(default: the lake's, as burstlake metrics last ran)",
    )
    parser.add_argument(
        "--progress", action="store_true", help="show a progress bar even when not on a TTY"
    )
    add_lake_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from burstlake.formatting import format_table
    from burstlake.jobs.metrics.settings import recorded
    from burstlake.lake import lake_path
    from burstlake.replay.scenario import check_cluster, comparison, load
    from burstlake.replay.scenario import run as run_scenario

    scenario = load(args.scenario)
    if args.cluster is not None:
        scenario = replace(scenario, cluster=check_cluster(args.cluster))
    show = args.progress or sys.stderr.isatty()
    with tqdm(desc=f"replay {scenario.name}", unit="step", disable=not show) as bar:
        thresholds = recorded(lake_path(args.lake)).with_overrides(args.overrides)
        table = run_scenario(scenario, args.lake, progress=bar.update, thresholds=thresholds)
    columns, rows = comparison(table)
    print(format_table(columns, rows, len(rows)))
    return 0
