"""``burstlake replay --scenario FILE.yaml``: compare what-if policies on a replay
(docs/design.md, "Replay")."""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import replace

from burstlake.cli import add_lake_argument, starting


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
    parser.add_argument(
        "--workers",
        type=int,
        help="replay the windows of a lake_window workload in N local processes (the same "
        "rows as a serial run; overrides the workload's workers)",
    )
    parser.add_argument(
        "--spark-master",
        help="replay the runs of a lake_window workload as Spark tasks on this master URL "
        "(the same rows as a local run)",
    )
    add_lake_argument(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from burstlake.formatting import format_table
    from burstlake.jobs.metrics.settings import recorded
    from burstlake.lake import check_writable, lake_path
    from burstlake.replay.scenario import check_cluster, comparison, load
    from burstlake.replay.scenario import run as run_scenario

    scenario = load(args.scenario)
    check_writable(args.lake, f"replay {scenario.name}'s scores")  # before the simulation
    if args.workers is not None:
        scenario = with_workers(scenario, "workers", args.workers)
    if args.spark_master is not None:
        scenario = with_workers(scenario, "spark_master", args.spark_master)
    for note in scenario.notes:
        print(f"note: {note}", file=sys.stderr)
    if args.cluster is not None:
        scenario = replace(scenario, cluster=check_cluster(args.cluster))
    show = args.progress or sys.stderr.isatty()
    estimates = logging.StreamHandler(sys.stderr)  # each window's estimate, before it runs
    estimates.setFormatter(logging.Formatter("%(message)s"))
    starting(args)
    window_log = logging.getLogger("burstlake.replay.workloads.lake_window")
    window_log.addHandler(estimates)
    window_log.setLevel(logging.INFO)
    try:
        with tqdm(desc=f"replay {scenario.name}", unit="step", disable=not show) as bar:
            thresholds = recorded(lake_path(args.lake)).with_overrides(args.overrides)
            table = run_scenario(scenario, args.lake, progress=bar.update, thresholds=thresholds)
    finally:
        window_log.removeHandler(estimates)
    columns, rows = comparison(table)
    print(format_table(columns, rows, len(rows)))
    return 0


def with_workers(scenario, key: str, value):
    """The scenario with ``--workers`` or ``--spark-master`` (``key``) set on a workload that
    fans out; a one-line error otherwise, or for a worker count below 1."""
    from burstlake.replay import workloads

    source = scenario.workload.get("source")
    option = "--" + key.replace("_", "-")
    if key not in workloads.kind(source).keys:
        raise ValueError(f"{option}: workload {source} runs in one process (lake_window fans out)")
    if key == "workers" and value < 1:
        raise ValueError(f"--workers must be at least 1, got {value}")
    return replace(scenario, workload={**scenario.workload, key: value})
