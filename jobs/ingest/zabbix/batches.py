"""Pass 2 of the Zabbix ingest (:mod:`.regions`): its node_io rows regrouped into batches of
about a given size, so that validation runs on few large batches and a node's rows stay in one
batch (its record stands for them all)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

from burstlake.jobs.ingest.source import Batch, StreamPart


def merged(batches: Iterable[Batch], rows: int) -> Iterator[Batch]:
    """Combine consecutive region batches into batches of about ``rows`` node_io rows (their
    records are numbered apart), so validation runs on few large batches."""
    pending: list[Batch] = []
    size = 0
    for batch in batches:
        pending.append(batch)
        size += sum(t.num_rows for t in batch.tables.values())
        if size >= rows:
            yield combine(pending)
            pending, size = [], 0
    if pending:
        yield combine(pending)


def add_traffic(into: dict[str, dict[str, int]], traffic: dict[str, dict[str, int]]) -> None:
    """Add a balance (metric -> reason -> bytes) into another."""
    for metric, parts in traffic.items():
        sums = into.setdefault(metric, {})
        for reason, amount in parts.items():
            sums[reason] = sums.get(reason, 0) + amount


def combine(batches: list[Batch]) -> Batch:
    traffic: dict[str, dict[str, int]] = {}
    for batch in batches:
        add_traffic(traffic, batch.traffic)
    tables = [b.tables["node_io"] for b in batches if "node_io" in b.tables]
    return Batch(
        {"node_io": pa.concat_tables(tables)} if tables else {},
        0,
        origins={k: v for b in batches for k, v in b.origins.items()},
        weights={k: v for b in batches for k, v in b.weights.items()},
        stream=StreamPart(frozenset().union(*(b.stream.contributions for b in batches))),
        traffic=traffic,
        record_traffic={k: v for b in batches for k, v in b.record_traffic.items()},
    )


def whole_nodes(reader: Iterable[pa.RecordBatch], rows: int) -> Iterator[pa.Table]:
    """Regroup node-ordered batches into tables of about ``rows`` rows that never split a node."""
    pending: list[pa.RecordBatch] = []
    size = 0
    for batch in reader:
        pending.append(batch)
        size += batch.num_rows
        if size < rows:
            continue
        table = pa.Table.from_batches(pending)
        nodes = table.column("node")
        cut = pc.index(nodes, nodes[-1]).as_py()
        if cut == 0:
            continue  # one node fills the buffer: keep it whole
        yield table.slice(0, cut)
        rest = table.slice(cut)
        pending, size = rest.to_batches(), rest.num_rows
    if size:
        yield pa.Table.from_batches(pending)
