"""Slurm accounting (``sacct -P`` text or ``sacct --json``) → jobs, job_steps, job_nodes.

Paper 004 §2.2 joins per-node traffic with the Slurm log: which nodes each job held, in which
order (``node_index``), from when to when. This module reads both shapes sacct prints:

* ``sacct -P`` / ``--parsable2`` (or ``-p``, trailing ``|``): a header line naming any subset of
  fields in any order (JobID or JobIDRaw, JobName, User, UID, Account, Partition, Cluster,
  Submit, Eligible, Start, End, ReqCPUS, AllocCPUS, NNodes, NodeList, State, ExitCode; others
  are ignored). One line is one record. Times are local to ``--tz`` and stored in UTC.
* ``sacct --json`` (Slurm 21.08 … 24.x data_parser shapes): one element of ``jobs`` is one
  record, its allocation and all its steps. Times there are epoch seconds. The document is read
  as a stream (one job in memory at a time), so a month of a large centre fits.

The format is told from the content. Ids: ``123`` an allocation, ``123+1`` a heterogeneous
component, ``123_7`` an array task, ``123.batch`` / ``123_7.0`` / ``123+1.extern`` steps.
``jobs.job_id_raw`` keeps the scheduler's unique id (JobIDRaw; in JSON ``job_id``), the
``SLURM_JOB_ID`` that Darshan records, so an array task's logs join its ``123_7`` row.
A record whose job/step id was already seen is quarantined as a duplicate of the first;
a repeated header line (concatenated sacct outputs) is skipped, as are blank lines.
"""

from __future__ import annotations

import codecs
import itertools
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa

from burstlake.jobs.ingest import hostlist, inputs
from burstlake.jobs.ingest.slurm_fields import json_entries, parse_state
from burstlake.jobs.ingest.source import (
    RECORD,
    Batch,
    Option,
    ParseContext,
    Reject,
    Source,
    UnusableInput,
    record_cluster,
)
from burstlake.schemas import spec
from burstlake.schemas.sources import SACCT_TEXT_FIELDS as TEXT_FIELDS

BATCH_RECORDS = 50_000
JSON_MAX_RECORD = 16 << 20  # characters: a job of sacct --json is a few kB; longer is refused
NULL_TIMES = frozenset({"", "unknown", "none", "n/a", "(null)"})
JOB_COLUMNS = spec("jobs").schema.names
STEP_COLUMNS = spec("job_steps").schema.names
NODE_COLUMNS = (*spec("job_nodes").schema.names, RECORD)
TIME_COLUMNS = ("submit", "eligible", "start", "end")
INT_COLUMNS = ("uid", "req_cpus", "alloc_cpus", "nnodes")
_JOB_ID = re.compile(
    r"(?P<job>\d+(?:\+\d+|_(?:\d+|\[[^\]]*\]))?)(?:\.(?P<step>[A-Za-z_]\w*|\d+(?:\+\d+)?))?"
)
REQUEUED_STATES = frozenset({"REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD"})
"""States of an earlier run that Slurm put back in the queue (sacct -D prints each run)."""


# ---------------------------------------------------------------- options


def time_zone(name: str) -> tzinfo:
    """The zone sacct printed its times in (an IANA name such as ``Europe/Paris``)."""
    if name.upper() == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        message = f"unknown time zone {name!r}; use an IANA name like America/Chicago"
        raise ValueError(message) from None


def check_options(options: Mapping[str, Any]) -> None:
    """``tz``: an IANA zone name (``--cluster`` is checked for every source by landing.ingest)."""
    time_zone(str(options.get("tz") or "UTC"))


OPTIONS = (
    Option(
        "tz",
        "time zone of the times in sacct text output (IANA name, default UTC); "
        "they are stored in UTC",
        default="UTC",
    ),
)


# ---------------------------------------------------------------- field conversion


def parse_time(text: str, zone: tzinfo) -> datetime | None:
    """An sacct time (``2017-03-20T01:59:02`` in ``zone``) in UTC; Unknown/None/empty → None."""
    if text.strip().lower() in NULL_TIMES:
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a time (YYYY-MM-DDTHH:MM:SS, Unknown or None)") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=zone)
    return moment.astimezone(UTC)


def split_job_id(text: str) -> tuple[str, str | None]:
    """``123_7.batch`` → ('123_7', 'batch'); ``123+1`` → ('123+1', None)."""
    match = _JOB_ID.fullmatch(text.strip())
    if not match:
        raise ValueError(
            f"{text!r} is not a Slurm job id (123, 123+1, 123_7, 123.batch, 123_7.0 ...)"
        )
    return match.group("job"), match.group("step")


def _int(text: str) -> int | None:
    text = text.strip()
    if not text:
        return None
    try:
        number = int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a whole number") from None
    if not -(2**63) <= number < 2**63:
        raise ValueError(f"{text[:40]} is beyond the 64-bit range")
    return number


def _text_entry(values: dict[str, str], zone: tzinfo) -> dict[str, Any]:
    """Typed fields of one sacct text line; ValueError names the first bad field."""
    entry: dict[str, Any] = {}
    for column, text in values.items():
        try:
            if column in TIME_COLUMNS:
                entry[column] = parse_time(text, zone)
            elif column in INT_COLUMNS:
                entry[column] = _int(text)
            elif column == "state":
                entry["state"], entry["cancelled_by"] = parse_state(text)
            else:
                entry[column] = text.strip() or None
        except ValueError as err:
            raise ValueError(f"bad {column}: {err}") from None
    raw = entry.pop("job_id_raw", None)
    entry["id"] = entry.pop("job_id", None) or raw
    if not entry["id"]:
        raise ValueError("empty job id")
    if raw:
        entry["job_id_raw"] = split_job_id(raw)[0]
    elif "_" not in entry["id"] and "+" not in entry["id"]:
        entry["job_id_raw"] = split_job_id(entry["id"])[0]  # a plain job: the same id
    return entry


def _schema(table: str) -> pa.Schema:
    return spec(table).schema.append(pa.field(RECORD, pa.int64(), nullable=False))


@dataclass
class _Rows:
    """Rows of one batch for the three tables, plus the batch's rejects and record origins."""

    jobs: list[tuple[dict, list[str]]] = field(default_factory=list)  # (row, its nodes)
    job_steps: list[tuple[dict, dict]] = field(default_factory=list)  # (row, its run's row)
    rejects: list[Reject] = field(default_factory=list)
    origins: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    weights: dict[int, int] = field(default_factory=dict)  # records standing for several lines
    records: int = 0

    def number_runs(self) -> None:
        """``run`` of each allocation: a job printed several times (``sacct -D``) numbers its
        earlier runs 0, 1, ... by start; its last run, the one sacct prints without ``-D``,
        keeps null (docs/design.md, "Run identity")."""
        runs: dict[tuple, list[dict]] = {}
        for job, _ in self.jobs:
            runs.setdefault((job["cluster"], job["job_id"]), []).append(job)
        for rows in runs.values():
            rows.sort(key=_start_order)
            for number, job in enumerate(rows):
                job["run"] = number if number < len(rows) - 1 else None

    def batch(self) -> Batch:
        self.number_runs()
        columns: dict[str, list] = {c: [] for c in NODE_COLUMNS}
        for job, nodes in self.jobs:  # node_index = position in the sorted allocation
            columns["node"] += nodes
            columns["node_index"] += range(len(nodes))
            for column in ("job_id", "cluster", "run", RECORD):
                columns[column] += [job[column]] * len(nodes)
        steps = [step | {"run": run.get("run")} for step, run in self.job_steps]
        jobs = [job for job, _ in self.jobs]
        tables = {
            name: pa.Table.from_pylist(rows, schema=_schema(name))
            for name, rows in (("jobs", jobs), ("job_steps", steps))
            if rows
        }
        if columns["node"]:
            tables["job_nodes"] = pa.Table.from_pydict(columns, schema=_schema("job_nodes"))
        return Batch(tables, self.records, self.rejects, self.origins, self.weights)


def _start_order(job: dict) -> tuple:
    """Runs by start; a run that has not started (the pending last run) comes last."""
    start = job.get("start")
    return (start is None, start or datetime.min.replace(tzinfo=UTC), job[RECORD])


def _checked(read: Callable[[str | None], Any], entry: dict) -> Any:
    try:
        return read(entry.get("nodelist"))
    except ValueError as err:
        raise ValueError(f"bad nodelist: {err}") from None


def _allocation_row(entry: dict, job_id: str, record: int, location: str) -> tuple[dict, list[str]]:
    """The jobs row of an allocation and its nodes in natural order (paper 004 §3.3)."""
    nodes = sorted(_checked(hostlist.expand, entry), key=hostlist.natural_key)
    twice = next((a for a, b in itertools.pairwise(nodes) if a == b), None)
    if twice:
        raise ValueError(f"bad nodelist: {entry['nodelist']!r} names {twice} twice")
    nnodes = entry.get("nnodes")
    if nodes and nnodes is not None and nnodes != len(nodes):
        raise ValueError(f"NNodes {nnodes} disagrees with NodeList of {len(nodes)} nodes")
    job = {c: entry.get(c) for c in JOB_COLUMNS} | {"job_id": job_id, RECORD: record}
    job["_where"] = location  # dropped by the table's schema
    job["nnodes"] = nnodes if nnodes is not None else (len(nodes) or None)
    return job, nodes


def _step_row(entry: dict, job_id: str, step_id: str, record: int) -> dict:
    nnodes = _checked(hostlist.count, entry)
    row = {c: entry.get(c) for c in STEP_COLUMNS}
    row |= {"job_id": job_id, "step_id": step_id, "step_name": entry.get("job_name")}
    if row["nnodes"] is None:
        row["nnodes"] = nnodes or None
    return row | {RECORD: record}


class _Collector:
    """Turns typed entries into lake rows, one record at a time; remembers ids already seen.

    A run of a job is told by its allocation's start: ``sacct -D`` prints each run of a
    requeued job (REQUEUED, PREEMPTED, NODE_FAIL ... then the last) with the same id, each
    followed by its steps. The same run printed twice is a duplicate (or a conflict when its
    fields differ); a run with another start is another run of the job."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = options  # --cluster (see source.record_cluster)
        self.seen: dict[tuple, tuple[str, int]] = {}  # (cluster, job, step, run start) -> ...
        self.rows = _Rows()
        self.failed: dict[tuple, str] = {}  # (cluster, job) of a rejected allocation -> where
        self.job_record: dict[tuple, int] = {}  # (cluster, job) -> record of its allocation
        self.current: dict[tuple, dict] = {}  # (cluster, job) -> row of its latest run
        self.closed: dict[tuple, str] = {}  # (cluster, job) landed in an earlier batch -> where

    def reject(self, location: str, raw: str, reason: str) -> None:
        self.rows.records += 1
        self.rows.rejects.append(Reject(location, raw, reason))

    def add(self, record: int, location: str, raw: str, entries: list[dict]) -> None:
        """Land a record's entries, or reject the whole record with the first fault."""
        try:
            keys, jobs, steps = [], [], []
            run: dict | None = None  # the allocation row of this record, if it has one
            for entry in entries:
                entry["cluster"] = record_cluster(self.options, entry.get("cluster"))
                job_id, step_id = split_job_id(entry["id"])
                job_key = (entry["cluster"], job_id)
                owner = run if step_id is None else run or self.current.get(job_key)
                start = entry.get("start") if step_id is None else (owner or {}).get("start")
                key = (entry["cluster"], job_id, step_id, start)
                self._check_new(key, keys, raw)
                keys.append(key)
                if step_id is None:
                    self.failed[job_key] = location  # until the allocation is known good
                    self._check_run(job_key, entry)
                    jobs.append(_allocation_row(entry, job_id, record, location))
                    run = jobs[-1][0]
                    del self.failed[job_key]
                elif job_key in self.failed:
                    raise ValueError(
                        f"the allocation of {job_id} ({self.failed[job_key]}) was quarantined"
                    )
                else:
                    # a job's records land or fail together: its steps share its record
                    shared = record if run else self.job_record.get(job_key, record)
                    steps.append((_step_row(entry, job_id, step_id, shared), owner or {}))
        except ValueError as err:
            self.reject(location, raw, str(err))
            return
        for key in keys:
            self.seen[key] = (location, hash(raw))
        rows = self.rows
        rows.records += 1
        for job, nodes in jobs:
            rows.jobs.append((job, nodes))
            self.job_record[job["cluster"], job["job_id"]] = record
            self.current[job["cluster"], job["job_id"]] = job
        rows.job_steps += steps
        shared = {step[RECORD] for step, _ in steps} - {record}
        if shared:  # a step line joining its allocation's record
            (into,) = shared
            rows.weights[into] = rows.weights.get(into, 1) + 1
        else:
            rows.origins[record] = (location, raw)

    def _check_run(self, job_key: tuple, entry: dict) -> None:
        """Another run of a job: it must have started if it was requeued, and its other runs
        must be in this batch (sacct -D prints a job's runs together)."""
        state, name = entry.get("state"), job_key[1]
        if entry.get("start") is None and state in REQUEUED_STATES:
            raise ValueError(f"{state} run of {name} without a Start: a requeued run has one")
        earlier = self.current.get(job_key)
        if earlier is None or earlier.get("start") == entry.get("start"):
            return  # the first run, or the same run again (duplicate or conflict)
        if job_key in self.closed:
            raise ValueError(
                f"another run of {name} more than {BATCH_RECORDS} records after its runs at "
                f"{self.closed[job_key]}: sort the dump by JobID (sacct -D prints runs together)"
            )
        if entry.get("start") is None and earlier.get("state") in REQUEUED_STATES:
            return  # the pending last run after a requeue
        if earlier.get("start") is None:
            raise ValueError(
                f"{name} has a run without a Start ({earlier['_where']}) before this one: "
                "only the last run of a requeued job can be unstarted"
            )

    def _check_new(self, key: tuple, keys: list[tuple], raw: str) -> None:
        name = key[1] + (f".{key[2]}" if key[2] else "")
        if key in keys:
            raise ValueError(f"{name} appears twice in this record")
        if key in self.seen:
            where, digest = self.seen[key]
            if digest == hash(raw):
                raise ValueError(f"duplicate of {where}")
            raise ValueError(f"{name} conflicts with {where} (same id and start, other fields)")

    def take(self) -> Batch:
        batch, self.rows = self.rows.batch(), _Rows()
        self.job_record.clear()  # records are numbered per batch
        for key, job in self.current.items():  # runs are numbered per batch
            self.closed.setdefault(key, job["_where"])
        return batch


# ---------------------------------------------------------------- the two formats


def _header(line: str) -> tuple[list[str | None], bool]:
    """Lake columns of a sacct header (None for ignored fields) and whether lines end in '|'."""
    trailing = line.endswith("|")
    names = [n.strip().lower() for n in (line[:-1] if trailing else line).split("|")]
    if "|" not in line or not {"jobid", "jobidraw"} & set(names):
        raise UnusableInput(
            f"not sacct -P output: the first line is not a header with JobID or JobIDRaw "
            f"(got {line[:80]!r})"
        )
    known = [n for n in names if n in TEXT_FIELDS]
    if len(known) != len(set(known)):
        twice = next(n for n in known if known.count(n) > 1)
        raise UnusableInput(f"sacct header names the field {twice!r} twice")
    return [TEXT_FIELDS.get(n) for n in names], trailing


def _is_header(line: str) -> bool:
    """A line naming sacct fields (JobID among them) rather than holding values."""
    names = [n.strip().lower() for n in line.rstrip("|").split("|")]
    return bool({"jobid", "jobidraw"} & set(names)) and all(n in TEXT_FIELDS for n in names)


def _text_records(
    lines: Iterator[tuple[int, bytes | inputs.Overlong]], context: ParseContext
) -> Iterator[Batch]:
    zone = time_zone(context.options.get("tz") or "UTC")
    collector = _Collector(context.options)
    header_line, header, trailing = None, [], False
    try:
        for number, raw in lines:
            if collector.rows.records >= BATCH_RECORDS:
                yield collector.take()
            if isinstance(raw, inputs.Overlong):
                collector.reject(f"line {number}", raw.preview, raw.reason)
                continue
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if not line.strip() or line == header_line:  # blank, or the header of a concatenation
                continue
            if header_line is None or _is_header(line):  # a concatenated dump's own header
                header_line = line
                header, trailing = _header(line)
                continue
            fields = (line[:-1] if trailing and line.endswith("|") else line).split("|")
            location = f"line {number}"
            try:
                inputs.decode_line(raw)
            except ValueError as err:
                collector.reject(location, line, str(err))
                continue
            if len(fields) != len(header):
                truncated = "" if raw.endswith(b"\n") else "truncated last line: "
                reason = f"{truncated}{len(fields)} fields, the header has {len(header)}"
                collector.reject(location, line, reason)
                continue
            try:
                entry = _text_entry({c: v for c, v in zip(header, fields, strict=True) if c}, zone)
            except ValueError as err:
                collector.reject(location, line, str(err))
                continue
            collector.add(number, location, line, [entry])
    except inputs.BrokenStream as err:
        if header_line is None:
            raise UnusableInput(f"{err} at byte {err.offset}, before any sacct line") from None
        collector.reject(f"byte {err.offset}", None, f"{err}; the rest of the file is lost")
    if header_line is None:
        raise UnusableInput("empty file: no sacct header line")
    yield collector.take()


class _JsonStream:
    """``sacct --json`` read one value at a time: Python's own decoder on a window of the
    text, refilled from the (decompressed) chunks, so memory holds one job, not the file.
    A value still undecodable with :data:`JSON_MAX_RECORD` characters after it is broken."""

    def __init__(self, parts: Iterator[bytes]) -> None:
        self.parts = parts
        self.text, self.at, self.offset = "", 0, 0  # window, position in it, bytes before it
        self.size = 0  # characters of the last value read
        self.decode = codecs.getincrementaldecoder("utf-8")().decode
        self.ended = False
        self.decoder = json.JSONDecoder()

    def _more(self, need: int) -> bool:
        """Make at least ``need`` characters available after ``at``; False at the end."""
        if self.at:
            self.offset += len(self.text[: self.at].encode())
            self.text, self.at = self.text[self.at :], 0
        while len(self.text) < need and not self.ended:
            part = next(self.parts, None)
            self.ended = part is None
            self.text += self.decode(part or b"", final=self.ended)
        return len(self.text) > 0

    def skip(self) -> str:
        """Skip white space; the next character, '' at the end."""
        while True:
            while self.at < len(self.text) and self.text[self.at] in " \t\r\n":
                self.at += 1
            if self.at < len(self.text) or not self._more(1):
                return self.text[self.at : self.at + 1]

    def expect(self, chars: str) -> str:
        char = self.skip()
        if not char or char not in chars:
            raise ValueError(f"expected {' or '.join(map(repr, chars))} at byte {self.byte}")
        self.at += 1
        return char

    def value(self) -> Any:
        """The next JSON value (a job, a key, ...), refilling the window as it needs."""
        self.skip()
        need = len(self.text) - self.at
        while True:
            try:
                value, end = self.decoder.raw_decode(self.text, self.at)
            except json.JSONDecodeError as err:
                if self.ended or need > JSON_MAX_RECORD:
                    raise ValueError(f"{err.msg} at byte {self.byte}") from None
                need = 2 * need + inputs.READ_BYTES
                self._more(need)
                continue
            self.size, self.at = end - self.at, end
            return value

    @property
    def byte(self) -> int:
        return self.offset + len(self.text[: self.at].encode())


def _json_jobs(stream: _JsonStream) -> Iterator[Any]:
    """The elements of the top-level ``jobs`` list, in order (other keys are read and
    dropped); UnusableInput when there is no such list."""
    stream.expect("{")
    found = False
    if stream.skip() == "}":
        stream.at += 1
    else:
        while True:
            key = stream.value()
            stream.expect(":")
            if key == "jobs" and stream.skip() == "[":
                found = True
                stream.at += 1
                if stream.skip() == "]":
                    stream.at += 1
                else:
                    while True:
                        yield stream.value()
                        if stream.expect(",]") == "]":
                            break
            else:
                stream.value()
            if stream.expect(",}") == "}":
                break
    if stream.skip():
        raise ValueError(f"text after the JSON document at byte {stream.byte}")
    if not found:
        raise UnusableInput("JSON without a 'jobs' list: not sacct --json output")


def _json_records(stream: _JsonStream, context: ParseContext) -> Iterator[Batch]:
    """Batches from ``sacct --json`` output read as a stream: a truncated or broken document
    lands the jobs before the fault and says at which byte the rest was lost."""
    collector = _Collector(context.options)
    seen = 0
    try:
        for index, job in enumerate(_json_jobs(stream)):
            if collector.rows.records >= BATCH_RECORDS:
                yield collector.take()
            seen += 1
            location = f"jobs[{index}]"
            raw = json.dumps(job, sort_keys=True)[: inputs.MAX_LINE_BYTES]  # kept in quarantine
            try:
                if stream.size > JSON_MAX_RECORD:
                    raise ValueError(
                        f"{stream.size} characters of JSON, beyond the limit of "
                        f"{JSON_MAX_RECORD} per job"
                    )
                entries = json_entries(job)
            except (ValueError, TypeError, AttributeError) as err:
                collector.reject(location, raw, f"bad job: {err}")
            else:
                collector.add(index, location, raw, entries)
    except (ValueError, UnicodeDecodeError, RecursionError, inputs.BrokenStream) as err:
        reason = "JSON nested too deeply" if isinstance(err, RecursionError) else str(err)
        if not seen:
            raise UnusableInput(f"{reason}: not valid sacct --json output") from None
        collector.reject(
            f"byte {stream.byte}", None, f"{reason} after jobs[{seen - 1}]; the rest is lost"
        )
    yield collector.take()


def _numbered_lines(
    path: Path, context: ParseContext
) -> Iterator[tuple[int, bytes | inputs.Overlong]]:
    """The (decompressed) lines with their line ends, numbered from 1 (see
    :func:`inputs.lines`); a damaged gzip raises BrokenStream after the lines read before it."""
    yield from enumerate(inputs.lines(inputs.text_chunks(path, context.progress)), 1)


def _first_byte(path: Path) -> bytes:
    try:
        head = next(inputs.text_chunks(path), b"")
    except inputs.BrokenStream as err:
        raise UnusableInput(f"binary file, not sacct output (gzip magic, but {err})") from None
    return head.lstrip()[:1]


def parse(path: Path, context: ParseContext) -> Iterator[Batch]:
    """Batches of jobs/job_steps/job_nodes rows from one sacct text or JSON file, plain or
    gzip-compressed."""
    if _first_byte(path) == b"{":
        yield from _json_records(_JsonStream(inputs.text_chunks(path, context.progress)), context)
    else:
        yield from _text_records(_numbered_lines(path, context), context)


SOURCE = Source(
    name="slurm",
    tables=("jobs", "job_steps", "job_nodes"),
    parse=parse,
    options=OPTIONS,
    check_options=check_options,
)
