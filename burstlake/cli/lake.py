"""``burstlake lake``: housekeeping of the Delta lake (docs/design.md, 'The lake').

``migrate`` converts a lake written in the pre-Delta layout; ``vacuum`` deletes the files of
old versions; ``catalog`` rebuilds ``catalog.duckdb``; ``clean`` removes what killed runs left.
"""

from __future__ import annotations

import argparse
import sys

from burstlake.cli import add_lake_argument


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lake",
        help="lake housekeeping: migrate, vacuum, catalog, clean",
        description="Housekeeping of the Delta lake: convert a pre-Delta lake, delete old "
        "versions' files, rebuild the DuckDB catalog, remove leftovers of killed runs.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    migrate = actions.add_parser("migrate", help="convert a pre-Delta lake once, every row kept")
    vacuum = actions.add_parser("vacuum", help="delete files only old versions need")
    vacuum.add_argument(
        "--retention-hours",
        type=int,
        default=168,
        help="keep every version newer than this many hours (default 168 = 7 days); "
        "0 keeps only the current version (and the last published metrics run)",
    )
    catalog = actions.add_parser("catalog", help="rebuild catalog.duckdb from the lake")
    clean = actions.add_parser(
        "clean", help="remove staging files of killed runs and reconcile interrupted ingests"
    )
    for each in (migrate, vacuum, catalog, clean):
        add_lake_argument(each)
        each.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake import catalog, lake

    root = lake.lake_path(args.lake)
    if not root.is_dir():
        raise FileNotFoundError(f"no lake at {root}")
    if args.action == "migrate":
        converted = lake.migrate(root)
        for name, rows in converted.items():
            print(f"{name}: {rows} rows converted")
        if not converted:
            print(f"{root}: nothing to convert")
    elif args.action == "vacuum":
        if args.retention_hours < 0:
            raise ValueError("--retention-hours must be 0 or more")
        removed = lake.vacuum(root, args.retention_hours, on_wait=lambda: _waiting(root))
        for name, count in removed.items():
            print(f"{name}: {count} files removed")
    elif args.action == "clean":
        from burstlake.jobs.ingest.landing import reconcile

        print(f"{lake.clean_leftovers(root)} leftovers removed")
        for report in reconcile(root):
            print(f"interrupted ingest finished: {report.line()}")
    catalog.refresh(root)
    if args.action == "catalog":
        print(f"{catalog.catalog_path(root)} rebuilt")
    return 0


def _waiting(root) -> None:
    print(
        f"burstlake lake vacuum: waiting for the queries running on {root} (burstlake sql) to "
        "finish: they read files this vacuum may delete",
        file=sys.stderr,
        flush=True,
    )
