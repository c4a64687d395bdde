"""The table's own Parquet files, written once: a writer lays out its rows as the final files of
the table's day partitions and commits them to Delta as add actions (docs/design.md, 'The lake').

A contribution's rows are encoded once, as they arrive: per day partition one Parquet file at a
time (at most :data:`~burstlake.lake.layout.ROWS_PER_FILE` rows), row groups of at most
:data:`ROW_GROUP_ROWS` rows, each file's column statistics kept for its add action as Delta
writes them (min, max, null count; timestamps cut to the millisecond, which Delta readers
allow for; text of at most :data:`STATS_TEXT` characters). At most :data:`WAITING_ROWS` rows
wait in memory for their row group, whatever the number of rows. The files wait in the
writer's staging folder and move into the table only when it commits (under the table's
lock); a file that moved but never reached a commit is invisible to readers, and
:func:`burstlake.lake.vacuum` deletes it.

What the commit removes is found here too (:func:`owned_files`): the table's files holding rows
of the contributions it replaces, narrowed by their ``_source_id`` statistics and confirmed by
reading that one column; a file holding rows of other contributions as well is written again
without the replaced rows.
"""

from __future__ import annotations

import functools
import json
import math
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import DeltaTable
from deltalake.transaction import AddAction, RemoveAction

from burstlake.lake.layout import DAY, ROWS_PER_FILE, SOURCE

CODEC = "snappy"  # what delta-rs writes: the table's files stay alike whichever wrote them
ROW_GROUP_ROWS = 131_072
"""Rows per row group of a written file: memory holds at most this many rows per partition
being written (a DXT row is ~100 bytes in Arrow)."""
OPEN_PARTITIONS = 400  # files open at once (a year of days); a further day closes the oldest
WAITING_ROWS = 2 * ROW_GROUP_ROWS
"""Rows waiting for a row group over all open files: past it, the fullest writes its own (a
write spread over many days keeps one file per day and bounded memory)."""
STATS_TEXT = 32  # text columns with a longer min or max get no min/max statistics
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class Part:
    """One written file: where it waits, where it goes in the table, and its add action's
    facts."""

    staged: Path
    relative: str  # path inside the table, ``day=YYYY-MM-DD/part-...parquet``
    day: date | None
    rows: int = 0
    nulls: dict[str, int] = field(default_factory=dict)
    low: dict[str, object] = field(default_factory=dict)
    high: dict[str, object] = field(default_factory=dict)
    bounded: set[str] = field(default_factory=set)  # columns whose min/max are kept

    def partition(self) -> dict[str, str | None]:
        return {DAY: self.day.isoformat()} if self.day is not None else {}

    def add_action(self, root: Path) -> AddAction:
        final = root / self.relative
        return AddAction(
            path=self.relative,
            size=final.stat().st_size,
            partition_values=self.partition(),
            modification_time=int(time.time() * 1000),
            data_change=True,
            stats=self.stats(),
        )

    def stats(self) -> str:
        """The add action's statistics, as delta-rs writes them."""
        low = {c: _stat(v) for c, v in self.low.items() if c in self.bounded}
        high = {c: _stat(v) for c, v in self.high.items() if c in self.bounded}
        return json.dumps(
            {
                "numRecords": self.rows,
                "minValues": {c: v for c, v in low.items() if v is not None},
                "maxValues": {c: v for c, v in high.items() if v is not None},
                "nullCount": self.nulls,
            }
        )

    def collect(self, written: pq.FileMetaData) -> None:
        """The file's column statistics, from the row groups' own (no second pass)."""
        self.rows = written.num_rows
        unbounded: set[str] = set()
        for group in range(written.num_row_groups):
            row_group = written.row_group(group)
            for j in range(row_group.num_columns):
                column = row_group.column(j)
                name, found = column.path_in_schema, column.statistics
                if found is None:
                    unbounded.add(name)
                    continue
                self.nulls[name] = self.nulls.get(name, 0) + found.null_count
                if found.null_count == row_group.num_rows:
                    continue  # all null here: no bound to fold in
                if not found.has_min_max:
                    unbounded.add(name)
                    continue
                low, high = found.min, found.max
                if name in self.low:
                    low, high = min(low, self.low[name]), max(high, self.high[name])
                self.low[name], self.high[name] = low, high
        self.bounded = {
            name
            for name, low in self.low.items()
            if name not in unbounded and not _too_long(low) and not _too_long(self.high[name])
        }


def _too_long(value: object) -> bool:
    return isinstance(value, str) and len(value) > STATS_TEXT


def _stat(value: object) -> object:
    """A statistic as Delta's JSON holds it: timestamps cut to the millisecond."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
        millis = (moment - EPOCH) // timedelta(milliseconds=1)
        moment = EPOCH + timedelta(milliseconds=millis)
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None  # no min/max for it (decimals, bytes, flags): allowed, as for long text
    return value


class _Open:
    """The file being written for one partition, and its rows waiting for a row group."""

    def __init__(self, part: Part, schema: pa.Schema) -> None:
        self.part = part
        self.sink = pa.OSFile(str(part.staged), "wb")
        text = [f.name for f in schema if pa.types.is_string(f.type)]
        try:
            self.writer = pq.ParquetWriter(
                self.sink, schema, compression=CODEC, use_dictionary=text
            )
        except BaseException:
            self.sink.close()
            raise
        self.pending: list[pa.Table] = []
        self.waiting = 0
        self.written = 0

    def add(self, rows: pa.Table) -> None:
        self.pending.append(rows)
        self.waiting += rows.num_rows
        if self.waiting >= ROW_GROUP_ROWS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        rows = pa.concat_tables(self.pending)  # chunks written as they are: no copy
        self.pending, self.waiting = [], 0
        self.written += rows.num_rows
        self.writer.write_table(rows, row_group_size=ROW_GROUP_ROWS)

    def close(self) -> None:
        """Write what waits and close the file; its handle is closed even on error."""
        try:
            self.flush()
        finally:
            try:
                self.writer.close()
            finally:
                if not self.sink.closed:
                    self.sink.close()
        self.part.collect(self.writer.writer.metadata)


class PartWriter:
    """Writes stored rows (the table's schema with ``_source_id`` and, partitioned, ``day``)
    into :class:`Part` files under ``staging``, one open file per day (module doc)."""

    def __init__(self, staging: Path, schema: pa.Schema, partitioned: bool) -> None:
        self.staging, self.partitioned = staging, partitioned
        self.schema = pa.schema([f for f in schema if f.name != DAY]) if partitioned else schema
        self.parts: list[Part] = []
        self._open: dict[date | None, _Open] = {}

    def write(self, stored: pa.Table) -> None:
        if not self.partitioned:
            self._into(None, stored)
            return
        days = stored.column(DAY)
        found = pc.unique(days).to_pylist()
        rows = stored.drop_columns([DAY])
        for day in found:
            self._into(day, rows if len(found) == 1 else rows.filter(pc.equal(days, day)))

    def _into(self, day: date | None, rows: pa.Table) -> None:
        current = self._open.get(day)
        if current is not None and current.written + current.waiting >= ROWS_PER_FILE:
            self._close(day)
            current = None
        if current is None:
            if len(self._open) >= OPEN_PARTITIONS:
                self._close(next(iter(self._open)))
            current = self._open[day] = _Open(self._new_part(day), self.schema)
        current.add(rows)
        if len(self._open) > 1 and sum(o.waiting for o in self._open.values()) > WAITING_ROWS:
            max(self._open.values(), key=lambda o: o.waiting).flush()

    def _new_part(self, day: date | None) -> Part:
        folder = f"{DAY}={day.isoformat()}/" if day is not None else ""
        name = f"part-{len(self.parts):05d}-{uuid.uuid4()}-c000.{CODEC}.parquet"
        staged = self.staging / f"{len(self.parts):05d}.parquet"
        part = Part(staged=staged, relative=folder + name, day=day)
        self.parts.append(part)
        return part

    def _close(self, day: date | None) -> None:
        self._open.pop(day).close()

    def close(self) -> None:
        """Finish every open file (each handle closed whatever happens)."""
        error: BaseException | None = None
        while self._open:
            try:
                self._close(next(iter(self._open)))
            except BaseException as err:  # close the others, then raise the first
                error = error or err
        if error is not None:
            raise error

    def writing(self) -> bool:
        """Whether a file is still open."""
        return bool(self._open)

    def files(self) -> list[Path]:
        return [p.staged for p in self.parts]


def stored_batches(
    parts: Iterable[Part], schema: pa.Schema, root: Path
) -> Iterator[pa.RecordBatch]:
    """The rows of written files (waiting, or moved into the table at ``root``) in the stored
    schema (``day`` from each file's partition), one row group at a time."""
    for part in parts:
        where = part.staged if part.staged.exists() else root / part.relative
        with pq.ParquetFile(where) as written:
            for batch in written.iter_batches(use_threads=False):
                if part.day is not None:
                    day = pa.repeat(pa.scalar(part.day, pa.date32()), batch.num_rows)
                    batch = pa.RecordBatch.from_arrays(
                        [*batch.columns, day], names=[*batch.schema.names, DAY]
                    )
                yield batch.select(schema.names).cast(schema)


def place(parts: Iterable[Part], root: Path) -> None:
    """Move written files into the table (again after a retried commit: already there)."""
    for part in parts:
        final = root / part.relative
        if part.staged.exists():
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(part.staged, final)


def unplace(parts: Iterable[Part], root: Path) -> None:
    """Delete files moved into the table whose commit did not happen."""
    for part in parts:
        (root / part.relative).unlink(missing_ok=True)


@dataclass
class Removal:
    """The table files a commit removes, and those it writes again without replaced rows."""

    removes: list[RemoveAction] = field(default_factory=list)
    rewritten: list[Part] = field(default_factory=list)


def _actions(dt: DeltaTable) -> pa.Table:
    return pa.table(dt.get_add_actions(flatten=True))


def owned_files(dt: DeltaTable, root: Path, ids: list[str], writer: PartWriter) -> Removal:
    """What removes every row of the contributions ``ids`` from the table (module doc); the
    files written again go through ``writer`` (a scratch one of the caller's)."""
    removal = Removal()
    actions = _actions(dt)
    if actions.num_rows == 0:
        return removal
    names = set(actions.column_names)
    wanted = pa.array(ids, pa.string())
    candidates = pa.repeat(pa.scalar(True), actions.num_rows)
    low, high = f"min.{SOURCE}", f"max.{SOURCE}"
    if low in names and high in names:
        lows, highs = actions.column(low), actions.column(high)
        inside = pa.repeat(pa.scalar(False), actions.num_rows)
        for one in ids:
            hit = pc.and_(pc.less_equal(lows, one), pc.greater_equal(highs, one))
            inside = pc.or_(inside, pc.fill_null(hit, True))
        candidates = pc.or_(pc.is_null(lows), inside)
    chosen = actions.filter(candidates)
    partition = f"partition.{DAY}"
    now = int(time.time() * 1000)
    for row in chosen.select(
        ["path", "size_bytes", *([partition] if partition in names else [])]
    ).to_pylist():
        path = root / row["path"]
        sources = {sid for _, sid in distinct(str(path), SOURCE)}
        if sources.isdisjoint(ids):
            continue
        day = row.get(partition)
        values = {DAY: day.isoformat() if isinstance(day, date) else day} if day else None
        removal.removes.append(
            RemoveAction(
                path=row["path"],
                data_change=True,
                deletion_timestamp=now,
                size=row["size_bytes"],
                partition_values=values,
            )
        )
        if not sources <= set(ids):
            _rewrite(path, wanted, day, writer)
    writer.close()
    removal.rewritten = writer.parts
    return removal


@functools.lru_cache(maxsize=8192)
def distinct(path: str, column: str) -> frozenset[tuple]:
    """The distinct (``column``, ``_source_id``) pairs of a table file. A Delta file never
    changes once written, so a process asks each file once however many commits it makes."""
    rows = pq.read_table(path, columns=list(dict.fromkeys([column, SOURCE])))
    pairs = rows.group_by(list(dict.fromkeys([column, SOURCE])), use_threads=False).aggregate([])
    first = pairs.column(column).to_pylist()
    return frozenset(zip(first, pairs.column(SOURCE).to_pylist(), strict=True))


def _rewrite(path: Path, wanted: pa.Array, day: object, writer: PartWriter) -> None:
    """Write a file's rows again without those of ``wanted`` (one row group at a time)."""
    if isinstance(day, str):
        day = date.fromisoformat(day)
    with pq.ParquetFile(path) as existing:
        for batch in existing.iter_batches(use_threads=False):
            kept = pa.Table.from_batches([batch]).filter(
                pc.invert(pc.is_in(batch.column(SOURCE), value_set=wanted))
            )
            if not kept.num_rows:
                continue
            columns = [  # a file of an older layout lacks the newer columns: nulls
                kept.column(f.name).cast(f.type)
                if f.name in kept.column_names
                else pa.nulls(len(kept), f.type)
                for f in writer.schema
            ]
            schema = writer.schema
            if writer.partitioned:
                columns.append(pa.repeat(pa.scalar(day, pa.date32()), kept.num_rows))
                schema = schema.append(pa.field(DAY, pa.date32(), nullable=False))
            writer.write(pa.Table.from_arrays(columns, schema=schema))
