"""The landing engine every source plugs into: nothing is lost silently.

See docs/design.md, 'Sources' and 'The lake'. A source gives a parser and its hooks
(:mod:`.source`, the contract); this module does the rest, the same way for every source:

1. name the file's contribution by its content (``source_id``) and drop what an earlier version
   of the same path contributed;
2. validate each batch's rows with the table's Great Expectations suite (:func:`screen_records`);
3. land the good rows, send parse rejects and failing records to ``quarantine`` with file,
   location and reason;
4. account for every input record: ``records_in = landed + quarantined``, logged in
   ``ingest_log``, and refresh the DuckDB catalog.

Landing is transactional (docs/design.md, 'The lake'): rows are staged while the file is parsed,
then each table gets one Delta commit that adds the file's rows and removes what earlier content
of the same path wrote; ``ingest_log`` is committed last, so a file is never marked landed
without its rows. An intent record under ``<lake>/_txn`` lives while the commits run; a landing
killed there is reconciled by the next ``ingest``: the file is ingested again if it is
unchanged, or the landing's commits are undone if it changed or vanished (earlier content of the
path stays landed). A counter stream's file (``Source.stream``) may also write contributions
shared with other files (``StreamPart.contributions``); they land in the same commit as its own
rows, under a lock per source since other files share them.

Progress goes to a :data:`burstlake.progress.Report` (one task per command: the bytes of its
files), never drawn here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from burstlake import catalog, paths
from burstlake import lake as lakes
from burstlake.jobs.ingest.accounting import (
    MAX_BYTES,
    TRAFFIC_REASONS,
    FileReport,
    add_traffic,
    overflowing,
)
from burstlake.jobs.ingest.source import (
    CONTRIBUTION,
    RECORD,
    Batch,
    ParseContext,
    Reject,
    Source,
    UnusableInput,
)
from burstlake.lake import (
    ContributionWriter,
    LakeError,
    as_lake_error,
    check_cluster,
    checkpoint,
    delete_contribution,
    lake_path,
    node_keys,
    read_table,
    table_files,
    write_table,
)
from burstlake.progress import Report, Step, silent
from burstlake.schemas import spec
from burstlake.validate import validate

WHOLE_FILE = "whole file"  # the quarantine location of a file refused as a whole
log = logging.getLogger(__name__)


class IngestFailed(LakeError):
    """The lake could not take every file (full disk, read-only lake): ``reports`` says, file by
    file, what landed and what did not; the message is one line that says the same."""

    def __init__(self, reports: list[FileReport], reason: str) -> None:
        super().__init__(reason)
        self.reports = reports


def _files(count: int) -> str:
    return f"{count} file{'s' * (count != 1)}"


NOT_ATTEMPTED = "not attempted: the lake failed on an earlier file"


def account_traffic(
    report: FileReport, batch: Batch, failed: set[int], good: Mapping[str, pa.Table]
) -> None:
    """Add a batch's byte accounting to the report: a record's traffic lands with its rows, or
    counts as quarantined when the record failed validation."""
    for metric, parts in batch.traffic.items():
        for reason, amount in parts.items():
            add_traffic(report.traffic, metric, reason, amount)
    for record, parts in batch.record_traffic.items():
        for metric, amount in parts.items():
            add_traffic(
                report.traffic, metric, "quarantined" if record in failed else "landed", amount
            )
    if batch.measure is not None:
        landed = batch.measure(good)
        for metric, amount in batch.measure(batch.tables).items():
            add_traffic(report.traffic, metric, "landed", landed.get(metric, 0))
            if amount > landed.get(metric, 0):
                add_traffic(report.traffic, metric, "quarantined", amount - landed.get(metric, 0))


def check_sums(report: FileReport) -> None:
    """The guard of ``ingest_log``'s 64-bit balance: a file whose traffic of a metric passes
    :data:`MAX_BYTES` is refused as a whole with a one-line reason (:class:`UnusableInput`),
    never a traceback. A source whose counters may come near 2^63 finds the records
    responsible itself, within its parse (Zabbix: ``zabbix/overflow.py``)."""
    metric = overflowing(report.traffic)
    if metric is not None:
        raise UnusableInput(
            f"its {metric} traffic passes {MAX_BYTES} bytes, the most a 64-bit byte count "
            "holds (counter values near 2^63?)"
        )


def content_id(path: Path) -> str:
    """A short id of the file's bytes: the same content always maps to the same contribution."""
    with path.open("rb") as handle:
        digest = hashlib.file_digest(handle, lambda: hashlib.blake2b(digest_size=8))
    return digest.hexdigest()


def _now() -> datetime:
    return datetime.now(UTC)


def quarantine_rows(report: FileReport, rejects: Iterable[Reject]) -> pa.Table:
    rows = [
        {
            "source": report.source,
            "file": report.file,
            "location": r.location,
            "raw": r.raw,
            "reason": r.reason,
            "ingested_at": _now(),
        }
        for r in rejects
    ]
    return pa.Table.from_pylist(rows, schema=spec("quarantine").schema)


def _row_origin(table: str, rows: pa.Table, index: int) -> tuple[str, str]:
    row = {k: v for k, v in rows.slice(index, 1).to_pylist()[0].items() if k != RECORD}
    key = ", ".join(f"{k}={v}" for k, v in list(row.items())[:3])
    return f"{table} row {key}", json.dumps(row, default=str)


def _screen(
    batch: Batch, topology_nodes: list[str] | None
) -> tuple[dict[str, pa.Table], list[Reject], int, set[int]]:
    """Validate every table of a batch; drop failing records. Returns good rows, rejects, count
    and the failing ``_record`` values."""
    good, rejects, bad_records = screen_records(batch, topology_nodes)
    for record, reason in sorted(bad_records.items()):
        location, raw = batch.origins.get(record, (f"record {record}", None))
        rejects.append(Reject(location, raw, reason))
    good = {t: r.drop_columns([RECORD]) if RECORD in r.column_names else r for t, r in good.items()}
    failed = len(rejects) + sum(batch.weights.get(r, 1) - 1 for r in bad_records)
    return good, rejects, failed, set(bad_records)


def screen_records(
    batch: Batch, topology_nodes: list[str] | None
) -> tuple[dict[str, pa.Table], list[Reject], dict[int, str]]:
    """Validate every table of a batch, once per table: the rows of records that pass (with
    their ``_record`` and any other columns), the rejects of rows without ``_record``, and
    the failing records with their reasons (a record whose parent failed fails too)."""
    bad_records: dict[int, str] = {}
    rejects: list[Reject] = []
    good: dict[str, pa.Table] = {}
    for table, rows in batch.tables.items():
        verdict = validate(
            table,
            rows.drop_columns([RECORD]) if RECORD in rows.column_names else rows,
            topology_nodes,
        )
        if verdict.ok:
            good[table] = rows
            continue
        if RECORD in rows.column_names:
            records = rows.column(RECORD).to_pylist()
            for index, reason in verdict.reasons.items():
                bad_records.setdefault(records[index], f"{table}: {reason}")
            good[table] = rows
        else:
            for index, reason in verdict.reasons.items():
                location, raw = _row_origin(table, rows, index)
                rejects.append(Reject(location, raw, f"{table}: {reason}"))
            keep = pa.array([i not in verdict.reasons for i in range(rows.num_rows)])
            good[table] = rows.filter(keep)
    for child, parent in sorted(batch.parents.items()):
        if parent in bad_records and child not in bad_records:
            where = batch.origins.get(parent, (f"record {parent}", None))[0]
            bad_records[child] = f"belongs to the {where}, which was quarantined"
    if bad_records:
        dropped = pa.array(sorted(bad_records), type=pa.int64())
        for table, rows in good.items():
            if RECORD in rows.column_names:
                good[table] = rows.filter(pc.invert(pc.is_in(rows.column(RECORD), dropped)))
    return good, rejects, bad_records


def orphaned(batch: Batch, where: str) -> tuple[dict[str, pa.Table], list[Reject], int, set[int]]:
    """:func:`_screen`'s answer for a batch whose record it belongs to (at ``where``) was
    quarantined: one quarantine row stands for all its records the parser did not reject."""
    records = [
        r for rows in batch.tables.values() if RECORD in rows.column_names
        for r in pc.unique(rows.column(RECORD)).to_pylist()
    ]  # fmt: skip
    count = batch.records - len(batch.rejects)
    span = f"records {min(records)}-{max(records)}" if records else "no rows"
    reason = f"{count} records belong to the {where}, which was quarantined"
    rejects = [Reject(span, None, reason)] if count else []
    empty = {t: rows.slice(0, 0).drop_columns([RECORD]) if RECORD in rows.column_names
             else rows.slice(0, 0) for t, rows in batch.tables.items()}  # fmt: skip
    return empty, rejects, count, set(records)


def _topology_nodes(lake: Path | str | None, source: Source) -> list[str] | None:
    needs = any(spec(t).node_columns for t in source.tables)
    if not needs or not table_files(lake, "topology"):
        return None
    known = read_table(lake, "topology", columns=["cluster", "node"])
    return node_keys(known.column("cluster"), known.column("node")).to_pylist()


def _previous_versions(lake: Path | str | None, file: str, source_id: str) -> list[str]:
    """The source_ids earlier content of the same path landed as (replaced by this one unless
    a stream keeps them, ``StreamPart.keep_previous``)."""
    if not table_files(lake, "ingest_log"):
        return []
    log = read_table(lake, "ingest_log", columns=["file", "source_id"]).to_pylist()
    return sorted(
        {r["source_id"] for r in log if r["file"] == file and r["source_id"] != source_id}
    )


def _landed_as(lake: Path, report: FileReport) -> str | None:
    """Another file whose content (the same bytes) has landed: a copy under another name, or a
    rotated file (``x.ndjson`` renamed ``x.ndjson.old``), is a no-op instead of a second
    landing of the same records."""
    if not table_files(lake, "ingest_log"):
        return None
    rows = read_table(
        lake, "ingest_log", ["file"], filter=pc.field("source_id") == report.source_id
    ).column("file")
    return next((f for f in rows.to_pylist() if f != report.file), None)


def refused_as(lake: Path, file: str) -> str | None:
    """Why ``file`` was refused as a whole (its 'whole file' quarantine row), if it was: a
    copy of an unusable file is unusable too, not 'already landed' (issue 25)."""
    rows = read_table(
        lake,
        "quarantine",
        ["reason"],
        filter=(pc.field("file") == file) & (pc.field("location") == WHOLE_FILE),
    ).column("reason")
    return rows[0].as_py() if len(rows) else None


def json_options(options: Mapping[str, Any]) -> dict[str, Any]:
    plain = (str, int, float, bool, type(None))
    return {k: v for k, v in options.items() if isinstance(v, plain)}


def reconcile(
    lake: str | os.PathLike | None, skip: Iterable[str | os.PathLike] = ()
) -> list[FileReport]:
    """Finish or undo landings whose process died during their commits (module doc).

    An unchanged file is ingested again (roll forward) with the options it was first given,
    unless it is in ``skip`` (about to be ingested anyway); for a changed or vanished file
    every commit of the interrupted landing is undone (:func:`burstlake.lake.undo_landing`,
    which also restores rows it shared with other files, such as Zabbix ``node_io``), so the
    lake and ``ingest_log`` are as before it and the drop directory lands the file's current
    content next time.
    Returns the reports of the files ingested again.
    """
    from burstlake.jobs.ingest import source_module

    root = lake_path(lake)
    skipped = {os.path.abspath(p) for p in skip}
    reports = []
    for record in lakes.intents(root, abandoned=True):
        if "members" in record:  # a group of files landed as one (grouped.py)
            from burstlake.jobs.ingest import grouped

            reports += grouped.reconcile(root, record, skipped)
            shutil.rmtree(record["path"], ignore_errors=True)
            continue
        file, sid = Path(record["file"]), record["source_id"]
        unchanged = file.is_file() and content_id(file) == sid
        logged = table_files(root, "ingest_log") and sid in set(
            read_table(root, "ingest_log", ["source_id"]).column(0).to_pylist()
        )
        if logged:
            for old in record["replaces"]:
                delete_contribution(root, old, record["tables"])
        elif unchanged:
            if str(file) not in skipped:
                log.warning("re-ingesting %s: its last ingest was interrupted", file)
                source = source_module(record["source"]).SOURCE
                context = ParseContext(options=record.get("options", {}))
                nodes = _topology_nodes(root, source)  # the checks of any ingest
                reports.append(ingest_file(source, file, root, context, nodes))
        else:
            log.warning(
                "%s changed or vanished during an interrupted ingest; undoing its commits", file
            )
            with _one_at_a_time(root, source_module(record["source"]).SOURCE):
                lakes.undo_landing(root, sid, record["tables"], record["started"])
        shutil.rmtree(record["path"], ignore_errors=True)
    return reports


def _writers(root: Path, source: Source, source_id: str) -> dict[str, ContributionWriter]:
    """One writer per table the file lands in (quarantine last): one commit per table."""
    tables = [*source.tables, *source.state_tables, "quarantine"]
    return {t: ContributionWriter(root, t, source_id) for t in tables}


def _write(writer: ContributionWriter, rows: pa.Table) -> None:
    """Write rows to the file's contribution, or to the ones named by their _contribution."""
    if CONTRIBUTION not in rows.column_names:
        writer.write(rows)
        return
    names = rows.column(CONTRIBUTION)
    for name in pc.unique(names).to_pylist():
        writer.write(rows.filter(pc.equal(names, name)).drop_columns([CONTRIBUTION]), name)


def _one_at_a_time(root: Path, source: Source) -> contextlib.AbstractContextManager:
    """The lock a counter stream's files land under (nothing for other sources)."""
    if source.stream is None:
        return nullcontext()
    return lakes.exclusive(root, f"source-{source.name}")


def ingest_file(
    source: Source,
    path: str | os.PathLike,
    lake: str | os.PathLike | None = None,
    context: ParseContext | None = None,
    topology_nodes: list[str] | None = None,
) -> FileReport:
    """Ingest one file of ``source`` into the lake; returns its row accounting.

    A file unusable as a whole (unreadable, not this format) lands one quarantine row and a
    report with ``error`` set; it never raises for bad input.
    """
    file = Path(os.path.abspath(path))
    found = paths.kind(file)
    if found != "a regular file":  # /dev/zero is not read forever, nor called missing
        error = found if found == "no such file" else f"{found}, not a regular file"
        return FileReport(source.name, str(file), "-", error=error)
    report = FileReport(source.name, str(file), content_id(file))
    root = lake_path(lake)
    report.same_as = _landed_as(root, report)
    if report.same_as:
        report.error = refused_as(root, report.same_as)
        log.info("%s: same content as %s, %s", file, report.same_as, report.error or "landed")
        return report
    context = replace(context or ParseContext(), lake=root, source_id=report.source_id)
    with _one_at_a_time(root, source):
        _Landing(source, file, root, context, topology_nodes, report).land()
    return report


@dataclass
class _Landing:
    """One file's landing: parse, screen and stage it, then commit (module doc)."""

    source: Source
    file: Path
    root: Path
    context: ParseContext
    topology_nodes: list[str] | None
    report: FileReport

    def land(self) -> None:
        """Stage, then commit; a lake that fails (full disk, read-only) is reported, not
        raised."""
        try:
            self.commit(self.stage())
        except OSError as err:
            failure = as_lake_error(err, self.root)
            if failure is None:
                raise
            done = self.report.failure or "nothing of it was committed"
            self.report.failure = f"not landed ({failure}): {done}"

    def stage(self) -> dict[str, ContributionWriter]:
        """Parse, screen and stage the file: nothing is committed yet. A file that cannot be
        read as this source, or whose traffic passes a 64-bit sum (:func:`check_sums`), is
        refused as a whole."""
        writers = _writers(self.root, self.source, self.report.source_id)
        try:
            self._parse_into(writers)
        except UnusableInput as err:
            _abort(writers)
            writers = _writers(self.root, self.source, self.report.source_id)
            self.report.error = str(err)
            self.report.records_in, self.report.quarantined = 1, 1
            self.report.traffic = {}  # nothing of it lands (and a passed 64-bit sum never logs)
            rejects = [Reject(WHOLE_FILE, None, str(err))]
            writers["quarantine"].write(quarantine_rows(self.report, rejects))
        except BaseException:
            _abort(writers)
            raise
        self.report.landed = self.report.records_in - self.report.quarantined
        checkpoint("ingest-stage")
        return writers

    def _parse_into(self, writers: dict[str, ContributionWriter]) -> None:
        """Parse the file, screen each batch and stage its rows into ``writers``."""
        self.report.records_in = self.report.quarantined = 0
        self.report.traffic, self.report.keep = {}, frozenset()
        quarantined: dict[int, str] = {}  # location of earlier batches' (Batch.belongs_to)
        for batch in self.source.parse(self.file, self.context):
            checkpoint("ingest-parse")
            if batch.belongs_to in quarantined:
                good, rejects, failed, bad_records = orphaned(batch, quarantined[batch.belongs_to])
            else:
                good, rejects, failed, bad_records = _screen(batch, self.topology_nodes)
            if batch.belongs_to is None:  # records later batches may belong to
                for record in bad_records:
                    quarantined[record] = batch.origins.get(record, (f"record {record}", None))[0]
            account_traffic(self.report, batch, bad_records, good)
            check_sums(self.report)
            for table, rows in good.items():
                _write(writers[table], rows)
            for table, rows in batch.stream.state.items():
                writers[table].write(rows)
            for table in self.source.tables:
                writers[table].claim(batch.stream.contributions)
            writers["quarantine"].write(quarantine_rows(self.report, batch.rejects + rejects))
            self.report.records_in += batch.records
            self.report.quarantined += len(batch.rejects) + failed
            self.report.keep |= batch.stream.keep_previous

    def commit(self, writers: dict[str, ContributionWriter]) -> None:
        """Commit the staged tables, then ``ingest_log``, as one landing (module doc). When
        the lake fails part-way, ``report.failure`` says what was committed."""
        previous = _previous_versions(self.root, self.report.file, self.report.source_id)
        replaces = [r for r in previous if r not in self.report.keep]
        record = {
            "source": self.source.name,
            "file": self.report.file,
            "options": json_options(self.context.options),
            "replaces": replaces,
            "tables": [*writers, "ingest_log"],
        }
        try:
            with lakes.landing(self.root, self.report.source_id, record):
                for table, writer in writers.items():
                    writer.replaces = replaces
                    rows = writer.commit()
                    if table in self.source.tables:
                        if self.report.error is None:
                            self.report.rows[table] = rows
                        self.report.superseded += writer.superseded
                        if spec(table).key == spec(table).replace_key:  # a row is a record
                            self.report.stale += writer.stale
                    checkpoint("ingest-commit")
                self.report.landed -= self.report.stale
                _log(self.root, self.report, replaces)
        except BaseException:
            _abort(writers)
            done = [t for t, w in writers.items() if w.version is not None]
            if done:
                self.report.failure = (
                    f"{len(done)} of its {len(writers) + 1} table commits ({', '.join(done)}) "
                    "stay hidden from readers until the next ingest or `burstlake lake clean` "
                    "finishes or undoes them"
                )
            raise


def _abort(writers: dict[str, ContributionWriter]) -> None:
    """Drop every writer's staged files: nothing of them is committed."""
    for writer in writers.values():
        writer.abort()


def _log(lake: Path, report: FileReport, replaces: list[str]) -> None:
    write_table(lake, "ingest_log", log_row(report), report.source_id, replaces)


def log_row(report: FileReport) -> pa.Table:
    """A file's ``ingest_log`` row: its content id and its row and byte accounting."""
    row = {
        "source": report.source,
        "file": report.file,
        "source_id": report.source_id,
        "bytes": Path(report.file).stat().st_size,
        "records_in": report.records_in,
        "landed": report.landed,
        "quarantined": report.quarantined,
        "stale": report.stale,
        "traffic": [
            {"metric": m, **{r: parts.get(r, 0) for r in ("seen", *TRAFFIC_REASONS)}}
            for m, parts in sorted(report.traffic.items())
        ]
        or None,
        "ingested_at": _now(),
    }
    return pa.Table.from_pylist([row])


def expand_paths(paths: Iterable[str | os.PathLike], pattern: str = "*") -> list[Path]:
    """Files named, and files matching ``pattern`` inside directories named, sorted."""
    found: list[Path] = []
    for p in map(Path, paths):
        found.extend(sorted(q for q in p.rglob(pattern) if q.is_file()) if p.is_dir() else [p])
    return found


def ingest(
    source: Source,
    paths: Iterable[str | os.PathLike],
    lake: str | os.PathLike | None = None,
    options: Mapping[str, Any] | None = None,
    report: Report = silent,
    workers: int = 1,
    spark_master: str | None = None,
) -> list[FileReport]:
    """Ingest files of one source, then refresh the catalog. Returns one report per file.

    ``report`` gets the progress: one task, ``ingest <source>``, in bytes of the files (what
    the parser reads as it reads it, then each file's size once it has landed).
    ``workers``: processes parsing the files of a grouped source (``Source.grouped``);
    ``spark_master``: parse them as Spark tasks on this master instead (:mod:`.spark_stage`)."""
    from burstlake.jobs.ingest import grouped

    check_cluster((options or {}).get("cluster"), "--cluster")
    source.check_options(dict(options or {}))
    check_parallel(source, workers, spark_master)
    files = list(map(Path, paths))
    reports = reconcile(lake, skip=files)
    task = f"ingest {source.name}"
    total = sum(f.stat().st_size for f in files if f.is_file())
    read = [0]  # bytes the parser said it read in the current run of files

    def progress(nbytes: int) -> None:
        read[0] += nbytes
        report(Step(task, nbytes, total=total, unit="B"))

    report(Step(task, 0, total=total, unit="B"))
    context = ParseContext(options=dict(options or {}), progress=progress)
    topology_nodes = _topology_nodes(lake, source)  # a source checking names never writes them
    pool = None
    if spark_master is not None:
        from burstlake.jobs.ingest.spark_stage import spark_staging

        pool = spark_staging(spark_master, lake_path(lake))
        workers = pool.workers
    at = 0
    while at < len(files):
        run = _group_run(source, files, at)
        if run:
            root = lake_path(lake)
            landed = grouped.land(source, run, root, context, topology_nodes, workers, pool)
        else:
            run = files[at : at + 1]
            landed = [ingest_file(source, run[0], lake, context, topology_nodes)]
        reports += landed
        at += len(run)
        if any(r.failure for r in landed):  # the lake cannot take files now: say so for others
            skipped = files[at:]
            reports += [
                FileReport(source.name, str(f), "-", failure=NOT_ATTEMPTED) for f in skipped
            ]
            break
        size = sum(f.stat().st_size for f in run if f.is_file())
        if size != read[0]:  # the run's bytes, whatever the parser counted (compressed input)
            report(Step(task, size - read[0], total=total, unit="B"))
        read[0] = 0
    report(Step(task, total=total, unit="B", done=True))
    _finish(lake, reports)
    return reports


def check_parallel(source: Source, workers: int, spark_master: str | None) -> None:
    """Refuse, in one line, Spark staging for a source that lands its files one at a time,
    or beside ``--workers``."""
    if spark_master is None:
        return
    if not source.grouped:
        raise ValueError(
            f"--spark-master: {source.name} files land one at a time in this process "
            "(only a source landing small files in groups, darshan, stages them in parallel)"
        )
    if workers > 1:
        raise ValueError("--spark-master stages on the Spark executors: drop --workers")


def _group_run(source: Source, files: list[Path], at: int) -> list[Path]:
    """The files from ``at`` on that land as groups (none: land ``files[at]`` alone)."""
    from burstlake.jobs.ingest import grouped

    if not source.grouped:
        return []
    end = at
    while end < len(files) and grouped.groupable(files[end]):
        end += 1
    return files[at:end]


def _finish(lake: str | os.PathLike | None, reports: list[FileReport]) -> None:
    """Refresh the catalog; raise :class:`IngestFailed` when a file did not land or the catalog
    could not be rebuilt, saying which files landed and which did not."""
    failed = [r for r in reports if r.failure and r.failure != NOT_ATTEMPTED]
    untried = sum(r.failure == NOT_ATTEMPTED for r in reports)
    summary = f"{_files(sum(r.failure is None for r in reports))} landed"
    if failed:
        summary += f", {_files(len(failed))} not landed"
    if untried:
        summary += f", {_files(untried)} not attempted"
    summary += " (each listed above)"
    checkpoint("ingest-catalog")
    try:
        catalog.refresh(lake)
    except OSError as err:
        raise IngestFailed(
            reports,
            f"{summary}; then the catalog was not rebuilt: {err} (the next `burstlake sql` or "
            "`burstlake lake catalog` rebuilds it)",
        ) from err
    if failed:
        raise IngestFailed(reports, f"{summary}: {failed[0].file}: {failed[0].failure}")
