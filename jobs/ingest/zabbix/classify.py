"""The line classification of pass 1 (:mod:`.decode`): whether a decoded line is a sample,
or the reason it is quarantined, in one place.

:data:`CLASSIFY` is the rule, in DuckDB SQL over the fields any decoder gives (text, as the
input spells them). Its quickest step is :func:`split`: the lines of a block that are surely
samples, told from the numbers pyarrow's JSON reader already parsed. The rule reads every member
as text and parses numbers again, which is most of pass 1's cost on a usual export (the rule
over the typed columns instead costs about 9 times :func:`split` per block: 0.09 s against
0.01 s for 14 MB). A block read with the export's own member types
(:data:`.decode._SCHEMA`: ``host.host``, ``name`` and ``key_`` text, the others integers) is
first split here. A line is **surely a sample** when
each check the classifier makes passes with room to spare: a host name that is not blank, an
itemid, no ``key_`` (so the item is matched by name alone), a name the mapping maps with
scale 1, a clock and ns in range, a value that is an integer >= 0 (well within 64 bits once a
rate is multiplied by the interval) and a value type absent, 0 or 3. Its sample is then what the
classifier would give (an integer value is the same DECIMAL(38, 6) by either reading), and a
line that passes them all but names an item the mapping ignores is an ignored line. Every
other line (a reject, or a sample these checks do not vouch for) goes to the classifier as
before; so what lands, and every reason, is the classifier's
(tests/ingest/test_zabbix_fast.py compares the two on lines of every kind).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest import inputs
from burstlake.jobs.ingest.zabbix.mapping import IGNORE
from burstlake.jobs.ingest.zabbix.settings import Settings

# A sample as pass 1 spills it before host names become node names.
SAMPLES = pa.schema(
    [
        ("line_no", pa.int64()),
        ("host", pa.string()),
        ("item", pa.string()),
        ("metric", pa.string()),
        ("kind", pa.string()),
        ("t_ns", pa.int64()),
        ("value", pa.decimal128(38, 6)),
    ]
)
_INTEGERS = ("itemid", "clock", "ns", "value", "type")
LAST_CLOCK = 4102444799  # the last Unix time in seconds a sample may have (2099-12-31)
_NS = 1_000_000_000
_NUMERIC_TYPES = pa.array([0, 3], pa.int64())  # value types: 0 float, 3 unsigned


# Classifies every decoded line: a ``reason`` to quarantine it, or a sample.
CLASSIFY = """
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
           -- (scale 1, the usual, skips DuckDB's slow 128-bit product: the same value)
           CASE WHEN CAST(number AS DOUBLE) * CAST(coalesce(k.scale, n.scale) AS DOUBLE) < 1e20
                THEN CASE WHEN coalesce(k.scale, n.scale) = 1 THEN number
                          ELSE CAST(number * coalesce(k.scale, n.scale) AS DECIMAL(38, 6)) END
           END AS scaled
    FROM resolved r
    LEFT JOIN mapping k ON k.match = 'key' AND k.ident = r.item_key
    LEFT JOIN mapping n ON n.match = 'name' AND n.ident = r.item_name
)
SELECT line_no,
    CASE WHEN line_len > $max_line THEN $too_long
         WHEN bad IS NOT NULL THEN bad
         WHEN replaced THEN $not_utf8
         WHEN clock IS NULL THEN 'no clock'
         WHEN value IS NULL THEN 'no value'
         WHEN value_type IS NOT NULL AND value_type NOT IN ('0', '3') THEN
              'value type ' || value_type || coalesce(' (' || CASE value_type WHEN '1'
              THEN 'character' WHEN '2' THEN 'log' WHEN '4' THEN 'text' END || ')', '')
              || ' is not numeric (0 float, 3 unsigned)'
         WHEN number IS NULL THEN 'value ' || left(value, 40) || ' is not a number'
         WHEN number < 0 THEN 'negative value ' || value
         WHEN clock_s IS NULL OR clock_s NOT BETWEEN 0 AND $last_clock THEN
              'clock ' || clock || ' is not a Unix time in seconds'
         WHEN clock_s > $latest_clock THEN
              'clock ' || clock || ' is in the future: later than the database read time '
              || '+ --future-tolerance (read again once it is not)'
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
         -- a uint64 counter holds at most 2^64 - 1 (compared exactly, as DECIMAL)
         WHEN scaled IS NULL OR kind = 'counter'
                  AND scaled >= CAST('18446744073709551616' AS DECIMAL(38, 6))
              OR kind <> 'counter' AND scaled >= CAST('9223372036854775808' AS DECIMAL(38, 6))
                 / CASE kind WHEN 'rate' THEN $interval ELSE 1 END
              THEN 'value ' || left(value, 40) || ' is beyond 64 bits'
    END AS reason,
    node_host AS host, coalesce(itemid, 'name:' || item_name) AS item, metric, kind,
    clock_s * 1000000000 + ns_i AS t_ns,
    scaled AS value
FROM mapped
"""


def params(settings: Settings) -> dict[str, Any]:
    """The SQL parameters of :data:`CLASSIFY` for an ingest with ``settings``."""
    return {
        "has_items": settings.items is not None,
        "mapping": settings.mapping.origin,
        "interval": settings.interval,
        "max_line": inputs.MAX_LINE_BYTES,
        "last_clock": LAST_CLOCK,
        "latest_clock": LAST_CLOCK if settings.latest_clock is None else settings.latest_clock,
        "too_long": inputs.LINE_TOO_LONG,
        "not_utf8": inputs.NOT_UTF8,
    }


@dataclass(frozen=True)
class Rules:
    """The mapping's items by name, as the checks use them."""

    names: pa.Array  # item names with a rule or on the ignore list
    metric: pa.Array
    kind: pa.Array
    usable: pa.Array  # a rule of scale 1 (bool): its samples are decided here
    ignored: pa.Array  # on the ignore list (bool)
    rate_below: int  # a rate's value below this is surely within 64 bits times the interval

    @classmethod
    def of(cls, mapping: pa.Table, interval: int) -> Rules:
        """From :meth:`.ItemMapping.table` and the lake's grid interval (seconds)."""
        named = mapping.filter(pc.equal(mapping.column("match"), "name"))
        kind = named.column("kind").combine_chunks()
        scale = named.column("scale").combine_chunks()
        ruled = pc.and_(pc.is_valid(named.column("metric")), pc.not_equal(kind, IGNORE))
        one = pc.fill_null(pc.equal(pc.cast(scale, pa.float64()), 1.0), False)  # 6 places
        return cls(
            names=named.column("ident").combine_chunks(),
            metric=named.column("metric").combine_chunks(),
            kind=kind,
            usable=pc.and_(ruled, one),
            ignored=pc.equal(kind, IGNORE),
            rate_below=2**62 // interval,
        )


def typed(table: pa.Table) -> bool:
    """The block was read with the export's own member types (the checks need them)."""
    names = table.column_names
    host = table.schema.field("host").type if "host" in names else None
    return (
        all(c in names and table.schema.field(c).type == pa.int64() for c in _INTEGERS)
        and all(c in names and table.schema.field(c).type == pa.string() for c in ("name", "key_"))
        and host is not None
        and pa.types.is_struct(host)
        and host.get_field_index("host") >= 0
        and host.field("host").type == pa.string()
    )


def split(
    table: pa.Table, lines: pa.Table, rules: Rules | None
) -> tuple[pa.Table, np.ndarray, int]:
    """The block's sure samples (:data:`SAMPLES`), the indices of its other lines (for the
    classifier) and the count of its ignored lines."""
    if rules is None or not typed(table):
        return SAMPLES.empty_table(), np.arange(table.num_rows), 0
    host = pc.struct_field(table.column("host"), "host")
    clock, ns, value = (table.column(c) for c in ("clock", "ns", "value"))
    ns = pc.fill_null(ns, 0)
    entry = pc.index_in(table.column("name"), value_set=rules.names)
    checks = [
        pc.less_equal(pc.binary_length(lines.column("line")), inputs.MAX_LINE_BYTES),
        pc.not_equal(pc.utf8_trim_whitespace(host), ""),
        pc.is_valid(table.column("itemid")),
        pc.is_null(table.column("key_")),
        pc.greater_equal(clock, 0),
        pc.less_equal(clock, LAST_CLOCK),
        pc.greater_equal(ns, 0),
        pc.less(ns, _NS),
        pc.greater_equal(value, 0),
        pc.or_kleene(
            pc.is_null(table.column("type")), pc.is_in(table.column("type"), _NUMERIC_TYPES)
        ),
    ]
    passed = checks[0]
    for check in checks[1:]:
        passed = pc.and_kleene(passed, check)
    passed = pc.fill_null(passed, False)  # a null member: the classifier says why
    kind = pc.take(rules.kind, entry)
    small = pc.or_kleene(pc.not_equal(kind, "rate"), pc.less(value, rules.rate_below))
    small = pc.and_kleene(small, pc.or_kleene(pc.equal(kind, "counter"), pc.less(value, 2**62)))
    sure = pc.fill_null(pc.and_(passed, pc.and_(pc.take(rules.usable, entry), small)), False)
    ignored = pc.fill_null(pc.and_(passed, pc.take(rules.ignored, entry)), False)
    samples = pa.table(
        {
            "line_no": lines.column("line_no"),
            "host": host,
            "item": pc.cast(table.column("itemid"), pa.string()),
            "metric": pc.take(rules.metric, entry),
            "kind": kind,
            "t_ns": pc.add(pc.multiply(clock, _NS), ns),
            "value": pc.cast(value, pa.decimal128(38, 6)),
        },
        schema=SAMPLES,
    ).filter(sure)
    decided = pc.or_(sure, ignored).to_numpy(zero_copy_only=False)
    return samples, np.flatnonzero(~decided), int(pc.sum(ignored).as_py() or 0)
