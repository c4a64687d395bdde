"""Zabbix history → node_io: real-time export NDJSON, or DB/API history rows + item table.

Inputs (docs/design.md, 'Sources'), plain or gzip-compressed, streamed in blocks of lines:

* real-time export ``history-*.ndjson``: one JSON object per line with ``host`` (``{host,
  name}``), ``groups``, ``applications`` (Zabbix ≤ 5.x) or ``item_tags`` (6.x, 7.x),
  ``itemid``, ``name``, ``clock``, ``ns``, ``value``, ``type``. Only numeric value types count
  (0 float, 3 unsigned); items are matched by ``name``;
* history rows as the DB or the API return them (``itemid, clock, value[, ns]``): CSV or TSV
  with that header (``mysql -B``, ``psql --csv``), or NDJSON of ``history.get`` objects
  (``jq -c '.result[]'``), with the item table given by ``--items``: CSV/TSV with header
  ``itemid, host, key_`` (optional ``name``, ``value_type``), e.g. ``SELECT i.itemid, h.host,
  i.key_, i.value_type FROM items i JOIN hosts h USING (hostid)``. Items are matched by key;
* Zabbix's PostgreSQL database itself (``--db``, :mod:`.database`), read into such rows.

The files of one export are one stream per item (:mod:`.stream`): files arriving in one
command, in one drop-directory DAG run or one after another (the next rotation, the ``.old``
file) give the node_io rows of their concatenation, and two files never write the same node
and interval twice. The package, by pass:

* :mod:`.options`: the options and their defaults; :mod:`.settings`: them checked;
  :mod:`.mapping`: what items and hosts mean in node_io terms;
* pass 1, :mod:`.decode`: each block of lines is decoded and classified (:mod:`.classify`),
  rejects go to quarantine, host names become node names and samples are spilled to Parquet,
  partitioned by node bucket;
* pass 2, :mod:`.regions` (with :mod:`.batches`): bucket by bucket and day by day, the rule of
  :mod:`.deltas` sorts the samples per item and turns their deltas into node_io rows;
* :mod:`.overflow`: the samples whose traffic a 64-bit sum cannot hold;
* :mod:`.database`: the database pull.

Two passes keep the parse's memory bounded whatever the size and order of the input (the Delta
commit of the file's samples is not: docs/design.md, 'Beyond one machine's day').

Accounting: every input line is a record (the header line of a CSV/TSV is not). A line lands
when its sample is used; it is quarantined with ``line N`` and a reason when it is empty,
truncated (not valid JSON), non-numeric, of an unknown item or host, or a duplicate (``duplicate
sample of line M``, or of ``FILE line M`` when an earlier member holds the same instant), or its
pair would take a 64-bit traffic sum past 2^63 - 1 bytes (:mod:`.overflow`).

All Zabbix input of a lake is taken to be one centre's export at one ``--interval``: items are
matched across files by itemid (or item name without one) and node.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import duckdb

from burstlake.jobs.ingest.source import Batch, CounterStream, ParseContext, Pulled, Source
from burstlake.jobs.ingest.zabbix import database, decode
from burstlake.jobs.ingest.zabbix.options import OPTIONS
from burstlake.jobs.ingest.zabbix.regions import pass_two, stream_balance
from burstlake.jobs.ingest.zabbix.settings import Settings, check_options
from burstlake.jobs.ingest.zabbix.stream import (
    SOURCE_NAME,
    STATE_TABLE,
    Stream,
    bucket_sql,
    region_id,
)
from burstlake.lake import sql_literal

__all__ = [
    "OPTIONS",
    "SOURCE",
    "STATE_TABLE",
    "Settings",
    "check_options",
    "parse",
    "pull",
    "region_id",
    "stream_balance",
]


def pull(options: Mapping[str, Any], lake: Path, folder: Path) -> Pulled | None:
    """With ``--db``: the window's history rows and the item table, read from the database
    (:mod:`.database`) into ``folder``."""
    if not options.get("db"):
        return None
    got = database.extract(options["db"], folder, lake, options)
    internal = {"latest_clock": str(got.latest_clock), "db_source": database.source(options["db"])}
    return Pulled(
        [got.history] if got.rows else [],
        {"items": str(got.items), **internal},
        [f"zabbix --db {database.where(options['db'])}: {database.summary(got)}"],
        got.lost,
    )


def parse(path: Path, context: ParseContext) -> Iterator[Batch]:
    """Parse one Zabbix history file into quarantine rejects and node_io rows: pass 1
    (:func:`.decode.pass_one`), the file's place in the stream (:class:`.stream.Stream`), then
    pass 2 (:func:`.regions.pass_two`), which decides itself whether the file's sums need the
    overflow check."""
    settings = Settings.from_options(dict(context.options))
    with tempfile.TemporaryDirectory(prefix="burstlake-zabbix-", dir=settings.spill_dir) as tmp:
        spill = Path(tmp)
        con = duckdb.connect(
            config={
                "temp_directory": str(spill / "duckdb"),
                "memory_limit": settings.memory_limit,
                "preserve_insertion_order": False,
                "threads": settings.threads,
            }
        )
        con.execute("SET enable_progress_bar = false")  # our progress is the byte count
        try:
            yield from decode.pass_one(path, context, con, spill, settings, bucket_sql("m.node"))
            samples = None
            if decode.spilled_samples(spill):
                pattern = sql_literal(spill / decode.samples_pattern())
                samples = con.sql(f"SELECT * FROM read_parquet({pattern})")
            stream = Stream.open(context, path).decide(con, samples)
            yield from pass_two(con, spill, settings, stream, samples)
        finally:
            con.close()


SOURCE = Source(
    name=SOURCE_NAME,
    tables=("node_io",),
    parse=parse,
    check_options=check_options,
    file_pattern="*",
    options=OPTIONS,
    path_options=("mapping", "items", "spill_dir"),
    stream=CounterStream(  # a file reads the stream's samples and rewrites shared node_io parts
        state_tables=(STATE_TABLE,),
        pull=pull,
        balance=lambda lake, options, reports: (
            "zabbix stream in the lake (all export files)",
            stream_balance(lake, options),
        ),
    ),
)
