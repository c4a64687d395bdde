"""The source contract: what a source module gives, and what the landing engine gives it back.

See docs/design.md, 'Sources'. A source module (slurm, topology, zabbix, darshan) defines
``SOURCE = Source(...)``: its name, the tables it writes, a parser from one file to a stream of
:class:`Batch` es, and its options as data (:class:`Option`). Everything else (screening with
the tables' expectations, quarantine, the Delta commits, ``ingest_log``, the catalog) is the
landing engine's (:mod:`.landing`), the same way for every source.

Two contracts, the second opted into:

* **files** (Slurm, topology, Darshan): each file stands alone. Its batches carry rows, the
  parser's :class:`Reject` s and the byte accounting; re-ingesting a path replaces what its
  earlier content contributed.
* **a counter stream** (Zabbix; a Lustre jobstats or LDMS source would be another): files
  are parts of one stream of counter samples, so a file's rows need samples of other files.
  Such a source sets ``Source.stream`` (:class:`CounterStream`) and its batches carry a
  :class:`StreamPart`; see those two for what the engine then does.

Rows may carry a ``_record`` column (:data:`RECORD`): the index of the input record that
produced them (one sacct line makes a ``jobs`` row and many ``job_nodes`` rows). A record with
any failing row is quarantined whole, so no half of it lands. Rows without ``_record`` are
quarantined one by one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from burstlake.jobs.ingest.accounting import FileReport, add_traffic

RECORD = "_record"  # the input record a row came from (module doc)
CONTRIBUTION = "_contribution"  # a stream row's contribution (StreamPart.contributions)


class UnusableInput(Exception):
    """The file as a whole cannot be read as this source; the message is the one-line reason."""


@dataclass(frozen=True)
class Reject:
    """One input record the parser could not use."""

    location: str  # 'line 12', 'byte 4096', 'record 7'
    raw: str | None
    reason: str


# ---------------------------------------------------------------- options


@dataclass(frozen=True)
class Option:
    """One option of a source, declared once: the command line builds its flag from it
    (``--name-with-dashes``), the deployment file checks its ``sources.<name>`` keys against it
    (``name`` or ``name-with-dashes``), and the parser finds the value in
    ``ParseContext.options[name]``.

    ``type`` turns one value's text into the value (``str``, ``int``, ``float``); ``choices``
    and ``bounds`` (low, high; None: open; with ``unit`` in the message) are checked on every
    value, and a float must be finite when bounded. ``repeated``: given any number of times,
    a list. ``flag``: a switch, true when given (its value is a bool, default False). A
    source's ``check_options`` checks what the schema cannot say (a time zone, a file that
    exists, options that go together)."""

    name: str
    help: str = ""
    type: Callable[[str], Any] = str
    default: Any = None
    choices: tuple[Any, ...] | None = None
    bounds: tuple[float | None, float | None] | None = None
    unit: str = ""
    repeated: bool = False
    flag: bool = False
    metavar: str | None = None

    @property
    def flag_name(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def initial(self) -> Any:
        """The value when the option is not given at all."""
        if self.flag:
            return bool(self.default)
        if self.repeated:
            return list(self.default or ())
        return self.default

    def convert(self, text: str) -> Any:
        """One value from its text (a command-line argument, a deployment file's scalar): of
        the option's type, among its choices, within its bounds; ValueError with a one-line
        reason otherwise."""
        try:
            value = self.type(text)
        except (ValueError, TypeError, ArithmeticError) as err:
            raise ValueError(f"{text!r} is not a valid value ({err})") from None
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{text!r} is not one of {', '.join(map(str, self.choices))}")
        if self.bounds is not None:
            low, high = self.bounds
            finite = not isinstance(value, float) or math.isfinite(value)
            below, above = low is not None and value < low, high is not None and value > high
            if not finite or below or above:
                raise ValueError(f"{self.flag_name} must be {self._span()}, not {value}")
        return value

    def _span(self) -> str:
        low, high = self.bounds or (None, None)
        unit = f" {self.unit}" if self.unit else ""
        if low is not None and high is not None:
            return f"{low}..{high}{unit}"
        if low is not None:
            return f"a finite number >= {low}{unit}"
        return f"a finite number <= {high}{unit}"


CLUSTER = Option(
    "cluster",
    "the machine these records come from; it overrides a cluster named in the input "
    "(sacct's Cluster field). Without either the records belong to the unnamed machine",
)
"""``--cluster NAME``: the one option every source shares (docs/design.md, "Several machines in
one lake"); the command line adds it to every source, the deployment file sets it from the
machine the options are under."""


def record_cluster(options: Mapping[str, Any], named: str | None = None) -> str | None:
    """The cluster of a record: ``--cluster`` if given, else the one the input names
    (``named``), else None (the unnamed machine). The one place this rule lives."""
    return options.get("cluster") or named or None


@dataclass(frozen=True)
class ParseContext:
    """What a parser gets besides the path: the options (by :class:`Option` name, with
    ``cluster``) and a progress callback taking the bytes read since its last call."""

    options: Mapping[str, Any] = field(default_factory=dict)
    progress: Callable[[int], None] = lambda nbytes: None
    lake: Path | None = None  # set by the engine: sources reading earlier files' state
    source_id: str = ""  # set by the engine: the file's contribution


# ---------------------------------------------------------------- batches


@dataclass(frozen=True)
class StreamPart:
    """The counter-stream part of a batch (sources with ``Source.stream`` only).

    ``contributions``: the shared contributions this batch's rows land in (each row names its
    own in a column :data:`CONTRIBUTION`; the Zabbix stream's one UTC day x one node bucket of
    ``node_io``). Every contribution named here is replaced as a whole, even when no row of it
    remains, so a batch without rows that names one empties it. They land in the file's one
    commit per table, with its own rows.

    ``state``: rows of the stream's ``state_tables`` (the samples later files continue),
    landed unvalidated in the file's own contribution.

    ``keep_previous``: earlier contents of this path that stay in the lake instead of being
    replaced (a rotated export file continues the stream; the path now holds later values).

    A batch may carry only its stream part (no rows, ``records`` 0): the stream's way to claim
    a contribution, land state or keep earlier contents once its rows are done.
    """

    contributions: frozenset[str] = frozenset()
    state: Mapping[str, pa.Table] = field(default_factory=dict)
    keep_previous: frozenset[str] = frozenset()


NO_STREAM = StreamPart()


@dataclass
class Batch:
    """Part of a parsed file: rows per lake table, and the input records it covers.

    ``records`` counts input records covered by this batch, rejected ones included.
    ``origins`` maps a ``_record`` value to (location, raw) so validation failures can be
    quarantined with the input that caused them. ``weights`` says how many input records a
    ``_record`` value stands for when rows aggregate many records (default 1; a Slurm step line
    joining its allocation's record, a node's rows from many Zabbix samples): a failing one is
    one quarantine row that counts them all. ``parents`` maps a record to the record it
    belongs to (a Darshan log's module records to its header): when the parent fails, so does
    the child, so no row lands without the record it describes. ``belongs_to``: the record of
    an earlier batch that every record of this one belongs to (a Darshan log's header): when
    that record was quarantined, the whole batch is too.

    Byte accounting (docs/design.md, "Bytes are accounted as well as records"): ``traffic``
    is metric -> reason -> amount for bytes seen in the input ('seen') and not landed ('gap',
    'reset', 'quarantined'); ``record_traffic`` is _record -> metric -> amount landing with
    that record's rows (quarantined if the record fails); ``measure``, for batches too large
    for a record each (a record per DXT segment), gives metric -> amount in given tables: the
    rows that pass screening land it, the others count as quarantined.

    ``stream``: the counter-stream part (:class:`StreamPart`), for a ``Source.stream`` only.
    """

    tables: dict[str, pa.Table]
    records: int
    rejects: list[Reject] = field(default_factory=list)
    origins: dict[int, tuple[str, str | None]] = field(default_factory=dict)
    weights: dict[int, int] = field(default_factory=dict)
    parents: dict[int, int] = field(default_factory=dict)
    traffic: dict[str, dict[str, int]] = field(default_factory=dict)
    record_traffic: dict[int, dict[str, int]] = field(default_factory=dict)
    measure: Callable[[Mapping[str, pa.Table]], dict[str, int]] | None = None
    belongs_to: int | None = None
    stream: StreamPart = NO_STREAM


# ---------------------------------------------------------------- the source


@dataclass(frozen=True)
class Pulled:
    """Input a stream read from elsewhere (``CounterStream.pull``): files to ingest with extra
    options, lines to tell the user, and why the read ended early (what came before lands)."""

    files: list[Path]
    options: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class CounterStream:
    """The counter-stream contract a source opts into (``Source.stream``): its files are
    parts of one stream of counter samples, so a file's rows are computed from samples of
    other files too (paper 004 §2.2: per-node traffic from counters sampled by a monitor).

    What the source does: keep the samples later files continue in ``state_tables`` (their
    rows arrive in ``StreamPart.state``; the engine lands them unvalidated in the file's
    contribution, and replaces them with the file); read earlier files' state while parsing
    (from ``ParseContext.lake``, the files landed so far); put rows computed from several files
    in shared contributions (``StreamPart.contributions``; ``Batch.weights`` says how many
    samples a node's aggregated rows stand for), and say which earlier contents of a path
    continue rather than being replaced (``StreamPart.keep_previous``).

    What the engine does in return: a stream's files land one at a time, under a lock per
    source and lake (a file reads the state others wrote and rewrites contributions they
    share); shared contributions land in the file's one commit per table, and a killed
    landing is finished or undone like any other (``lake.undo_landing`` restores shared rows).

    Optional hooks: ``pull(options, lake, folder)``, input read from elsewhere than files
    when the options ask (Zabbix ``--db``), written as files into ``folder`` (None when the
    options ask for none); ``balance(lake, options, reports)``, the byte balance to print after
    a command as (title, metric -> reason -> bytes), for the whole stream rather than the files
    of one command.
    """

    state_tables: tuple[str, ...] = ()
    pull: Callable[[Mapping[str, Any], Path, Path], Pulled | None] | None = None
    balance: Callable[[Path, Mapping[str, Any], list[FileReport]], tuple[str, dict]] | None = None


@dataclass(frozen=True)
class Source:
    """An input source: its name, the tables it writes, its parser and its hooks
    (docs/design.md, "To add a source"), so that the command line, the drop folders and the
    deployment file never name a source.

    ``parse(path, context)`` yields the file's batches; it raises :class:`UnusableInput` for a
    file that is not of this kind at all, and calls ``context.progress`` with bytes read.
    ``options``: its options (:class:`Option`; ``--cluster`` is every source's,
    :data:`CLUSTER`); ``path_options``, those naming files (resolved against the deployment
    file's folder); ``check_options``, the one check of their values the schema cannot make,
    made before any file for every caller (command line, drop folder, deployment file, demo):
    it raises ValueError with a one-line reason. ``file_pattern``: the files a directory given
    to ingest holds (a glob on the name). ``after_landing(lake)``: checks of rows landed
    earlier, made after each landing: check name -> one line per finding (the topology
    re-checks node names that landed before it). ``grouped``: small files land in groups, one
    validation and one commit per table for many files (:mod:`.grouped`): every row carries
    ``_record``, no table has a precedence. ``stream``: the counter-stream contract
    (:class:`CounterStream`), None for a source of files that stand alone.
    """

    name: str
    tables: tuple[str, ...]
    parse: Callable[[Path, ParseContext], Iterable[Batch]]
    options: tuple[Option, ...] = ()
    path_options: tuple[str, ...] = ()
    check_options: Callable[[Mapping[str, Any]], None] = lambda options: None
    file_pattern: str = "*"
    after_landing: Callable[[Path], dict[str, list[str]]] = lambda lake: {}
    grouped: bool = False
    stream: CounterStream | None = None

    @property
    def state_tables(self) -> tuple[str, ...]:
        """The stream's state tables (none for a source of files)."""
        return self.stream.state_tables if self.stream is not None else ()

    def traffic(
        self, lake: Path, options: Mapping[str, Any], reports: list[FileReport]
    ) -> tuple[str, dict[str, dict[str, int]]]:
        """The byte balance to print: the stream's (``CounterStream.balance``), else the
        files' traffic summed."""
        if self.stream is not None and self.stream.balance is not None:
            return self.stream.balance(lake, options, reports)
        summed: dict[str, dict[str, int]] = {}
        for report in reports:
            for metric, parts in report.traffic.items():
                for reason, amount in parts.items():
                    add_traffic(summed, metric, reason, amount)
        return f"{self.name} traffic", summed
