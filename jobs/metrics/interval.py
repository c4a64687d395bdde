"""Spatial burstiness per interval (paper 004 §4.1, Fig. 8, §7.4 Fig. 15c, §7.5 Fig. 17a).

In each interval with traffic: the share of the system's bytes moved by its busiest k nodes,
cabinets and I/O nodes, with k = ⌈fraction × how many the system has⌉ (from topology, so the
busiest 1 % of Tianhe-1A's 5,677 nodes is 57 nodes whether or not they are all active). The
sum of the k largest values does not depend on how ties are broken. "IONs serving the busiest
1 % of nodes" counts the distinct IONs of the busiest k *active* nodes, ties broken by node
name. Nodes missing from topology count for the system and node shares only.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from .frames import Keep, recompute
from .settings import MetricSettings, top_count


@dataclass(frozen=True)
class SystemSize:
    """How many nodes, cabinets and IONs the system has (the k of each top-k), and whether the
    nodes of each cabinet share one ION (``cabinet_one_ion``) and those of each ION one
    cabinet (``ion_one_cabinet``): then the per interval × cabinet × ION sums are already per
    interval × cabinet (or ION), with nothing left to add up (Tianhe-1A: one ION per cabinet)."""

    nodes: int
    cabinets: int
    ions: int
    cabinet_one_ion: bool = False
    ion_one_cabinet: bool = False

    @staticmethod
    def of(places: pa.Table, node_io: DataFrame) -> SystemSize:
        """From the topology's (node, cabinet, ion) rows; a lake without one falls back to the
        nodes seen in node_io."""

        def distinct(column: str) -> int:
            return pc.count_distinct(places[column], mode="only_valid").as_py()

        def within_one(level: str, other: str) -> bool:  # a null ``other`` is one value too
            known = places.filter(pc.is_valid(places[level]))
            return known.group_by([level, other]).aggregate([]).num_rows == distinct(level)

        nodes = distinct("node") or node_io.select("node").distinct().count()
        return SystemSize(
            nodes,
            distinct("cabinet"),
            distinct("ion"),
            within_one("cabinet", "ion"),
            within_one("ion", "cabinet"),
        )


def active_traffic(node_io: DataFrame, topology: DataFrame) -> DataFrame:
    """Node-intervals that moved bytes, with the node's cabinet and ION."""
    read = F.coalesce(F.col("read_bytes"), F.lit(0))
    write = F.coalesce(F.col("write_bytes"), F.lit(0))
    place = F.broadcast(topology.select("node", "cabinet", "ion"))
    return (
        node_io.select(
            "node",
            "ts",
            "interval_s",
            read.alias("read"),
            write.alias("write"),
            (read + write).alias("io"),
        )
        .where(F.col("io") > 0)
        .join(place, "node", "left")
    )


def level_intervals(levels: DataFrame, level: str, summed: bool) -> DataFrame:
    """Per interval × cabinet (or ION): read, write and io bytes, from :func:`place_bytes`;
    ``summed`` when its rows already are one per interval × ``level`` (:class:`SystemSize`)."""
    rows = levels.where(F.col(level).isNotNull())
    if summed:
        return rows.select("ts", level, "read", "write", "io")
    return rows.groupBy("ts", level).agg(
        F.sum("read").alias("read"), F.sum("write").alias("write"), F.sum("io").alias("io")
    )


def place_bytes(active: DataFrame) -> DataFrame:
    """Per interval × cabinet × ION: read, write and io bytes (both levels' sums in one pass)."""
    return active.groupBy("ts", "cabinet", "ion").agg(
        F.sum("read").alias("read"), F.sum("write").alias("write"), F.sum("io").alias("io")
    )


def item(*names: str) -> Column:
    """An item to rank: a struct whose first field ``less`` is its negated io bytes, so that
    ascending order is busiest first, then by ``names`` (ties by name). Items have io > 0, and
    ``less`` is declared nullable: Comet 1.2's native shuffle rejects lists of structs with a
    non-null field (apache/datafusion-comet#5137)."""
    less = F.when(F.col("io") > 0, -F.col("io"))
    return F.struct(less.alias("less"), *(F.col(name) for name in names))


def busiest(items: Column, k: int) -> Column:
    """The first k of an interval's :func:`item` structs: its k busiest."""
    return F.slice(F.sort_array(items), 1, k)


def summed(items: Column, field: str) -> Column:
    """The sum of one (long) field over an array of structs."""
    return F.aggregate(items, F.lit(0).cast("long"), lambda total, entry: total + entry[field])


def top_bytes(frame: DataFrame, name: str, k: int, alias: str) -> DataFrame:
    """Per interval, the bytes of its k busiest items (``alias``): the k largest of each
    interval's items, gathered per interval and sorted there (no window over the whole frame,
    which would sort every row)."""
    top = busiest(F.collect_list(item(name)), k)
    return frame.groupBy("ts").agg((-summed(top, "less")).alias(alias))


def system_intervals(active: DataFrame, k: int) -> DataFrame:
    """Per interval, in one pass over the active node-intervals (one shuffle by ``ts``): its
    length, the system's bytes and active nodes, and the bytes of its k busiest nodes (ties by
    node name) with the distinct IONs serving them (004 §4.1; §7.5, Fig. 17a). Each interval's
    nodes are gathered and sorted there: a window ranking them would sort all node-intervals.
    A node has one row per interval (node_io's key), so the active nodes are a count, not a
    set; the distinct IONs are a set size: a ``countDistinct`` would add a shuffle of its own."""
    return (
        active.groupBy("ts")
        .agg(
            F.max("interval_s").alias("interval_s"),
            F.sum("io").alias("system_bytes"),
            F.count(F.lit(1)).alias("active_nodes"),
            busiest(F.collect_list(item("node", "ion")), k).alias("top"),
        )
        .select(
            "ts",
            "interval_s",
            "system_bytes",
            "active_nodes",
            (-summed(F.col("top"), "less")).alias("top_node_bytes"),
            F.size(F.array_compact(F.array_distinct(F.col("top.ion")))).alias("top_node_ions"),
        )
    )


@dataclass(frozen=True)
class Intervals:
    """interval_metrics and the per-interval cabinet and ION bytes behind it (for the loads)."""

    metrics: DataFrame
    cabinets: DataFrame
    ions: DataFrame


def interval_metrics(
    node_io: DataFrame,
    topology: DataFrame,
    size: SystemSize,
    settings: MetricSettings,
    keep: Keep = recompute,
) -> Intervals:
    """interval_metrics: spatial burstiness per interval (004 §4.1, §7.4, §7.5). node_io is
    read twice: once per node, once summed per cabinet × ION (kept by ``keep`` for the loads).
    """
    active = active_traffic(node_io, topology)
    levels = keep(place_bytes(active), "place_bytes")
    cabinets = level_intervals(levels, "cabinet", size.cabinet_one_ion)
    ions = level_intervals(levels, "ion", size.ion_one_cabinet)
    k_nodes = top_count(settings.top_node_fraction, size.nodes)
    k_cabinets = top_count(settings.top_cabinet_fraction, size.cabinets)
    k_ions = top_count(settings.top_ion_fraction, size.ions)
    system_bytes = F.col("system_bytes")
    metrics = (
        system_intervals(active, k_nodes)
        .join(top_bytes(cabinets, "cabinet", k_cabinets, "top_cabinet_bytes"), "ts", "left")
        .join(top_bytes(ions, "ion", k_ions, "top_ion_bytes"), "ts", "left")
        .select(
            "ts",
            "interval_s",
            "system_bytes",
            "active_nodes",
            (F.col("top_node_bytes") / system_bytes).alias("top_node_share"),
            (F.col("top_cabinet_bytes") / system_bytes).alias("top_cabinet_share"),
            (F.col("top_ion_bytes") / system_bytes).alias("top_ion_share"),
            F.coalesce(F.col("top_node_ions"), F.lit(0)).alias("top_node_ions"),
        )
    )
    return Intervals(metrics, cabinets, ions)
