"""The options of the Zabbix source (``burstlake ingest zabbix``; the same names are the keys of
its options in ``burstlake.yaml``); checked by :class:`burstlake.jobs.ingest.zabbix.Settings`."""

from __future__ import annotations

from burstlake import readonly
from burstlake.jobs.ingest import counters
from burstlake.jobs.ingest.source import Option

OPTIONS = (  # the options of ``burstlake ingest zabbix`` (files or its database)
    Option(
        "mapping",
        "YAML file mapping item names/keys to node_io metrics (default: the packaged "
        "zabbix_mapping.yaml, which documents the format)",
    ),
    Option(
        "items",
        "item table for DB/API history rows: CSV or TSV with header itemid,host,key_ "
        "(optional name,value_type)",
    ),
    Option(
        "interval",
        "the lake's node_io grid in seconds (default 10); each item's own sampling "
        "interval is read from its samples",
        type=int,
        bounds=(1, 86_400),
        unit="seconds (a day)",
    ),
    Option(
        "gap_factor",
        "a spacing between two samples of an item longer than this many times the item's "
        f"own sampling interval (read from the data) is a gap (default {counters.GAP_FACTOR:g})",
        type=float,
        bounds=(1, None),
    ),
    Option(
        "keep_domain",
        "keep DNS domains in host names (default: cn00042.example.org becomes cn00042)",
        flag=True,
    ),
    Option(
        "host_prefix",
        "rewrite a host-name prefix to match Slurm and topology names (repeatable; the "
        "first matching rule applies), e.g. --host-prefix nid=cn",
        repeated=True,
        metavar="OLD=NEW",
    ),
    Option(
        "db",
        "read history from Zabbix's PostgreSQL database (postgresql://user@host:port/db; "
        "the password from $PGPASSWORD or --password-env) instead of, or besides, files",
        metavar="URL",
    ),
    Option("password_env", "environment variable holding --db's password", metavar="VAR"),
    Option("since", "with --db: rows from this clock (Unix seconds or ISO time)"),
    Option("until", "with --db: rows before this clock (Unix seconds or ISO time)"),
    Option(
        "future_tolerance",
        "with --db: rows later than the read time plus this are quarantined, and read "
        "again once they are not (default 3600)",
        metavar="SECONDS",
    ),
    Option(
        "retry_quarantined",
        "with --db: read again the rows earlier reads quarantined, and those of nodes the "
        "lake refused (a node added to the topology since), so they land",
        flag=True,
    ),
    Option("spill_dir", "directory for temporary spill files (default: $TMPDIR)"),
    Option("memory_limit", "DuckDB memory limit while sorting (default 1GB)", default="1GB"),
    Option(
        "threads",
        "threads parsing and sorting one file (default 1: on a machine whose cores are "
        "busy, more threads wait on each other and take longer)",
        type=int,
        bounds=(1, readonly.MAX_THREADS),
    ),
)
