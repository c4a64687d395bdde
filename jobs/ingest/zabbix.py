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
  i.key_, i.value_type FROM items i JOIN hosts h USING (hostid)``. Items are matched by key.

The files of one export are one stream per item. A Zabbix server writes one real-time export
file per history syncer (``StartDBSyncers``) and rotates each to ``.old``; an item's values land
in whichever syncer's file. The group of files whose samples form one series is therefore not
named by the user: it is the item itself. Every Zabbix file in the lake is a member (its usable
samples are kept in the lake table ``zabbix_samples`` under the file's contribution), and a
series is the samples of one (node, item) from all members, ordered as the files'
concatenation would order them: by ingest order (``seq``), then line. So files arriving in one
command, in one drop-directory DAG run or one after another (the next rotation, the ``.old``
file) give the node_io rows of their concatenation: no interval is lost at a file boundary,
and two files never write the same node and interval twice.

node_io rows of the stream live in contributions of one UTC day × one node bucket
(:func:`region_id`, ``NODE_BUCKETS`` buckets by md5 of the node name), not in the file's own.
A file recomputes exactly the day × bucket contributions its samples reach (an interval's row
needs only the samples of its two grid points), reading the other members' samples of that
day and bucket (± 3 intervals): memory is bounded by one day of one bucket, spilled by DuckDB
beyond ``--memory-limit``. Re-ingesting a file recomputes the same rows (a no-op).

New content at a path already ingested is either a new version of that member or the path's
next rotation. It **replaces** the earlier content (whose samples and quarantine rows go, and
whose days are recomputed without it) when the two share a sample instant of some item: a
corrected file, or one that grew. It **continues** the stream when they share none: the
syncer file rotated and the path now holds later values, and the earlier content stays (also
when the new content has no usable sample yet). A replacing version takes the stream position
of the one it replaces.

Two passes keep memory bounded whatever the size and order of the input: (1) each block of lines
is decoded and classified in DuckDB SQL, rejects go to quarantine, host names become node names
and samples are spilled to Parquet, partitioned by node bucket; (2) bucket by bucket and day by
day, the SQL of :mod:`.counters` sorts the samples per item and turns them into node_io rows.

Accounting: every input line is a record (the header line of a CSV/TSV is not). A line lands
when its sample is used; it is quarantined with ``line N`` and a reason when it is empty,
truncated (not valid JSON), non-numeric, of an unknown item or host, or a duplicate (``duplicate
sample of line M``, or of ``FILE line M`` when an earlier member holds the same instant).
node_io rows aggregate many lines, so they carry one ``_record`` per node and contribution that
stands for this file's samples there (``Batch.weights``): if a node's rows fail validation (say
the node is not in the topology), those samples count as quarantined.

All Zabbix input of a lake is taken to be one centre's export at one ``--interval``: items are
matched across files by itemid (or item name without one) and node. An export names no
machine: ``--cluster`` does (base.record_cluster), and a series is one cluster × node × item, so
two machines' exports with the same node names stay apart (their node_io contributions too:
:func:`region_id`).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest import counters, inputs
from burstlake.jobs.ingest.base import (
    CONTRIBUTION,
    Batch,
    ParseContext,
    Reject,
    Source,
    UnusableInput,
    record_cluster,
)
from burstlake.jobs.ingest.zabbix_mapping import (
    IGNORE,
    HostNames,
    ItemMapping,
    load_mapping,
    prefix_rewrite,
)
from burstlake.lake import contribution_keys, dataset, lake_path, machine_filter, read_table

LOG = logging.getLogger(__name__)
FILE_PATTERN = "history*"
BLOCK_BYTES = 16 << 20  # text decoded per pass-1 step
ROWS_PER_BATCH = 200_000  # node_io rows per batch (whole nodes)
NODE_BUCKETS = 16  # node_io contributions per day: pass 2 recomputes one day of one bucket
DAY_S = 86_400
STATE_TABLE = "zabbix_samples"
SOURCE_NAME = "zabbix"
REJECTS_PER_BATCH = 50_000
HISTORY_COLUMNS = ("itemid", "clock", "value")  # required in DB-shape headers; ns optional


def add_arguments(parser: argparse.ArgumentParser) -> None:
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
        "--interval", type=int, default=10, help="node_io interval in seconds (default 10)"
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
        "--spill-dir", default=None, help="directory for temporary spill files (default: $TMPDIR)"
    )
    parser.add_argument(
        "--memory-limit", default="1GB", help="DuckDB memory limit while sorting (default 1GB)"
    )


@dataclass(frozen=True)
class Settings:
    """The parse options, checked."""

    mapping: ItemMapping
    interval: int
    hosts: HostNames
    items: Path | None = None
    spill_dir: str | None = None
    memory_limit: str = "1GB"

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Settings:
        given = options.get("interval")
        interval = 10 if given is None else int(given)
        if interval < 1:
            raise ValueError(f"--interval must be >= 1 second, not {interval}")
        items = options.get("items")
        if items is not None and not Path(items).is_file():
            raise FileNotFoundError(f"item table {items} does not exist")
        return cls(
            mapping=load_mapping(options.get("mapping")),
            interval=interval,
            hosts=HostNames(
                strip_domain=not options.get("keep_domain", False),
                prefixes=tuple(prefix_rewrite(p) for p in options.get("host_prefix") or ()),
            ),
            items=Path(items) if items else None,
            spill_dir=options.get("spill_dir"),
            memory_limit=options.get("memory_limit") or "1GB",
        )


def check_options(options: Mapping[str, Any]) -> None:
    """The parse options are those :meth:`Settings.from_options` accepts (it raises)."""
    Settings.from_options(dict(options))


# ------------------------------------------------------------------ reading lines


def _bytes(path: Path, progress) -> Iterator[bytes]:
    """The file's (decompressed) text without a leading UTF-8 BOM, lines beyond the limit cut
    to be told by their length (the rules of :mod:`.inputs` every text source shares)."""
    return inputs.cap_lines(inputs.text_chunks(path, progress))


def _blocks(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """Regroup bytes into blocks of whole lines (without the final newline). A broken stream
    is re-raised after the lines read before it."""
    pending: list[bytes] = []
    size = 0
    try:
        for chunk in chunks:
            pending.append(chunk)
            size += len(chunk)
            if size < BLOCK_BYTES or b"\n" not in chunk:
                continue
            data = b"".join(pending)
            cut = data.rfind(b"\n")
            yield data[:cut]
            pending, size = [data[cut + 1 :]], len(data) - cut - 1
    except inputs.BrokenStream:
        yield from _last_block(pending)
        raise
    yield from _last_block(pending)


def _last_block(pending: list[bytes]) -> Iterator[bytes]:
    data = b"".join(pending)
    if data:
        yield data[:-1] if data.endswith(b"\n") else data


def _lines(block: bytes, first: int) -> pa.Table:
    """A block as a table of ``line_no`` (1-based) and ``line`` (UTF-8, CR stripped)."""
    text = pa.array([block.decode("utf-8", errors="replace")], pa.string())
    lines = pc.utf8_rtrim(pc.list_flatten(pc.split_pattern(text, "\n")), characters="\r")
    numbers = pa.array(np.arange(first, first + len(lines), dtype=np.int64))
    return pa.table({"line_no": numbers, "line": lines})


# ------------------------------------------------------------------ decoding (pass 1)

# Each decoder turns ``lines`` into fields (text, or NULL where absent) and a first ``bad``.
_NDJSON = """
WITH parsed AS MATERIALIZED (
    SELECT line_no, line,
           CASE WHEN trim(line, ' ' || chr(9)) = '' THEN 'empty line'
                WHEN NOT json_valid(line) THEN 'not valid JSON (truncated line?)'
                WHEN json_type(line) <> 'OBJECT' THEN 'not a JSON object' END AS bad,
           try(json_extract_string(line, ['$.host.host', '$.host', '$.itemid', '$.name',
               '$.key_', '$.clock', '$.ns', '$.value', '$.type'])) AS f
    FROM lines
)
SELECT line_no, line, bad,
       coalesce(f[1], CASE WHEN NOT starts_with(f[2], '{') THEN f[2] END) AS host,
       f[3] AS itemid, f[4] AS name, f[5] AS key_, f[6] AS clock, f[7] AS ns, f[8] AS value,
       f[9] AS type
FROM parsed
"""

_DELIMITED = """
SELECT line_no, line,
       CASE WHEN trim(line, ' ' || chr(9)) = '' THEN 'empty line'
            WHEN len(f) <> {width} THEN 'expected {width} fields ({header}), found ' || len(f)
       END AS bad,
       NULL::VARCHAR AS host, trim(f[{itemid}], '" ') AS itemid, NULL::VARCHAR AS name,
       NULL::VARCHAR AS key_,
       trim(f[{clock}], '" ') AS clock, {ns} AS ns, trim(f[{value}], '" ') AS value,
       NULL::VARCHAR AS type
FROM (SELECT line_no, line, string_split(line, '{delimiter}') AS f FROM lines)
"""

# Classifies every decoded line: a ``reason`` to quarantine it, or a sample.
_CLASSIFY = """
WITH fields AS ({decoder}),
resolved AS (
    SELECT f.*, coalesce(f.host, i.host) AS node_host, coalesce(f.key_, i.key_) AS item_key,
           coalesce(f.name, i.name) AS item_name, coalesce(f.type, i.value_type) AS value_type,
           TRY_CAST(f.clock AS BIGINT) AS clock_s, TRY_CAST(coalesce(f.ns, '0') AS BIGINT) AS ns_i,
           -- DOUBLE is exact below 2^53; larger values are uint64 counters, read as integers
           -- (a direct VARCHAR -> DECIMAL cast is ~100x slower in DuckDB 1.5)
           CASE WHEN abs(TRY_CAST(f.value AS DOUBLE)) < 9007199254740992
                THEN TRY_CAST(TRY_CAST(f.value AS DOUBLE) AS DECIMAL(38, 6))
                ELSE TRY_CAST(TRY_CAST(f.value AS HUGEINT) AS DECIMAL(38, 6)) END AS number
    FROM fields f LEFT JOIN items i ON i.itemid = f.itemid
),
mapped AS (
    SELECT r.*, coalesce(k.metric, n.metric) AS metric, coalesce(k.kind, n.kind) AS kind,
           coalesce(k.scale, n.scale) AS scale,
           -- far beyond 64 bits the exact product would overflow DECIMAL(38): no value then
           CASE WHEN CAST(number AS DOUBLE) * CAST(coalesce(k.scale, n.scale) AS DOUBLE) < 1e20
                THEN CAST(number * coalesce(k.scale, n.scale) AS DECIMAL(38, 6)) END AS scaled
    FROM resolved r
    LEFT JOIN mapping k ON k.match = 'key' AND k.ident = r.item_key
    LEFT JOIN mapping n ON n.match = 'name' AND n.ident = r.item_name
)
SELECT line_no, line,
    CASE WHEN strlen(line) > $max_line THEN $too_long
         WHEN bad IS NOT NULL THEN bad
         WHEN contains(line, chr(65533)) THEN $not_utf8
         WHEN clock IS NULL THEN 'no clock'
         WHEN value IS NULL THEN 'no value'
         WHEN value_type IS NOT NULL AND value_type NOT IN ('0', '3') THEN
              'value type ' || value_type || coalesce(' (' || CASE value_type WHEN '1'
              THEN 'character' WHEN '2' THEN 'log' WHEN '4' THEN 'text' END || ')', '')
              || ' is not numeric (0 float, 3 unsigned)'
         WHEN number IS NULL THEN 'value ' || left(value, 40) || ' is not a number'
         WHEN number < 0 THEN 'negative value ' || value
         WHEN clock_s IS NULL OR clock_s NOT BETWEEN 0 AND 4102444799 THEN
              'clock ' || clock || ' is not a Unix time in seconds'
         WHEN ns_i IS NULL OR ns_i NOT BETWEEN 0 AND 999999999 THEN
              'ns ' || ns || ' is not 0..999999999'
         WHEN node_host IS NOT NULL AND trim(node_host) = '' THEN 'empty host name'
         WHEN node_host IS NULL AND itemid IS NULL THEN 'no host and no itemid'
         WHEN node_host IS NULL AND NOT $has_items THEN
              'no host: history rows need the item table (--items FILE)'
         WHEN node_host IS NULL THEN 'itemid ' || itemid || ' is not in the item table'
         WHEN kind = 'ignore' THEN 'ignore'
         WHEN metric IS NULL THEN 'item ' || coalesce('key ''' || item_key || '''',
              'name ''' || item_name || '''', 'without key or name')
              || ' is not in the mapping ' || $mapping
         -- (JSON numbers above 2^63 arrive as doubles: 2^64 - 1 reads as 2^64)
         WHEN scaled IS NULL OR kind = 'counter' AND CAST(scaled AS DOUBLE) > 18446744073709551616
              OR kind <> 'counter' AND scaled >= CAST('9223372036854775808' AS DECIMAL(38, 6))
                 / CASE kind WHEN 'rate' THEN $interval ELSE 1 END
              THEN 'value ' || left(value, 40) || ' is beyond 64 bits'
    END AS reason,
    node_host AS host, coalesce(itemid, 'name:' || item_name) AS item, metric, kind,
    clock_s * 1000000000 + ns_i AS t_ns,
    scaled AS value
FROM mapped
"""


def _decoder(header: str | None) -> str:
    """The decoder SQL for NDJSON (``header`` None) or a CSV/TSV with this header line."""
    if header is None:
        return _NDJSON
    delimiter = "\t" if "\t" in header else ","
    names = [h.strip().strip('"').lower() for h in header.split(delimiter)]
    missing = [c for c in HISTORY_COLUMNS if c not in names]
    if missing:
        raise UnusableInput(
            "neither a Zabbix real-time export (NDJSON) nor history rows with a header "
            f"itemid, clock, value[, ns]: first line {header[:80]!r}"
        )
    at = {name: names.index(name) + 1 for name in names}
    return _DELIMITED.format(
        width=len(names),
        header=delimiter.join(names).replace("'", "''").replace("\t", ", "),
        delimiter=delimiter,
        ns=f"trim(f[{at['ns']}], '\" ')" if "ns" in at else "NULL::VARCHAR",
        **{c: at[c] for c in HISTORY_COLUMNS},
    )


def _load_items(con: duckdb.DuckDBPyConnection, path: Path | None) -> None:
    """Table ``items(itemid, host, key_, name, value_type)``, empty without an item table."""
    columns = ("itemid", "host", "key_", "name", "value_type")
    if path is None:
        con.execute(f"CREATE TEMP TABLE items ({', '.join(c + ' VARCHAR' for c in columns)})")
        return
    try:
        found = con.execute(
            "SELECT * FROM read_csv(?, header = true, all_varchar = true) LIMIT 0", [str(path)]
        ).description
    except duckdb.Error as err:
        raise ValueError(f"item table {path}: cannot read it as CSV/TSV: {err}") from None
    names = [d[0] for d in found]
    if not {"itemid", "host", "key_"} <= set(names):
        raise ValueError(f"item table {path}: needs a header with itemid, host, key_")
    select = ", ".join(f'"{c}"' if c in names else f"NULL::VARCHAR AS {c}" for c in columns)
    con.execute(
        f"CREATE TEMP TABLE items AS SELECT DISTINCT ON (itemid) {select} "
        "FROM read_csv(?, header = true, all_varchar = true)",
        [str(path)],
    )


@dataclass
class _Spill:
    """Pass-1 state: the connection, the classifying SQL and where samples go."""

    con: duckdb.DuckDBPyConnection
    root: Path
    hosts: HostNames
    params: dict[str, Any]  # SQL parameters of _CLASSIFY
    classify: str | None = None  # chosen from the first block
    ignored: int = 0  # lines of items on the mapping's ignore list

    def block(self, n: int, lines: pa.Table) -> tuple[int, list[Reject]]:
        """Classify a block: spill its samples by node bucket; return its records and rejects."""
        if self.classify is None:
            decoder, lines = _first_block(lines)
            self.classify = _CLASSIFY.format(decoder=decoder)
        con = self.con
        con.register("lines", lines)
        con.execute(f"CREATE OR REPLACE TEMP TABLE decoded AS {self.classify}", self.params)
        con.unregister("lines")
        self._learn_hosts()
        con.execute(
            "UPDATE decoded SET reason = m.reason FROM hostmap m "
            "WHERE decoded.host = m.host AND decoded.reason IS NULL AND m.reason IS NOT NULL"
        )
        part = _quoted(self.root / f"part-{n:06d}")
        con.execute(
            "COPY (SELECT d.line_no, d.line AS raw, m.node, d.item, d.metric, d.kind, d.t_ns, "
            f"d.value, {_bucket_sql('m.node')} AS bucket "
            "FROM decoded d JOIN hostmap m USING (host) WHERE d.reason IS NULL) "
            f"TO '{part}' (FORMAT parquet, COMPRESSION zstd, PARTITION_BY (bucket))"
        )
        rows = con.execute(
            "SELECT line_no, line, reason FROM decoded WHERE reason IS NOT NULL "
            f"AND reason <> '{IGNORE}' ORDER BY line_no"
        ).fetchall()
        self.ignored += con.execute(
            f"SELECT count(*) FROM decoded WHERE reason = '{IGNORE}'"
        ).fetchone()[0]
        return lines.num_rows, [Reject(f"line {no}", line, reason) for no, line, reason in rows]

    def _learn_hosts(self) -> None:
        """Add the block's new host names to table ``hostmap``: their node name, or why they
        have none (it is empty, or another host name of the file already gives it: ``cn1`` and
        ``cn1.example.org`` are one node, and counting both would double its traffic)."""
        new = self.con.execute(
            "SELECT host FROM decoded WHERE reason IS NULL "
            "AND host NOT IN (SELECT host FROM hostmap) GROUP BY host ORDER BY min(line_no)"
        ).fetchall()
        if not new:
            return
        taken = dict(
            self.con.execute("SELECT node, host FROM hostmap WHERE node IS NOT NULL").fetchall()
        )
        rows = []
        for (host,) in new:
            node = self.hosts.node(host)
            if not node:
                rows.append((host, None, f"host name {host[:60]!r} gives an empty node name"))
            elif node in taken:
                reason = f"host {host[:60]!r} is node {node}, already named by host {taken[node]!r}"
                rows.append((host, None, reason))
            else:
                taken[node] = host
                rows.append((host, node, None))
        columns = ("host", "node", "reason")
        table = pa.table(
            {c: pa.array([r[i] for r in rows], pa.string()) for i, c in enumerate(columns)}
        )
        self.con.register("new_hosts", table)
        self.con.execute("INSERT INTO hostmap SELECT host, node, reason FROM new_hosts")
        self.con.unregister("new_hosts")


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")


def _pass_one(
    path: Path,
    context: ParseContext,
    con: duckdb.DuckDBPyConnection,
    spill: Path,
    settings: Settings,
) -> Iterator[Batch]:
    """Decode the file block by block; yields one batch of records and rejects per block.
    A broken compressed stream is one more record: the unreadable rest of the file."""
    con.register("mapping", settings.mapping.table())
    con.execute("CREATE TEMP TABLE hostmap (host VARCHAR, node VARCHAR, reason VARCHAR)")
    _load_items(con, settings.items)
    params = {
        "has_items": settings.items is not None,
        "mapping": settings.mapping.origin,
        "interval": settings.interval,
        "max_line": inputs.MAX_LINE_BYTES,
        "too_long": inputs.LINE_TOO_LONG,
        "not_utf8": inputs.NOT_UTF8,
    }
    state = _Spill(con, spill, settings.hosts, params)
    first = 1
    try:
        for n, block in enumerate(_blocks(_bytes(path, context.progress))):
            lines = _lines(block, first)
            first += lines.num_rows
            records, rejects = state.block(n, lines)
            yield Batch({}, records, rejects)
    except inputs.BrokenStream as err:
        reason = f"{err}; the rest of the file after line {first - 1} is lost"
        yield Batch({}, 1, [Reject(f"byte {err.offset}", None, reason)])
    if state.ignored:
        LOG.info("%s: %d lines of items on the ignore list (landed, unused)", path, state.ignored)


def _first_block(lines: pa.Table) -> tuple[str, pa.Table]:
    """Pick the decoder from the first non-empty line; drop a CSV/TSV header line."""
    texts = lines.column("line").to_pylist()
    first = next((t for t in texts if t.strip()), "")
    if first.lstrip().startswith(("{", "[")) or not first:
        return _decoder(None), lines
    return _decoder(texts[0]), lines.slice(1)


# ------------------------------------------------------------------ the stream of an export


def _bucket_sql(node: str) -> str:
    """SQL for the node bucket of a node name: stable across runs and DuckDB versions."""
    return f"CAST(md5_number_lower({node}) % {NODE_BUCKETS} AS INTEGER)"


def _day_sql(seconds: str) -> str:
    return f"CAST(floor(({seconds}) / {DAY_S}) AS BIGINT)"


def region_id(day: int, bucket: int, cluster: str | None = None) -> str:
    """The node_io contribution holding one UTC day of one node bucket of one machine's Zabbix
    stream (the unnamed machine's ids carry no machine tag, as before machines were named)."""
    tag = "" if cluster is None else hashlib.blake2b(cluster.encode(), digest_size=4).hexdigest()
    date = datetime.fromtimestamp(day * DAY_S, UTC)
    return f"zabbix-{tag + '-' if tag else ''}{date:%Y%m%d}-b{bucket:02d}"


def same_machine(cluster: str | None) -> pc.Expression:
    """Filter: rows of the machine ``cluster`` (null: the unnamed machine; the lake's rule)."""
    return machine_filter(cluster)


@dataclass(frozen=True)
class Stream:
    """This file's place in the lake's Zabbix stream: the other files whose samples continue the
    same items, and what becomes of earlier contents of the same path."""

    lake: Path
    source_id: str
    file: str
    seq: int  # this file's ingest order
    others: dict[str, str]  # source_id -> file of every other member
    cluster: str | None  # the machine (--cluster): only its samples continue this file's
    replaced: tuple[str, ...] = ()  # earlier contents of this path that this one replaces
    kept: tuple[str, ...] = ()  # earlier contents of this path that this one continues

    @classmethod
    def open(cls, context: ParseContext, path: Path) -> Stream:
        lake = context.lake or lake_path(None)
        log = read_table(lake, "ingest_log", columns=["source", "source_id", "file"]).to_pylist()
        members = {r["source_id"]: r["file"] for r in log if r["source"] == SOURCE_NAME}
        members.pop(context.source_id, None)
        cluster = record_cluster(context.options)
        return cls(lake, context.source_id, str(path), time.time_ns(), members, cluster)

    def earlier_versions(self) -> list[str]:
        return sorted(i for i, f in self.others.items() if f == self.file)

    def decide(self, con: duckdb.DuckDBPyConnection, new: str) -> Stream:
        """Split the earlier contents of this path into replaced and kept (see module doc), and
        take the stream position (``seq``) of the content this one re-ingests or replaces."""
        replaced, kept = [], []
        has_samples = con.execute(f"SELECT count(*) > 0 FROM {new}").fetchone()[0]
        for old in self.earlier_versions():
            shared = has_samples and self._shares_instants(con, new, old)
            (replaced if shared else kept).append(old)
        others = {i: f for i, f in self.others.items() if i not in replaced}
        ids = pa.array([self.source_id, *replaced], pa.string())
        seqs = self.scan(pc.field("source_id").isin(ids), ["seq"]).read_all().column("seq")
        seq = pc.min(seqs).as_py() if len(seqs) else self.seq
        return replace(self, others=others, replaced=tuple(replaced), kept=tuple(kept), seq=seq)

    def _shares_instants(self, con: duckdb.DuckDBPyConnection, new: str, old: str) -> bool:
        old_samples = (pc.field("source_id") == old) & same_machine(self.cluster)
        reader = self.scan(old_samples, ["node", "item", "t_ns"])
        con.register("old_samples", reader)
        try:
            return bool(
                con.execute(
                    f"SELECT count(*) FROM old_samples JOIN {new} USING (node, item, t_ns)"
                ).fetchone()[0]
            )
        finally:
            con.unregister("old_samples")

    def scan(self, where: pc.Expression, columns: list[str]) -> pa.RecordBatchReader:
        """The stored samples matching ``where``, streamed."""
        return dataset(self.lake, STATE_TABLE).scanner(columns=columns, filter=where).to_reader()

    def stored(self, ids: Iterable[str], bucket: int, window: tuple[int, int] | None):
        """Filter: samples of files ``ids`` in node ``bucket`` (and t_ns ``window``)."""
        where = pc.field("source_id").isin(pa.array(sorted(ids), pa.string()))
        where &= same_machine(self.cluster) & (pc.field("bucket") == bucket)
        if window is not None:
            where &= (pc.field("t_ns") >= window[0]) & (pc.field("t_ns") < window[1])
        return where


# ------------------------------------------------------------------ node_io (pass 2)

_SAMPLE_COLUMNS = ["node", "item", "metric", "kind", "t_ns", "value", "line_no", "seq", "file"]


def _pass_two(
    con: duckdb.DuckDBPyConnection, spill: Path, settings: Settings, stream: Stream
) -> Iterator[Batch]:
    """Bucket by bucket and day by day, recompute the node_io contributions the file touches
    from its samples and the stored samples of the stream's other files."""
    con.execute(
        "CREATE TEMP TABLE duplicates (line_no BIGINT, raw VARCHAR, first_file VARCHAR, "
        "first_line BIGINT, same BOOLEAN, kept DECIMAL(38, 6))"
    )
    yield from _merged(_regions(con, spill, settings, stream), ROWS_PER_BATCH)
    yield from _duplicate_batches(con)


def _regions(
    con: duckdb.DuckDBPyConnection, spill: Path, settings: Settings, stream: Stream
) -> Iterator[Batch]:
    iv = settings.interval
    grid = counters.grid_sql("t_ns", iv)
    touched = _replaced_regions(stream)
    records = [0]  # node records numbered apart across regions
    for bucket in sorted(_spilled_buckets(spill) | set(touched)):
        new = _bucket_view(con, spill, bucket, stream)
        con.execute(
            "INSERT INTO duplicates SELECT line_no, raw, NULL, first_line, value = first_value, "
            f"first_value FROM ({counters.duplicates_query(new)})"
        )
        days = {
            d
            for (d,) in con.execute(
                f"SELECT DISTINCT {_day_sql(f'({grid} + k) * {iv}')} FROM {new}, range(-1, 1) r(k)"
            ).fetchall()
        }
        for day in sorted(days | touched.get(bucket, set())):
            yield from _region(con, new, bucket, day, settings, stream, records)


def _spilled_buckets(spill: Path) -> set[int]:
    return {int(p.name.split("=", 1)[1]) for p in spill.glob("part-*/bucket=*")}


def _replaced_regions(stream: Stream) -> dict[int, set[int]]:
    """bucket -> days holding samples of the replaced contents (to be recomputed without)."""
    found: dict[int, set[int]] = {}
    if not stream.replaced:
        return found
    replaced = pa.array(list(stream.replaced), pa.string())
    where = pc.field("source_id").isin(replaced) & same_machine(stream.cluster)
    reader = stream.scan(where, ["bucket", "ts"])
    for batch in reader:
        days = pc.divide(
            pc.cast(pc.cast(batch.column("ts"), pa.int64()), pa.int64()), DAY_S * 1_000_000
        )
        pairs = (
            pa.table({"b": batch.column("bucket"), "d": days}).group_by(["b", "d"]).aggregate([])
        )
        for b, d in zip(pairs.column("b").to_pylist(), pairs.column("d").to_pylist(), strict=True):
            found.setdefault(b, set()).add(d)
    return found


def _bucket_view(con: duckdb.DuckDBPyConnection, spill: Path, bucket: int, stream: Stream) -> str:
    """View ``new_samples``: this file's samples of one node bucket (possibly none)."""
    files = sorted(spill.glob(f"part-*/bucket={bucket}/*.parquet"))
    if files:
        listed = "[" + ", ".join(f"'{_quoted(f)}'" for f in files) + "]"
        source = f"SELECT * FROM read_parquet({listed})"
    else:
        source = (
            "SELECT NULL::BIGINT AS line_no, NULL::VARCHAR AS raw, NULL::VARCHAR AS node, "
            "NULL::VARCHAR AS item, NULL::VARCHAR AS metric, NULL::VARCHAR AS kind, "
            "NULL::BIGINT AS t_ns, NULL::DECIMAL(38, 6) AS value WHERE false"
        )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW new_samples AS SELECT *, {stream.seq}::BIGINT AS seq, "
        f"'{_quoted(Path(stream.file))}' AS file FROM ({source})"
    )
    return "new_samples"


def _region(
    con: duckdb.DuckDBPyConnection,
    new: str,
    bucket: int,
    day: int,
    settings: Settings,
    stream: Stream,
    records: list[int],
) -> Iterator[Batch]:
    """The node_io rows of one day of one node bucket, from every member's samples; node
    records are numbered from ``records[0]``, which moves past them."""
    iv = settings.interval
    first, last, window = _slots(day, iv)
    con.register(
        "stored", stream.scan(stream.stored(stream.others, bucket, window), _SAMPLE_COLUMNS)
    )
    con.execute("CREATE OR REPLACE TEMP TABLE other_samples AS SELECT * FROM stored")
    con.unregister("stored")
    grid = counters.grid_sql("t_ns", iv)
    own = f"{new} WHERE {grid} BETWEEN {first} AND {last}"
    con.execute(
        "INSERT INTO duplicates SELECT n.line_no, n.raw, o.file, o.line_no, n.value = o.value, "
        f"o.value FROM (SELECT * FROM {own}) n JOIN other_samples o USING (node, item, t_ns) "
        "WHERE n.line_no NOT IN (SELECT line_no FROM duplicates) AND o.seq < n.seq "
        "QUALIFY row_number() OVER (PARTITION BY n.line_no ORDER BY o.seq, o.line_no) = 1"
    )
    columns = ", ".join(_SAMPLE_COLUMNS)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE region AS "
        f"SELECT {columns} FROM {new} WHERE t_ns >= {window[0]} AND t_ns < {window[1]} "
        f"UNION ALL SELECT {columns} FROM other_samples"
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE nodes AS "
        f"SELECT node, CAST(row_number() OVER (ORDER BY node) - 1 + {records[0]} AS BIGINT) "
        "AS record, "
        "coalesce(mine, 0) AS samples FROM (SELECT DISTINCT node FROM region) "
        f"LEFT JOIN (SELECT node, count(*) AS mine FROM {own} "
        "AND line_no NOT IN (SELECT line_no FROM duplicates) GROUP BY node) USING (node)"
    )
    nodes = {
        r: (n, c) for n, r, c in con.execute("SELECT node, record, samples FROM nodes").fetchall()
    }
    records[0] += len(nodes)
    query = counters.node_io_query("region", "nodes", iv, (first, last))
    traffic, by_record = _balance(con, iv, (first, last), stream.seq, nodes)
    contribution = region_id(day, bucket, stream.cluster)
    batches = _whole_nodes(con.execute(query).fetch_record_batch(ROWS_PER_BATCH), ROWS_PER_BATCH)
    for table in batches:
        records = pc.unique(table.column("_record")).to_pylist()
        tag = pa.array([contribution] * table.num_rows, pa.string())
        machine = pa.array([stream.cluster] * table.num_rows, pa.string())
        yield Batch(
            {"node_io": table.append_column("cluster", machine).append_column(CONTRIBUTION, tag)},
            0,
            origins={
                r: (f"host {nodes[r][0]} ({nodes[r][1]} samples of this file)", None)
                for r in records
            },
            weights={r: nodes[r][1] for r in records},
            contributions=frozenset([contribution]),
            traffic=traffic,
            record_traffic={r: by_record.pop(r) for r in records if r in by_record},
        )
        traffic = {}
    # the contribution is recomputed even when nothing remains in it
    yield Batch(
        {}, 0, contributions=frozenset([contribution]), traffic=traffic, record_traffic=by_record
    )


def _merged(batches: Iterable[Batch], rows: int) -> Iterator[Batch]:
    """Combine consecutive region batches into batches of about ``rows`` node_io rows (their
    records are numbered apart), so validation runs on few large batches."""
    pending: list[Batch] = []
    size = 0
    for batch in batches:
        pending.append(batch)
        size += sum(t.num_rows for t in batch.tables.values())
        if size >= rows:
            yield _combine(pending)
            pending, size = [], 0
    if pending:
        yield _combine(pending)


def _combine(batches: list[Batch]) -> Batch:
    traffic: dict[str, dict[str, int]] = {}
    for batch in batches:
        for metric, parts in batch.traffic.items():
            into = traffic.setdefault(metric, {})
            for reason, amount in parts.items():
                into[reason] = into.get(reason, 0) + amount
    tables = [b.tables["node_io"] for b in batches if "node_io" in b.tables]
    return Batch(
        {"node_io": pa.concat_tables(tables)} if tables else {},
        0,
        origins={k: v for b in batches for k, v in b.origins.items()},
        weights={k: v for b in batches for k, v in b.weights.items()},
        contributions=frozenset().union(*(b.contributions for b in batches)),
        traffic=traffic,
        record_traffic={k: v for b in batches for k, v in b.record_traffic.items()},
    )


def _balance(
    con: duckdb.DuckDBPyConnection,
    interval: int,
    slots: tuple[int, int],
    seq: int,
    nodes: dict[int, tuple[str, int]],
) -> tuple[dict[str, dict[str, int]], dict[int, dict[str, int]]]:
    """This file's traffic in the region: metric -> reason -> bytes (with 'seen', the total),
    and the landed bytes per node record (quarantined instead if the node's rows fail)."""
    record_of = {node: record for record, (node, _) in nodes.items()}
    traffic: dict[str, dict[str, int]] = {}
    by_record: dict[int, dict[str, int]] = {}
    query = counters.balance_query("region", interval, slots, seq)
    for node, metric, reason, amount in con.execute(query).fetchall():
        parts = traffic.setdefault(metric, {})
        parts["seen"] = parts.get("seen", 0) + amount
        if reason == "landed":
            by_record.setdefault(record_of[node], {})[metric] = amount
        else:
            parts[reason] = parts.get(reason, 0) + amount
    return traffic, by_record


def stream_balance(lake: str | os.PathLike | None, interval: int) -> dict[str, dict[str, int]]:
    """The byte accounting of the lake's whole Zabbix stream, as it stands: per traffic metric
    seen = landed + quarantined + gap + reset (see :func:`counters.balance_query`; bytes of a
    node whose rows were quarantined, such as a node the topology does not know, are not in
    ``node_io``: they count as quarantined, as in the per-file balance). Unlike the per-file rows
    of ``ingest_log`` (each as of its file's ingest), this does not depend on the order in
    which the files arrived: it is what the concatenation of all the files gives."""
    lake = lake_path(lake)
    log = read_table(lake, "ingest_log", columns=["source", "source_id"]).to_pylist()
    members = pa.array(sorted({r["source_id"] for r in log if r["source"] == SOURCE_NAME}))
    samples = dataset(lake, STATE_TABLE)
    where = pc.field("source_id").isin(members.cast(pa.string()))
    keys = samples.to_table(columns=["cluster", "bucket", "ts"], filter=where)
    days = pc.divide(pc.cast(keys.column("ts"), pa.int64()), DAY_S * 1_000_000)
    regions = pa.table({"c": keys.column("cluster"), "b": keys.column("bucket"), "d": days})
    regions = regions.group_by(["c", "b", "d"]).aggregate([]).to_pylist()
    traffic: dict[str, dict[str, int]] = {}
    held = contribution_keys(lake, "node_io", ["node"])  # (region contribution, node) landed
    with duckdb.connect() as con:
        for r in sorted(regions, key=lambda r: (r["c"] or "", r["c"] is not None, r["b"], r["d"])):
            first, last, window = _slots(r["d"], interval)
            span = same_machine(r["c"]) & (pc.field("bucket") == r["b"])
            span &= (pc.field("t_ns") >= window[0]) & (pc.field("t_ns") < window[1])
            region = samples.scanner(columns=_SAMPLE_COLUMNS, filter=where & span).to_reader()
            con.register("region", region)
            query = counters.balance_query("region", interval, (first, last))
            for node, metric, reason, amount in con.execute(query).fetchall():
                if reason == "landed" and (region_id(r["d"], r["b"], r["c"]), node) not in held:
                    reason = "quarantined"
                parts = traffic.setdefault(metric, {})
                parts["seen"] = parts.get("seen", 0) + amount
                parts[reason] = parts.get(reason, 0) + amount
            con.unregister("region")
    return traffic


def _slots(day: int, interval: int) -> tuple[int, int, tuple[int, int]]:
    """The first and last interval of a UTC day, and the sample times (ns) they need."""
    first, last = -(-day * DAY_S // interval), -(-(day + 1) * DAY_S // interval) - 1
    return first, last, ((first - 3) * interval * counters.NS, (last + 4) * interval * counters.NS)


def _duplicate_batches(con: duckdb.DuckDBPyConnection) -> Iterator[Batch]:
    result = con.execute(
        "SELECT line_no, raw, first_file, first_line, same, "
        "rtrim(rtrim(CAST(kept AS VARCHAR), '0'), '.') FROM duplicates ORDER BY line_no"
    )
    while rows := result.fetchmany(REJECTS_PER_BATCH):
        rejects = [
            Reject(
                f"line {n}",
                raw,
                f"duplicate sample of {f'{first_file} ' if first_file else ''}line {first}"
                + ("" if same else f" with another value (kept {kept})"),
            )
            for n, raw, first_file, first, same, kept in rows
        ]
        yield Batch({}, 0, rejects)


def _store_samples(con: duckdb.DuckDBPyConnection, spill: Path, stream: Stream) -> Iterator[Batch]:
    """Keep this file's samples in the lake for the files that continue its items (state rows
    landing with the file's node_io, see ``Batch.state``)."""
    files = _quoted(spill / "part-*" / "*" / "*.parquet")
    if list(spill.glob("part-*/*/*.parquet")):
        reader = con.execute(
            "SELECT node, ?::VARCHAR AS cluster, item, metric, kind, "
            "make_timestamp(t_ns // 1000) AS ts, t_ns, value, bucket, ? AS source_id, ? AS file, "
            f"line_no, ?::BIGINT AS seq FROM read_parquet('{files}', hive_partitioning = true)",
            [stream.cluster, stream.source_id, stream.file, stream.seq],
        ).fetch_record_batch(ROWS_PER_BATCH)
        for batch in reader:
            yield Batch({}, 0, state={STATE_TABLE: pa.Table.from_batches([batch])})
    yield Batch({}, 0, keep_previous=frozenset(stream.kept))


def _whole_nodes(reader: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Regroup node-ordered batches into tables of about ``rows`` rows that never split a node."""
    pending: list[pa.RecordBatch] = []
    size = 0
    for batch in reader:
        pending.append(batch)
        size += batch.num_rows
        if size < rows:
            continue
        table = pa.Table.from_batches(pending)
        nodes = table.column("node")
        cut = pc.index(nodes, nodes[-1]).as_py()
        if cut == 0:
            continue  # one node fills the buffer: keep it whole
        yield table.slice(0, cut)
        rest = table.slice(cut)
        pending, size = rest.to_batches(), rest.num_rows
    if size:
        yield pa.Table.from_batches(pending)


# ------------------------------------------------------------------ the source


def parse(path: Path, context: ParseContext) -> Iterator[Batch]:
    """Parse one Zabbix history file into quarantine rejects and node_io rows."""
    settings = Settings.from_options(dict(context.options))
    with tempfile.TemporaryDirectory(prefix="burstlake-zabbix-", dir=settings.spill_dir) as tmp:
        spill = Path(tmp)
        con = duckdb.connect(
            config={
                "temp_directory": str(spill / "duckdb"),
                "memory_limit": settings.memory_limit,
                "preserve_insertion_order": False,
            }
        )
        con.execute("SET enable_progress_bar = false")  # our progress is the byte count
        try:
            yield from _pass_one(path, context, con, spill, settings)
            stream = Stream.open(context, path)
            if list(spill.glob("part-*/*/*.parquet")):
                con.execute(
                    "CREATE VIEW all_new AS SELECT * FROM "
                    f"read_parquet('{_quoted(spill / 'part-*' / '*' / '*.parquet')}')"
                )
                stream = stream.decide(con, "all_new")
            else:
                stream = stream.decide(con, "(SELECT NULL AS node WHERE false)")
            yield from _pass_two(con, spill, settings, stream)
            yield from _store_samples(con, spill, stream)
        finally:
            con.close()


SOURCE = Source(
    name=SOURCE_NAME,
    tables=("node_io",),
    parse=parse,
    state_tables=(STATE_TABLE,),
    serial=True,  # a file reads the stream's samples and rewrites shared node_io parts
    check_options=check_options,
)
