"""The metric recipe of docs/design.md ("To add a metric"), walked with a toy: a new table,
``node_traffic``, the bytes each node read and wrote over the lake and whether that passes
``MetricSettings.data_intensive_bytes`` (paper 004 §3's data-intensive threshold, reused).
Added the recipe's way: a ``TableSpec`` appended to ``schemas/metrics.py:TABLES``, its module
(here the function :func:`node_traffic`) and a step in ``run.py:ClusterMetrics.steps``; then
computed by the unchanged pipeline on the hand lake (tests/builders/hand_lake.py) and read
back from the lake and its catalog. Expected values by hand.

What the recipe cannot do by registration: the step list is a method's literal
(``ClusterMetrics.steps``), so the test wraps the method, as an edit of run.py would; and a
new column of an existing table is an edit of the module computing it, which no test can add
from outside."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from burstlake import catalog, schemas
from burstlake.jobs.metrics import run as metrics_run
from burstlake.jobs.metrics.settings import MetricSettings
from burstlake.lake import read_table
from burstlake.schemas import metrics as metric_tables
from burstlake.schemas.tables import TableSpec
from tests.builders.hand_lake import SETTINGS, build_hand_lake

NODE_TRAFFIC = TableSpec(
    name="node_traffic",
    doc="Toy metric: bytes each node read and wrote over the lake.",
    schema=pa.schema(
        [
            pa.field("cluster", pa.string(), True),
            pa.field("node", pa.string(), False),
            pa.field("read_bytes", pa.int64(), False),
            pa.field("write_bytes", pa.int64(), False),
            pa.field("data_intensive", pa.bool_(), False),
        ]
    ),
    key=("cluster", "node"),
    nonnegative=("read_bytes", "write_bytes"),
)


def node_traffic(node_io: DataFrame, settings: MetricSettings) -> DataFrame:
    """Per node: bytes read and written in ``node_io``, and whether their sum passes the
    data-intensive threshold (paper 004 §3)."""
    totals = node_io.groupBy("node").agg(
        F.coalesce(F.sum("read_bytes"), F.lit(0)).alias("read_bytes"),
        F.coalesce(F.sum("write_bytes"), F.lit(0)).alias("write_bytes"),
    )
    moved = F.col("read_bytes") + F.col("write_bytes")
    return totals.withColumn("data_intensive", moved > F.lit(settings.data_intensive_bytes))


@pytest.fixture
def recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The recipe as a registration the test undoes. ``TABLES`` is read at import into
    ``NAMES``, ``schemas.REGISTRY`` and ``run.TABLES``, so each copy gets the table, as the one
    edit of ``schemas/metrics.py`` would give them."""
    tables = (*metric_tables.TABLES, NODE_TRAFFIC)
    monkeypatch.setattr(metric_tables, "TABLES", tables)
    monkeypatch.setattr(metric_tables, "NAMES", tuple(t.name for t in tables))
    monkeypatch.setattr(metrics_run, "TABLES", metric_tables.NAMES)
    monkeypatch.setitem(schemas.REGISTRY, NODE_TRAFFIC.name, NODE_TRAFFIC)
    shipped = metrics_run.ClusterMetrics.steps

    def steps(self: metrics_run.ClusterMetrics) -> list:
        step = lambda: node_traffic(self.inputs["node_io"], self.settings)  # noqa: E731
        return [*shipped(self), (NODE_TRAFFIC.name, step)]

    monkeypatch.setattr(metrics_run.ClusterMetrics, "steps", steps)


# (node, read, write): tests/builders/hand_lake.py's NODE_IO summed by node; nodes 6 and 7 add
# the app rows (node 6: 6000 + 6000 + 1000 written, node 7: 3 x 1000). Over 5000 bytes moved
# (SETTINGS.data_intensive_bytes): cn00001, cn00005, cn00006.
EXPECTED = [
    ("cn00000", 300 + 1000 + 500, 100),
    ("cn00001", 200, 9600),
    ("cn00002", 200, 200),
    ("cn00003", 0, 200 + 777),
    ("cn00004", 0, 500),
    ("cn00005", 0, 3000 + 3000),
    ("cn00006", 6000, 6000 + 6000 + 1000),
    ("cn00007", 0, 3 * 1000),
    ("ghost", 100, 0),  # node_io keeps a node the topology lacks; so does the toy
]


@pytest.mark.slow  # the whole metrics run on the hand lake: about 40 s on 2 shared cores
def test_a_toy_metric_lands_through_the_recipe(recipe, spark, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    build_hand_lake(lake)
    written = metrics_run.run(lake, spark=spark, settings=SETTINGS)
    assert written["node_traffic"] == len(EXPECTED)
    rows = read_table(lake, "node_traffic").to_pylist()
    assert rows == [
        {
            "cluster": "hand",
            "node": node,
            "read_bytes": read,
            "write_bytes": write,
            "data_intensive": read + write > 5000,
        }
        for node, read, write in EXPECTED
    ]
    assert [r["node"] for r in rows if r["data_intensive"]] == ["cn00001", "cn00005", "cn00006"]
    # the catalog defines the new table as it does every table of the registry
    through_sql = catalog.sql(
        lake, "SELECT sum(read_bytes)::BIGINT AS r, sum(write_bytes)::BIGINT AS w FROM node_traffic"
    ).to_pylist()
    assert through_sql == [{"r": 8300, "w": 33377}]


def test_the_toy_metric_leaves_the_shipped_tables_alone() -> None:
    assert "node_traffic" not in schemas.REGISTRY and "node_traffic" not in metrics_run.TABLES
