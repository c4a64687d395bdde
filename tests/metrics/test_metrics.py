"""The Spark metrics on the hand lake (tests/builders/hand_lake.py), every expected value
worked out by hand.

Topology: 8 nodes cn00000..cn00007, cabinets of 4 (cab000, cab001), IONs of 2 (ion000..ion003).
Intervals are 10 s from T0. An interval is a job's when its midpoint is in [start, end).

- J1  cn0-cn3, run 5..105 s: cn0 300 + 100, cn1 200, cn2 200, cn3 silent.
      Shares (1/2, 1/4, 1/4, 0): NUD = 1 - 1.5 ln2 / ln4 = 0.25; one cabinet.
      cn0's row at 100 s (midpoint 105) is NOT J1's: it is J2's.
- J2  cn0 alone, run 105..205 s: 1000 bytes; single node, so NUD and rank0 are null.
- J3  cn3, cn4, run 0..60 s: no traffic (NUD null); 2 cabinets, 1 minimal; cabinet NUD 0.
- J4  cn1-cn4, run 200..300 s: cn1 9600, cn2 200, cn3 200 (row at 290 s, midpoint 295),
      cn4 silent: max share 0.96 -> rank 0. Cabinets 3 + 1 nodes: uneven.
      cn3's row at 300 s (midpoint 305) belongs to no job.
- J5  cn5, cn6, run 0..100 s: 6000 each, net 14000 -> comm 2000; even, optimizable;
      I/O in 2 of its 10 intervals.
- J6  running (no end) and J7 (no job_nodes rows): not measured.
- J8  cn7 and "ghost" (not in topology), run 500..600 s: ghost 100 bytes -> rank 0; one known
      cabinet. J5's cn5 is listed twice in job_nodes (a duplicate): still 2 nodes.
- APP 7 jobs "app" of user u2 on cn6, cn7 from 1000 s, 100 s apart, 50 s each: three with
      shares (1, 0), three with (0, 1), one silent. Divergence over the 6 with traffic: 9 of
      15 pairs at sqrt 2. With data_intensive_bytes = 5000 two (6000 bytes) are
      data-intensive: consistency max(2/7, 5/7).
- Interval 400 s: cn0 500, cn4 500 (a tie for the busiest node and cabinet).
- Darshan L1: 4 ranks, POSIX rank 0 900, rank 1 100, rank -1 1000 (shared), MPI-IO rank 0
      5000 (above POSIX: ignored); hosts h1 (rank 0), h2 (ranks 1, 2). L2: 1 rank. L3: empty.
- DXT (dxt_job_series, 10 s intervals): L1 (J1) POSIX read 900 over 2..12 s -> 720 at 0 s,
      180 at 10 s; writes 100 at 50 s (no duration) and 300 over 55..60 s -> 400 at 50 s (none
      at 60 s); its MPI-IO read of 5000 is not summed. J1's nodes: 500 at 0 s, 0 at 10 s, 300
      at 50 s. L2 (J2) MPI-IO only: 40 written over 105..125 s -> 10, 20, 10 at 100, 110,
      120 s; J2's nodes 1000, 0, 0.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest

from burstlake import catalog
from burstlake.jobs.metrics import frames
from burstlake.jobs.metrics.divergence import divergence_of, divergences
from burstlake.jobs.metrics.headline_sql import headline
from burstlake.jobs.metrics.job_io import job_io_metrics
from burstlake.jobs.metrics.nud import distribution, distribution_metrics
from burstlake.jobs.metrics.run import TABLES, run
from burstlake.jobs.metrics.settings import MetricSettings, top_count
from burstlake.lake import contribution_ids, read_table, table_files
from burstlake.progress import Step
from burstlake.schemas import spec
from tests.builders.hand_lake import NODE_IO, SETTINGS, T0, at, build_hand_lake

LN2 = math.log(2)


def nud_of(values) -> float | None:
    """Reference NUD with NumPy: 1 - H / ln n from the shares (None if undefined)."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2 or x.sum() == 0:
        return None
    p = x[x > 0] / x.sum()
    return 1 + float((p * np.log(p)).sum()) / math.log(len(x))


# The tests of the hand-built lake's one full metrics run in Spark (`hand`): in make test-all.
full_run = pytest.mark.slow


@pytest.fixture(scope="module")
def hand(spark, tmp_path_factory):
    """The hand-built lake after one metrics run: (lake, {table: rows keyed by the key})."""
    lake = tmp_path_factory.mktemp("metrics") / "lake"
    build_hand_lake(lake)
    written = run(lake, spark=spark, settings=SETTINGS)
    assert set(written) == set(TABLES)
    return lake, written


def rows(lake, table: str) -> dict:
    """A metrics table as {first key column value but cluster: row dict}."""
    key = next(k for k in spec(table).key if k != "cluster")
    return {r[key]: r for r in read_table(lake, table).to_pylist()}


def test_a_non_positive_dxt_interval_is_refused():
    with pytest.raises(ValueError, match="dxt_interval_s must be > 0"):
        MetricSettings(dxt_interval_s=0)
    assert MetricSettings().with_overrides(["dxt_interval_s=30"]).dxt_interval_s == 30


def test_nud_reference_values():
    assert nud_of([1, 1, 1, 1]) == pytest.approx(0)
    assert nud_of([5, 0, 0, 0]) == pytest.approx(1)
    assert nud_of([2, 1, 1, 0]) == pytest.approx(0.25)
    assert nud_of([7]) is None and nud_of([0, 0]) is None


def test_nud_columns_agree_with_numpy(spark):
    rng = np.random.default_rng(4)
    vectors = {f"v{i}": rng.pareto(1.0, size=int(rng.integers(2, 40))) * 1e9 for i in range(30)}
    vectors |= {"one": [5.0], "zero": [0.0, 0.0, 0.0], "even": [3.0] * 7, "hot": [9, 0, 0]}
    frame = spark.createDataFrame(
        [(k, float(x)) for k, xs in vectors.items() for x in xs], "k string, x double"
    )
    from pyspark.sql import functions as F

    nud, top = distribution_metrics("d", F.col("d_items"))
    got = {
        r["k"]: (r["nud"], r["top"])
        for r in frame.groupBy("k")
        .agg(*distribution(F.col("x"), "d"))
        .select("k", nud.alias("nud"), top.alias("top"))
        .collect()
    }
    for k, xs in vectors.items():
        expected = nud_of(xs)
        if expected is None:
            assert got[k][0] is None, k
        else:
            assert got[k][0] == pytest.approx(expected, abs=1e-9), k
    assert got["hot"] == (pytest.approx(1.0), pytest.approx(1.0))
    assert got["zero"][1] is None


def test_divergence_by_hand_and_per_application():
    """004 Def. 4: three jobs with shares (1, 0), (0, 1), (1/2, 1/2): distances √2, √2/2, √2/2,
    mean 2√2/3; the per-application form (app_metrics, from collected vectors) agrees with the
    pairs taken at once, also when the pairs are walked in many blocks."""
    assert divergence_of([np.array([1, 0]), np.array([0, 1]), np.array([0.5, 0.5])]) == (
        pytest.approx(2 * math.sqrt(2) / 3)
    )
    assert divergence_of([np.array([0.2, 0.8])] * 2) == 0
    rng = np.random.default_rng(7)
    apps = {}
    for a in range(12):
        raw = rng.pareto(1.0, size=(int(rng.integers(2, 7)), int(rng.integers(2, 9)))) + 1e-3
        apps[f"app{a}"] = raw / raw.sum(axis=1, keepdims=True)
    rows = [(app, [float(x) for x in row]) for app, m in apps.items() for row in m]
    rows.append(("alone", [1.0, 0.0]))  # one vector: no pair, no divergence
    rng.shuffle(rows)
    vectors = pa.table({"app_id": [r[0] for r in rows], "shares": [r[1] for r in rows]})
    got = dict(divergences(vectors))
    assert got == {app: pytest.approx(pairwise(m), rel=1e-12) for app, m in apps.items()}
    large = rng.random((300, 5))
    blocks = divergence_of(large)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("burstlake.jobs.metrics.divergence.BLOCK_VALUES", 64)
        assert divergence_of(large) == pytest.approx(blocks, rel=1e-12)
    assert blocks == pytest.approx(pairwise(large), rel=1e-12)


def pairwise(matrix: np.ndarray) -> float:
    """Def. 4 with every pair at once (the reference for the blocked form)."""
    gaps = matrix[:, None, :] - matrix[None, :, :]
    distance = np.sqrt((gaps**2).sum(axis=2))
    return float(distance[np.triu_indices(len(matrix), k=1)].mean())


def test_top_count():
    assert top_count(0.01, 5677) == 57
    assert top_count(0.2, 89) == 18
    assert top_count(0.1, 89) == 9
    assert top_count(0.01, 8) == 1
    assert top_count(0.2, 10) == 2  # 0.2 * 10 is 2.0000000000000004 in floating point


@full_run
def test_job_io_distribution(hand):
    lake, _ = hand
    jobs = rows(lake, "job_io_metrics")
    assert set(jobs) == {"1", "2", "3", "4", "5", "8", *[f"app{j}" for j in range(7)]}
    j1 = jobs["1"]
    assert (j1["nodes"], j1["active_nodes"], j1["read_bytes"], j1["write_bytes"]) == (
        4,
        3,
        500,
        300,
    )
    assert j1["io_nud"] == pytest.approx(0.25)
    assert j1["max_node_share"] == pytest.approx(0.5)
    assert (j1["rank0"], j1["all_rank"], j1["uneven_io"]) == (False, True, True)
    j2 = jobs["2"]
    assert j2["io_bytes"] == 1000  # cn0's row at 100 s: midpoint 105 is J2's, not J1's
    assert (j2["io_nud"], j2["rank0"], j2["uneven_io"], j2["all_rank"]) == (None, None, None, False)
    j3 = jobs["3"]
    assert (j3["io_bytes"], j3["io_nud"], j3["max_node_share"], j3["rank0"]) == (
        0,
        None,
        None,
        None,
    )
    j4 = jobs["4"]
    assert j4["io_bytes"] == 10000  # the 777 bytes at 300 s (midpoint 305) are no job's
    assert j4["max_node_share"] == pytest.approx(0.96)
    assert j4["io_nud"] == pytest.approx(nud_of([9600, 200, 200, 0]))
    assert j4["io_nud"] == pytest.approx(0.858853, abs=1e-6)
    assert (j4["rank0"], j4["all_rank"]) == (True, False)
    j5 = jobs["5"]
    assert (j5["nodes"], j5["io_nud"], j5["uneven_io"], j5["all_rank"]) == (2, 0.0, False, True)
    j8 = jobs["8"]
    assert (j8["nodes"], j8["io_bytes"], j8["rank0"], j8["max_node_share"]) == (2, 100, True, 1.0)
    assert (j8["cabinets"], j8["min_cabinets"], j8["in_min_cabinets"]) == (1, 1, True)


@full_run
def test_job_node_distribution_and_characteristics(hand):
    lake, _ = hand
    jobs = rows(lake, "job_io_metrics")
    j1, j3, j4, j5 = jobs["1"], jobs["3"], jobs["4"], jobs["5"]
    assert (j1["cabinets"], j1["min_cabinets"], j1["in_min_cabinets"]) == (1, 1, True)
    assert (j1["cabinet_nud"], j1["uneven_nodes"]) == (None, None)
    assert (j3["cabinets"], j3["min_cabinets"], j3["in_min_cabinets"]) == (2, 1, False)
    assert (j3["cabinet_nud"], j3["uneven_nodes"]) == (0.0, False)
    cabinet_nud = 1 + (0.75 * math.log(0.75) + 0.25 * math.log(0.25)) / LN2
    assert j4["cabinet_nud"] == pytest.approx(cabinet_nud)
    assert j4["cabinet_nud"] == pytest.approx(0.188722, abs=1e-6)
    assert (j4["cabinets"], j4["min_cabinets"], j4["uneven_nodes"]) == (2, 1, True)
    assert (j5["comm_bytes"], j5["low_comm"]) == (2000, True)
    assert (j5["data_intensive"], j5["optimizable"]) == (True, True)
    assert (j1["comm_bytes"], j1["low_comm"], j1["optimizable"]) == (None, None, False)
    assert (j4["data_intensive"], j4["optimizable"]) == (True, False)  # rank 0
    assert j5["io_phase_s"] == 20.0 and j5["io_phase_fraction"] == pytest.approx(0.2)
    assert j5["run_s"] == 100.0 and j5["app_id"] == "u1|e|2"
    assert jobs["app0"]["app_id"] == "u2|app|2"


@full_run
def test_interval_metrics(hand):
    lake, _ = hand
    intervals = {r["ts"]: r for r in read_table(lake, "interval_metrics").to_pylist()}
    assert len(intervals) == 15  # every interval with traffic, the unowned 300 s one too
    first = intervals[at(0)]
    assert (first["system_bytes"], first["active_nodes"], first["top_node_ions"]) == (9500, 4, 1)
    assert first["top_node_share"] == pytest.approx(6000 / 9500)
    assert first["top_cabinet_share"] == pytest.approx(9000 / 9500)
    assert first["top_ion_share"] == pytest.approx(6000 / 9500)
    second = intervals[at(50)]
    assert second["system_bytes"] == 3300
    assert second["top_node_share"] == pytest.approx(3000 / 3300)
    tie = intervals[at(400)]
    assert (tie["top_node_share"], tie["top_cabinet_share"], tie["top_node_ions"]) == (0.5, 0.5, 1)
    assert intervals[at(300)]["system_bytes"] == 777
    ghost = intervals[at(500)]  # a node missing from topology: no cabinet, no ION
    assert (ghost["top_node_share"], ghost["top_cabinet_share"], ghost["top_node_ions"]) == (
        1.0,
        None,
        0,
    )


@full_run
def test_cabinet_and_ion_load(hand):
    lake, _ = hand
    cabinets, ions = rows(lake, "cabinet_load"), rows(lake, "ion_load")
    assert {k: v["io_bytes"] for k, v in cabinets.items()} == {"cab000": 13077, "cab001": 28500}
    assert cabinets["cab000"]["share"] == pytest.approx(13077 / 41577)
    assert cabinets["cab000"]["peak_bytes"] == 9600
    assert cabinets["cab001"]["active_intervals"] == 9
    assert cabinets["cab000"]["nodes"] == 4
    assert {k: v["io_bytes"] for k, v in ions.items()} == {
        "ion000": 11700,
        "ion001": 1377,
        "ion002": 6500,
        "ion003": 22000,
    }
    assert sum(v["share"] for v in ions.values()) == pytest.approx(1)


@full_run
def test_app_metrics(hand):
    lake, _ = hand
    apps = rows(lake, "app_metrics")
    assert set(apps) == {"u2|app|2"}  # the only multi-node application with > 5 jobs
    app = apps["u2|app|2"]
    assert (app["user"], app["job_name"], app["nodes"], app["jobs"]) == ("u2", "app", 2, 7)
    assert app["divergence"] == pytest.approx(9 * math.sqrt(2) / 15)
    assert app["consistent_distribution"] is False
    assert app["consistency_data_intensive"] == pytest.approx(5 / 7)
    assert app["consistency_all_rank"] == 1.0
    assert app["consistency_low_comm"] is None  # no network counters on these nodes


@full_run
def test_darshan_job_metrics(hand):
    lake, _ = hand
    logs = rows(lake, "darshan_job_metrics")
    l1 = logs["L1"]
    assert (l1["rank_bytes"], l1["shared_bytes"], l1["ranks_with_io"]) == (1000, 1000, 2)
    assert l1["shared_share"] == pytest.approx(0.5)
    assert l1["rank_nud"] == pytest.approx(nud_of([900, 100, 0, 0]))
    assert l1["rank_nud"] == pytest.approx(0.765503, abs=1e-6)
    assert l1["max_rank_share"] == pytest.approx(0.9)
    assert (l1["rank0"], l1["uneven_io"]) == (False, True)
    assert l1["hosts"] == 2
    assert l1["host_nud"] == pytest.approx(nud_of([900, 100]))
    l2, l3 = logs["L2"], logs["L3"]
    assert (l2["rank_bytes"], l2["rank_nud"], l2["rank0"], l2["hosts"]) == (50, None, None, 0)
    assert (l3["rank_bytes"], l3["shared_share"], l3["rank_nud"]) == (0, None, None)


def dxt_series_duckdb(lake) -> dict:
    """dxt_job_series' DXT side recomputed in DuckDB from darshan_dxt, independently: every
    segment against every 10 s interval of the hand grid, the overlap in whole nanoseconds."""
    import duckdb

    segments = read_table(lake, "darshan_dxt")
    con = duckdb.connect()
    con.register("seg", segments)
    found = con.execute(
        "WITH grid AS (SELECT epoch_ns($t0::TIMESTAMPTZ) + i * 10000000000 AS low "
        "FROM range(0, 151) r(i)), "
        "chosen AS (SELECT log_id, CASE WHEN bool_or(module = 'DXT_POSIX') THEN 'DXT_POSIX' "
        "ELSE 'DXT_MPIIO' END AS module FROM seg GROUP BY log_id), "
        "kept AS (SELECT seg.* FROM seg JOIN chosen USING (log_id, module)), "
        "parts AS (SELECT log_id, low, op, CASE WHEN end_ns = start_ns THEN "
        "(CASE WHEN start_ns >= low AND start_ns < low + 10000000000 THEN length ELSE 0 END) "
        "ELSE length * greatest(0, least(end_ns, low + 10000000000) - greatest(start_ns, low)) "
        "/ (end_ns - start_ns) END AS moved FROM kept, grid) "
        "SELECT log_id, (low - epoch_ns($t0::TIMESTAMPTZ)) // 1000000000 AS t, "
        "sum(moved) FILTER (op = 'read') AS r, sum(moved) FILTER (op = 'write') AS w "
        "FROM parts GROUP BY ALL HAVING sum(moved) > 0",
        {"t0": T0.isoformat()},
    ).fetchall()
    return {(log, t): (r, w) for log, t, r, w in found}


@full_run
def test_dxt_job_series(hand):
    lake, written = hand
    series = read_table(lake, "dxt_job_series").to_pylist()
    got = {(r["log_id"], int((r["ts"] - T0).total_seconds())): r for r in series}
    expected = {  # (read, write, node_io bytes), worked out in the module docstring
        ("L1", 0): (720, 0, 500),
        ("L1", 10): (180, 0, 0),
        ("L1", 50): (0, 400, 300),
        ("L2", 100): (0, 10, 1000),
        ("L2", 110): (0, 20, 0),
        ("L2", 120): (0, 10, 0),
    }
    assert set(got) == set(expected) and written["dxt_job_series"] == len(expected)
    for key, (read, write, node_bytes) in expected.items():
        row = got[key]
        assert (row["read_bytes"], row["write_bytes"]) == pytest.approx((read, write)), key
        assert row["bytes_per_s"] == pytest.approx((read + write) / 10), key
        assert (row["node_io_bytes"], row["node_io_bytes_per_s"]) == (node_bytes, node_bytes / 10)
        assert (row["cluster"], row["interval_s"]) == ("hand", 10)
    assert {r["module"] for r in series if r["log_id"] == "L1"} == {"DXT_POSIX"}
    assert {r["module"] for r in series if r["log_id"] == "L2"} == {"DXT_MPIIO"}
    independent = dxt_series_duckdb(lake)
    assert set(independent) == set(expected)
    for key, (read, write) in independent.items():
        assert (got[key]["read_bytes"], got[key]["write_bytes"]) == pytest.approx(
            (read or 0, write or 0)
        ), key


@full_run
def test_platform_summary_by_hand(hand):
    lake, _ = hand
    figures = rows(lake, "platform_summary")
    # multi-node jobs with traffic: J1, J4, J5, J8 and six app jobs; rank 0: J4, J8, the six
    assert figures["rank0_jobs"]["value"] == pytest.approx(8 / 10)
    assert figures["rank0_jobs"]["basis"] == 10
    assert figures["rank0_jobs"]["tianhe1a"] == pytest.approx(0.257)
    assert figures["even_io_all_rank"]["value"] == pytest.approx(1 / 2)  # J5 of J1, J5
    assert figures["uneven_nodes"]["value"] == pytest.approx(1 / 2)  # J4 of J3, J4
    assert figures["optimizable_jobs"]["value"] == pytest.approx(1 / 13)
    # grid 0..1500 s: 151 intervals; 5 at or above a third of the 9600-byte peak
    low = figures["low_throughput_intervals"]
    assert (low["value"], low["basis"]) == (pytest.approx(146 / 151), 151)
    total = sum(r + w for _, _, r, w, _, _ in NODE_IO)
    assert figures["peak_to_mean"]["value"] == pytest.approx(960 / (total / 1510))
    assert figures["consistent_apps"]["value"] == 0.0


@full_run
def test_headline_figures_agree_with_duckdb(hand):
    lake, _ = hand
    figures = rows(lake, "platform_summary")
    independent = headline(lake, SETTINGS)
    assert len(independent) == 15
    for name, value in independent.items():
        assert figures[name]["value"] == pytest.approx(value, abs=1e-12), name


@full_run
def test_tables_read_back_through_lake_and_catalog(hand):
    lake, written = hand
    for table in TABLES:
        assert read_table(lake, table).schema == spec(table).schema
        assert contribution_ids(lake, table) <= {frames.SOURCE_ID}
        (count,) = catalog.sql(lake, f"SELECT count(*) AS n FROM {table}").column("n").to_pylist()
        assert count == written[table], table


@pytest.mark.slow  # a second full metrics run
def test_rerun_replaces_previous_output(hand, spark):
    lake, written = hand
    steps: list[Step] = []
    again = run(lake, spark=spark, settings=SETTINGS, report=steps.append)
    assert again == written
    assert len(table_files(lake, "job_io_metrics")) == 1  # the current Delta version's
    assert _progress(steps) == (len(TABLES), [f"hand {name}" for name in TABLES])


def _progress(steps: list[Step]) -> tuple[float, list[str]]:
    """A run's steps as (work done, the notes in order), checking the one ``metrics`` task is
    announced with its whole work (machines x tables) and closed at the end."""
    assert {s.what for s in steps} == {"metrics"}
    assert steps[0].total == sum(s.advance for s in steps) and steps[0].unit == "table"
    assert steps[-1].done and not any(s.done for s in steps[:-1])
    return sum(s.advance for s in steps), [s.note for s in steps if s.note]


@pytest.mark.slow  # recomputes job_io_metrics in Spark
def test_thresholds_are_settings(hand, spark):
    lake, _ = hand
    frames_ = {t: frames.read(spark, lake, t) for t in ("jobs", "job_nodes", "node_io", "topology")}
    strict = MetricSettings(rank0_share=0.97, uneven_nud=0.3, data_intensive_bytes=20000)
    result = job_io_metrics(
        frames_["jobs"], frames_["job_nodes"], frames_["node_io"], frames_["topology"], 4, strict
    ).metrics
    got = {r["job_id"]: r for r in result.where("job_id IN ('1', '4', '5')").collect()}
    assert got["4"]["rank0"] is False  # 0.96 is not above 0.97
    assert got["1"]["uneven_io"] is False  # 0.25 is not above 0.3
    assert got["5"]["data_intensive"] is False


@pytest.mark.slow  # recomputes job_io_metrics in Spark twice
def test_range_join_shuffled_or_broadcast_gives_the_same_rows(hand, spark):
    """A lake past ``broadcast_rows`` shuffles both sides of the range join instead of
    broadcasting the allocations; hour buckets instead of days: the same job metrics."""
    lake, _ = hand
    frames_ = {t: frames.read(spark, lake, t) for t in ("jobs", "job_nodes", "node_io", "topology")}

    def metrics(settings: MetricSettings) -> list:
        args = (frames_["jobs"], frames_["job_nodes"], frames_["node_io"], frames_["topology"])
        result = job_io_metrics(*args, 4, settings).metrics
        return sorted(result.collect(), key=lambda r: r["job_id"])

    broadcast = metrics(SETTINGS)
    assert len(broadcast) == len(rows(lake, "job_io_metrics")) > 0
    assert metrics(replace(SETTINGS, broadcast_rows=0, time_bucket_s=3600)) == broadcast
    with pytest.raises(ValueError, match="broadcast_rows"):
        MetricSettings(broadcast_rows=-1)


def test_settings_overrides():
    s = MetricSettings().with_overrides(
        [
            "rank0_share=0.9",
            "data_intensive_bytes=1e9",
            "darshan_modules=POSIX, STDIO",
            "nodes_per_cabinet=64",
        ]
    )
    assert (s.rank0_share, s.data_intensive_bytes) == (0.9, 10**9)
    assert (s.darshan_modules, s.nodes_per_cabinet) == (("POSIX", "STDIO"), 64)
    with pytest.raises(ValueError, match="NAME=VALUE"):
        MetricSettings().with_overrides(["rank0"])
    with pytest.raises(ValueError, match="not a float"):
        MetricSettings().with_overrides(["rank0_share=high"])
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        MetricSettings(rank0_share=1.5)


@pytest.mark.slow  # a full metrics run in Spark
def test_empty_lake(lake, spark):
    steps: list[Step] = []
    written = run(lake, spark=spark, report=steps.append)
    assert _progress(steps) == (len(TABLES), [f"(unnamed) {name}" for name in TABLES])
    figures = rows(lake, "platform_summary")
    assert written == {t: len(figures) if t == "platform_summary" else 0 for t in TABLES}
    assert figures["rank0_jobs"]["value"] is None and figures["rank0_jobs"]["basis"] == 0
    assert catalog.sql(lake, "SELECT count(*) AS n FROM job_io_metrics").column("n")[0].as_py() == 0
