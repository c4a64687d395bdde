"""The lake's Zabbix stream: which files continue which, and the regions of ``node_io`` they
write (docs/design.md, "Zabbix exports and database").

The files of one export are one stream per item. A Zabbix server writes one real-time export
file per history syncer (``StartDBSyncers``) and rotates each to ``.old``; an item's values land
in whichever syncer's file. The group of files whose samples form one series is therefore not
named by the user: it is the item itself. Every Zabbix file in the lake is a member (its usable
samples are kept in the lake table ``zabbix_samples`` under the file's contribution), and a
series is the samples of one (node, item) from all members, ordered as the files'
concatenation would order them: by ingest order (``seq``), then line.

node_io rows of the stream live in contributions of one UTC day × one node bucket
(:func:`region_id`, ``NODE_BUCKETS`` buckets by md5 of the node name), not in the file's own.

New content at a path already ingested is either a new version of that member or the path's
next rotation. It **replaces** the earlier content (whose samples and quarantine rows go, and
whose days are recomputed without it) when the two share a sample instant of some item: a
corrected file, or one that grew. It **continues** the stream when they share none: the
syncer file rotated and the path now holds later values, and the earlier content stays (also
when the new content has no usable sample yet). A replacing version takes the stream position
of the one it replaces.

An export names no machine: ``--cluster`` does (source.record_cluster), and a series is one
cluster × node × item, so two machines' exports with the same node names stay apart (their
node_io contributions too: :func:`region_id`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest.source import ParseContext, record_cluster
from burstlake.jobs.ingest.zabbix import deltas
from burstlake.jobs.ingest.zabbix.options import DAY_S
from burstlake.lake import cluster_filter, dataset, lake_path, read_table

SOURCE_NAME = "zabbix"
STATE_TABLE = "zabbix_samples"  # every member's usable samples (the stream's state)
NODE_BUCKETS = 16  # node_io contributions per day: pass 2 recomputes one day of one bucket


def bucket_sql(node: str) -> str:
    """SQL for the node bucket of a node name: stable across runs and DuckDB versions."""
    return f"CAST(md5_number_lower({node}) % {NODE_BUCKETS} AS INTEGER)"


def day_sql(seconds: str) -> str:
    return f"CAST(floor(({seconds}) / {DAY_S}) AS BIGINT)"


def region_id(day: int, bucket: int, cluster: str | None = None) -> str:
    """The node_io contribution holding one UTC day of one node bucket of one machine's Zabbix
    stream (the unnamed machine's ids carry no machine tag, as before machines were named)."""
    tag = "" if cluster is None else hashlib.blake2b(cluster.encode(), digest_size=4).hexdigest()
    date = datetime.fromtimestamp(day * DAY_S, UTC)
    return f"zabbix-{tag + '-' if tag else ''}{date:%Y%m%d}-b{bucket:02d}"


def same_machine(cluster: str | None) -> pc.Expression:
    """Filter: rows of the machine ``cluster`` (null: the unnamed machine; the lake's rule)."""
    return cluster_filter(cluster)


@dataclass(frozen=True)
class Stream:
    """This file's place in the lake's Zabbix stream: the other files whose samples continue the
    same items, and what becomes of earlier contents of the same path."""

    lake: Path
    source_id: str
    file: str
    seq: int  # this file's ingest order
    others: dict[str, str]  # source_id -> file of every other member
    cluster: str | None  # the machine (--cluster): only its samples continue this file's
    replaced: tuple[str, ...] = ()  # earlier contents of this path that this one replaces
    kept: tuple[str, ...] = ()  # earlier contents of this path that this one continues

    @classmethod
    def open(cls, context: ParseContext, path: Path) -> Stream:
        lake = context.lake or lake_path(None)
        log = read_table(lake, "ingest_log", columns=["source", "source_id", "file"]).to_pylist()
        members = {r["source_id"]: r["file"] for r in log if r["source"] == SOURCE_NAME}
        members.pop(context.source_id, None)
        cluster = record_cluster(context.options)
        return cls(lake, context.source_id, str(path), time.time_ns(), members, cluster)

    def earlier_versions(self) -> list[str]:
        return sorted(i for i, f in self.others.items() if f == self.file)

    def decide(self, con: duckdb.DuckDBPyConnection, new: duckdb.DuckDBPyRelation | None) -> Stream:
        """Split the earlier contents of this path into replaced and kept (module doc), and
        take the stream position (``seq``) of the content this one re-ingests or replaces;
        ``new``: this file's samples (None: it has none)."""
        replaced, kept = [], []
        has_samples = new is not None and new.limit(1).fetchone() is not None
        for old in self.earlier_versions():
            shared = has_samples and self._shares_instants(con, new, old)
            (replaced if shared else kept).append(old)
        others = {i: f for i, f in self.others.items() if i not in replaced}
        ids = pa.array([self.source_id, *replaced], pa.string())
        seqs = self.scan(pc.field("source_id").isin(ids), ["seq"]).read_all().column("seq")
        seq = pc.min(seqs).as_py() if len(seqs) else self.seq
        return replace(self, others=others, replaced=tuple(replaced), kept=tuple(kept), seq=seq)

    def _shares_instants(
        self, con: duckdb.DuckDBPyConnection, new: duckdb.DuckDBPyRelation, old: str
    ) -> bool:
        old_samples = (pc.field("source_id") == old) & same_machine(self.cluster)
        stored = con.from_arrow(self.scan(old_samples, ["node", "item", "t_ns"])).set_alias("o")
        on = " AND ".join(f"n.{c} = o.{c}" for c in ("node", "item", "t_ns"))
        return new.set_alias("n").join(stored, on).limit(1).fetchone() is not None

    def scan(self, where: pc.Expression, columns: list[str]) -> pa.RecordBatchReader:
        """The stored samples matching ``where``, streamed."""
        return dataset(self.lake, STATE_TABLE).scanner(columns=columns, filter=where).to_reader()

    def stored(self, ids: Iterable[str], bucket: int, window: tuple[int, int] | None):
        """Filter: samples of files ``ids`` in node ``bucket`` (and t_ns ``window``)."""
        where = pc.field("source_id").isin(pa.array(sorted(ids), pa.string()))
        where &= same_machine(self.cluster) & (pc.field("bucket") == bucket)
        if window is not None:
            where &= (pc.field("t_ns") >= window[0]) & (pc.field("t_ns") < window[1])
        return where


def slots(day: int, interval: int) -> tuple[int, int, tuple[int, int]]:
    """The first and last interval of a UTC day, and the sample times (ns) they need."""
    first, last = -(-day * DAY_S // interval), -(-(day + 1) * DAY_S // interval) - 1
    before, after = deltas.reach_ns(interval)
    step = interval * deltas.NS
    return first, last, (first * step - before, (last + 1) * step + after)


def reached_days(
    buckets: pa.Array | pa.ChunkedArray, t_ns: pa.Array | pa.ChunkedArray, interval: int
) -> list[tuple[int, int, int]]:
    """(bucket, first day, last day) of the regions whose samples windows hold these samples
    (:func:`.deltas.reach_ns`)."""
    before, after = deltas.reach_ns(interval)
    day_ns = DAY_S * deltas.NS
    table = pa.table(
        {
            "b": buckets,
            "lo": pc.divide(pc.max_element_wise(pc.subtract(t_ns, after), 0), day_ns),
            "hi": pc.divide(pc.add(t_ns, before), day_ns),
        }
    )
    rows = table.group_by(["b", "lo", "hi"]).aggregate([]).to_pylist()
    return [(r["b"], int(r["lo"]), int(r["hi"])) for r in rows]
