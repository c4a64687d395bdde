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
day and bucket (± 3 intervals): memory is bounded by one span of one bucket (consecutive days
holding at most ``SPAN_SAMPLES`` of the file's samples, or one day: :func:`_spans`), spilled
by DuckDB beyond ``--memory-limit``. Re-ingesting a file recomputes the same rows (a no-op).

New content at a path already ingested is either a new version of that member or the path's
next rotation. It **replaces** the earlier content (whose samples and quarantine rows go, and
whose days are recomputed without it) when the two share a sample instant of some item: a
corrected file, or one that grew. It **continues** the stream when they share none: the
syncer file rotated and the path now holds later values, and the earlier content stays (also
when the new content has no usable sample yet). A replacing version takes the stream position
of the one it replaces.

Two passes keep the parse's memory bounded whatever the size and order of the input (the Delta
commit of the file's samples is not: docs/design.md, 'Beyond one machine's day'): (1) each block
of lines is decoded and classified in DuckDB SQL, rejects go to quarantine, host names become
node names and samples are spilled to Parquet, partitioned by node bucket (an NDJSON block is
read whole by pyarrow's JSON reader when it can, and the lines :mod:`.zabbix_typed` vouches for
skip the SQL, see :mod:`.zabbix_lines`); (2) bucket by bucket and day by day, the SQL of
:mod:`.counters` sorts the samples per item and turns them into node_io rows.

Accounting: every input line is a record (the header line of a CSV/TSV is not). A line lands
when its sample is used; it is quarantined with ``line N`` and a reason when it is empty,
truncated (not valid JSON), non-numeric, of an unknown item or host, or a duplicate (``duplicate
sample of line M``, or of ``FILE line M`` when an earlier member holds the same instant), or its
pair would take a 64-bit traffic sum past 2^63 - 1 bytes (:mod:`.zabbix_overflow`).
node_io rows aggregate many lines, so they carry one ``_record`` per node and contribution that
stands for this file's samples there (``Batch.weights``): if a node's rows fail validation (say
the node is not in the topology), those samples count as quarantined.

All Zabbix input of a lake is taken to be one centre's export at one ``--interval``: items are
matched across files by itemid (or item name without one) and node. An export names no
machine: ``--cluster`` does (source.record_cluster), and a series is one cluster × node × item, so
two machines' exports with the same node names stay apart (their node_io contributions too:
:func:`region_id`).
"""

from __future__ import annotations

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
import pyarrow as pa
import pyarrow.compute as pc

from burstlake import readonly
from burstlake.jobs.ingest import counters, zabbix_batches, zabbix_db, zabbix_lines, zabbix_overflow
from burstlake.jobs.ingest.source import (
    CONTRIBUTION,
    Batch,
    CounterStream,
    ParseContext,
    Pulled,
    Reject,
    Source,
    StreamPart,
    TrafficOverflow,
    record_cluster,
)
from burstlake.jobs.ingest.zabbix_mapping import (
    HostNames,
    ItemMapping,
    load_mapping,
    prefix_rewrite,
)
from burstlake.jobs.ingest.zabbix_options import OPTIONS
from burstlake.lake import (
    cluster_filter,
    contribution_keys,
    dataset,
    lake_path,
    read_table,
    sql_literal,
)

LOG = logging.getLogger(__name__)
ROWS_PER_BATCH = 200_000  # node_io rows per batch (whole nodes)
NODE_BUCKETS = 16  # node_io contributions per day: pass 2 recomputes one day of one bucket
DAY_S = 86_400
STATE_TABLE = "zabbix_samples"
SPAN_SAMPLES = 4_000_000  # at most this many samples of the file per pass-2 span (_spans)
SOURCE_NAME = "zabbix"


@dataclass(frozen=True)
class Settings:
    """The parse options, checked."""

    mapping: ItemMapping
    interval: int
    hosts: HostNames
    items: Path | None = None
    gap_factor: float = counters.GAP_FACTOR
    spill_dir: str | None = None
    memory_limit: str = "1GB"
    threads: int = 1
    latest_clock: int | None = None  # set by a --db read: later clocks are quarantined

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> Settings:
        given = options.get("interval")
        interval = 10 if given is None else int(given)
        if not 1 <= interval <= DAY_S:
            raise ValueError(f"--interval must be 1..{DAY_S} seconds (a day), not {interval}")
        factor = options.get("gap_factor")
        factor = counters.GAP_FACTOR if factor is None else float(factor)
        if not factor >= 1 or factor == float("inf"):
            raise ValueError(f"--gap-factor must be a finite number >= 1, not {factor:g}")
        threads = options.get("threads")
        threads = readonly.check_threads(1 if threads is None else int(threads), "--threads")
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
            gap_factor=factor,
            spill_dir=options.get("spill_dir"),
            memory_limit=readonly.memory_limit(
                options.get("memory_limit") or "1GB", "--memory-limit"
            ),
            threads=threads,
            latest_clock=_latest_clock(options.get("latest_clock")),
        )


def _latest_clock(given: object) -> int | None:
    """The internal option ``latest_clock`` (Unix seconds) a ``--db`` read passes on."""
    if given is None:
        return None
    if not str(given).isdigit():
        raise ValueError(f"latest_clock {given!r} is not Unix seconds")
    return int(str(given))


def check_options(options: Mapping[str, Any]) -> None:
    """The parse options are those :meth:`Settings.from_options` accepts (it raises)."""
    Settings.from_options(dict(options))
    for name in ("since", "until"):
        zabbix_db.parse_time(options.get(name), name)
    zabbix_db.future_tolerance(options)


def pull(options: Mapping[str, Any], lake: Path, folder: Path) -> Pulled | None:
    """With ``--db``: the window's history rows and the item table, read from the database
    (:mod:`.zabbix_db`) into ``folder``."""
    if not options.get("db"):
        return None
    got = zabbix_db.extract(options["db"], folder, lake, options)
    return Pulled(
        [got.history] if got.rows else [],
        {"items": str(got.items), "latest_clock": str(got.latest_clock)},
        [f"zabbix --db {zabbix_db.where(options['db'])}: {zabbix_db.summary(got)}"],
        got.lost,
    )


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
    return cluster_filter(cluster)


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
        "CREATE TEMP TABLE duplicates (line_no BIGINT, first_file VARCHAR, "
        "first_line BIGINT, same BOOLEAN, kept DECIMAL(38, 6))"
    )
    try:
        yield from zabbix_batches.merged(_regions(con, spill, settings, stream), ROWS_PER_BATCH)
    except duckdb.ConversionException as err:  # a node_io interval past 64 bits
        raise TrafficOverflow(zabbix_overflow.past_64_bits(err)) from err
    yield from _duplicate_batches(con, spill)
    yield from zabbix_overflow.rejects(con, spill)


def _regions(
    con: duckdb.DuckDBPyConnection, spill: Path, settings: Settings, stream: Stream
) -> Iterator[Batch]:
    iv = settings.interval
    before, after = counters.reach_ns(iv)
    touched = _replaced_regions(stream, iv)
    records = [0]  # node records numbered apart across regions
    for bucket in sorted(zabbix_lines.spilled_buckets(spill) | set(touched)):
        new = _bucket_view(con, spill, bucket, stream)
        days = dict.fromkeys(touched.get(bucket, set()), 0)
        for lo, hi, samples in con.execute(
            f"SELECT {_day_sql(f'(t_ns - {after}) / 1e9')}, "
            f"{_day_sql(f'(t_ns + {before}) / 1e9')}, count(*) FROM {new} GROUP BY ALL"
        ).fetchall():
            for d in range(lo, hi + 1):
                days[d] = days.get(d, 0) + samples
        # a span's window holds each day's only where the day's first slot starts at midnight
        for span in _spans(days, SPAN_SAMPLES if DAY_S % iv == 0 else 0):
            yield from _span(con, new, bucket, span, settings, stream, records)


def _spans(days: dict[int, int], limit: int) -> list[list[int]]:
    """Consecutive days grouped while their samples add up to at most ``limit`` (a day more
    than that is a span alone; ``limit`` 0: every day alone): pass 2 computes a span's pairs
    once, not each day's window."""
    spans: list[list[int]] = []
    size = 0
    for day in sorted(days):
        if limit and spans and spans[-1][-1] == day - 1 and size + days[day] <= limit:
            spans[-1].append(day)
            size += days[day]
        else:
            spans.append([day])
            size = days[day]
    return spans


def _replaced_regions(stream: Stream, interval: int) -> dict[int, set[int]]:
    """bucket -> days whose regions read samples of the replaced contents (to be recomputed
    without them)."""
    found: dict[int, set[int]] = {}
    if not stream.replaced:
        return found
    replaced = pa.array(list(stream.replaced), pa.string())
    where = pc.field("source_id").isin(replaced) & same_machine(stream.cluster)
    for batch in stream.scan(where, ["bucket", "t_ns"]):
        for b, lo, hi in _reached_days(batch.column("bucket"), batch.column("t_ns"), interval):
            found.setdefault(b, set()).update(range(lo, hi + 1))
    return found


def _reached_days(
    buckets: pa.Array | pa.ChunkedArray, t_ns: pa.Array | pa.ChunkedArray, interval: int
) -> list[tuple[int, int, int]]:
    """(bucket, first day, last day) of the regions whose samples windows hold these samples
    (:func:`counters.reach_ns`)."""
    before, after = counters.reach_ns(interval)
    day_ns = DAY_S * counters.NS
    table = pa.table(
        {
            "b": buckets,
            "lo": pc.divide(pc.max_element_wise(pc.subtract(t_ns, after), 0), day_ns),
            "hi": pc.divide(pc.add(t_ns, before), day_ns),
        }
    )
    rows = table.group_by(["b", "lo", "hi"]).aggregate([]).to_pylist()
    return [(r["b"], int(r["lo"]), int(r["hi"])) for r in rows]


def _bucket_view(con: duckdb.DuckDBPyConnection, spill: Path, bucket: int, stream: Stream) -> str:
    """View ``new_samples``: this file's samples of one node bucket (possibly none)."""
    files = zabbix_lines.spilled_samples(spill, bucket)
    if files:
        listed = "[" + ", ".join(sql_literal(f) for f in files) + "]"
        source = f"SELECT * FROM read_parquet({listed}) WHERE {zabbix_overflow.kept(con)}"
    else:
        source = (
            "SELECT NULL::BIGINT AS line_no, NULL::VARCHAR AS node, "
            "NULL::VARCHAR AS item, NULL::VARCHAR AS metric, NULL::VARCHAR AS kind, "
            "NULL::BIGINT AS t_ns, NULL::DECIMAL(38, 6) AS value WHERE false"
        )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW new_samples AS SELECT *, {stream.seq}::BIGINT AS seq, "
        f"{sql_literal(stream.file)} AS file FROM ({source})"
    )
    return "new_samples"


def _span(
    con: duckdb.DuckDBPyConnection,
    new: str,
    bucket: int,
    days: list[int],
    settings: Settings,
    stream: Stream,
    records: list[int],
) -> Iterator[Batch]:
    """The node_io rows of consecutive days of one node bucket, from every member's samples.
    The pair tables (:func:`counters.pair_tables`) are made once for the span; each day then
    reads the part its own window would give (the pairs within it, the landed bytes of its
    intervals), so a day's rows and balance are those of its region alone."""
    iv = settings.interval
    first, _, (start, _) = _slots(days[0], iv)
    _, last, (_, end) = _slots(days[-1], iv)
    con.register(
        "stored",
        stream.scan(stream.stored(stream.others, bucket, (start, end)), _SAMPLE_COLUMNS),
    )
    con.execute("CREATE OR REPLACE TEMP TABLE other_samples AS SELECT * FROM stored")
    con.unregister("stored")
    columns = ", ".join(_SAMPLE_COLUMNS)
    con.execute(
        "CREATE OR REPLACE TEMP VIEW region AS "
        f"SELECT {columns} FROM {new} WHERE t_ns >= {start} AND t_ns < {end} "
        f"UNION ALL SELECT {columns} FROM other_samples"
    )
    tables = counters.PAIR_TABLES
    con.execute(counters.copy_statement("region"))  # the region read once, if no repeats
    repeated = con.execute(counters.repeats_query(tables["clean"])).fetchone()[0]
    for statement in counters.pair_tables(
        "region", iv, (first, last), settings.gap_factor, deduplicate=repeated
    ):
        con.execute(statement)  # every node kept
    if len(days) == 1:
        yield from _region(con, new, bucket, days[0], settings, stream, records, repeated)
        return
    for name in tables.values():
        con.execute(f"ALTER TABLE {name} RENAME TO span_{name}")
    for day in days:
        first, last, (start, end) = _slots(day, iv)
        within = {
            "clean": f"t_ns >= {start} AND t_ns < {end}",
            "classed": f"t_prev >= {start} AND t_ns < {end}",
            "spread": f"slot BETWEEN {first} AND {last}",
        }
        for step, name in tables.items():
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {name} AS "
                f"SELECT * FROM span_{name} WHERE {within[step]}"
            )
        yield from _region(con, new, bucket, day, settings, stream, records, repeated)
    for name in tables.values():
        con.execute(f"DROP VIEW {name}")
        con.execute(f"DROP TABLE span_{name}")


def _region(
    con: duckdb.DuckDBPyConnection,
    new: str,
    bucket: int,
    day: int,
    settings: Settings,
    stream: Stream,
    records: list[int],
    repeated: bool,
) -> Iterator[Batch]:
    """The node_io rows of one day of one node bucket from the pair tables of its span
    (``repeated``: the span holds an instant sampled twice); node records are numbered from
    ``records[0]``, which moves past them."""
    iv = settings.interval
    first, last, _ = _slots(day, iv)
    day_ns = (day * DAY_S * counters.NS, (day + 1) * DAY_S * counters.NS)
    own = f"{new} WHERE t_ns >= {day_ns[0]} AND t_ns < {day_ns[1]}"
    if repeated:
        _duplicates(con, own)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE nodes AS "
        f"SELECT node, CAST(row_number() OVER (ORDER BY node) - 1 + {records[0]} AS BIGINT) "
        "AS record, coalesce(mine, 0) AS samples "
        f"FROM (SELECT DISTINCT node FROM {counters.PAIR_TABLES['clean']}) "
        f"LEFT JOIN (SELECT node, count(*) AS mine FROM {own} "
        "AND line_no NOT IN (SELECT line_no FROM duplicates) GROUP BY node) USING (node)"
    )
    nodes = {
        r: (n, c) for n, r, c in con.execute("SELECT node, record, samples FROM nodes").fetchall()
    }
    records[0] += len(nodes)
    query = counters.node_io_query(
        "region", "nodes", iv, (first, last), settings.gap_factor, prepared=True
    )
    traffic, by_record = _balance(con, settings, (first, last), stream.seq, nodes)
    contribution = region_id(day, bucket, stream.cluster)
    reader = con.execute(query).fetch_record_batch(ROWS_PER_BATCH)
    batches = zabbix_batches.whole_nodes(reader, ROWS_PER_BATCH)
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
            stream=StreamPart(contributions=frozenset([contribution])),
            traffic=traffic,
            record_traffic={r: by_record.pop(r) for r in records if r in by_record},
        )
        traffic = {}
    # the contribution is recomputed even when nothing remains in it
    yield Batch(
        {},
        0,
        stream=StreamPart(contributions=frozenset([contribution])),
        traffic=traffic,
        record_traffic=by_record,
    )


def _duplicates(con: duckdb.DuckDBPyConnection, own: str) -> None:
    """Add this file's samples in a region's day that repeat an instant to ``duplicates``: of
    an earlier line of the file, else of an earlier member's line (a repeated instant lies
    within one day, so each region finds those of its own day)."""
    con.execute(
        "INSERT INTO duplicates SELECT line_no, NULL, first_line, value = first_value, "
        f"first_value FROM ({counters.duplicates_query(f'(SELECT * FROM {own})')})"
    )
    con.execute(
        "INSERT INTO duplicates SELECT n.line_no, o.file, o.line_no, n.value = o.value, "
        f"o.value FROM (SELECT * FROM {own}) n JOIN other_samples o USING (node, item, t_ns) "
        "WHERE n.line_no NOT IN (SELECT line_no FROM duplicates) AND o.seq < n.seq "
        "QUALIFY row_number() OVER (PARTITION BY n.line_no ORDER BY o.seq, o.line_no) = 1"
    )


def _balance(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    slots: tuple[int, int],
    seq: int,
    nodes: dict[int, tuple[str, int]],
) -> tuple[dict[str, dict[str, int]], dict[int, dict[str, int]]]:
    """This file's traffic in the region: metric -> reason -> bytes (with 'seen', the total),
    and the landed bytes per node record (quarantined instead if the node's rows fail)."""
    record_of = {node: record for record, (node, _) in nodes.items()}
    traffic: dict[str, dict[str, int]] = {}
    by_record: dict[int, dict[str, int]] = {}
    query = counters.balance_query(
        "region", settings.interval, slots, seq, settings.gap_factor, prepared=True
    )
    for node, metric, reason, amount in con.execute(query).fetchall():
        parts = traffic.setdefault(metric, {})
        parts["seen"] = parts.get("seen", 0) + amount
        if reason == "landed":
            by_record.setdefault(record_of[node], {})[metric] = amount
        else:
            parts[reason] = parts.get(reason, 0) + amount
    return traffic, by_record


def stream_balance(
    lake: str | os.PathLike | None, options: Mapping[str, Any] | None = None
) -> dict[str, dict[str, int]]:
    """The byte accounting of the lake's whole Zabbix stream, as it stands: per traffic metric
    seen = landed + quarantined + gap + reset (see :func:`counters.balance_query`; bytes of a
    node whose rows were quarantined, such as a node the topology does not know, are not in
    ``node_io``: they count as quarantined, as in the per-file balance). Unlike the per-file rows
    of ``ingest_log`` (each as of its file's ingest), this does not depend on the order in
    which the files arrived: it is what the concatenation of all the files gives."""
    settings = Settings.from_options(dict(options or {}))
    interval = settings.interval
    lake = lake_path(lake)
    log = read_table(lake, "ingest_log", columns=["source", "source_id"]).to_pylist()
    members = pa.array(sorted({r["source_id"] for r in log if r["source"] == SOURCE_NAME}))
    samples = dataset(lake, STATE_TABLE)
    where = pc.field("source_id").isin(members.cast(pa.string()))
    keys = samples.to_table(columns=["cluster", "bucket", "t_ns"], filter=where)
    regions = []
    for cluster in pc.unique(keys.column("cluster")).to_pylist():
        part = keys.filter(same_machine(cluster))
        reached = _reached_days(part.column("bucket"), part.column("t_ns"), interval)
        found = {(b, d) for b, lo, hi in reached for d in range(lo, hi + 1)}
        regions += [{"c": cluster, "b": b, "d": d} for b, d in found]
    traffic: dict[str, dict[str, int]] = {}
    held = contribution_keys(lake, "node_io", ["node"])  # (region contribution, node) landed
    with duckdb.connect() as con:
        for r in sorted(regions, key=lambda r: (r["c"] or "", r["c"] is not None, r["b"], r["d"])):
            first, last, window = _slots(r["d"], interval)
            span = same_machine(r["c"]) & (pc.field("bucket") == r["b"])
            span &= (pc.field("t_ns") >= window[0]) & (pc.field("t_ns") < window[1])
            region = samples.scanner(columns=_SAMPLE_COLUMNS, filter=where & span).to_reader()
            con.register("region", region)
            query = counters.balance_query(
                "region", interval, (first, last), gap_factor=settings.gap_factor
            )
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
    before, after = counters.reach_ns(interval)
    step = interval * counters.NS
    return first, last, (first * step - before, (last + 1) * step + after)


def _duplicate_batches(con: duckdb.DuckDBPyConnection, spill: Path) -> Iterator[Batch]:
    """The duplicate samples as rejects, with their lines (kept in the spill by pass 1)."""
    if not con.execute("SELECT count(*) FROM duplicates").fetchone()[0]:
        return
    for lines in zabbix_lines.spilled_lines(spill):  # a block's duplicates at a time
        numbers = lines.column("line_no")
        rows = con.execute(
            "SELECT line_no, first_file, first_line, same, "
            "rtrim(rtrim(CAST(kept AS VARCHAR), '0'), '.') "
            "FROM duplicates WHERE line_no BETWEEN ? AND ? ORDER BY line_no",
            [numbers[0].as_py(), numbers[-1].as_py()],
        ).fetchall()
        if not rows:
            continue
        texts = zabbix_lines.taken(lines, [row[0] for row in rows]).column("line").to_pylist()
        rejects = [
            Reject(
                f"line {n}",
                raw,
                f"duplicate sample of {f'{first_file} ' if first_file else ''}line {first}"
                + ("" if same else f" with another value (kept {kept})"),
            )
            for (n, first_file, first, same, kept), raw in zip(rows, texts, strict=True)
        ]
        yield Batch({}, 0, rejects)


def _store_samples(con: duckdb.DuckDBPyConnection, spill: Path, stream: Stream) -> Iterator[Batch]:
    """Keep this file's samples in the lake for the files that continue its items (state rows
    landing with the file's node_io, see ``StreamPart.state``)."""
    files = sql_literal(spill / zabbix_lines.samples_pattern())
    same = {  # the file's own columns, repeated by pyarrow (DuckDB would copy them per row)
        "cluster": pa.scalar(stream.cluster, pa.string()),
        "source_id": pa.scalar(stream.source_id, pa.string()),
        "file": pa.scalar(stream.file, pa.string()),
        "seq": pa.scalar(stream.seq, pa.int64()),
    }
    if zabbix_lines.spilled_samples(spill):
        reader = con.execute(
            "SELECT node, item, metric, kind, make_timestamp(t_ns // 1000) AS ts, t_ns, value, "
            f"bucket, line_no FROM read_parquet({files}, hive_partitioning = true) "
            f"WHERE {zabbix_overflow.kept(con)}"
        ).fetch_record_batch(ROWS_PER_BATCH)
        for batch in reader:
            rows = pa.Table.from_batches([batch])
            for name, value in same.items():
                rows = rows.append_column(name, pa.repeat(value, rows.num_rows))
            yield Batch({}, 0, stream=StreamPart(state={STATE_TABLE: rows}))
    yield Batch({}, 0, stream=StreamPart(keep_previous=frozenset(stream.kept)))


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
                "threads": settings.threads,
            }
        )
        con.execute("SET enable_progress_bar = false")  # our progress is the byte count
        con.execute(f"CREATE TEMP TABLE {zabbix_overflow.REFUSED} (line_no BIGINT, reason VARCHAR)")
        try:
            yield from zabbix_lines.pass_one(
                path, context, con, spill, settings, _bucket_sql("m.node")
            )
            stream = Stream.open(context, path)
            if zabbix_lines.spilled_samples(spill):
                con.execute(
                    "CREATE VIEW all_new AS SELECT * FROM "
                    f"read_parquet({sql_literal(spill / zabbix_lines.samples_pattern())})"
                )
                stream = stream.decide(con, "all_new")
                if context.exact_sums:  # a sum passed 64 bits: find the samples taking it there
                    zabbix_overflow.refuse(con, spill, stream)
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
