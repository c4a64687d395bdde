"""Pass 2's rule: monitoring samples → per-interval node traffic (paper 004 §2.2: 10 s node
counters), the deltas of consecutive samples spread over the lake's grid.

See docs/design.md, 'Sources'.

This module builds the DuckDB SQL; the caller runs it. Input is a relation of samples
``(line_no, seq, node, item, metric, kind, t_ns, value)`` (``kind``: counter, rate or gauge;
``value`` DECIMAL(38,6); ``seq`` orders the files of one stream) holding whole nodes. The lake's
grid has ``interval`` seconds; slot s is the interval [s × interval, (s + 1) × interval). Each
item keeps its own sampling interval, read from the data (a Zabbix item is polled every minute
by default, whatever the lake's grid). The rules:

* the same item sampled twice at the same instant is a duplicate: the first line (by ``seq``,
  then ``line_no``) counts, the others are reported by :func:`duplicates_query`;
* consecutive samples a, b of an item form a **pair** whose traffic happened in (t_a, t_b]:
  a counter's rise (b - a), or a rate's value at b × (t_b - t_a) (a Zabbix "change per second"
  at b covers the time since a);
* the item's **own interval** in a period (``PERIOD_S``, by the later sample's clock) is the
  median spacing of its pairs there (:func:`own_interval`); a pair spaced more than
  ``gap_factor`` × that interval, or more than a period, is a **gap**: its bytes happened at
  unknown times and smearing them would invent traffic;
* otherwise the pair **lands**, spread over the grid slots it covers in proportion to time, in
  whole bytes that add up to the pair's exactly (cumulative floor);
* a counter drop (reset, reboot) adds nothing: the value after the drop is counted as
  ``reset``; so is a jump of 2^63 or more (a 64-bit counter re-initialised), which node_io
  could not hold;
* **gauges** ride on traffic rows and never create one: ``cpu_load`` is the mean and
  ``mem_used_bytes`` the last of the samples in (slot start, slot end];
* several items of one metric on a node add up; a row exists only where some traffic metric
  is positive; a metric without a landed pair in that interval (not monitored, gap) is null.

The balance (:func:`balance_query`) is exact per pair: seen = landed + gap + reset.
"""

from __future__ import annotations

from burstlake.jobs.ingest.zabbix.options import GAP_FACTOR
from burstlake.schemas.tables import NODE_IO_TRAFFIC as TRAFFIC

NS = 1_000_000_000
MAX_RISE = 2**63  # a counter jumping this much (a 64-bit counter re-initialised) is a reset
PERIOD_S = 3600  # an item's own interval is measured per hour; no pair spans more

# A pair's bytes, over the columns kind, value, ``spacing`` (t_ns - t_prev) and ``rise``
# (value - v_prev): a rate's value over the spacing, a counter's rise, after a drop its value
# (counted as ``reset``), a jump of MAX_RISE or more nothing. The one definition: the overflow
# check (:mod:`.overflow`) counts pairs with it too.
_AMOUNT = """CASE WHEN kind = 'rate'
                 THEN CAST(round(CAST(value AS DOUBLE) * spacing / {ns}) AS HUGEINT)
            WHEN rise < 0 THEN CAST(round(value) AS HUGEINT)
            WHEN rise >= {max_rise} THEN CAST(0 AS HUGEINT)
            ELSE CAST(round(rise) AS HUGEINT) END"""

_RANKED = """
SELECT *, row_number() OVER same AS copy, first_value(line_no) OVER same AS first_line,
       first_value(value) OVER same AS first_value
FROM {samples}
WINDOW same AS (PARTITION BY node, item, t_ns ORDER BY line_no)
"""

# The steps every query over a window of grid intervals shares, each a SELECT over the one
# before it (``{clean}``, ``{classed}``): deduplicated samples, classed pairs, landed bytes per
# slot. :func:`pair_tables` materialises them once for several queries over one window.
_CLEAN = """
SELECT node, item, metric, kind, t_ns, value, line_no, seq
FROM {samples}
QUALIFY row_number() OVER (PARTITION BY node, item, t_ns ORDER BY seq, line_no) = 1
"""

_CLASSED = """
WITH paired AS (
    SELECT node, item, metric, kind, t_ns, value, seq,
           lag(t_ns) OVER s AS t_prev, lag(value) OVER s AS v_prev
    FROM {clean} WHERE kind IN ('counter', 'rate')
    WINDOW s AS (PARTITION BY node, item ORDER BY t_ns)
),
pairs AS (
    SELECT *, t_ns - t_prev AS spacing, t_ns // {period_ns} AS period, value - v_prev AS rise
    FROM paired WHERE t_prev IS NOT NULL
),
own AS (
    SELECT node, item, period, quantile_disc(spacing, 0.5) AS own_ns
    FROM pairs WHERE spacing <= {period_ns} GROUP BY ALL
)
SELECT p.node, p.metric, p.seq, p.t_prev, p.t_ns,
       CASE WHEN kind = 'counter' AND (rise < 0 OR rise >= {max_rise})
                 THEN 'reset'
            WHEN spacing > {period_ns} OR spacing > {gap_factor} * o.own_ns THEN 'gap'
            ELSE 'landed' END AS reason,
       {amount} AS amount
FROM pairs p LEFT JOIN own o USING (node, item, period)
"""

# A pair's share of ``amount`` landing in ``slot``: the cumulative floor of the module doc.
_SHARE = (
    "AMOUNT * (least(t_ns, (slot + 1) * {step_ns}) - t_prev) // (t_ns - t_prev) "
    "- AMOUNT * (greatest(t_prev, slot * {step_ns}) - t_prev) // (t_ns - t_prev)"
)
# in 64-bit integers where the products fit: the same numbers as in 128-bit, at less cost
_SPREAD = """
SELECT node, metric, seq, slot,
       CASE WHEN amount BETWEEN 0 AND 9223372036854775807 // (t_ns - t_prev)
            THEN SHARE_IN_64_BITS ELSE SHARE_IN_128_BITS END AS amount
FROM (
    SELECT *, unnest(range(greatest(t_prev // {step_ns}, {first_slot}),
                           least((t_ns - 1) // {step_ns}, {last_slot}) + 1)) AS slot
    FROM {classed} WHERE reason = 'landed'
)
""".replace("SHARE_IN_64_BITS", _SHARE.replace("AMOUNT", "CAST(amount AS BIGINT)")).replace(
    "SHARE_IN_128_BITS", _SHARE.replace("AMOUNT", "amount")
)

# A window's samples as they are: _CLEAN when no instant is sampled twice (:func:`repeats_query`
# on them), without the window's sort.
_COPY = "SELECT node, item, metric, kind, t_ns, value, line_no, seq FROM {samples}"

_REPEATS = """
SELECT (SELECT count(*) FROM {samples})
       > (SELECT count(*) FROM (SELECT DISTINCT node, item, t_ns FROM {samples}))
"""

_STEPS = (("clean", _CLEAN), ("classed", _CLASSED), ("spread", _SPREAD))
PAIR_TABLES = {name: f"counters_{name}" for name, _ in _STEPS}  # pair_tables' temp tables

_NODE_IO = """,
traffic AS (
    SELECT node, slot, {traffic_columns}
    FROM spread GROUP BY node, slot HAVING max(amount) > 0
),
gauges AS (
    SELECT node, (t_ns - 1) // {step_ns} AS slot,
           avg(value) FILTER (WHERE metric = 'cpu_load') AS cpu_load,
           arg_max(value, (t_ns, seq, line_no)) FILTER (WHERE metric = 'mem_used_bytes') AS mem_used
    FROM clean WHERE kind = 'gauge' GROUP BY node, slot
)
SELECT t.node, make_timestamp(t.slot * {interval} * 1000000) AS ts,
       CAST({interval} AS INTEGER) AS interval_s, {traffic_names},
       CAST(g.cpu_load AS DOUBLE) AS cpu_load,
       CAST(round(g.mem_used) AS BIGINT) AS mem_used_bytes,
       n.record AS _record
FROM traffic t LEFT JOIN gauges g USING (node, slot) JOIN {nodes} n USING (node)
ORDER BY t.node, t.slot
"""

_BALANCE = """
SELECT node, metric, reason, CAST(sum(amount) AS HUGEINT) AS bytes
FROM (
    SELECT node, metric, seq, 'landed' AS reason, slot, amount FROM spread
    UNION ALL
    SELECT node, metric, seq, reason, (t_ns - 1) // {step_ns} AS slot, amount
    FROM classed WHERE reason <> 'landed'
)
WHERE slot BETWEEN {first_slot} AND {last_slot} AND {member} AND amount > 0
GROUP BY ALL
"""


def _with_steps(params: dict[str, object], prepared: bool) -> str:
    """``WITH clean AS (...), classed AS (...), spread AS (...)`` over ``params['samples']``,
    or over the tables of :func:`pair_tables` when ``prepared``."""
    parts = []
    for name, sql in _STEPS:
        body = (
            f"SELECT * FROM {PAIR_TABLES[name]}"
            if prepared
            else sql.format(**params, clean="clean", classed="classed")
        )
        parts.append(f"{name} AS ({body})")
    return "WITH " + ",\n".join(parts)


def pair_tables(
    samples: str,
    interval: int,
    slots: tuple[int, int],
    gap_factor: float = GAP_FACTOR,
    deduplicate: bool = True,
) -> list[str]:
    """SQL statements materialising the shared steps (the deduplicated samples, the classed
    pairs, the landed bytes per slot) as temp tables :data:`PAIR_TABLES`, so that
    :func:`node_io_query` and :func:`balance_query` with ``prepared=True`` over the same window
    do not compute them twice. ``deduplicate`` False: the first table is already made by
    :func:`copy_statement`, and :func:`repeats_query` found no repeated instant in it."""
    params = _window(samples, interval, slots, gap_factor)
    steps = {"clean": PAIR_TABLES["clean"], "classed": PAIR_TABLES["classed"]}
    return [
        f"CREATE OR REPLACE TEMP TABLE {PAIR_TABLES[name]} AS " + sql.format(**params, **steps)
        for name, sql in _STEPS
        if deduplicate or name != "clean"
    ]


def clean_query(samples: str) -> str:
    """SQL for ``samples`` without their duplicates (the first line of an instant counts)."""
    return _CLEAN.format(samples=samples)


def copy_statement(samples: str) -> str:
    """SQL making the first table of :func:`pair_tables` from ``samples`` as they are: the
    deduplicated samples when no instant repeats (then the window's sort is saved)."""
    return f"CREATE OR REPLACE TEMP TABLE {PAIR_TABLES['clean']} AS " + _COPY.format(
        samples=samples
    )


def repeats_query(samples: str) -> str:
    """SQL: whether some item of a node is sampled twice at one instant in ``samples`` (a
    duplicate, see the module doc)."""
    return _REPEATS.format(samples=samples)


def balance_query(
    samples: str,
    interval: int,
    slots: tuple[int, int],
    seq: int | None = None,
    gap_factor: float = GAP_FACTOR,
    prepared: bool = False,
) -> str:
    """SQL for the traffic of the stream member ``seq`` (default all) in intervals ``slots``,
    per node, metric and reason: ``landed`` (the part of a landed pair in those intervals),
    ``gap`` (a pair spaced beyond its item's own interval, see the module doc), ``reset``
    (counted since a counter reset or reboot: its value after the drop). A pair belongs to the
    member holding its later sample, and its gap or reset to the slot of that sample. Their sum
    is the traffic seen in the input. ``prepared``: read the tables of :func:`pair_tables`
    (made for the same window) instead of computing the steps."""
    params = _window(samples, interval, slots, gap_factor)
    member = "true" if seq is None else f"seq = {int(seq)}"
    return _with_steps(params, prepared) + _BALANCE.format(**params, member=member)


def duplicates_query(samples: str) -> str:
    """SQL for the samples repeating an earlier line's (node, item, instant): ``line_no, node,
    first_line, value, first_value`` (the first line's value is the one that counts)."""
    ranked = _RANKED.format(samples=samples)
    return f"SELECT line_no, node, first_line, value, first_value FROM ({ranked}) WHERE copy > 1"


def amount_sql() -> str:
    """SQL for a pair's bytes (the module doc's rule) over columns ``kind``, ``value``,
    ``spacing`` and ``rise``."""
    return _AMOUNT.format(ns=NS, max_rise=MAX_RISE)


def slot_sql(t_ns: str, interval: int) -> str:
    """SQL for the grid slot whose interval (start, end] holds a sample time."""
    return f"(({t_ns}) - 1) // {_step_ns(interval)}"


def reach_ns(interval: int) -> tuple[int, int]:
    """How far before and after its slots a region (a UTC day, whose start is a period's)
    must read samples: a pair spans at most a period, and the own interval of a period needs
    every pair ending in it (module doc)."""
    return PERIOD_S * NS, 2 * PERIOD_S * NS + _step_ns(interval)


def _window(
    samples: str, interval: int, slots: tuple[int, int], gap_factor: float = GAP_FACTOR
) -> dict[str, object]:
    """The parameters every query over a window of grid intervals takes."""
    if not gap_factor >= 1:
        raise ValueError(f"the gap factor must be >= 1, not {gap_factor!r}")
    return {
        "samples": samples,
        "interval": int(interval),
        "step_ns": _step_ns(interval),
        "ns": NS,
        "period_ns": PERIOD_S * NS,
        "gap_factor": float(gap_factor),
        "first_slot": int(slots[0]),
        "last_slot": int(slots[1]),
        "max_rise": MAX_RISE,
        "amount": amount_sql(),
    }


def _step_ns(interval: int) -> int:
    if int(interval) != interval or interval < 1:
        raise ValueError(f"interval must be a whole number of seconds >= 1, not {interval!r}")
    return int(interval) * NS


def node_io_query(
    samples: str,
    nodes: str,
    interval: int,
    slots: tuple[int, int] = (-(2**62), 2**62),
    gap_factor: float = GAP_FACTOR,
    prepared: bool = False,
) -> str:
    """SQL for ``node_io`` rows (plus ``_record`` from ``nodes(node, record)``), ordered by
    node and ts, for the intervals numbered ``slots`` (first, last; ts = slot × interval).
    ``samples`` must hold every sample within :func:`reach_ns` of those intervals.
    ``prepared``: as in :func:`balance_query`."""
    params = _window(samples, interval, slots, gap_factor)
    return _with_steps(params, prepared) + _NODE_IO.format(
        **params,
        nodes=nodes,
        traffic_columns=", ".join(
            f"sum(amount) FILTER (WHERE metric = '{m}') AS {m}" for m in TRAFFIC
        ),
        traffic_names=", ".join(f"CAST(t.{m} AS BIGINT) AS {m}" for m in TRAFFIC),
    )
