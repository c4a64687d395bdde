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
        "... Only SELECT (and EXPLAIN, DESCRIBE, SUMMARIZE) runs, and only on the lake's own "
        "files.",
    )
    parser.add_argument("query", help='e.g. "SELECT count(*) FROM jobs"')
    parser.add_argument("--max-rows", type=int, default=40, help="rows to print (default 40)")
    add_lake_argument(parser, existing=True)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from burstlake.catalog import sql

    if not args.query.strip():
        raise ValueError('empty query: give one SQL statement, e.g. "SELECT count(*) FROM jobs"')
    table = sql(args.lake, args.query)
    shown = table.slice(0, args.max_rows)
    rows = list(zip(*(column.to_pylist() for column in shown.columns), strict=True))
    print(format_table(table.column_names, rows, table.num_rows))
    return 0
