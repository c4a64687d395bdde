"""Zabbix samples whose traffic a 64-bit sum cannot hold, quarantined line by line.

node_io's byte columns and each file's balance in ``ingest_log`` are 64-bit integers
(:data:`.accounting.MAX_BYTES`, schemas/tables.py). A uint64 counter may hold values up to
2^64 - 1, so rises and resets near 2^63 (a hostile or corrupted export) would take the sums of
paper 004 §2.2's per-node traffic past them. Pass 2 (:mod:`.regions`) keeps its node_io rows
aside until it knows the file's sums hold (:func:`overflowing`); a file whose sums pass
``MAX_BYTES`` has them discarded, and :func:`refuse` pairs the file's samples with the stream's
as :mod:`.deltas` does (a sort of all of them, which only such a file pays for) and quarantines
the sample whose pair would take

* the file's traffic of a metric (its ``ingest_log`` balance, 'seen'), or
* a node's traffic of a metric over the whole stream (which bounds each of its node_io
  intervals; the other files' pairs count first)

past ``MAX_BYTES``, with a one-line reason under its ``line N``; then pass 2 runs again without
them. A quarantined sample is no sample: the item's next one pairs with the last one kept, so
the check runs again until no pair passes (at most ``MAX_ROUNDS`` rounds; a file needing more
is refused as a whole). A pair counts whole here wherever it lands (a gap too), so the sums of
pass 2 are at most these: the byte balance of what remains is exact (seen = landed +
quarantined + gap + reset).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest.accounting import MAX_BYTES, overflowing
from burstlake.jobs.ingest.source import Batch, Reject, UnusableInput
from burstlake.jobs.ingest.zabbix import decode, deltas
from burstlake.jobs.ingest.zabbix.stream import Stream
from burstlake.lake import cluster_filter

LOG = logging.getLogger(__name__)

MAX_ROUNDS = 100  # rounds of :func:`refuse` before the file is refused as a whole
_COLUMNS = "node, item, metric, kind, t_ns, value, line_no, seq"
# the samples quarantined here: their line and reason
REFUSED = pa.schema([("line_no", pa.int64()), ("reason", pa.string()), ("node", pa.string())])

# The first pair of the file taking a sum past MAX_BYTES: per metric over the file (in time
# order), per node and metric over the stream (the other files' pairs first).
_CROSSINGS = """
WITH clean AS ({clean}),
pairs AS (
    SELECT *, lag(t_ns) OVER s AS t_prev, lag(value) OVER s AS v_prev
    FROM clean WHERE kind IN ('counter', 'rate')
    WINDOW s AS (PARTITION BY node, item ORDER BY t_ns)
),
amounts AS (
    SELECT node, item, metric, t_ns, line_no, seq, seq = {seq} AS mine, {amount} AS amount
    FROM (SELECT *, t_ns - t_prev AS spacing, value - v_prev AS rise FROM pairs)
    WHERE t_prev IS NOT NULL
),
summed AS (
    SELECT *,
           sum(CASE WHEN mine THEN amount ELSE 0 END) OVER (PARTITION BY metric
               ORDER BY t_ns, node, item ROWS UNBOUNDED PRECEDING) AS file_sum,
           sum(amount) OVER (PARTITION BY node, metric
               ORDER BY mine, seq, t_ns, item ROWS UNBOUNDED PRECEDING) AS node_sum
    FROM amounts
)
(SELECT 'file' AS sum_of, line_no, node, metric, mine, amount FROM summed
 WHERE mine AND file_sum > {max_bytes}
 QUALIFY row_number() OVER (PARTITION BY metric ORDER BY t_ns, node, item) = 1)
UNION ALL
(SELECT 'node', line_no, node, metric, mine, amount FROM summed WHERE node_sum > {max_bytes}
 QUALIFY row_number() OVER (PARTITION BY node, metric ORDER BY mine, seq, t_ns, item) = 1)
"""


class Overflow(Exception):
    """Pass 2 found a sum of the file past ``MAX_BYTES``: its rows are discarded and the
    samples taking it there refused (:func:`refuse`)."""


def kept(refused: pa.Table) -> str:
    """SQL condition on ``line_no``: the sample was not quarantined here ('true' when none
    was, so pass 2 reads the spill as before)."""
    numbers = refused.column("line_no").to_pylist()
    return f"line_no NOT IN ({', '.join(str(int(n)) for n in numbers)})" if numbers else "true"


def refuse(
    con: duckdb.DuckDBPyConnection, spill: Path, stream: Stream, samples: duckdb.DuckDBPyRelation
) -> pa.Table:
    """The file's ``samples`` whose pairs would take a sum past ``MAX_BYTES`` (module doc):
    their line and reason (:data:`REFUSED`)."""
    buckets = pa.array(sorted(decode.spilled_buckets(spill)), pa.int32())
    where = pc.field("source_id").isin(pa.array(sorted(stream.others), pa.string()))
    where &= cluster_filter(stream.cluster) & pc.field("bucket").isin(buckets)
    others = stream.scan(where, [c.strip() for c in _COLUMNS.split(",")])
    refused = _rounds(con, samples, others, stream.seq)
    LOG.warning("%s: %d samples past a 64-bit traffic sum quarantined", stream.file, len(refused))
    return refused


def _rounds(
    con: duckdb.DuckDBPyConnection,
    samples: duckdb.DuckDBPyRelation,
    others: pa.RecordBatchReader,
    seq: int,
) -> pa.Table:
    """The rounds of :func:`refuse` over the file's ``samples`` (stream position ``seq``), the
    stream's ``others`` samples of the same node buckets counting first: the refused lines."""
    # names seen by this function's statements alone, dropped at its end
    con.register("overflow_reader", others)
    con.execute("CREATE OR REPLACE TEMP TABLE overflow_others AS SELECT * FROM overflow_reader")
    con.unregister("overflow_reader")
    samples.create_view("overflow_new", replace=True)
    con.execute(
        "CREATE OR REPLACE TEMP TABLE overflow_refused "
        "(line_no BIGINT, reason VARCHAR, node VARCHAR)"
    )
    sql = _CROSSINGS.format(
        clean=deltas.clean_query(
            f"(SELECT {_COLUMNS} FROM (SELECT *, {int(seq)}::BIGINT AS seq FROM overflow_new) "
            "WHERE line_no NOT IN (SELECT line_no FROM overflow_refused) "
            f"UNION ALL SELECT {_COLUMNS} FROM overflow_others)"
        ),
        seq=int(seq),
        amount=deltas.amount_sql(),
        max_bytes=MAX_BYTES,
    )
    try:
        for _ in range(MAX_ROUNDS):
            found = con.execute(sql).fetchall()
            if not found:
                return (
                    con.execute("SELECT * FROM overflow_refused ORDER BY line_no")
                    .fetch_arrow_table()
                    .cast(REFUSED)
                )
            lines = {}
            for sum_of, line_no, node, metric, mine, amount in found:
                if not mine:  # the other files' pairs alone: never seen by an earlier ingest
                    raise UnusableInput(
                        f"node {node}'s {metric} traffic passes {MAX_BYTES} bytes (a 64-bit "
                        "count) with this file's samples between the stream's"
                    )
                whose = "this file's" if sum_of == "file" else f"node {node}'s"
                lines.setdefault(
                    line_no,
                    (
                        f"{metric}: its {amount} bytes would take {whose} {metric} traffic past "
                        f"{MAX_BYTES} bytes, the most a 64-bit count holds (the item's next "
                        "sample counts from the one before)",
                        node,
                    ),
                )
            con.executemany(
                "INSERT INTO overflow_refused VALUES (?, ?, ?)",
                [(n, why, node) for n, (why, node) in lines.items()],
            )
        refused = con.execute("SELECT count(*) FROM overflow_refused").fetchone()[0]
        raise UnusableInput(
            f"more than {refused} samples would take traffic past {MAX_BYTES} bytes (a 64-bit "
            "count): counter values near 2^63?"
        )
    finally:
        con.execute("DROP VIEW IF EXISTS overflow_new")
        con.execute("DROP TABLE IF EXISTS overflow_others")
        con.execute("DROP TABLE IF EXISTS overflow_refused")


def past_64_bits(err: duckdb.ConversionException) -> str:
    """The one-line reason for a file whose node_io interval passed ``MAX_BYTES`` in pass 2
    (DuckDB's cast to BIGINT failed): pass 2's cue to :func:`refuse`, and the file's reason if
    the interval passes it even then."""
    detail = str(err).splitlines()[0] if str(err) else type(err).__name__
    return f"a node_io interval's traffic passes {MAX_BYTES} bytes (a 64-bit count): {detail}"


def past_file_sum(traffic: dict[str, dict[str, int]]) -> str | None:
    """The one-line reason for a file whose balance of a metric passes ``MAX_BYTES`` (None:
    none does): pass 2's cue to :func:`refuse`, and the file's reason if it passes it even
    then."""
    metric = overflowing(traffic)
    if metric is None:
        return None
    return (
        f"its {metric} traffic passes {MAX_BYTES} bytes, the most a 64-bit byte count "
        "holds (counter values near 2^63?)"
    )


def rejects(refused: pa.Table, spill: Path, source: str | None = None) -> Iterator[Batch]:
    """The quarantined samples (:data:`REFUSED`) as rejects, with their lines (kept in the
    spill by pass 1; ``source``: a --db read's database, :func:`.decode.location`)."""
    if not len(refused):
        return
    numbers, reasons, nodes = (refused.column(c).to_pylist() for c in REFUSED.names)
    reasons = dict(zip(numbers, zip(reasons, nodes, strict=True), strict=True))
    for lines in decode.spilled_lines(spill):
        numbers = lines.column("line_no")
        first, last = numbers[0].as_py(), numbers[-1].as_py()
        rows = sorted((n, why) for n, why in reasons.items() if first <= n <= last)
        if rows:
            texts = decode.taken(lines, [n for n, _ in rows]).column("line").to_pylist()
            yield Batch(
                {},
                0,
                [
                    Reject(decode.location(n, raw, source, node, "node"), raw, why)
                    for (n, (why, node)), raw in zip(rows, texts, strict=True)
                ],
            )
