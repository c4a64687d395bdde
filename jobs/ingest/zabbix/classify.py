"""The line classification of pass 1 (:mod:`.decode`): whether a decoded line is a sample,
or the reason it is quarantined, declared once.

:data:`CHECKS` lists the classes of line a quarantine reason names, in the order they are
tried; each holds its SQL condition and reason over the fields any decoder gives (text, as the
input spells them) and, beside them, the typed check that vouches a line is surely not of that
class. Both readings are generated from that one list:

* :data:`CLASSIFY`, the rule in DuckDB SQL (its ``reason`` CASE is :func:`reason_sql`): it
  reads every member as text and parses numbers again, and takes every line;
* :func:`split`, its quickest step, in pyarrow compute over the numbers pyarrow's JSON reader
  already parsed, for a block read with the export's own member types
  (:data:`.decode._SCHEMA`: ``host.host``, ``name`` and ``key_`` text, the others integers). A
  line clear of every class, with room to spare, is surely a sample, and its sample is what
  the rule would give (an integer value is the same DECIMAL(38, 6) by either reading); a line
  clear of every class before the ignore list and on it is an ignored line. Every other line
  (a reject, or a sample the typed checks do not vouch for) goes to the rule, so what lands,
  and every reason, is the rule's (tests/ingest/test_zabbix_fast.py compares the two on lines
  of every kind). The rule over typed columns costs about 9 times :func:`split` per block
  (0.09 s against 0.01 s for 14 MB), which is why the typed side is kept.
"""

from __future__ import annotations

from collections.abc import Callable
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


@dataclass(frozen=True)
class Typed:
    """A block's members as pyarrow's JSON reader typed them, looked up in the mapping: what a
    check's typed side reads (:data:`CHECKS`)."""

    table: pa.Table
    lines: pa.Table
    rules: Rules
    host: pa.ChunkedArray  # host.host
    ns: pa.ChunkedArray  # 0 where absent, as the rule reads it
    entry: pa.Array  # index of the item name in ``rules.names`` (null: not there)
    kind: pa.Array  # the rule's kind (null: no rule by that name)

    @classmethod
    def of(cls, table: pa.Table, lines: pa.Table, rules: Rules) -> Typed:
        """From a block :func:`typed` holds true of, its lines and the mapping's rules."""
        entry = pc.index_in(table.column("name"), value_set=rules.names)
        return cls(
            table,
            lines,
            rules,
            host=pc.struct_field(table.column("host"), "host"),
            ns=pc.fill_null(table.column("ns"), 0),
            entry=entry,
            kind=pc.take(rules.kind, entry),
        )

    def __getitem__(self, member: str) -> pa.ChunkedArray:
        """The other members by their names."""
        return self.table.column(member)


Vouch = Callable[[Typed], Any]  # a boolean Arrow array (null: not vouched for)


@dataclass(frozen=True)
class Check:
    """One class of line the classifier quarantines, declared once for both of its readings.

    ``when``/``reason`` are SQL over the rule's resolved fields (the text the input spells);
    ``clear`` is the typed check that vouches a line is surely **not** of this class (with room
    to spare; null or false leaves the line to the SQL); ``member``, where given, vouches that
    it surely **is** (those lines are counted, not classified again). ``clear`` None: a block
    the typed reader took holds no such line."""

    name: str
    when: str
    reason: str
    clear: Vouch | None
    member: Vouch | None = None


def _host_named(t: Typed) -> Any:
    return pc.is_valid(t.host)


def _by_name(t: Typed) -> Any:
    return pc.is_null(t["key_"])  # no key_: the item is matched by name alone


def _in_range(values: Any, low: int, high: int) -> Any:
    return pc.and_kleene(pc.greater_equal(values, low), pc.less_equal(values, high))


def _small(t: Typed) -> Any:
    """Well within 64 bits, a rate's too once multiplied by the interval."""
    within = pc.or_kleene(pc.not_equal(t.kind, "rate"), pc.less(t["value"], t.rules.rate_below))
    return pc.and_kleene(
        within, pc.or_kleene(pc.equal(t.kind, "counter"), pc.less(t["value"], 2**62))
    )


# The classes of line, in the order the rule tries them; a line of none is a sample.
CHECKS: tuple[Check, ...] = (
    Check(
        "too long",
        "line_len > $max_line",
        "$too_long",
        lambda t: pc.less_equal(pc.binary_length(t.lines.column("line")), inputs.MAX_LINE_BYTES),
    ),
    Check("undecodable", "bad IS NOT NULL", "bad", None),
    Check("not UTF-8", "replaced", "$not_utf8", None),
    Check("no clock", "clock IS NULL", "'no clock'", lambda t: pc.is_valid(t["clock"])),
    Check("no value", "value IS NULL", "'no value'", lambda t: pc.is_valid(t["value"])),
    Check(
        "not numeric",
        "value_type IS NOT NULL AND value_type NOT IN ('0', '3')",
        """'value type ' || value_type || coalesce(' (' || CASE value_type WHEN '1'
              THEN 'character' WHEN '2' THEN 'log' WHEN '4' THEN 'text' END || ')', '')
              || ' is not numeric (0 float, 3 unsigned)'""",
        lambda t: pc.or_kleene(pc.is_null(t["type"]), pc.is_in(t["type"], _NUMERIC_TYPES)),
    ),
    # an integer member: a number, the same DECIMAL(38, 6) by either reading
    Check(
        "not a number",
        "number IS NULL",
        "'value ' || left(value, 40) || ' is not a number'",
        lambda t: pc.is_valid(t["value"]),
    ),
    Check(
        "negative",
        "number < 0",
        "'negative value ' || value",
        lambda t: pc.greater_equal(t["value"], 0),
    ),
    Check(
        "clock out of range",
        "clock_s IS NULL OR clock_s NOT BETWEEN 0 AND $last_clock",
        "'clock ' || clock || ' is not a Unix time in seconds'",
        lambda t: _in_range(t["clock"], 0, LAST_CLOCK),
    ),
    Check(
        "clock in the future",
        "clock_s > $latest_clock",
        """'clock ' || clock || ' is in the future: later than the database read time '
              || '+ --future-tolerance (read again once it is not)'""",
        lambda t: pc.less_equal(t["clock"], t.rules.latest_clock),
    ),
    Check(
        "ns out of range",
        "ns_i IS NULL OR ns_i NOT BETWEEN 0 AND 999999999",
        "'ns ' || ns || ' is not 0..999999999'",
        lambda t: _in_range(t.ns, 0, _NS - 1),
    ),
    Check(
        "empty host",
        "node_host IS NOT NULL AND trim(node_host) = ''",
        "'empty host name'",
        lambda t: pc.not_equal(pc.utf8_trim_whitespace(t.host), ""),
    ),
    # the typed side also wants the itemid: a sample's item is its itemid then
    Check(
        "no host, no itemid",
        "node_host IS NULL AND itemid IS NULL",
        "'no host and no itemid'",
        lambda t: pc.is_valid(t["itemid"]),
    ),
    Check(
        "no item table",
        "node_host IS NULL AND NOT $has_items",
        "'no host: history rows need the item table (--items FILE)'",
        _host_named,
    ),
    Check(
        "unknown itemid",
        "node_host IS NULL",
        "'itemid ' || itemid || ' is not in the item table'",
        _host_named,
    ),
    Check(
        "ignored",
        f"kind = '{IGNORE}'",
        f"'{IGNORE}'",
        lambda t: pc.and_kleene(_by_name(t), pc.invert(pc.take(t.rules.ignored, t.entry))),
        member=lambda t: pc.and_kleene(_by_name(t), pc.take(t.rules.ignored, t.entry)),
    ),
    # the typed side also wants scale 1: the typed value is then the scaled one
    Check(
        "not mapped",
        "metric IS NULL",
        """'item ' || coalesce('key ''' || item_key || '''',
              'name ''' || item_name || '''', 'without key or name')
              || ' is not in the mapping ' || $mapping""",
        lambda t: pc.and_kleene(_by_name(t), pc.take(t.rules.usable, t.entry)),
    ),
    # a uint64 counter holds at most 2^64 - 1 (compared exactly, as DECIMAL)
    Check(
        "beyond 64 bits",
        """scaled IS NULL OR kind = 'counter'
                  AND scaled >= CAST('18446744073709551616' AS DECIMAL(38, 6))
              OR kind <> 'counter' AND scaled >= CAST('9223372036854775808' AS DECIMAL(38, 6))
                 / CASE kind WHEN 'rate' THEN $interval ELSE 1 END""",
        "'value ' || left(value, 40) || ' is beyond 64 bits'",
        _small,
    ),
)


def reason_sql(checks: tuple[Check, ...] = CHECKS) -> str:
    """The rule's ``reason`` column: the SQL CASE over ``checks`` in order (NULL: a sample)."""
    whens = "\n         ".join(f"WHEN {c.when} THEN\n              {c.reason}" for c in checks)
    return f"CASE {whens}\n    END"


# Classifies every decoded line: a ``reason`` to quarantine it, or a sample.
CLASSIFY = (
    """
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
    """
    + reason_sql()
    + """ AS reason,
    node_host AS host, coalesce(itemid, 'name:' || item_name) AS item, metric, kind,
    clock_s * 1000000000 + ns_i AS t_ns,
    scaled AS value
FROM mapped
"""
)


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
    latest_clock: int = LAST_CLOCK  # the last clock (s) a sample may have

    @classmethod
    def of(cls, mapping: pa.Table, interval: int, latest_clock: int | None = None) -> Rules:
        """From :meth:`.ItemMapping.table`, the lake's grid interval (seconds) and the
        latest clock a ``--db`` read takes (None: :data:`LAST_CLOCK`)."""
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
            latest_clock=LAST_CLOCK if latest_clock is None else latest_clock,
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
    classifier) and the count of its ignored lines, by :data:`CHECKS`' typed sides: a line
    clear of every class is a sample, one clear of every class before ``ignored`` and surely
    of it is counted, and any other line goes to :data:`CLASSIFY`."""
    if rules is None or not typed(table):
        return SAMPLES.empty_table(), np.arange(table.num_rows), 0
    t = Typed.of(table, lines, rules)
    clear: Any = pa.scalar(True)
    counted: Any = pa.scalar(False)
    for check in CHECKS:
        if check.member is not None:
            counted = pc.or_kleene(counted, pc.and_kleene(clear, check.member(t)))
        if check.clear is not None:
            clear = pc.and_kleene(clear, check.clear(t))
    sure = pc.fill_null(clear, False)  # a null member: the classifier says why
    ignored = pc.fill_null(counted, False)
    samples = pa.table(
        {
            "line_no": lines.column("line_no"),
            "host": t.host,
            "item": pc.cast(table.column("itemid"), pa.string()),
            "metric": pc.take(rules.metric, t.entry),
            "kind": t.kind,
            "t_ns": pc.add(pc.multiply(table.column("clock"), _NS), t.ns),
            "value": pc.cast(table.column("value"), pa.decimal128(38, 6)),
        },
        schema=SAMPLES,
    ).filter(sure)
    decided = pc.or_(sure, ignored).to_numpy(zero_copy_only=False)
    return samples, np.flatnonzero(~decided), int(pc.sum(ignored).as_py() or 0)
