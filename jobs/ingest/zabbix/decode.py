"""Pass 1 of the Zabbix ingest (the package doc): a file's lines, decoded and classified in
DuckDB SQL block by block; rejects go to quarantine with their line and reason, host names
become node names, and the samples are spilled to Parquet by node bucket.

Decoding NDJSON has two paths giving the same fields: pyarrow's JSON reader takes a whole
block at once (:func:`_read_block` and :func:`_members`, the fast path), DuckDB's JSON
functions take it line by line (``_JSON_MEMBERS``). A block the fast path cannot read as one
object per line goes line by line, and the lines it classifies as rejects are classified again
line by line, so every reason quotes the input as the line-by-line path reads it. Before any
SQL, the lines of a block the fast path read that :func:`.classify.split` vouches for are
samples at once (tests/ingest/test_zabbix_fast.py checks both against the line-by-line path).

See the package doc for the input shapes and the accounting.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from burstlake.jobs.ingest import inputs
from burstlake.jobs.ingest.source import Batch, ParseContext, Reject, UnusableInput
from burstlake.jobs.ingest.zabbix import classify
from burstlake.jobs.ingest.zabbix.mapping import IGNORE, HostNames
from burstlake.jobs.ingest.zabbix.settings import Settings

LOG = logging.getLogger(__name__)
BLOCK_BYTES = 16 << 20  # text decoded per pass-1 step
HISTORY_COLUMNS = ("itemid", "clock", "value")  # required in DB-shape headers; ns optional
RAW = "raw"  # spill folder: each block's bytes (zstd), named by its first line number
# Spill folder of the samples: ``bucket=B/block-N-I.parquet`` (snappy: cheaper to write than
# zstd, and read back twice at most), one folder per node bucket for all blocks (not one per
# block and bucket: removing a thousand folders takes seconds on a virtual disk, about 3 ms
# each, where removing their files takes 0.1 s).
SAMPLES = "samples"


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
    if block.isascii():  # the usual export: no decoding needed
        text = pa.array([block], pa.binary()).cast(pa.string())
    else:
        text = pa.array([block.decode("utf-8", errors="replace")], pa.string())
    lines = pc.list_flatten(pc.split_pattern(text, "\n"))
    if b"\r" in block:
        lines = pc.utf8_rtrim(lines, characters="\r")
    numbers = pa.array(np.arange(first, first + len(lines), dtype=np.int64))
    return pa.table({"line_no": numbers, "line": lines})


# The member types the fast path takes as the text DuckDB's JSON functions would give; any
# other (an array, an object, a value too large for a double to hold exactly) sends the block
# to the line-by-line decoder.
_MEMBERS = ("itemid", "name", "key_", "clock", "ns", "value", "type")
_AS_TEXT = (pa.types.is_string, pa.types.is_int64, pa.types.is_null)
_EXACT_DOUBLE = 2.0**53
_TEXT_MEMBERS = ("name", "key_")  # the others are numbers in Zabbix's own export
_SCHEMA = pa.schema(
    [
        ("host", pa.struct([("host", pa.string())])),
        *((m, pa.string() if m in _TEXT_MEMBERS else pa.int64()) for m in _MEMBERS),
    ]
)


def _read_json(data: bytes, threads: bool) -> pa.Table | None:
    """The block's objects, read by pyarrow's JSON reader (with the export's usual member
    types, else inferred); None if it cannot read them."""
    reads = pa_json.ReadOptions(use_threads=threads, block_size=max(len(data), 1 << 20))
    for parse in (
        pa_json.ParseOptions(explicit_schema=_SCHEMA, unexpected_field_behavior="ignore"),
        pa_json.ParseOptions(),
    ):
        try:
            return pa_json.read_json(pa.py_buffer(data), read_options=reads, parse_options=parse)
        except pa.ArrowInvalid:
            continue
    return None


def _as_text(column: pa.ChunkedArray, name: str) -> pa.ChunkedArray | None:
    """A member as the text DuckDB's ``json_extract_string`` gives (same value), or None."""
    kind = column.type
    if any(test(kind) for test in _AS_TEXT):
        return column.cast(pa.string())
    if name == "value" and pa.types.is_float64(kind):
        finite = pc.and_(pc.is_finite(column), pc.less(pc.abs(column), _EXACT_DOUBLE))
        if pc.all(pc.fill_null(finite, True)).as_py():
            return column.cast(pa.string())
    return None


def _one_object_a_line(lines: pa.Table) -> bool:
    """Every line starts with ``{`` and ends with ``}`` (spaces and tabs around them aside)."""

    def braced(text: pa.ChunkedArray) -> bool:
        return pc.all(pc.starts_with(text, "{")).as_py() and pc.all(pc.ends_with(text, "}")).as_py()

    text = lines.column("line")
    return braced(text) or braced(pc.utf8_trim(text, " \t"))  # the usual export needs no trim


def _plain_utf8(data: bytes) -> bool:
    """The text is UTF-8 without U+FFFD (which marks bytes that were not UTF-8 in ``line``)."""
    if data.isascii():
        return True
    try:
        return "\ufffd" not in data.decode("utf-8")
    except UnicodeDecodeError:
        return False


def _read_block(data: bytes, lines: pa.Table, threads: bool = False) -> pa.Table | None:
    """Fast path of the NDJSON decoder: a block's objects, all read at once by pyarrow (about
    10x DuckDB's per-line JSON functions), one row per line; None when the block needs the
    per-line decoder (a line that is not one JSON object, a blank line, bytes not UTF-8).

    A line is one object iff every line starts with ``{`` and ends with ``}`` and pyarrow
    reads as many objects as there are lines (an object spanning lines would end a line
    inside it)."""
    if not _one_object_a_line(lines) or not _plain_utf8(data):
        return None
    table = _read_json(data, threads)
    if table is None or table.num_rows != lines.num_rows:
        return None
    return table


def _members(table: pa.Table, lines: pa.Table) -> pa.Table | None:
    """The members of lines :func:`_read_block` read (``table``, its rows those of ``lines``)
    as _JSON_MEMBERS gives them; None when a member has a type the fast path does not take
    (then the block goes to the per-line decoder)."""
    rows = lines.num_rows
    absent = pa.chunked_array([pa.nulls(rows, pa.string())])
    host = table.column("host") if "host" in table.column_names else absent
    if pa.types.is_struct(host.type):
        nested = host.type.get_field_index("host") >= 0
        host_host = _as_text(pc.struct_field(host, "host"), "host") if nested else absent
        host_any = absent  # an object: DuckDB's text of it starts with '{'
    else:
        host_host, host_any = absent, _as_text(host, "host")
    fields = {"host_host": host_host, "host_any": host_any}
    for name in _MEMBERS:
        fields[name] = _as_text(table.column(name), name) if name in table.column_names else absent
    if any(column is None for column in fields.values()):
        return None
    length = pc.cast(pc.binary_length(lines.column("line")), pa.int64())
    plain = pa.chunked_array([pa.array(np.zeros(rows, dtype=bool))])  # _plain_utf8 held
    return pa.table(
        {
            "line_no": lines.column("line_no"),
            "line_len": length,
            "replaced": plain,
            "bad": absent,
            **fields,
        }
    )


# ------------------------------------------------------------------ decoding (pass 1)

# Each decoder turns ``lines`` into fields (text, or NULL where absent) and a first ``bad``.
# NDJSON: each line's members as text (``host_host``: host.host; ``host_any``: host), read by
# DuckDB's JSON functions line by line (_JSON_MEMBERS) or by pyarrow's JSON reader for a whole
# block (:func:`_members`), then _NDJSON_FIELDS.
_JSON_MEMBERS = """
SELECT line_no, strlen(line) AS line_len, contains(line, chr(65533)) AS replaced,
       CASE WHEN trim(line, ' ' || chr(9)) = '' THEN 'empty line'
            WHEN NOT json_valid(line) THEN 'not valid JSON (truncated line?)'
            WHEN json_type(line) <> 'OBJECT' THEN 'not a JSON object' END AS bad,
       f[1] AS host_host, f[2] AS host_any, f[3] AS itemid, f[4] AS name, f[5] AS key_,
       f[6] AS clock, f[7] AS ns, f[8] AS value, f[9] AS type
FROM (
    SELECT line_no, line,
           try(json_extract_string(line, ['$.host.host', '$.host', '$.itemid', '$.name',
               '$.key_', '$.clock', '$.ns', '$.value', '$.type'])) AS f
    FROM lines
)
"""

_NDJSON_FIELDS = """
SELECT line_no, line_len, replaced, bad,
       coalesce(host_host, CASE WHEN NOT starts_with(host_any, '{{') THEN host_any END) AS host,
       itemid, name, key_, clock, ns, value, type
FROM ({members})
"""

_DELIMITED = """
SELECT line_no, strlen(line) AS line_len, contains(line, chr(65533)) AS replaced,
       CASE WHEN trim(line, ' ' || chr(9)) = '' THEN 'empty line'
            WHEN len(f) <> {width} THEN 'expected {width} fields ({header}), found ' || len(f)
       END AS bad,
       NULL::VARCHAR AS host, trim(f[{itemid}], '" ') AS itemid, NULL::VARCHAR AS name,
       NULL::VARCHAR AS key_,
       trim(f[{clock}], '" ') AS clock, {ns} AS ns, trim(f[{value}], '" ') AS value,
       NULL::VARCHAR AS type
FROM (SELECT line_no, line, string_split(line, '{delimiter}') AS f FROM lines)
"""


def _decoder(header: str | None) -> str:
    """The decoder SQL for NDJSON (``header`` None) or a CSV/TSV with this header line."""
    if header is None:
        return _NDJSON_FIELDS.format(members=_JSON_MEMBERS)
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
    with open(path, "rb") as head:
        try:
            inputs.check_text(head.read(inputs.SNIFF_BYTES))
        except UnusableInput as err:
            raise ValueError(f"item table {path}: {err}") from None
    try:
        found = con.execute(
            "SELECT * FROM read_csv(?, header = true, all_varchar = true) LIMIT 0", [str(path)]
        ).description
    except duckdb.Error as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ValueError(f"item table {path}: cannot read it as CSV/TSV: {first}") from None
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
    params: dict[str, Any]  # SQL parameters of :data:`.classify.CLASSIFY`
    bucket_sql: str  # SQL of the node bucket of m.node
    threads: bool  # pyarrow may use its thread pool
    source: str | None = None  # a --db read's database (:func:`location`)
    classify: str | None = None  # chosen from the first block
    fast: str | None = None  # NDJSON: the classifier over the members pyarrow read (_members)
    rules: classify.Rules | None = None  # the mapping's checks (None: no sure samples)
    ignored: int = 0  # lines of items on the mapping's ignore list
    # host name -> (node, why it names none, node bucket), as the file's lines taught them
    hostmap: dict[str, tuple[str | None, str | None, int | None]] = field(default_factory=dict)

    def block(self, n: int, data: bytes, lines: pa.Table) -> tuple[int, list[Reject]]:
        """Classify a block (``data``: its text, ``lines``: the same as :func:`_lines`): spill
        its samples by node bucket; return its records and rejects."""
        if self.classify is None:
            decoder, lines = _first_block(lines)
            self.classify = classify.CLASSIFY.format(decoder=decoder)
            if decoder == _decoder(None):
                members = _NDJSON_FIELDS.format(members="SELECT * FROM members")
                self.fast = classify.CLASSIFY.format(decoder=members)
        samples, rejected = self._decode(data, lines)
        self._learn_hosts(samples)
        hosts = pc.dictionary_encode(samples.column("host").combine_chunks())
        known = [self.hostmap[h] for h in hosts.dictionary.to_pylist()]
        node, reason, bucket = (
            pc.take(pa.array([k[i] for k in known], kind), hosts.indices)
            for i, kind in enumerate((pa.string(), pa.string(), pa.int32()))
        )
        named = pc.is_null(reason)
        rows = samples.drop_columns(["host"]).filter(named)
        self._spill(n, rows, node.filter(named), bucket.filter(named))
        unnamed = pc.invert(named)
        rejected += zip(
            samples.column("line_no").filter(unnamed).to_pylist(),
            reason.filter(unnamed).to_pylist(),
            strict=True,
        )
        rejected.sort()
        texts = taken(lines, [no for no, _ in rejected]).column("line").to_pylist()
        hosts = self._hosts(samples.filter(unnamed)) if self.source else {}
        return lines.num_rows, [
            Reject(location(no, text, self.source, hosts.get(no)), text, why)
            for (no, why), text in zip(rejected, texts, strict=True)
        ]

    def _hosts(self, unnamed: pa.Table) -> dict[int, str]:
        """The host names of the block's rejected lines, where known (a DB read's rows: the
        classifier took every line of the block, see :func:`location`)."""
        found = dict(
            self.con.execute(
                "SELECT line_no, host FROM decoded WHERE reason IS NOT NULL AND host IS NOT NULL"
            ).fetchall()
        )
        found.update(
            zip(*(unnamed.column(c).to_pylist() for c in ("line_no", "host")), strict=True)
        )
        return found

    def _decode(self, data: bytes, lines: pa.Table) -> tuple[pa.Table, list[tuple[int, str]]]:
        """The block's samples (:data:`.classify.SAMPLES`, host names not yet nodes) and
        its rejects (line number, reason): the lines :func:`.classify.split` vouches for
        are samples, the classifier SQL takes the others."""
        read = _read_block(data, lines, self.threads) if self.fast else None
        if read is None:
            self._classify("decoded", self.classify, lines=lines)
            return self._decoded()
        sure, others, ignored = classify.split(read, lines, self.rules)
        self.ignored += ignored
        if not len(others):
            return sure, []
        if len(others) < lines.num_rows:
            read, rest = read.take(others), lines.take(others)
        else:
            rest = lines
        members = _members(read, rest)
        if members is None:
            self._classify("decoded", self.classify, lines=rest)
        else:
            self._classify("decoded", self.fast, members=members)
            self._recheck(lines)
        found, rejected = self._decoded()
        return pa.concat_tables([sure, found]), rejected

    def _decoded(self) -> tuple[pa.Table, list[tuple[int, str]]]:
        """The samples and rejects of table ``decoded``; its ignored lines are counted."""
        found = self.con.execute(
            "SELECT line_no, host, item, metric, kind, t_ns, value FROM decoded "
            "WHERE reason IS NULL"
        ).fetch_arrow_table()
        self.ignored += self.con.execute(
            f"SELECT count(*) FROM decoded WHERE reason = '{IGNORE}'"
        ).fetchone()[0]
        numbers, reasons = self._rejected()
        return found.cast(classify.SAMPLES), list(zip(numbers, reasons, strict=True))

    def _spill(self, n: int, samples: pa.Table, nodes: pa.Array, buckets: pa.Array) -> None:
        """Write block ``n``'s samples (their host names replaced by ``nodes``) to one Parquet
        file per node bucket (:func:`samples_pattern`)."""
        if not len(buckets):
            return
        order = pc.sort_indices(buckets)
        rows = samples.add_column(1, "node", nodes).take(order)
        sorted_buckets = buckets.take(order).to_numpy()
        starts = np.flatnonzero(np.diff(sorted_buckets, prepend=-1))
        for start, end in zip(starts, [*starts[1:], len(sorted_buckets)], strict=True):
            folder = self.root / SAMPLES / f"bucket={sorted_buckets[start]}"
            folder.mkdir(exist_ok=True)
            part = rows.slice(start, end - start)
            pq.write_table(part, folder / f"block-{n:06d}.parquet", compression="snappy")

    def _rejected(self) -> tuple[list[int], list[str]]:
        """The line numbers and reasons of the block's rejects (ignored items aside), in order.
        ``decoded`` holds no line text: a reject's line is taken from the block (:func:`taken`)."""
        rows = self.con.execute(
            "SELECT line_no, reason FROM decoded WHERE reason IS NOT NULL "
            f"AND reason <> '{IGNORE}' ORDER BY line_no"
        ).fetchall()
        return [no for no, _ in rows], [reason for _, reason in rows]

    def _classify(self, into: str, sql: str, **frames: pa.Table) -> None:
        """Temp table ``into`` := the classifier ``sql`` over ``frames`` (each seen by its name
        for the one statement)."""
        for name, frame in frames.items():
            self.con.register(name, frame)
        try:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE {into} AS {sql}", self.params)
        finally:
            for name in frames:
                self.con.unregister(name)

    def _recheck(self, lines: pa.Table) -> None:
        """The lines the fast path rejects (other than ignored items) classified again line by
        line: their reasons quote the input as DuckDB's JSON functions read it."""
        con = self.con
        numbers, _ = self._rejected()
        if not numbers:
            return
        self._classify("rechecked", self.classify, lines=taken(lines, numbers))
        con.execute("DELETE FROM decoded WHERE line_no IN (SELECT line_no FROM rechecked)")
        con.execute("INSERT INTO decoded SELECT * FROM rechecked")

    def _learn_hosts(self, samples: pa.Table) -> None:
        """Add the new host names of a block's samples to ``hostmap``, in the order of their
        first lines: their node name and bucket, or why they have none (it is empty, or
        another host name of the file already gives it: ``cn1`` and ``cn1.example.org`` are
        one node, and counting both would double its traffic)."""
        hosts = pc.unique(samples.column("host")).to_pylist()
        if all(host in self.hostmap for host in hosts):
            return
        first = samples.group_by("host").aggregate([("line_no", "min")])
        known = pa.array(list(self.hostmap), pa.string())
        first = first.filter(pc.invert(pc.is_in(first.column("host"), known)))
        new = first.sort_by("line_no_min").column("host").to_pylist()
        taken = {node: host for host, (node, _, _) in self.hostmap.items() if node is not None}
        rows = []
        for host in new:
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
        try:
            found = self.con.execute(
                f"SELECT host, node, reason, {self.bucket_sql} FROM new_hosts m"
            ).fetchall()
        finally:
            self.con.unregister("new_hosts")
        self.hostmap.update((host, (node, reason, bucket)) for host, node, reason, bucket in found)


def location(
    number: int, raw: str | None, source: str | None, node: str | None = None, of: str = "host"
) -> str:
    """Where a rejected line is, as its quarantine row says: ``line N`` of the file, or for the
    rows of a ``--db`` read (``source``, :func:`.database.source`), the database row, which
    outlives the read's scratch file: ``db URL item I clock C ns N`` and its host (``of``
    ``node``) where known."""
    fields = (raw or "").split("\t")
    if source is None or len(fields) != 4:
        return f"line {number}" if source is None else f"{source} line {number}"
    item, clock, _, ns = fields
    return f"{source} item {item} clock {clock} ns {ns or 'null'}" + (
        f" ({of} {node})" if node else ""
    )


def taken(lines: pa.Table, numbers: list[int]) -> pa.Table:
    """The rows of a block's ``lines`` (numbered consecutively) with these line numbers."""
    if not numbers:
        return lines.slice(0, 0)
    first = lines.column("line_no")[0].as_py()
    return lines.take(pc.subtract(pa.array(numbers, pa.int64()), first))


def samples_pattern(bucket: int | str = "*") -> str:
    """The spill's Parquet files of the samples of one node bucket (default all), as a glob
    relative to the spill folder."""
    return f"{SAMPLES}/bucket={bucket}/*.parquet"


def spilled_samples(spill: Path, bucket: int | str = "*") -> list[Path]:
    """The Parquet files of the samples pass 1 spilled, of one node bucket (default all)."""
    return sorted(spill.glob(samples_pattern(bucket)))


def spilled_buckets(spill: Path) -> set[int]:
    """The node buckets pass 1 spilled samples of."""
    return {int(p.name.split("=", 1)[1]) for p in (spill / SAMPLES).glob("bucket=*")}


def spilled_lines(spill: Path) -> Iterator[pa.Table]:
    """The file's blocks as pass 1 read them (:func:`_lines`: ``line_no``, ``line``), from the
    bytes it kept in the spill, in order."""
    for path in sorted((spill / RAW).iterdir()):
        with pa.input_stream(path, compression="zstd") as kept:
            yield _lines(kept.read(), int(path.name))


def pass_one(
    path: Path,
    context: ParseContext,
    con: duckdb.DuckDBPyConnection,
    spill: Path,
    settings: Settings,
    bucket_sql: str,
) -> Iterator[Batch]:
    """Decode the file block by block; yields one batch of records and rejects per block.
    A broken compressed stream is one more record: the unreadable rest of the file."""
    con.register("mapping", settings.mapping.table())
    _load_items(con, settings.items)
    params = classify.params(settings)
    (spill / RAW).mkdir()
    (spill / SAMPLES).mkdir()
    state = _Spill(
        con, spill, settings.hosts, params, bucket_sql, settings.threads > 1, settings.db_source
    )
    if settings.items is None:  # an item table may name the host or key: the classifier's
        state.rules = classify.Rules.of(
            settings.mapping.table(), settings.interval, settings.latest_clock
        )
    first = 1
    try:
        for n, block in enumerate(_blocks(_bytes(path, context.progress))):
            lines = _lines(block, first)
            with pa.output_stream(spill / RAW / f"{first:012d}", compression="zstd") as out:
                out.write(block)
            first += lines.num_rows
            records, rejects = state.block(n, block, lines)
            yield Batch({}, records, rejects)
    except inputs.BrokenStream as err:
        reason = f"{err}; the rest of the file after line {first - 1} is lost"
        yield Batch({}, 1, [Reject(f"byte {err.offset}", None, reason)])
    else:
        if first == 1:
            raise UnusableInput("empty file: no Zabbix history lines")
    finally:  # pass 1's names: pass 2 reads the spill alone
        con.unregister("mapping")
        for table in ("items", "decoded", "rechecked"):
            con.execute(f"DROP TABLE IF EXISTS {table}")
    if state.ignored:
        LOG.info("%s: %d lines of items on the ignore list (landed, unused)", path, state.ignored)


def _first_block(lines: pa.Table) -> tuple[str, pa.Table]:
    """Pick the decoder from the first non-empty line; drop a CSV/TSV header line. A JSON
    document that is not one history object per line (``sacct --json``, a pretty-printed
    API answer) is refused whole."""
    texts = lines.column("line").to_pylist()
    first = next((t for t in texts if t.strip()), "")
    if first.lstrip().startswith(("{", "[")) or not first:
        _check_export(first.strip())
        return _decoder(None), lines
    return _decoder(texts[0]), lines.slice(1)


def _check_export(first: str) -> None:
    """UnusableInput unless the first line of a JSON file is a history object (it has a
    ``clock``, and a ``host`` or an ``itemid``)."""
    if not first:
        return
    try:
        record = json.loads(first)
    except ValueError:
        if first in ("{", "["):
            raise UnusableInput(
                "a multi-line JSON document, not a Zabbix export (one JSON object per line)"
            ) from None
        return  # a broken first line is refused alone
    if (
        not isinstance(record, dict)
        or "clock" not in record
        or not ("host" in record or "itemid" in record)
    ):
        keys = ", ".join(list(record)[:5]) if isinstance(record, dict) else type(record).__name__
        raise UnusableInput(
            f"a JSON document ({keys}), not a Zabbix history export: its first line has no "
            "clock and host or itemid"
        )
