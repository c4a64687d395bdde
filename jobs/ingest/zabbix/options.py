"""The command-line options of the Zabbix source (``burstlake ingest zabbix``; the same names
are the keys of its options in ``burstlake.yaml``), and each option's default, written here
once; checked by :class:`.settings.Settings`."""

from __future__ import annotations

import argparse

INTERVAL_S = 10  # --interval: the lake's node_io grid (seconds)
GAP_FACTOR = 3.0  # --gap-factor: a spacing above 3 × the item's own interval is a gap
MEMORY_LIMIT = "1GB"  # --memory-limit: DuckDB's, while sorting
THREADS = 1  # --threads: one file is one thread (docs/design.md, "Zabbix ingest speed")
FUTURE_TOLERANCE_S = 3600  # --future-tolerance: clock skew allowed past a --db read's time


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``burstlake ingest zabbix`` (files or its database)."""
    parser.add_argument(
        "--mapping",
        default=None,
        help="YAML file mapping item names/keys to node_io metrics (default: the packaged "
        "zabbix_mapping.yaml, which documents the format)",
    )
    parser.add_argument(
        "--items",
        default=None,
        help="item table for DB/API history rows: CSV or TSV with header itemid,host,key_ "
        "(optional name,value_type)",
    )
    parser.add_argument(
        "--interval",
        type=int,
        default=None,
        help=f"the lake's node_io grid in seconds (default {INTERVAL_S}); each item's own sampling "
        "interval is read from its samples",
    )
    parser.add_argument(
        "--gap-factor",
        type=float,
        default=None,
        help="a spacing between two samples of an item longer than this many times the item's "
        f"own sampling interval (read from the data) is a gap (default {GAP_FACTOR:g})",
    )
    parser.add_argument(
        "--keep-domain",
        action="store_true",
        help="keep DNS domains in host names (default: cn00042.example.org becomes cn00042)",
    )
    parser.add_argument(
        "--host-prefix",
        action="append",
        default=[],
        metavar="OLD=NEW",
        help="rewrite a host-name prefix to match Slurm and topology names (repeatable; the "
        "first matching rule applies), e.g. --host-prefix nid=cn",
    )
    parser.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="read history from Zabbix's PostgreSQL database (postgresql://user@host:port/db; "
        "the password from $PGPASSWORD or --password-env) instead of, or besides, files",
    )
    parser.add_argument(
        "--password-env",
        default=None,
        metavar="VAR",
        help="environment variable holding --db's password",
    )
    parser.add_argument(
        "--since", default=None, help="with --db: rows from this clock (Unix seconds or ISO time)"
    )
    parser.add_argument(
        "--until", default=None, help="with --db: rows before this clock (Unix seconds or ISO time)"
    )
    parser.add_argument(
        "--future-tolerance",
        default=None,
        metavar="SECONDS",
        help="with --db: rows later than the read time plus this are quarantined, and read "
        f"again once they are not (default {FUTURE_TOLERANCE_S})",
    )
    parser.add_argument(
        "--retry-quarantined",
        action="store_true",
        help="with --db: read again the rows earlier reads quarantined, and those of nodes the "
        "lake refused (a node added to the topology since), so they land",
    )
    parser.add_argument(
        "--spill-dir", default=None, help="directory for temporary spill files (default: $TMPDIR)"
    )
    parser.add_argument(
        "--memory-limit",
        default=None,
        help=f"DuckDB memory limit while sorting (default {MEMORY_LIMIT})",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help=f"threads parsing and sorting one file (default {THREADS}: on a machine whose cores "
        "are busy, more threads wait on each other and take longer)",
    )
