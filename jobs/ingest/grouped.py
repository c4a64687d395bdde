"""Many small files landed as one: one validation per table and one Delta commit per table.

See docs/design.md, 'The lake'.

Validating a table with Great Expectations and committing it to Delta cost about the same
for ten rows as for ten thousand, so a source of many small files (a Darshan log per ``srun``)
spends most of its time on them when each file pays for its own. Here a group of up to
:data:`GROUP_FILES` files (or :data:`GROUP_ROWS` rows), each at most :data:`GROUP_BYTES`, is
parsed file by file, validated
once per table with the group's rows together, and committed once per table, each file's rows
in its own contribution (its ``source_id``), then one ``ingest_log`` commit with a row per
file. What stays exactly as for one file (:mod:`.landing`):

- each file's records are numbered apart (an offset per file), so a failing record is
  quarantined in its own file's accounting and nothing of another file goes with it;
- a file lands whole or not at all: the group is one landing (one intent record, undone or
  rolled forward as a whole by ``reconcile``), and readers see all of it or none of it;
- a file whose rows meet another's in the group by a table's ``replace_key`` (the same Darshan
  log under two names) waits for the next group, so the later one replaces the earlier as
  when they land one after the other; a second copy of the same bytes is a no-op.

Only sources that declare ``Source.grouped`` are landed so: their rows all carry ``_record``,
their tables have no ``precedence`` (no row is kept out as stale), and they keep no state.
"""

from __future__ import annotations

import bisect
import hashlib
import logging
import multiprocessing
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from burstlake import lake as lakes
from burstlake import paths
from burstlake.jobs.ingest.accounting import FileReport
from burstlake.jobs.ingest.landing import (
    WHOLE_FILE,
    account_traffic,
    check_sums,
    content_id,
    ingest_file,
    json_options,
    log_row,
    orphaned,
    quarantine_rows,
    refused_as,
    screen_records,
)
from burstlake.jobs.ingest.source import (
    RECORD,
    Batch,
    ParseContext,
    Reject,
    Source,
    UnusableInput,
)
from burstlake.lake import (
    STAGING,
    ContributionWriter,
    OwnedFolder,
    as_lake_error,
    checkpoint,
    read_table,
    table_files,
)
from burstlake.schemas import spec

GROUP_FILES = 64
GROUP_BYTES = 64 * 2**10
"""Files of at most this size are grouped: each is parsed whole into memory first (a
compressed Darshan log of 64 KiB holds up to ~10k DXT segments)."""
GROUP_ROWS = 262_144
"""A group closes once its files' rows reach this many, whatever their count."""
MEMBER = "_member"  # the hidden column naming the batch a row came from (index in the group)
log = logging.getLogger(__name__)


def groupable(path: Path) -> bool:
    """Whether a file is small enough to land in a group."""
    try:
        return path.is_file() and path.stat().st_size <= GROUP_BYTES
    except OSError:
        return False


@dataclass
class _Member:
    """One file of a group: its report, its parsed batches and its record offset."""

    report: FileReport
    file: Path
    batches: list[Batch] = field(default_factory=list)
    offset: int = 0
    span: int = 0
    keys: dict[str, set] = field(default_factory=dict)  # table -> replace_key values
    bad: dict[int, str] = field(default_factory=dict)  # its failing records (own numbering)
    good: list[dict[str, pa.Table]] = field(default_factory=list)  # per batch


class _Origins(Mapping):
    """The origins of a group's records: each member's, shifted by its offset."""

    def __init__(self, parts: list[tuple[int, int, Mapping]]) -> None:
        self._parts = sorted(parts, key=lambda p: p[0])
        self._starts = [p[0] for p in self._parts]

    def __getitem__(self, record: int):
        at = bisect.bisect_right(self._starts, record)
        while at > 0:  # a member's batches share its start: ask each
            at -= 1
            start, span, origins = self._parts[at]
            if record >= start + span:
                break
            if record - start in origins:
                return origins[record - start]
        raise KeyError(record)

    def __iter__(self) -> Iterator[int]:
        for start, _, origins in self._parts:
            yield from (start + r for r in origins)

    def __len__(self) -> int:
        return sum(len(o) for _, _, o in self._parts)


def _span(batches: list[Batch]) -> int:
    """How many record numbers a file's batches use (its records are numbered from 0)."""
    top = sum(b.records for b in batches)
    for batch in batches:
        for rows in batch.tables.values():
            if rows.num_rows and RECORD in rows.column_names:
                top = max(top, pc.max(rows.column(RECORD)).as_py() + 1)
        top = max([top, *(r + 1 for r in batch.parents)])
    return top


def _keys(source: Source, batches: list[Batch]) -> dict[str, set]:
    keys: dict[str, set] = {}
    for batch in batches:
        for table, rows in batch.tables.items():
            key = spec(table).replace_key
            if key and rows.num_rows:
                keys.setdefault(table, set()).update(
                    zip(*(rows.column(k).to_pylist() for k in key), strict=True)
                )
    return keys


def _combine(parts: list[tuple[int, _Member, Batch]]) -> Batch:
    """One batch of the given members' batches: records shifted by each member's offset, and
    each row tagged with its batch's index (``MEMBER``) so it can be routed back."""
    tables: dict[str, list[pa.Table]] = {}
    parents, weights = {}, {}
    for index, member, batch in parts:
        for table, rows in batch.tables.items():
            if RECORD not in rows.column_names:
                raise ValueError(f"{member.report.source}: a grouped source's rows need _record")
            shifted = pc.add(rows.column(RECORD), pa.scalar(member.offset, pa.int64()))
            rows = rows.set_column(rows.schema.get_field_index(RECORD), RECORD, shifted)
            tables.setdefault(table, []).append(
                rows.append_column(MEMBER, pa.repeat(pa.scalar(index, pa.int32()), rows.num_rows))
            )
        parents |= {c + member.offset: p + member.offset for c, p in batch.parents.items()}
        weights |= {r + member.offset: w for r, w in batch.weights.items()}
    origins = _Origins([(m.offset, m.span, b.origins) for _, m, b in parts])
    return Batch(
        tables={t: pa.concat_tables(rows) for t, rows in tables.items()},
        records=sum(b.records for _, _, b in parts),
        origins=origins,
        parents=parents,
        weights=weights,
    )


class _Group:
    """One landing of many small files (module doc)."""

    def __init__(self, source: Source, root: Path, context: ParseContext, nodes) -> None:
        self.source, self.root, self.context, self.nodes = source, root, context, nodes
        self.members: list[_Member] = []
        self.reports: list[FileReport] = []  # every file's, in order
        self.later: list[Path] = []  # files whose keys meet a member's: the next group
        self.alone: list[Path] = []  # files to land by themselves (a 64-bit traffic overflow)
        self._ids: dict[str, FileReport] = {}
        self.rows = 0  # rows of the members' batches
        self._log: dict[str, list[str]] | None = None
        self._keys: dict[str, set] = {}

    def _logged(self) -> dict[str, list[str]]:
        """source_id -> files of ``ingest_log``, read once for the group (the lake changes
        only by the group's own commit)."""
        if self._log is None:
            rows = []
            if table_files(self.root, "ingest_log"):
                rows = read_table(self.root, "ingest_log", ["file", "source_id"]).to_pylist()
            self._log = {}
            for row in rows:
                self._log.setdefault(row["source_id"], []).append(row["file"])
        return self._log

    def _versions(self) -> dict[str, set[str]]:
        """file -> the source_ids its contents landed as (base._previous_versions)."""
        versions: dict[str, set[str]] = {}
        for source_id, files in self._logged().items():
            for file in files:
                versions.setdefault(file, set()).add(source_id)
        return versions

    def add(self, file: Path) -> None:
        """Parse one file into the group (or note it as a no-op, or for later)."""
        file = Path(os.path.abspath(file))
        found = paths.kind(file)
        if found != "a regular file":
            error = found if found == "no such file" else f"{found}, not a regular file"
            self.reports.append(FileReport(self.source.name, str(file), "-", error=error))
            return
        report = FileReport(self.source.name, str(file), content_id(file))
        earlier = self._ids.get(report.source_id)
        landed = self._logged().get(report.source_id, [])
        report.same_as = (
            earlier.file if earlier else next((f for f in landed if f != report.file), None)
        )  # as base._landed_as, from the group's one read of ingest_log
        if report.same_as:
            report.error = earlier.error if earlier else refused_as(self.root, report.same_as)
            self.reports.append(report)
            return
        member = _Member(report, file)
        parsed = parse_file(self.source.name, str(file), self.context.options, self.root)
        checkpoint("ingest-parse")
        if isinstance(parsed[1], str):
            report.error = parsed[1]
            report.records_in = report.quarantined = 1
        else:
            member.batches = parsed[1]
        member.keys = _keys(self.source, member.batches)
        if any(keys & self._keys.get(t, set()) for t, keys in member.keys.items()):
            self.later.append(file)
            return
        for table, keys in member.keys.items():
            self._keys.setdefault(table, set()).update(keys)
        member.offset = sum(m.span for m in self.members)
        member.span = _span(member.batches)
        self.rows += sum(t.num_rows for b in member.batches for t in b.tables.values())
        self._ids[report.source_id] = report
        self.members.append(member)
        self.reports.append(report)

    def fill(self, pending: list[Path]) -> list[Path]:
        """Parse files from ``pending`` into the group until it is full (:data:`GROUP_FILES`
        files or :data:`GROUP_ROWS` rows); returns the files left for the next groups."""
        taken = 0
        while taken < min(GROUP_FILES, len(pending)) and self.rows < GROUP_ROWS:
            self.add(pending[taken])
            taken += 1
        return self.later + pending[taken:]

    def land(self, writers: dict[str, ContributionWriter] | None = None) -> list[FileReport]:
        """Validate, stage and commit the group (``writers``: staged by a worker process),
        then land alone the files that cannot be grouped; returns their reports."""
        if self.members:
            try:
                self.commit(writers if writers is not None else self._staged())
            except OSError as err:
                failure = as_lake_error(err, self.root)
                if failure is None:
                    raise
                for member in self.members:
                    member.report.failure = f"not landed ({failure}): nothing of it is visible"
        alone = {str(Path(os.path.abspath(f))) for f in self.alone}
        reports = [r for r in self.reports if r.file not in alone]
        for file in self.alone:
            reports.append(ingest_file(self.source, file, self.root, self.context, self.nodes))
        return reports

    def _staged(self) -> dict[str, ContributionWriter]:
        self.screen()
        return self.stage()

    def screen(self) -> None:
        """Validate the group: first the batches no other belongs to, then the rest (those
        whose record was quarantined go whole, :func:`.landing.orphaned`)."""
        first, then = [], []
        for member in self.members:
            member.good = [{} for _ in member.batches]
            for at, batch in enumerate(member.batches):
                (first if batch.belongs_to is None else then).append((member, at, batch))
        for stage in (first, then):
            parts = []
            for member, at, batch in stage:
                if batch.belongs_to is not None and batch.belongs_to in member.bad:
                    continue
                parts.append((len(parts), member, batch, at))
            self._screen([(i, m, b) for i, m, b, _ in parts], [at for *_, at in parts])

    def _screen(self, parts: list[tuple[int, _Member, Batch]], at: list[int]) -> None:
        if not parts:
            return
        good, rejects, bad = screen_records(_combine(parts), self.nodes)
        assert not rejects  # every row carries _record (checked in _combine)
        members = sorted({id(m): m for _, m, _ in parts}.values(), key=lambda m: m.offset)
        offsets = [m.offset for m in members]
        for record, reason in bad.items():
            member = members[bisect.bisect_right(offsets, record) - 1]
            member.bad[record - member.offset] = reason
        for (index, member, _), where in zip(parts, at, strict=True):
            member.good[where] = {
                table: rows.filter(pc.equal(rows.column(MEMBER), index)).drop_columns(
                    [MEMBER, RECORD]
                )
                for table, rows in good.items()
            }

    def stage(self, staging: Path | None = None) -> dict[str, ContributionWriter]:
        """Account each member as the landing engine does for one file (:mod:`.landing`) and
        stage its rows into its own contribution of the group's writers (in ``staging``, a folder
        the ingest process holds, when a worker process stages them)."""
        members = [m.report.source_id for m in self.members]
        self.id = hashlib.blake2b("".join(members).encode(), digest_size=8).hexdigest()
        tables = [*self.source.tables, "quarantine", "ingest_log"]
        writers = {t: ContributionWriter(self.root, t, self.id, staging=staging) for t in tables}
        try:
            for member in list(self.members):
                if not self._stage(member, writers):
                    self.members.remove(member)
                    self.alone.append(member.file)
        except BaseException:
            for writer in writers.values():
                writer.abort()
            raise
        checkpoint("ingest-stage")
        return writers

    def _stage(self, member: _Member, writers: dict[str, ContributionWriter]) -> bool:
        report, sid = member.report, member.report.source_id
        rows: list[tuple[str, pa.Table]] = []
        quarantined: list[Reject] = []
        if report.error is not None:
            quarantined.append(Reject(WHOLE_FILE, None, report.error))
        for batch, good in zip(member.batches, member.good, strict=True):
            if batch.belongs_to is not None and batch.belongs_to in member.bad:
                where = next(
                    (b.origins[batch.belongs_to] for b in member.batches
                     if batch.belongs_to in b.origins),
                    (f"record {batch.belongs_to}", None),
                )[0]  # fmt: skip
                good, rejects, failed, bad = orphaned(batch, where)
                for record in bad:
                    member.bad.setdefault(record, "orphaned")
            else:
                mine = {
                    r: why for r, why in member.bad.items() if r in batch.origins or _has(batch, r)
                }
                rejects = [
                    Reject(*batch.origins.get(r, (f"record {r}", None)), why)
                    for r, why in sorted(mine.items())
                ]
                failed = len(rejects) + sum(batch.weights.get(r, 1) - 1 for r in mine)
                bad = set(mine)
            account_traffic(report, batch, bad, good)
            try:
                check_sums(report)
            except UnusableInput:  # a 64-bit sum passed: the file is refused alone
                return False
            rows += list(good.items())
            quarantined += batch.rejects + rejects
            report.records_in += batch.records
            report.quarantined += len(batch.rejects) + failed
        for table, table_rows in rows:
            writers[table].write(table_rows, sid)
            report.rows[table] = report.rows.get(table, 0) + table_rows.num_rows
        writers["quarantine"].write(quarantine_rows(report, quarantined), sid)
        for writer in writers.values():
            writer.claim([sid])
        report.landed = report.records_in - report.quarantined
        return True

    def commit(self, writers: dict[str, ContributionWriter]) -> None:
        """Commit every table once, ``ingest_log`` last, as one landing."""
        versions = self._versions()
        replaces = sorted(
            {
                old
                for m in self.members
                for old in versions.get(m.report.file, ())
                if old != m.report.source_id
            }
        )
        record = {
            "source": self.source.name,
            "file": self.members[0].report.file,
            "options": json_options(self.context.options),
            "replaces": replaces,
            "tables": list(writers),
            "members": [
                {"file": m.report.file, "source_id": m.report.source_id} for m in self.members
            ],
        }
        for member in self.members:
            writers["ingest_log"].write(log_row(member.report), member.report.source_id)
        try:
            with lakes.landing(self.root, self.id, record):
                for table, writer in writers.items():
                    writer.replaces = replaces
                    writer.commit()
                    if table in self.source.tables:
                        self.members[0].report.superseded += writer.superseded
                    checkpoint("ingest-commit")
        except BaseException:
            for writer in writers.values():
                writer.abort()
            raise


def _has(batch: Batch, record: int) -> bool:
    """Whether ``record`` is one of ``batch``'s (its rows or its parents)."""
    if record in batch.parents:
        return True
    for rows in batch.tables.values():
        if RECORD in rows.column_names and pc.any(pc.equal(rows.column(RECORD), record)).as_py():
            return True
    return False


def parse_file(
    source: str, file: str, options: Mapping, root: Path
) -> tuple[str, list[Batch] | str]:
    """Parse one file: its content id and its batches, or the one-line reason it is unusable
    as a whole. Runs in the ingest process or in a worker process (``--workers``)."""
    from burstlake.jobs.ingest import source_module

    path = Path(file)
    source_id = content_id(path)
    context = ParseContext(options=options, lake=root, source_id=source_id)
    try:
        return source_id, list(source_module(source).SOURCE.parse(path, context))
    except UnusableInput as err:
        return source_id, str(err)


def land(
    source: Source,
    files: list[Path],
    root: Path,
    context: ParseContext,
    topology_nodes: list[str] | None,
    workers: int = 1,
    pool: Callable[[int, str, list[str] | None], Executor] | None = None,
) -> list[FileReport]:
    """Land ``files`` (each :func:`groupable`) in groups of up to :data:`GROUP_FILES`,
    parsed, validated and staged in ``workers`` processes (1: in this one), committed here;
    returns their reports. A lake that fails (full disk) is reported on the group's files.
    ``pool`` makes what stages the chunks (workers, source, topology nodes -> an executor):
    :func:`fork_pool` by default, Spark tasks for :mod:`.spark_stage`."""
    if (workers > 1 or pool is not None) and len(files) > 1:
        return _land_parallel(source, files, root, context, topology_nodes, workers, pool)
    return _land(source, files, root, context, topology_nodes)


def _land(source, files, root, context, topology_nodes) -> list[FileReport]:
    pending, reports = list(files), []
    while pending:
        group = _Group(source, root, context, topology_nodes)
        pending = group.fill(pending)
        reports += group.land()
        if any(r.failure for r in reports):
            break
    return reports


@dataclass
class _Staged:
    """A group a worker process parsed, validated and staged: what the ingest process needs
    to commit it (the members' parsed batches stay behind)."""

    members: list[_Member]
    reports: list[FileReport]
    later: list[Path]
    alone: list[Path]
    writers: dict[str, ContributionWriter] | None
    id: str = ""


def _stage_chunk(
    source: str, files: list[str], root: str, options: Mapping, logged: dict, staging: str
) -> list[_Staged]:
    """A worker process's share: its files parsed, validated and staged as groups into
    ``staging``; nothing is committed (the ingest process commits, in file order)."""
    from burstlake.jobs.ingest import source_module

    found = source_module(source).SOURCE
    context = ParseContext(options=options, lake=Path(root))
    pending, staged = [Path(f) for f in files], []
    while pending:
        group = _Group(found, Path(root), context, _WORKER_NODES)
        group._log = logged  # read once by the ingest process (it alone reads the lake)
        pending = group.fill(pending)
        writers = None
        if group.members:
            group.screen()
            writers = group.stage(Path(staging))
            for writer in writers.values():
                writer.finish()
        for member in group.members:
            member.batches, member.good = [], []
        done = _Staged(group.members, group.reports, group.later, group.alone, writers)
        done.id = getattr(group, "id", "")
        staged.append(done)
    return staged


_WORKER_NODES: list[str] | None = None  # the topology's nodes, set in each worker at its start


def start_task(nodes: list[str] | None) -> None:
    """A Spark task's start (:mod:`.spark_stage`): the topology's nodes its groups check names
    against; it reads logs in a reader process (a crash of darshan-util quarantines the log)."""
    global _WORKER_NODES
    _WORKER_NODES = nodes


def _start_worker(source: str, nodes: list[str] | None) -> None:
    """A worker's start (forked from the ingest process: nothing is imported again); it reads
    logs in its own process, a process apart already (the source's ``read_in_this_process``)."""
    from burstlake.jobs.ingest import source_module

    global _WORKER_NODES
    _WORKER_NODES = nodes
    module = source_module(source)
    if hasattr(module, "read_in_this_process"):
        module.read_in_this_process()


def _chunks(files: list[Path], workers: int) -> list[list[Path]]:
    size = max(1, min(GROUP_FILES, -(-len(files) // workers)))
    return [files[at : at + size] for at in range(0, len(files), size)]


def fork_pool(workers: int, source: str, nodes: list[str] | None) -> Executor:
    """``workers`` processes forked from this one (``--workers``): they import nothing again;
    they use no delta-rs (whose runtime does not survive a fork), only the parser, Arrow and
    Parquet."""
    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_start_worker,
        initargs=(source, nodes),
    )


def _land_parallel(
    source, files, root, context, topology_nodes, workers, pool=None
) -> list[FileReport]:
    """Workers stage groups; this process commits them one by one in file order. A file whose
    bytes an earlier one (or one landed before) has lands after the others here (then a no-op
    naming it, as when landed one after the other). A worker that dies (darshan-util crashing
    on a damaged log) leaves the files not yet committed to this process."""
    logged = _Group(source, root, context, topology_nodes)._logged()
    seen: set[str] = set()
    unique, repeats = [], []
    for file in files:
        path = Path(os.path.abspath(file))
        sid = content_id(path) if paths.kind(path) == "a regular file" else None
        landed = [f for f in logged.get(sid, ()) if f != str(path)]
        # a copy waits: its verdict reads the lake, which only this process does
        (repeats if sid is not None and (sid in seen or landed) else unique).append(path)
        if sid is not None:
            seen.add(sid)
    chunks = _chunks(unique, workers)
    reports: list[FileReport] = []
    left: list[Path] = []
    holder = OwnedFolder(root / STAGING / f"workers-{uuid.uuid4().hex[:12]}")
    pool = (pool or fork_pool)(workers, source.name, topology_nodes)
    try:
        options = json_options(context.options)
        futures = [
            pool.submit(
                _stage_chunk, source.name, [str(f) for f in chunk], str(root), options, logged,
                str(holder.path),
            )
            for chunk in chunks
        ]  # fmt: skip
        for at, future in enumerate(futures):
            try:
                staged = future.result()
            except BrokenProcessPool:
                log.warning("a worker process died; landing its files in this process")
                left = [f for chunk in chunks[at:] for f in chunk]
                break
            for done in staged:  # its later files landed in its next group
                reports += _commit_staged(done, source, root, context, topology_nodes)
            if any(r.failure for r in reports):
                break
    finally:
        pool.shutdown(cancel_futures=True)
        holder.remove()
    rest = left + repeats
    if rest and not any(r.failure for r in reports):
        reports += _land(source, rest, root, context, topology_nodes)
    order = {str(Path(os.path.abspath(f))): i for i, f in reversed(list(enumerate(files)))}
    return sorted(reports, key=lambda r: order.get(r.file, len(order)))


def _commit_staged(staged: _Staged, source, root, context, topology_nodes) -> list[FileReport]:
    """Commit a group a worker staged, as :meth:`_Group.land` does one staged here."""
    group = _Group(source, root, context, topology_nodes)
    group.members, group.reports, group.alone = staged.members, staged.reports, staged.alone
    group.id = staged.id
    return group.land(staged.writers)


def reconcile(root: Path, record: dict, skip: set[str]) -> list[FileReport]:
    """Finish or undo a group's landing whose process died during its commits: with every
    member in ``ingest_log`` only the replaced contributions go; otherwise the group's commits
    are undone and its unchanged files (not in ``skip``) ingested again."""
    from burstlake.jobs.ingest import source_module
    from burstlake.lake import delete_contribution

    members = record["members"]
    logged = set()
    if table_files(root, "ingest_log"):
        logged = set(read_table(root, "ingest_log", ["source_id"]).column(0).to_pylist())
    if all(m["source_id"] in logged for m in members):
        for old in record["replaces"]:
            delete_contribution(root, old, record["tables"])
        return []
    log.warning("undoing an interrupted landing of %d files", len(members))
    lakes.undo_landing(root, record["source_id"], record["tables"], record["started"])
    source = source_module(record["source"]).SOURCE
    reports = []
    for member in members:
        file = Path(member["file"])
        if member["file"] in skip or not file.is_file():
            continue
        if content_id(file) == member["source_id"]:
            context = ParseContext(options=record.get("options", {}))
            reports.append(ingest_file(source, file, root, context))
    return reports
