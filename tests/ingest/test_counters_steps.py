"""The pair tables of jobs/ingest/zabbix/deltas.py take shortcuts that must not change a number: a
window's samples are copied as they are when no instant repeats (no deduplicating sort), and
landed bytes are spread in 64-bit integers where the products fit (128-bit otherwise)."""

from __future__ import annotations

import random

import duckdb
import pyarrow as pa
import pytest

from burstlake.jobs.ingest.zabbix import deltas as counters

NS = counters.NS
INTERVAL = 10
T0 = 1_700_000_000 * NS


def _samples(con: duckdb.DuckDBPyConnection, rows: list[tuple]) -> None:
    """Table ``samples`` of (node, item, metric, kind, t_ns, value) rows, numbered by line."""
    names = ("node", "item", "metric", "kind", "t_ns", "value")
    columns = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    columns["value"] = [str(v) for v in columns["value"]]  # exact beyond 2^53
    given = pa.table({"line_no": list(range(1, len(rows) + 1)), **columns})
    con.register("given", given)
    con.execute(
        "CREATE OR REPLACE TABLE samples AS SELECT line_no, 1::BIGINT AS seq, node, item, "
        "metric, kind, t_ns, CAST(value AS DECIMAL(38, 6)) AS value FROM given"
    )
    con.unregister("given")


def _export(seed: int) -> list[tuple]:
    """Counters (with a reset and a gap), a rate and a gauge on three nodes over an hour,
    sampled every 10 s with jitter: no instant twice."""
    rng = random.Random(seed)
    rows = []
    for node in ("cn1", "cn2", "cn3"):
        total = 0
        for k in range(360):
            if k in range(100, 130):  # a gap in every series
                continue
            t = T0 + k * INTERVAL * NS + rng.randrange(-NS, NS)
            total = 5 if k == 200 else total + rng.randrange(0, 10**9)  # a reset at 200
            rows.append((node, "1", "read_bytes", "counter", t, total))
            rows.append((node, "2", "net_rx_bytes", "rate", t + 7, rng.randrange(0, 10**6)))
            rows.append((node, "3", "cpu_load", "gauge", t + 9, rng.random()))
    return rows


def _pair_tables(con: duckdb.DuckDBPyConnection, copied: bool) -> dict[str, list[tuple]]:
    slots = (T0 // (INTERVAL * NS), T0 // (INTERVAL * NS) + 360)
    if copied:
        con.execute(counters.copy_statement("samples"))
        repeated = con.execute(counters.repeats_query(counters.PAIR_TABLES["clean"])).fetchone()
        assert repeated == (False,)
    for statement in counters.pair_tables("samples", INTERVAL, slots, deduplicate=not copied):
        con.execute(statement)
    return {
        name: sorted(con.execute(f"SELECT * FROM {table}").fetchall(), key=repr)
        for name, table in counters.PAIR_TABLES.items()
    }


@pytest.mark.parametrize("seed", [1, 2])
def test_samples_copied_when_no_instant_repeats_give_the_same_pair_tables(seed: int) -> None:
    with duckdb.connect() as con:
        _samples(con, _export(seed))
        sorted_once = _pair_tables(con, copied=False)
        copied = _pair_tables(con, copied=True)
    assert sorted_once["spread"] and sorted_once["classed"]
    assert {r[5] for r in sorted_once["classed"]} == {"landed", "gap", "reset"}
    assert copied == sorted_once


def test_a_repeated_instant_is_found() -> None:
    rows = _export(3)
    with duckdb.connect() as con:
        _samples(con, [*rows, rows[10]])
        assert con.execute(counters.repeats_query("samples")).fetchone() == (True,)
        _samples(con, rows)
        assert con.execute(counters.repeats_query("samples")).fetchone() == (False,)


@pytest.mark.parametrize(
    "rise",
    [
        1_234_567,  # the products fit 64 bits
        2**62 + 12_345,  # rise x spacing is beyond 2^63: spread in 128 bits
        2**63 - 1,  # the largest rise that lands
    ],
)
def test_a_pair_spreads_to_the_same_bytes_in_64_and_128_bits(rise: int) -> None:
    step = INTERVAL * NS
    t_prev, t_ns = T0 + 3 * NS + 17, T0 + 3 * step + 5 * NS + 3  # over four slots
    with duckdb.connect() as con:
        _samples(
            con,
            [
                ("cn1", "1", "read_bytes", "counter", t_prev, 7),
                ("cn1", "1", "read_bytes", "counter", t_ns, 7 + rise),
            ],
        )
        statements = counters.pair_tables("samples", INTERVAL, (0, 2**40))
        for statement in statements:
            con.execute(statement)
        spread = con.execute(
            f"SELECT slot, amount FROM {counters.PAIR_TABLES['spread']} ORDER BY slot"
        ).fetchall()
    span = t_ns - t_prev  # the cumulative floor of the module doc, in Python's integers
    expected = [
        (
            slot,
            rise * (min(t_ns, (slot + 1) * step) - t_prev) // span
            - rise * (max(t_prev, slot * step) - t_prev) // span,
        )
        for slot in range(t_prev // step, (t_ns - 1) // step + 1)
    ]
    assert len(expected) == 4
    assert spread == expected
    assert sum(amount for _, amount in spread) == rise
