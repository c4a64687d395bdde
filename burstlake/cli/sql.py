"""``burstlake sql "SELECT ..."``: query the lake through its DuckDB catalog."""

from __future__ import annotations

import argparse

from burstlake.cli import add_lake_argument
from burstlake.formatting import format_table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sql",
        help="run SQL on the lake (DuckDB)",
        description="Run one read-only SQL query on the lake's DuckDB catalog and print the "
        "result. Every lake table is a view: jobs, job_nodes, node_io, topology, quarantine, "
        "... Only one read-only statement runs (SELECT, WITH ... SELECT, PIVOT, EXPLAIN "
        "[ANALYZE] of a SELECT, DESCRIBE, SHOW, SUMMARIZE), reading only the lake's data files, "
        "within a memory limit.",
    )
    parser.add_argument("query", help='e.g. "SELECT count(*) FROM jobs"')
    parser.add_argument(
        "--max-rows",
        type=int,
        default=40,
        help="rows to print (default 40); the query stops after them",
    )
    parser.add_argument(
        "--memory-limit",
        default=None,
        help="most memory the query may use: a size (4GB, 512MiB) or a share of the RAM (25%%) "
        "(default: $BURSTLAKE_SQL_MEMORY, else 25%%)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="threads the query may use (default: one per core)",
    )
    add_lake_argument(parser, existing=True)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake.catalog import sql_head

    shown, more = sql_head(args.lake, args.query, args.max_rows, args.memory_limit, args.threads)
    rows = list(zip(*(column.to_pylist() for column in shown.columns), strict=True))
    print(format_table(shown.column_names, rows, len(rows)))
    if more:
        print(f"(more rows than the {len(rows)} shown: raise --max-rows, or SELECT count(*))")
    return 0
