"""The options of the Zabbix source (``burstlake ingest zabbix``; the same names are the keys of
its options in ``burstlake.yaml``) as :class:`~burstlake.jobs.ingest.source.Option` records,
and each option's default, written here once; :class:`.settings.Settings` takes its defaults
and checks from them."""

from __future__ import annotations

from typing import TypeVar

from burstlake import readonly
from burstlake.jobs.ingest.source import Option

DAY_S = 86_400  # a UTC day: the longest --interval, and pass 2's region (:mod:`.stream`)
INTERVAL_S = 10  # --interval: the lake's node_io grid (seconds)
GAP_FACTOR = 3.0  # --gap-factor: a spacing above 3 × the item's own interval is a gap
MEMORY_LIMIT = "1GB"  # --memory-limit: DuckDB's, while sorting
THREADS = 1  # --threads: one file is one thread (docs/design.md, "Zabbix ingest speed")
FUTURE_TOLERANCE_S = 3600  # --future-tolerance: clock skew allowed past a --db read's time

T = TypeVar("T")

INTERVAL = Option(
    "interval",
    f"the lake's node_io grid in seconds (default {INTERVAL_S}); each item's own sampling "
    "interval is read from its samples",
    type=int,
    bounds=(1, DAY_S),
    unit="seconds (a day)",
)
GAP = Option(
    "gap_factor",
    "a spacing between two samples of an item longer than this many times the item's "
    f"own sampling interval (read from the data) is a gap (default {GAP_FACTOR:g})",
    type=float,
    bounds=(1, None),
)
THREAD_COUNT = Option(
    "threads",
    f"threads parsing and sorting one file (default {THREADS}: on a machine whose cores are "
    "busy, more threads wait on each other and take longer)",
    type=int,
    bounds=(1, readonly.MAX_THREADS),
)

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
    INTERVAL,
    GAP,
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
        f"again once they are not (default {FUTURE_TOLERANCE_S})",
        metavar="SECONDS",
    ),
    Option(
        "retry_quarantined",
        "with --db: read again the rows earlier reads quarantined, and those of nodes the "
        "lake refused (a node added to the topology since), so they land",
        flag=True,
    ),
    Option("spill_dir", "directory for temporary spill files (default: $TMPDIR)"),
    Option(
        "memory_limit",
        f"DuckDB memory limit while sorting (default {MEMORY_LIMIT})",
        default=MEMORY_LIMIT,
    ),
    THREAD_COUNT,
)


def checked(given: object, option: Option, default: T) -> T:
    """A value of ``option`` from a parse options' mapping: ``default`` when absent (None),
    else the option's own conversion and bounds (:meth:`Option.convert`), the ones the command
    line and the deployment file apply, so a library caller's value meets the same rule."""
    return default if given is None else option.convert(str(given))
