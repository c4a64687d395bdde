"""``burstlake sql "SELECT ..."``: query the lake through its DuckDB catalog."""

from __future__ import annotations

import argparse

from burstlake.cli import add_lake_argument
from burstlake.formatting import format_table


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "sql",
        help="run SQL on the lake (DuckDB)",
        description="Run one SQL query on the lake's DuckDB catalog and print the result. "
        "Every lake table is a view: jobs, job_nodes, node_io, topology, quarantine, ...",
    )
    parser.add_argument("query", help='e.g. "SELECT count(*) FROM jobs"')
    parser.add_argument("--max-rows", type=int, default=40, help="rows to print (default 40)")
    add_lake_argument(parser, existing=True)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import duckdb

    from burstlake.catalog import connect

    if not args.query.strip():
        raise ValueError('empty query: give one SQL statement, e.g. "SELECT count(*) FROM jobs"')
    con = connect(args.lake)
    try:
        result = con.execute(args.query)
        columns = [d[0] for d in result.description] if result.description else []
        rows = result.fetchall()
    except duckdb.Error as err:
        raise ValueError(str(err).splitlines()[0]) from err
    finally:
        con.close()
    print(format_table(columns, rows[: args.max_rows], len(rows)))
    return 0
