"""Zabbix samples whose traffic a 64-bit sum cannot hold, quarantined line by line.

node_io's byte columns and each file's balance in ``ingest_log`` are 64-bit integers
(:data:`.accounting.MAX_BYTES`, schemas/tables.py). A uint64 counter may hold values up to
2^64 - 1, so rises and resets near 2^63 (a hostile or corrupted export) would take the sums of
paper 004 §2.2's per-node traffic past them. A file whose sums pass ``MAX_BYTES`` in pass 2 of
:mod:`.zabbix` is parsed again (``source.TrafficOverflow``): then, before pass 2, :func:`refuse`
pairs the file's samples with the stream's as :mod:`.counters` does (a sort of all of them,
which only such a file pays for) and quarantines the sample whose pair would take

* the file's traffic of a metric (its ``ingest_log`` balance, 'seen'), or
* a node's traffic of a metric over the whole stream (which bounds each of its node_io
  intervals; the other files' pairs count first)

past ``MAX_BYTES``, with a one-line reason under its ``line N``. A quarantined sample is no
sample: the item's next one pairs with the last one kept, so the check runs again until no pair
passes (at most ``MAX_ROUNDS`` rounds; a file needing more is refused as a whole). A pair counts
whole here wherever it lands (a gap too), so the sums of pass 2 are at most these: the byte
balance of what remains is exact (seen = landed + quarantined + gap + reset).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest import counters, zabbix_lines
from burstlake.jobs.ingest.accounting import MAX_BYTES
from burstlake.jobs.ingest.source import Batch, Reject, UnusableInput
from burstlake.lake import cluster_filter

if TYPE_CHECKING:
    from burstlake.jobs.ingest.zabbix import Stream

LOG = logging.getLogger(__name__)

REFUSED = "overflow_refused"  # temp table: line_no, reason of the samples quarantined here
MAX_ROUNDS = 100  # rounds of :func:`refuse` before the file is refused as a whole
_OTHERS = "overflow_others"
_COLUMNS = "node, item, metric, kind, t_ns, value, line_no, seq"

# A pair's bytes as counters._CLASSED counts them, gap or not: a rate's value over the spacing,
# a counter's rise, or after a drop its value (a jump of MAX_RISE or more counts nothing).
_AMOUNT = """
CASE WHEN kind = 'rate' THEN CAST(round(CAST(value AS DOUBLE) * (t_ns - t_prev) / {ns}) AS HUGEINT)
     WHEN value < v_prev THEN CAST(round(value) AS HUGEINT)
     WHEN value - v_prev >= {max_rise} THEN CAST(0 AS HUGEINT)
     ELSE CAST(round(value - v_prev) AS HUGEINT) END
"""

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
    FROM pairs WHERE t_prev IS NOT NULL
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


def kept(con: duckdb.DuckDBPyConnection) -> str:
    """SQL condition on ``line_no``: the sample was not quarantined here ('true' when none
    was, so pass 2 reads the spill as before)."""
    refused = con.execute(f"SELECT count(*) FROM {REFUSED}").fetchone()[0]
    return f"line_no NOT IN (SELECT line_no FROM {REFUSED})" if refused else "true"


def refuse(con: duckdb.DuckDBPyConnection, spill: Path, stream: Stream) -> None:
    """Quarantine (into :data:`REFUSED`) the file's samples (view ``all_new``) whose pairs
    would take a sum past ``MAX_BYTES`` (module doc)."""
    buckets = pa.array(sorted(zabbix_lines.spilled_buckets(spill)), pa.int32())
    where = pc.field("source_id").isin(pa.array(sorted(stream.others), pa.string()))
    where &= cluster_filter(stream.cluster) & pc.field("bucket").isin(buckets)
    others = stream.scan(where, [c.strip() for c in _COLUMNS.split(",")])
    refused = _rounds(con, "all_new", others, stream.seq)
    LOG.warning("%s: %d samples past a 64-bit traffic sum quarantined", stream.file, refused)


def _rounds(
    con: duckdb.DuckDBPyConnection, samples: str, others: pa.RecordBatchReader, seq: int
) -> int:
    """The rounds of :func:`refuse` over the file's ``samples`` (stream position ``seq``), the
    stream's ``others`` samples of the same node buckets counting first: how many were
    refused."""
    con.register("overflow_reader", others)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_OTHERS} AS SELECT {_COLUMNS} FROM overflow_reader")
    con.unregister("overflow_reader")
    sql = _CROSSINGS.format(
        clean=counters.clean_query(
            f"(SELECT {_COLUMNS} FROM (SELECT *, {int(seq)}::BIGINT AS seq FROM {samples}) "
            f"WHERE line_no NOT IN (SELECT line_no FROM {REFUSED}) "
            f"UNION ALL SELECT {_COLUMNS} FROM {_OTHERS})"
        ),
        seq=int(seq),
        amount=_AMOUNT.format(ns=counters.NS, max_rise=counters.MAX_RISE),
        max_bytes=MAX_BYTES,
    )
    refused = 0
    for _ in range(MAX_ROUNDS):
        found = con.execute(sql).fetchall()
        if not found:
            return refused
        lines = {}
        for sum_of, line_no, node, metric, mine, amount in found:
            if not mine:  # the other files' pairs alone: never seen by an earlier ingest
                raise UnusableInput(
                    f"node {node}'s {metric} traffic passes {MAX_BYTES} bytes (a 64-bit count) "
                    "with this file's samples between the stream's"
                )
            whose = "this file's" if sum_of == "file" else f"node {node}'s"
            lines.setdefault(
                line_no,
                f"{metric}: its {amount} bytes would take {whose} {metric} traffic past "
                f"{MAX_BYTES} bytes, the most a 64-bit count holds (the item's next sample "
                "counts from the one before)",
            )
        con.executemany(f"INSERT INTO {REFUSED} VALUES (?, ?)", list(lines.items()))
        refused += len(lines)
    raise UnusableInput(
        f"more than {refused} samples would take traffic past {MAX_BYTES} bytes (a 64-bit "
        "count): counter values near 2^63?"
    )


def past_64_bits(err: duckdb.ConversionException) -> str:
    """The one-line reason for a file whose node_io interval passed ``MAX_BYTES`` in pass 2
    (DuckDB's cast to BIGINT failed): the first parse's cue to parse again with
    :func:`refuse`, and the file's reason if the interval passes it even then."""
    detail = str(err).splitlines()[0] if str(err) else type(err).__name__
    return f"a node_io interval's traffic passes {MAX_BYTES} bytes (a 64-bit count): {detail}"


def rejects(con: duckdb.DuckDBPyConnection, spill: Path) -> Iterator[Batch]:
    """The quarantined samples as rejects, with their lines (kept in the spill by pass 1)."""
    if not con.execute(f"SELECT count(*) FROM {REFUSED}").fetchone()[0]:
        return
    for lines in zabbix_lines.spilled_lines(spill):
        numbers = lines.column("line_no")
        rows = con.execute(
            f"SELECT line_no, reason FROM {REFUSED} WHERE line_no BETWEEN ? AND ? ORDER BY line_no",
            [numbers[0].as_py(), numbers[-1].as_py()],
        ).fetchall()
        if rows:
            texts = zabbix_lines.taken(lines, [n for n, _ in rows]).column("line").to_pylist()
            yield Batch(
                {},
                0,
                [Reject(f"line {n}", raw, why) for (n, why), raw in zip(rows, texts, strict=True)],
            )
