"""Pass 2 of the Zabbix ingest: bucket by bucket and day by day, the samples of the lake's
stream (:mod:`.stream`) turned into node_io rows by the rule of :mod:`.deltas`.

A file recomputes exactly the day × bucket contributions its samples reach (an interval's row
needs only the samples of its two grid points), reading the other members' samples of that
day and bucket (± 3 intervals): memory is bounded by one span of one bucket (consecutive days
holding at most ``SPAN_SAMPLES`` of the file's samples, or one day: :func:`_spans`), spilled
by DuckDB beyond ``--memory-limit``. Re-ingesting a file recomputes the same rows (a no-op).

node_io rows aggregate many lines, so they carry one ``_record`` per node and contribution that
stands for this file's samples there (``Batch.weights``): if a node's rows fail validation (say
the node is not in the topology), those samples count as quarantined.

The file's node_io rows are kept in the spill until every region is computed: only then is it
known that no sum of the file passes 64 bits. If one does, they are discarded, the samples
taking it there are quarantined (:func:`.overflow.refuse`) and the regions computed again
without them; every other file is computed once.

The temporary tables and views of this module are made and dropped by one function each
(``new_samples`` by :func:`_regions`; ``other_samples``, ``region`` and the pair tables of
:mod:`.deltas` by :func:`_span`, whose days read them; ``nodes`` by :func:`_region`); what
passes to other modules is an argument (a relation, an Arrow table, the spill folder).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest.source import CONTRIBUTION, Batch, Reject, StreamPart, UnusableInput
from burstlake.jobs.ingest.zabbix import batches, decode, deltas, overflow
from burstlake.jobs.ingest.zabbix.settings import Settings
from burstlake.jobs.ingest.zabbix.stream import (
    DAY_S,
    SOURCE_NAME,
    STATE_TABLE,
    Stream,
    day_sql,
    reached_days,
    region_id,
    same_machine,
    slots,
)
from burstlake.lake import contribution_keys, dataset, lake_path, read_table, sql_literal

LOG = logging.getLogger(__name__)
ROWS_PER_BATCH = 200_000  # node_io rows per batch (whole nodes)
SPAN_SAMPLES = 4_000_000  # at most this many samples of the file per pass-2 span (_spans)
NODE_IO = "node_io"  # spill folder: the file's node_io batches, kept until the sums are known
_SAMPLE_COLUMNS = ["node", "item", "metric", "kind", "t_ns", "value", "line_no", "seq", "file"]
# the file's duplicate samples: their line, the first line of the instant (in FILE, or this
# file when null), whether the values agree, and the value kept
DUPLICATES = pa.schema(
    [
        ("line_no", pa.int64()),
        ("node", pa.string()),
        ("first_file", pa.string()),
        ("first_line", pa.int64()),
        ("same", pa.bool_()),
        ("kept", pa.decimal128(38, 6)),
    ]
)


def pass_two(
    con: duckdb.DuckDBPyConnection,
    spill: Path,
    settings: Settings,
    stream: Stream,
    samples: duckdb.DuckDBPyRelation | None,
) -> Iterator[Batch]:
    """The node_io contributions the file touches, recomputed from its ``samples`` (pass 1's
    spill) and the stored samples of the stream's other files; then the file's duplicate and
    overflowing samples as rejects, and its samples as the stream's state."""
    refused = overflow.REFUSED.empty_table()
    try:
        rows = _node_io(con, spill, settings, stream, refused)
    except overflow.Overflow as err:
        if samples is None:
            raise UnusableInput(str(err)) from None
        LOG.info("%s: %s; quarantining the samples taking it there", stream.file, err)
        refused = overflow.refuse(con, spill, stream, samples)
        try:
            rows = _node_io(con, spill, settings, stream, refused)
        except overflow.Overflow as again:  # refuse() bounds every sum: not seen yet
            raise UnusableInput(str(again)) from None
    yield from rows.batches()
    yield from _duplicate_batches(rows.duplicates, spill, settings.db_source)
    yield from overflow.rejects(refused, spill, settings.db_source)
    yield from _store_samples(con, spill, stream, refused)


@dataclass
class _Kept:
    """The file's node_io batches, their tables kept in the spill (``NODE_IO``)."""

    folder: Path
    kept: list[tuple[Batch, Path | None]] = field(default_factory=list)
    duplicates: pa.Table = field(default_factory=DUPLICATES.empty_table)

    def add(self, batch: Batch) -> None:
        table = batch.tables.get("node_io")
        if table is None:
            self.kept.append((batch, None))
            return
        path = self.folder / f"{len(self.kept):06d}.arrow"
        with pa.ipc.new_file(path, table.schema) as out:
            out.write_table(table)
        self.kept.append((replace(batch, tables={}), path))

    def batches(self) -> Iterator[Batch]:
        for batch, path in self.kept:
            if path is None:
                yield batch
            else:
                table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
                yield replace(batch, tables={"node_io": table})


def _node_io(
    con: duckdb.DuckDBPyConnection,
    spill: Path,
    settings: Settings,
    stream: Stream,
    refused: pa.Table,
) -> _Kept:
    """Every region's node_io batches, kept in the spill; :class:`.overflow.Overflow` when a
    sum of the file passes 64 bits (a node_io interval, or the file's balance of a metric)."""
    folder = spill / NODE_IO
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    found: list[pa.Table] = []
    kept = _Kept(folder)
    traffic: dict[str, dict[str, int]] = {}
    regions = _regions(con, spill, settings, stream, refused, found)
    merged = batches.merged(regions, ROWS_PER_BATCH)
    try:
        for batch in merged:
            batches.add_traffic(traffic, batch.traffic)
            reason = overflow.past_file_sum(traffic)
            if reason is not None:
                raise overflow.Overflow(reason)
            kept.add(batch)
    except duckdb.ConversionException as err:  # a node_io interval past 64 bits
        raise overflow.Overflow(overflow.past_64_bits(err)) from None
    finally:  # stopped early: the regions drop their tables now, before any second run
        merged.close()
        regions.close()
    if found:
        kept.duplicates = pa.concat_tables(found).cast(DUPLICATES)
    return kept


def _regions(
    con: duckdb.DuckDBPyConnection,
    spill: Path,
    settings: Settings,
    stream: Stream,
    refused: pa.Table,
    found: list[pa.Table],
) -> Iterator[Batch]:
    """The batches of every region the file's samples reach or its replaced contents reached
    (the file's duplicates are added to ``found``)."""
    iv = settings.interval
    before, after = deltas.reach_ns(iv)
    touched = _replaced_regions(stream, iv)
    records = [0]  # node records numbered apart across regions
    new = "new_samples"
    try:
        for bucket in sorted(decode.spilled_buckets(spill) | set(touched)):
            _bucket_view(con, new, spill, bucket, stream, refused)
            days = dict.fromkeys(touched.get(bucket, set()), 0)
            for lo, hi, samples in con.execute(
                f"SELECT {day_sql(f'(t_ns - {after}) / 1e9')}, "
                f"{day_sql(f'(t_ns + {before}) / 1e9')}, count(*) FROM {new} GROUP BY ALL"
            ).fetchall():
                for d in range(lo, hi + 1):
                    days[d] = days.get(d, 0) + samples
            # a span's window holds each day's only where the day's first slot starts at midnight
            for span in _spans(days, SPAN_SAMPLES if DAY_S % iv == 0 else 0):
                yield from _span(con, new, bucket, span, settings, stream, records, found)
    finally:
        con.execute(f"DROP VIEW IF EXISTS {new}")


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
        for b, lo, hi in reached_days(batch.column("bucket"), batch.column("t_ns"), interval):
            found.setdefault(b, set()).update(range(lo, hi + 1))
    return found


def _bucket_view(
    con: duckdb.DuckDBPyConnection,
    name: str,
    spill: Path,
    bucket: int,
    stream: Stream,
    refused: pa.Table,
) -> None:
    """View ``name``: this file's samples of one node bucket (possibly none), but those
    ``refused``."""
    files = decode.spilled_samples(spill, bucket)
    if files:
        listed = "[" + ", ".join(sql_literal(f) for f in files) + "]"
        source = f"SELECT * FROM read_parquet({listed}) WHERE {overflow.kept(refused)}"
    else:
        source = (
            "SELECT NULL::BIGINT AS line_no, NULL::VARCHAR AS node, "
            "NULL::VARCHAR AS item, NULL::VARCHAR AS metric, NULL::VARCHAR AS kind, "
            "NULL::BIGINT AS t_ns, NULL::DECIMAL(38, 6) AS value WHERE false"
        )
    con.execute(
        f"CREATE OR REPLACE TEMP VIEW {name} AS SELECT *, {stream.seq}::BIGINT AS seq, "
        f"{sql_literal(stream.file)} AS file FROM ({source})"
    )


def _span(
    con: duckdb.DuckDBPyConnection,
    new: str,
    bucket: int,
    days: list[int],
    settings: Settings,
    stream: Stream,
    records: list[int],
    found: list[pa.Table],
) -> Iterator[Batch]:
    """The node_io rows of consecutive days of one node bucket, from every member's samples.
    The pair tables (:func:`.deltas.pair_tables`) are made once for the span; each day then
    reads the part its own window would give (the pairs within it, the landed bytes of its
    intervals), so a day's rows and balance are those of its region alone."""
    iv = settings.interval
    first, _, (start, _) = slots(days[0], iv)
    _, last, (_, end) = slots(days[-1], iv)
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
    tables = deltas.PAIR_TABLES
    con.execute(deltas.copy_statement("region"))  # the region read once, if no repeats
    repeated = con.execute(deltas.repeats_query(tables["clean"])).fetchone()[0]
    for statement in deltas.pair_tables(
        "region", iv, (first, last), settings.gap_factor, deduplicate=repeated
    ):
        con.execute(statement)  # every node kept
    try:
        if len(days) == 1:
            yield from _region(
                con, new, bucket, days[0], settings, stream, records, repeated, found
            )
            return
        yield from _days(con, new, bucket, days, settings, stream, records, repeated, found)
    finally:
        _drop(con, *tables.values(), *(f"span_{n}" for n in tables.values()))
        _drop(con, "region", "other_samples")


def _days(
    con: duckdb.DuckDBPyConnection,
    new: str,
    bucket: int,
    days: list[int],
    settings: Settings,
    stream: Stream,
    records: list[int],
    repeated: bool,
    found: list[pa.Table],
) -> Iterator[Batch]:
    """The days of a span, each reading its part of the span's pair tables."""
    iv = settings.interval
    tables = deltas.PAIR_TABLES
    for name in tables.values():
        con.execute(f"ALTER TABLE {name} RENAME TO span_{name}")
    for day in days:
        first, last, (start, end) = slots(day, iv)
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
        yield from _region(con, new, bucket, day, settings, stream, records, repeated, found)
    for name in tables.values():
        con.execute(f"DROP VIEW {name}")
        con.execute(f"DROP TABLE span_{name}")


def _drop(con: duckdb.DuckDBPyConnection, *names: str) -> None:
    """Drop these temporary tables and views, those that exist."""
    for name, kind in con.execute(
        "SELECT table_name, table_type FROM information_schema.tables "
        "WHERE table_schema = 'main' AND table_catalog = 'temp' AND list_contains(?, table_name)",
        [list(names)],
    ).fetchall():
        con.execute(f"DROP {'VIEW' if kind == 'VIEW' else 'TABLE'} {name}")


def _region(
    con: duckdb.DuckDBPyConnection,
    new: str,
    bucket: int,
    day: int,
    settings: Settings,
    stream: Stream,
    records: list[int],
    repeated: bool,
    found: list[pa.Table],
) -> Iterator[Batch]:
    """The node_io rows of one day of one node bucket from the pair tables of its span
    (``repeated``: the span holds an instant sampled twice); node records are numbered from
    ``records[0]``, which moves past them; the day's duplicate samples are added to
    ``found``."""
    iv = settings.interval
    first, last, _ = slots(day, iv)
    day_ns = (day * DAY_S * deltas.NS, (day + 1) * DAY_S * deltas.NS)
    own = f"{new} WHERE t_ns >= {day_ns[0]} AND t_ns < {day_ns[1]}"
    day_duplicates = _duplicates(con, own) if repeated else DUPLICATES.empty_table()
    found.append(day_duplicates)
    con.register("day_duplicates", day_duplicates)
    try:
        con.execute(
            "CREATE OR REPLACE TEMP TABLE nodes AS "
            f"SELECT node, CAST(row_number() OVER (ORDER BY node) - 1 + {records[0]} AS BIGINT) "
            "AS record, coalesce(mine, 0) AS samples "
            f"FROM (SELECT DISTINCT node FROM {deltas.PAIR_TABLES['clean']}) "
            f"LEFT JOIN (SELECT node, count(*) AS mine FROM {own} "
            "AND line_no NOT IN (SELECT line_no FROM day_duplicates) GROUP BY node) USING (node)"
        )
    finally:
        con.unregister("day_duplicates")
    nodes = {
        r: (n, c) for n, r, c in con.execute("SELECT node, record, samples FROM nodes").fetchall()
    }
    records[0] += len(nodes)
    query = deltas.node_io_query(
        "region", "nodes", iv, (first, last), settings.gap_factor, prepared=True
    )
    traffic, by_record = _balance(con, settings, (first, last), stream.seq, nodes)
    contribution = region_id(day, bucket, stream.cluster)
    of = settings.db_source or "this file"  # a --db read's rows: its database
    try:
        reader = con.execute(query).fetch_record_batch(ROWS_PER_BATCH)
        for table in batches.whole_nodes(reader, ROWS_PER_BATCH):
            records = pc.unique(table.column("_record")).to_pylist()
            tag = pa.array([contribution] * table.num_rows, pa.string())
            machine = pa.array([stream.cluster] * table.num_rows, pa.string())
            rows = table.append_column("cluster", machine).append_column(CONTRIBUTION, tag)
            yield Batch(
                {"node_io": rows},
                0,
                origins={
                    r: (f"host {nodes[r][0]} ({nodes[r][1]} samples of {of})", None)
                    for r in records
                },
                weights={r: nodes[r][1] for r in records},
                stream=StreamPart(contributions=frozenset([contribution])),
                traffic=traffic,
                record_traffic={r: by_record.pop(r) for r in records if r in by_record},
            )
            traffic = {}
    finally:
        _drop(con, "nodes")
    # the contribution is recomputed even when nothing remains in it
    yield Batch(
        {},
        0,
        stream=StreamPart(contributions=frozenset([contribution])),
        traffic=traffic,
        record_traffic=by_record,
    )


def _duplicates(con: duckdb.DuckDBPyConnection, own: str) -> pa.Table:
    """This file's samples in a region's day that repeat an instant (:data:`DUPLICATES`): of
    an earlier line of the file, else of an earlier member's line (a repeated instant lies
    within one day, so each region finds those of its own day)."""
    within = con.execute(
        "SELECT line_no, node, NULL::VARCHAR AS first_file, first_line, "
        "value = first_value AS same, "
        f"first_value AS kept FROM ({deltas.duplicates_query(f'(SELECT * FROM {own})')})"
    ).fetch_arrow_table()
    con.register("file_duplicates", within)
    try:
        earlier = con.execute(
            "SELECT n.line_no, n.node, o.file AS first_file, o.line_no AS first_line, "
            "n.value = o.value AS same, o.value AS kept "
            f"FROM (SELECT * FROM {own}) n JOIN other_samples o USING (node, item, t_ns) "
            "WHERE n.line_no NOT IN (SELECT line_no FROM file_duplicates) AND o.seq < n.seq "
            "QUALIFY row_number() OVER (PARTITION BY n.line_no ORDER BY o.seq, o.line_no) = 1"
        ).fetch_arrow_table()
    finally:
        con.unregister("file_duplicates")
    return pa.concat_tables([within.cast(DUPLICATES), earlier.cast(DUPLICATES)])


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
    query = deltas.balance_query(
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
    seen = landed + quarantined + gap + reset (see :func:`.deltas.balance_query`; bytes of a
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
        reached = reached_days(part.column("bucket"), part.column("t_ns"), interval)
        found = {(b, d) for b, lo, hi in reached for d in range(lo, hi + 1)}
        regions += [{"c": cluster, "b": b, "d": d} for b, d in found]
    traffic: dict[str, dict[str, int]] = {}
    held = contribution_keys(lake, "node_io", ["node"])  # (region contribution, node) landed
    with duckdb.connect() as con:
        for r in sorted(regions, key=lambda r: (r["c"] or "", r["c"] is not None, r["b"], r["d"])):
            first, last, window = slots(r["d"], interval)
            span = same_machine(r["c"]) & (pc.field("bucket") == r["b"])
            span &= (pc.field("t_ns") >= window[0]) & (pc.field("t_ns") < window[1])
            region = samples.scanner(columns=_SAMPLE_COLUMNS, filter=where & span).to_reader()
            con.register("region", region)
            query = deltas.balance_query(
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


def _duplicate_batches(
    duplicates: pa.Table, spill: Path, source: str | None = None
) -> Iterator[Batch]:
    """The duplicate samples (:data:`DUPLICATES`) as rejects, with their lines (kept in the
    spill by pass 1; ``source``: a --db read's database, :func:`.decode.location`)."""
    if not len(duplicates):
        return
    with duckdb.connect() as con:
        con.register("duplicates", duplicates)
        for lines in decode.spilled_lines(spill):  # a block's duplicates at a time
            numbers = lines.column("line_no")
            rows = con.execute(
                "SELECT line_no, node, first_file, first_line, same, "
                "rtrim(rtrim(CAST(kept AS VARCHAR), '0'), '.') "
                "FROM duplicates WHERE line_no BETWEEN ? AND ? ORDER BY line_no",
                [numbers[0].as_py(), numbers[-1].as_py()],
            ).fetchall()
            if not rows:
                continue
            texts = decode.taken(lines, [row[0] for row in rows]).column("line").to_pylist()
            rejects = [
                Reject(
                    decode.location(n, raw, source, node, "node"),
                    raw,
                    f"duplicate sample of {f'{first_file} ' if first_file else ''}line {first}"
                    + ("" if same else f" with another value (kept {kept})"),
                )
                for (n, node, first_file, first, same, kept), raw in zip(rows, texts, strict=True)
            ]
            yield Batch({}, 0, rejects)


def _store_samples(
    con: duckdb.DuckDBPyConnection, spill: Path, stream: Stream, refused: pa.Table
) -> Iterator[Batch]:
    """Keep this file's samples (but those ``refused``) in the lake for the files that continue
    its items (state rows landing with the file's node_io, see ``StreamPart.state``)."""
    files = sql_literal(spill / decode.samples_pattern())
    same = {  # the file's own columns, repeated by pyarrow (DuckDB would copy them per row)
        "cluster": pa.scalar(stream.cluster, pa.string()),
        "source_id": pa.scalar(stream.source_id, pa.string()),
        "file": pa.scalar(stream.file, pa.string()),
        "seq": pa.scalar(stream.seq, pa.int64()),
    }
    if decode.spilled_samples(spill):
        reader = con.execute(
            "SELECT node, item, metric, kind, make_timestamp(t_ns // 1000) AS ts, t_ns, value, "
            f"bucket, line_no FROM read_parquet({files}, hive_partitioning = true) "
            f"WHERE {overflow.kept(refused)}"
        ).fetch_record_batch(ROWS_PER_BATCH)
        for batch in reader:
            rows = pa.Table.from_batches([batch])
            for name, value in same.items():
                rows = rows.append_column(name, pa.repeat(value, rows.num_rows))
            yield Batch({}, 0, stream=StreamPart(state={STATE_TABLE: rows}))
    yield Batch({}, 0, stream=StreamPart(keep_previous=frozenset(stream.kept)))
