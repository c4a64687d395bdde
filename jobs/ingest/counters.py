"""Monitoring samples → per-interval node traffic (paper 004 §2.2: 10 s node counters).

See docs/design.md, 'Sources'.

This module builds the DuckDB SQL; the caller runs it. Input is a relation of samples
``(line_no, seq, node, item, metric, kind, t_ns, value)`` (``kind``: counter, rate or gauge;
``value`` DECIMAL(38,6); ``seq`` orders the files of one stream) holding whole nodes. Samples
are ordered by ``(seq, line_no)``, as the lines of the files' concatenation would be. The rules,
on a grid of ``interval`` seconds:

* a sample at t = clock + ns/1e9 belongs to the nearest grid point g = round(t / interval);
  jitter below interval/2 lands in the right interval, out-of-order lines are sorted per item;
* the same item sampled twice at the same instant is a duplicate: the first line counts, the
  others are reported by :func:`duplicates_query`;
* **counter**: consecutive samples of an item add their rise to a running total; a drop
  (counter reset, reboot) adds nothing and starts a new series, so no delta is ever negative;
  nor does a jump of 2^63 or more (a 64-bit counter re-initialised), which node_io could not
  hold.
  The total at grid point g is read from the sample nearest to g; the delta between grid points
  g-1 and g is the traffic of the interval starting at g-1. A delta across missing grid points
  (a gap) is not attributed: its bytes happened at unknown times, and smearing them would
  invent traffic;
* **rate** (change per second): the mean rate of the samples at g × interval is the traffic of
  the interval starting at g-1 (a Zabbix rate at g covers the time since the previous sample);
* **gauges** ride on traffic rows and never create one: ``cpu_load`` is the mean and
  ``mem_used_bytes`` the last of the samples at g, for the interval starting at g-1;
* several items of one metric on a node add up; a row exists only where some traffic metric
  is positive; a metric without a delta for that interval (not monitored, gap) is null.
"""

from __future__ import annotations

from burstlake.jobs.ingest.zabbix_mapping import TRAFFIC

NS = 1_000_000_000
MAX_RISE = 2**63  # a counter jumping this much (a 64-bit counter re-initialised) is a reset

_RANKED = """
SELECT *, row_number() OVER same AS copy, first_value(line_no) OVER same AS first_line,
       first_value(value) OVER same AS first_value
FROM {samples}
WINDOW same AS (PARTITION BY node, item, t_ns ORDER BY line_no)
"""

_NODE_IO = """
WITH clean AS (
    SELECT node, item, metric, kind, t_ns, value, line_no, seq,
           (t_ns + {half_ns}) // {step_ns} AS g
    FROM {samples}
    QUALIFY row_number() OVER (PARTITION BY node, item, t_ns ORDER BY seq, line_no) = 1
),
risen AS (
    SELECT *, value - lag(value) OVER (PARTITION BY node, item ORDER BY t_ns) AS rise
    FROM clean WHERE kind = 'counter'
),
totals AS (
    SELECT *, sum(CASE WHEN rise > 0 AND rise < {max_rise} THEN rise ELSE 0 END)
              OVER (PARTITION BY node, item ORDER BY t_ns ROWS UNBOUNDED PRECEDING) AS total
    FROM risen
),
at_grid AS (
    SELECT node, item, metric, g,
           arg_min(total, (abs(t_ns - g * {step_ns}), seq, line_no)) AS total
    FROM totals GROUP BY node, item, metric, g
),
deltas AS (
    SELECT node, metric, g - 1 AS slot,
           total - lag(total) OVER grid AS delta, g - lag(g) OVER grid AS span
    FROM at_grid WINDOW grid AS (PARTITION BY node, item ORDER BY g)
),
amounts AS (
    SELECT node, metric, slot, CAST(round(delta) AS BIGINT) AS amount
    FROM deltas WHERE span = 1
    UNION ALL
    SELECT node, metric, g - 1, CAST(round(avg(value) * {interval}) AS BIGINT)
    FROM clean WHERE kind = 'rate' GROUP BY node, item, metric, g
),
traffic AS (
    SELECT node, slot, {traffic_columns}
    FROM amounts WHERE slot BETWEEN {first_slot} AND {last_slot}
    GROUP BY node, slot HAVING max(amount) > 0
),
gauges AS (
    SELECT node, g - 1 AS slot,
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


_CLEAN = _NODE_IO[_NODE_IO.index("WITH clean AS") : _NODE_IO.index("risen AS")]

_BALANCE = (
    _CLEAN
    + """
marked AS (
    SELECT *, value - lag(value) OVER s AS rise,
           t_ns = arg_min(t_ns, (abs(t_ns - g * {step_ns}), seq, line_no))
                  OVER (PARTITION BY node, item, g) AS chosen
    FROM clean WHERE kind = 'counter'
    WINDOW s AS (PARTITION BY node, item ORDER BY t_ns)
),
framed AS (
    SELECT *,
           last_value(CASE WHEN chosen THEN g END IGNORE NULLS) OVER (s ROWS BETWEEN
               UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_g,
           first_value(CASE WHEN chosen THEN g END IGNORE NULLS) OVER (s ROWS BETWEEN
               CURRENT ROW AND UNBOUNDED FOLLOWING) AS after_g
    FROM marked
    WINDOW s AS (PARTITION BY node, item ORDER BY t_ns)
),
classed AS (
    SELECT node, metric, seq,
           CASE WHEN rise < 0 OR rise >= {max_rise} THEN 'reset'
                WHEN after_g - before_g = 1 THEN 'landed' ELSE 'gap' END AS reason,
           CASE WHEN rise < 0 THEN value WHEN rise >= {max_rise} THEN 0 ELSE rise END AS amount,
           CASE WHEN rise > 0 AND after_g - before_g = 1 THEN before_g ELSE g - 1 END AS slot
    FROM framed WHERE rise <> 0
    UNION ALL
    SELECT node, metric, min(seq), 'landed', avg(value) * {interval}, g - 1
    FROM clean WHERE kind = 'rate' GROUP BY node, item, metric, g
)
SELECT node, metric, reason, CAST(round(sum(amount)) AS HUGEINT) AS bytes
FROM classed
WHERE slot BETWEEN {first_slot} AND {last_slot} AND {member} AND amount > 0
GROUP BY ALL
"""
)


def balance_query(
    samples: str, interval: int, slots: tuple[int, int], seq: int | None = None
) -> str:
    """SQL for the traffic of the stream member ``seq`` (default all) in intervals ``slots``,
    per node, metric
    and reason: ``landed`` (in a node_io interval), ``gap`` (across missing grid points, or
    before the first / after the last grid sample of a series), ``reset`` (counted since a
    counter reset or reboot: its value after the drop). A counter rise belongs to the member
    holding its later sample; a rate sample's traffic (value × interval) to the first member
    sampling that grid point. Their sum is the traffic seen in the input."""
    return _BALANCE.format(
        **_window(samples, interval, slots),
        member="true" if seq is None else f"seq = {int(seq)}",
    )


def duplicates_query(samples: str) -> str:
    """SQL for the samples repeating an earlier line's (node, item, instant): ``line_no, raw,
    node, first_line, value, first_value`` (the first line's value is the one that counts)."""
    ranked = _RANKED.format(samples=samples)
    return (
        f"SELECT line_no, raw, node, first_line, value, first_value FROM ({ranked}) WHERE copy > 1"
    )


def grid_sql(t_ns: str, interval: int) -> str:
    """SQL for the grid point g of a sample time (nearest multiple of ``interval``)."""
    step_ns = _step_ns(interval)
    return f"(({t_ns}) + {step_ns // 2}) // {step_ns}"


def _window(samples: str, interval: int, slots: tuple[int, int]) -> dict[str, object]:
    """The parameters every query over a window of grid intervals takes."""
    step_ns = _step_ns(interval)
    return {
        "samples": samples,
        "interval": int(interval),
        "step_ns": step_ns,
        "half_ns": step_ns // 2,
        "first_slot": int(slots[0]),
        "last_slot": int(slots[1]),
        "max_rise": MAX_RISE,
    }


def _step_ns(interval: int) -> int:
    if int(interval) != interval or interval < 1:
        raise ValueError(f"interval must be a whole number of seconds >= 1, not {interval!r}")
    return int(interval) * NS


def node_io_query(
    samples: str, nodes: str, interval: int, slots: tuple[int, int] = (-(2**62), 2**62)
) -> str:
    """SQL for ``node_io`` rows (plus ``_record`` from ``nodes(node, record)``), ordered by
    node and ts, for the intervals numbered ``slots`` (first, last; ts = slot × interval).
    An interval's row needs the samples of grid points slot and slot + 1 only."""
    return _NODE_IO.format(
        **_window(samples, interval, slots),
        nodes=nodes,
        traffic_columns=", ".join(
            f"sum(amount) FILTER (WHERE metric = '{m}') AS {m}" for m in TRAFFIC
        ),
        traffic_names=", ".join(f"CAST(t.{m} AS BIGINT) AS {m}" for m in TRAFFIC),
    )
