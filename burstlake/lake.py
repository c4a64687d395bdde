"""The lake: one Delta Lake table per folder, and the one place that writes.

See docs/design.md, 'The lake: the only interface between stages'.

Layout: ``<lake>/<table>/`` is a Delta table (Parquet files plus ``_delta_log``); day-partitioned
tables are partitioned by a ``day`` column (``day=YYYY-MM-DD`` folders) derived from their
timestamp. Every table also carries a hidden ``_source_id`` column. A *contribution* is
everything one input (a file, a synthesizer run, a metrics job) wrote, named by its
``source_id``; writing a contribution replaces whatever the same ``source_id`` wrote before.

Every write is **one atomic Delta commit** made by delta-rs (``deltalake``): a predicate
overwrite ``_source_id = '<id>'`` and, for tables with a ``replace_key``, the rewrite of the
days whose rows the new contribution supersedes, in the same commit. A killed write leaves the
previous version whole: rows are staged under ``<lake>/_staging`` first, and uncommitted files
are invisible to every reader. Writers of one table take a per-table file lock and retry a
commit that conflicts, so concurrent ingests (as Airflow runs DAGs) neither lose nor duplicate
rows.

Readers see one snapshot: :func:`snapshot` pins one version of each table for the duration of
a job (metrics, replay), and :func:`run` additionally stamps every commit with the run id and
the versions read, and *publishes* a multi-table result (the metrics) only when all of its
tables are committed: until then readers keep seeing the previous run's tables.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError

from burstlake.schemas import REGISTRY, TableSpec, conform, spec

log = logging.getLogger(__name__)

DEFAULT_LAKE = "lake"
ROWS_PER_FILE = 4_000_000
SOURCE = "_source_id"  # hidden column: the contribution a row belongs to
DAY = "day"  # hidden partition column of day-partitioned tables
STAGING = "_staging"
LOCKS = "_locks"
RUNS = "_runs"
COMMIT_RETRIES = 20
PREDICATE = "burstlake.predicate"  # commit metadata: the rows a write replaced


class LakeError(OSError):
    """The lake cannot be written (full disk, read-only, permissions): a one-line reason."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()  # the reason, without '[Errno 28]'


def lake_path(lake: str | os.PathLike | None = None) -> Path:
    """The lake directory: the argument, else ``$BURSTLAKE_LAKE``, else ``./lake``, absolute
    and normalised (``sub/../lake`` is ``lake``: Delta names its files that way)."""
    return Path(os.path.abspath(lake or os.environ.get("BURSTLAKE_LAKE") or DEFAULT_LAKE))


def table_dir(lake: str | os.PathLike | None, table: str) -> Path:
    return lake_path(lake) / spec(table).name


def is_delta(path: Path) -> bool:
    """Whether ``path`` holds a Delta table (a ``_delta_log`` with at least one commit)."""
    return (path / "_delta_log").is_dir() and any((path / "_delta_log").glob("*.json"))


def is_lake(path: Path) -> bool:
    """Whether ``path`` is a lake directory: its catalog, a table or a folder of its writers."""
    own = ("catalog.duckdb", STAGING, LOCKS, RUNS, "_txn", "_migrate", *REGISTRY)
    return path.is_dir() and any((path / name).exists() for name in own)


def delta_schema(table_spec: TableSpec) -> pa.Schema:
    """The stored schema: the contract's columns, ``_source_id`` and (if partitioned) ``day``."""
    fields = [*table_spec.schema, pa.field(SOURCE, pa.string(), nullable=False)]
    if table_spec.partition_by:
        fields.append(pa.field(DAY, pa.date32(), nullable=False))
    return pa.schema(fields)


def _quote(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# --- test hook: pause at a named phase so a fault test can SIGKILL the process there --------


def checkpoint(phase: str) -> None:
    """If ``$BURSTLAKE_PAUSE_AT`` is ``<phase>:<marker>``, write the marker, wait while it exists.

    The fault tests use it to stop a real process at a known point of an ingest or a metrics
    run (parsing, staging, between commits) and SIGKILL it there, or to let it go on by
    deleting the marker; it costs one environment lookup otherwise.
    """
    want = os.environ.get("BURSTLAKE_PAUSE_AT", "")
    name, _, marker = want.partition(":")
    if name != phase or not marker:
        return
    Path(marker).write_text(str(os.getpid()))
    while Path(marker).exists():
        time.sleep(0.05)
    os.environ.pop("BURSTLAKE_PAUSE_AT", None)  # pause once per process


# --- locks, owned scratch folders and their cleanup ----------------------------------------


@contextlib.contextmanager
def _locked(lake: Path, name: str) -> Iterator[None]:
    """An exclusive lock named ``name`` on this lake (released when the process dies)."""
    folder = lake / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def exclusive(lake: str | os.PathLike | None, name: str) -> contextlib.AbstractContextManager:
    """An exclusive lock ``name`` on the lake, held for the block (e.g. one source's landings)."""
    return _locked(lake_path(lake), name)


class _Owned:
    """A scratch folder held by this process through a lock on its ``.owner`` file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self._handle = (path / ".owner").open("w")
        fcntl.flock(self._handle, fcntl.LOCK_EX | fcntl.LOCK_NB)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        self._handle.close()

    def release(self) -> None:
        """Give the folder up without removing it (a later run finds it abandoned)."""
        self._handle.close()


def _abandoned(path: Path) -> bool:
    """Whether a scratch folder's owner is gone (its lock can be taken)."""
    owner = path / ".owner"
    if not owner.exists():
        return True
    with owner.open("r") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(handle, fcntl.LOCK_UN)
        return True


def clean_leftovers(lake: str | os.PathLike | None = None) -> int:
    """Remove staging folders and catalog scratch files left by killed processes; returns count.

    Files a killed delta-rs write left inside a table are not referenced by any commit, so no
    reader sees them; :func:`vacuum` deletes them.
    """
    root = lake_path(lake)
    removed = 0
    staging = root / STAGING
    if staging.is_dir():
        for path in staging.iterdir():
            if path.is_dir() and _abandoned(path):
                shutil.rmtree(path, ignore_errors=True)
                removed += 1
    for path in root.glob(".catalog-*.duckdb*") if root.is_dir() else []:
        pid = path.name.split("-")[1].split(".")[0]
        if not pid.isdigit() or not _alive(int(pid)):
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# --- versions: pinned snapshots, published runs --------------------------------------------


@dataclass
class Run:
    """A job reading one snapshot and committing tables under one id (see :func:`run`)."""

    name: str
    lake: Path
    id: str
    inputs: dict[str, int | None]
    written: dict[str, int] = field(default_factory=dict)

    def metadata(self) -> dict[str, str]:
        return {
            "burstlake.run": f"{self.name}:{self.id}",
            "burstlake.inputs": json.dumps(self.inputs, sort_keys=True),
        }


_PINS: ContextVar[dict[tuple[Path, str], int | None] | None] = ContextVar(
    "burstlake_pins", default=None
)
_RUN: ContextVar[Run | None] = ContextVar("burstlake_run", default=None)


def latest_version(lake: str | os.PathLike | None, table: str) -> int | None:
    """The newest committed version of a table (None if it was never written)."""
    log_dir = table_dir(lake, table) / "_delta_log"
    if not log_dir.is_dir():
        return None
    versions = [int(p.stem) for p in log_dir.glob("*.json") if p.stem.isdigit()]
    return max(versions) if versions else None


def _published(root: Path) -> dict[str, int]:
    """Table -> version of the last complete run of every multi-table job (``_runs/*.json``)."""
    out: dict[str, int] = {}
    folder = root / RUNS
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        with contextlib.suppress(OSError, ValueError):
            out.update(json.loads(path.read_text())["tables"])
    return out


def read_version(lake: str | os.PathLike | None, table: str) -> int | None:
    """The version of ``table`` a reader sees now (see :func:`read_versions`)."""
    return read_versions(lake, [table])[table]


def read_versions(
    lake: str | os.PathLike | None, tables: Iterable[str] | None = None
) -> dict[str, int | None]:
    """The versions a reader sees now: one consistent state of the lake.

    A version pinned by :func:`snapshot` wins; else a table a multi-table run writes is read at
    the last published run's version; else at the newest version that holds no commit of a
    landing still in progress (or killed and not reconciled yet), cut consistently across
    tables (see :func:`_consistent_cut`).
    """
    root = lake_path(lake)
    names = list(tables) if tables is not None else sorted(REGISTRY)
    pins = _PINS.get() or {}
    published = _published(root)
    cut = _consistent_cut(root)
    out: dict[str, int | None] = {}
    for name in names:
        if (root, name) in pins:
            out[name] = pins[(root, name)]
            continue
        latest = cut[name] if name in cut else latest_version(root, name)
        version = published.get(name)
        out[name] = (
            version if version is not None and latest is not None and version <= latest else latest
        )
    return out


# --- landings in progress: intent records and the consistent cut --------------------------------

TXN = "_txn"


@contextlib.contextmanager
def landing(lake: str | os.PathLike | None, source_id: str, record: dict) -> Iterator[Path]:
    """Mark a multi-table landing (one ingested file) in progress while its commits run.

    Readers do not see any of its commits until the block ends without error; a landing that
    fails or is killed stays marked (its intent folder under ``_txn``) until ``reconcile`` in
    the ingest finishes or undoes it.
    """
    root = lake_path(lake)
    path = root / TXN / f"{source_id}-{uuid.uuid4().hex[:8]}"
    try:
        with _locked(root, "snapshot"):
            owned = _Owned(path)
            info = {**record, "source_id": source_id, "started": time.time()}
            (owned.path / "intent.json").write_text(json.dumps(info))
    except OSError as err:  # nothing committed yet: no intent left behind either
        shutil.rmtree(path, ignore_errors=True)
        raise (_lake_error(err, root) or err) from err
    try:
        yield owned.path
    except BaseException:
        owned.release()
        raise
    owned.remove()


def intents(lake: str | os.PathLike | None = None, abandoned: bool = False) -> list[dict]:
    """Landings in progress (or, with ``abandoned``, only those whose process died)."""
    folder = lake_path(lake) / TXN
    found = []
    for path in sorted(folder.iterdir()) if folder.is_dir() else []:
        record = path / "intent.json"
        with contextlib.suppress(OSError, ValueError):
            if abandoned and not _abandoned(path):
                continue
            found.append({**json.loads(record.read_text()), "path": str(path)})
    return found


def _commit_sources(root: Path, table: str, since: float) -> list[tuple[int, str | None]]:
    """(version, source_id) of the table's commits made at or after ``since`` (epoch s)."""
    latest = latest_version(root, table)
    out = []
    version = latest if latest is not None else -1
    while version >= 0:
        path = root / table / "_delta_log" / f"{version:020d}.json"
        info: dict = {}
        with contextlib.suppress(OSError, ValueError):
            for line in path.read_text().splitlines():
                if '"commitInfo"' in line:
                    info = json.loads(line)["commitInfo"]
                    break
        if info.get("timestamp", 0) < since * 1000:
            break
        out.append((version, info.get("burstlake.source_id") or info.get("burstlake.deleted")))
        version -= 1
    return out


def _consistent_cut(root: Path) -> dict[str, int | None]:
    """Per table, the newest version without a commit of an unfinished landing.

    Cutting one table before a landing's commit can exclude a finished landing's commit there;
    that landing is then excluded everywhere, until nothing changes, so every landing is
    either wholly visible or not at all. Empty when no landing is in progress.
    """
    folder = root / TXN
    if not folder.is_dir() or not any(folder.iterdir()):
        return {}
    with _locked(root, "snapshot"):
        pending = intents(root)
        if not pending:
            return {}
        since = min(r["started"] for r in pending) - 5
        commits = {t: _commit_sources(root, t, since) for t in REGISTRY}
        latest = {t: latest_version(root, t) for t in REGISTRY}
    excluded = {r["source_id"] for r in pending}
    while True:
        cut = {}
        for name, entries in commits.items():
            hidden = [v for v, sid in entries if sid in excluded]
            cut[name] = min(hidden) - 1 if hidden else latest[name]
        more = {
            sid
            for name, entries in commits.items()
            for v, sid in entries
            if sid is not None and v > (cut[name] if cut[name] is not None else -1)
        } - excluded
        if not more:
            return {n: (v if v is None or v >= 0 else None) for n, v in cut.items()}
        excluded |= more


@contextlib.contextmanager
def snapshot(
    lake: str | os.PathLike | None, tables: Iterable[str]
) -> Iterator[dict[str, int | None]]:
    """Pin one version of each of ``tables``: every read inside the block sees exactly it."""
    root = lake_path(lake)
    versions = read_versions(root, tables)
    token = _PINS.set({**(_PINS.get() or {}), **{(root, t): v for t, v in versions.items()}})
    try:
        yield versions
    finally:
        _PINS.reset(token)


@contextlib.contextmanager
def run(
    lake: str | os.PathLike | None, name: str, inputs: Iterable[str], publish: bool = False
) -> Iterator[Run]:
    """A job run: reads a :func:`snapshot` of ``inputs``; every commit inside is stamped with
    the run id and the input versions (Delta commit metadata). With ``publish``, the tables the
    run wrote become visible to readers together, when the block ends without error; a run
    killed part-way leaves readers on the previous run's tables.
    """
    root = lake_path(lake)
    with snapshot(root, inputs) as versions:
        current = Run(name, root, uuid.uuid4().hex[:12], versions)
        token = _RUN.set(current)
        try:
            yield current
        finally:
            _RUN.reset(token)
    if publish:
        _publish(root, name, current)


def _publish(root: Path, name: str, current: Run) -> None:
    folder = root / RUNS
    folder.mkdir(parents=True, exist_ok=True)
    record = {"run": current.id, "inputs": current.inputs, "tables": current.written}
    scratch = folder / f".{name}-{os.getpid()}.tmp"
    scratch.write_text(json.dumps(record, indent=1, sort_keys=True))
    os.replace(scratch, folder / f"{name}.json")


def published_run(lake: str | os.PathLike | None, name: str) -> dict | None:
    """The record of the last complete ``name`` run (run id, input and table versions)."""
    path = lake_path(lake) / RUNS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def commit_metadata(lake: str | os.PathLike | None, table: str, version: int) -> dict:
    """The commit info of one version of a table (operation, run id, input versions)."""
    entry = table_dir(lake, table) / "_delta_log" / f"{version:020d}.json"
    for line in entry.read_text().splitlines():
        action = json.loads(line)
        if "commitInfo" in action:
            return action["commitInfo"]
    return {}


# --- reading ----------------------------------------------------------------------------------


def _open(lake: str | os.PathLike | None, table: str, version: int | None) -> DeltaTable | None:
    path = table_dir(lake, table)
    if version is None:
        return DeltaTable(path) if is_delta(path) else None
    return DeltaTable(path, version=version)


def table_layout(
    lake: str | os.PathLike | None, table: str, version: int | None = None
) -> tuple[list[Path], set[str]]:
    """A table's read version in one look at its log: its Parquet files (sorted; none if never
    written) and the columns it stores. A lake written by an older burstlake lacks the
    contract's newer (nullable) columns; every reader gives them as nulls."""
    dt = _open(lake, table, version if version is not None else read_version(lake, table))
    if dt is None:
        return [], set()
    files = sorted(Path(uri.removeprefix("file://")) for uri in dt.file_uris())
    return files, {field.name for field in dt.schema().fields}


def table_files(
    lake: str | os.PathLike | None, table: str, version: int | None = None
) -> list[Path]:
    """The Parquet files of a table's read version, sorted (empty if never written)."""
    return table_layout(lake, table, version)[0]


def dataset(lake: str | os.PathLike | None, table: str) -> ds.Dataset:
    """A pyarrow Dataset over a table's read version with the spec's schema."""
    table_spec = spec(table)
    files = [str(p) for p in table_files(lake, table)]
    if not files:
        return ds.dataset(pa.Table.from_pylist([], schema=table_spec.schema))
    return ds.dataset(files, schema=table_spec.schema, format="parquet")


def read_table(
    lake: str | os.PathLike | None,
    table: str,
    columns: list[str] | None = None,
    filter: pc.Expression | None = None,
) -> pa.Table:
    """Read a table (or some columns, filtered) into memory with its contract schema."""
    return dataset(lake, table).to_table(columns=columns, filter=filter)


CLUSTER_TABLES = ("topology", "node_io", "jobs", "job_nodes")  # which machines a lake holds


@dataclass(frozen=True)
class Cluster:
    """One machine of a lake (docs/design.md, "Several machines in one lake"): the rows whose
    ``cluster`` is ``name``, and with ``unnamed`` also the rows that name none (a lake with one
    named machine: a Zabbix export or topology ingested without ``--cluster`` belongs to it).
    ``name`` None: the rows naming none, of a lake without (or with several) named machines.
    What the metrics, the replay and the report read, one machine at a time."""

    lake: Path
    name: str | None
    unnamed: bool = False

    @property
    def label(self) -> str:
        return self.name or "(unnamed)"

    def sql(self) -> str:
        """This machine's rows as an SQL condition (DuckDB and Spark SQL alike)."""
        if self.name is None:
            return "cluster IS NULL"
        mine = f"cluster = {_quote(self.name)}"
        return f"({mine} OR cluster IS NULL)" if self.unnamed else mine

    def only(self, condition: pc.Expression | None = None) -> pc.Expression:
        """``condition`` and this machine's rows (a pyarrow filter; the rule of :meth:`sql`)."""
        column = pc.field("cluster")
        if self.name is None:
            mine = column.is_null()
        else:
            mine = column == self.name
            if self.unnamed:
                mine |= column.is_null()
        return mine if condition is None else mine & condition

    def read(
        self, table: str, columns: list[str] | None = None, filter: pc.Expression | None = None
    ) -> pa.Table:
        """:func:`read_table` of this machine's rows."""
        return read_table(self.lake, table, columns, self.only(filter))


def clusters(lake: str | os.PathLike | None) -> list[Cluster]:
    """The machines a lake holds, from the ``cluster`` of :data:`CLUSTER_TABLES`: one per
    name (sorted); rows naming none belong to the only named machine, or form the unnamed
    machine (last) when there are none or several."""
    found: set[str | None] = set()
    for table in CLUSTER_TABLES:
        for batch in dataset(lake, table).to_batches(columns=["cluster"]):
            found.update(pc.unique(batch.column(0)).to_pylist())
    root = lake_path(lake)
    named = sorted(name for name in found if name is not None)
    if None in found and len(named) == 1:
        return [Cluster(root, named[0], unnamed=True)]
    return [Cluster(root, name) for name in named] + (
        [Cluster(root, None)] if None in found else []
    )


def cluster_of(lake: str | os.PathLike | Cluster | None, name: str | None = None) -> Cluster:
    """The machine of ``lake`` named ``name``, or without a name the lake's only machine; a
    one-line error lists the machines when the name is unknown or the lake holds several."""
    if isinstance(lake, Cluster):
        return lake
    held = clusters(lake)
    names = ", ".join(each.label for each in held)
    if name is not None:
        for each in held:
            if each.name == name:
                return each
        raise ValueError(f"no cluster {name!r} in lake {lake_path(lake)} (it holds: {names})")
    if len(held) > 1:
        raise ValueError(f"lake {lake_path(lake)} holds several clusters ({names}): name one")
    return held[0] if held else Cluster(lake_path(lake), None)


def contribution_keys(
    lake: str | os.PathLike | None, table: str, columns: Iterable[str] = ()
) -> set[tuple]:
    """The distinct (source_id, *columns) of a table's rows: which contribution holds what."""
    names = [SOURCE, *columns]
    files = [str(p) for p in table_files(lake, table)]
    if not files:
        return set()
    rows = ds.dataset(files, format="parquet").to_table(columns=names)
    rows = rows.group_by(names).aggregate([])
    return set(zip(*(rows.column(n).to_pylist() for n in names), strict=True))


def contribution_ids(lake: str | os.PathLike | None, table: str) -> set[str]:
    """The source_ids that have rows in a table."""
    return {key[0] for key in contribution_keys(lake, table)}


def spark_frame(spark, lake: str | os.PathLike | None, table: str):
    """A lake table as a Spark DataFrame through delta-spark, at its read version."""
    from pyspark.sql.pandas.types import from_arrow_schema

    table_spec = spec(table)
    version = read_version(lake, table)
    if version is None:
        return spark.createDataFrame([], from_arrow_schema(table_spec.schema))
    frame = (
        spark.read.format("delta").option("versionAsOf", version).load(str(table_dir(lake, table)))
    )
    from pyspark.sql import functions as F

    stored, types = set(frame.columns), from_arrow_schema(table_spec.schema)
    return frame.select(
        *[
            F.col(name) if name in stored else F.lit(None).cast(types[name].dataType).alias(name)
            for name in table_spec.schema.names
        ]
    )


# --- writing ----------------------------------------------------------------------------------


def _day_keys(table: pa.Table, column: str) -> pa.Array:
    return pc.cast(table.column(column), pa.date32()).combine_chunks()


def _stored(rows: pa.Table, table_spec: TableSpec, source_id: str) -> pa.Table:
    """Contract rows plus the hidden columns, in the stored schema."""
    out = rows.append_column(SOURCE, pa.array([source_id] * rows.num_rows, pa.string()))
    if table_spec.partition_by:
        days = _day_keys(rows, table_spec.partition_by)
        if days.null_count:
            raise ValueError(
                f"{table_spec.name}: null {table_spec.partition_by} in a partitioned table"
            )
        out = out.append_column(DAY, days)
    return out.cast(delta_schema(table_spec))


def _lake_error(err: BaseException, lake: Path) -> LakeError | None:
    """A one-line LakeError for a full disk or a read-only lake, else None. It says what went
    wrong, not what was committed: the command that knows (ingest) says that."""
    if isinstance(err, LakeError):
        return err
    text = str(err)
    codes = {errno.ENOSPC: "no space left on device", errno.EROFS: "read-only file system"}
    code = getattr(err, "errno", None)
    for number, words in codes.items():
        if code == number or words in text.lower():
            return LakeError(number, f"lake {lake}: {words}")
    if code in (errno.EACCES, errno.EPERM) or "permission denied" in text.lower():
        return LakeError(errno.EACCES, f"lake {lake}: permission denied")
    return None


class ContributionWriter:
    """Streams the rows of one contribution into one table; ``commit()`` swaps them in.

    Rows are staged as Parquet under ``<lake>/_staging`` (memory stays bounded by one batch);
    ``commit()`` lands them in one Delta commit that also removes what the same ``source_id``
    (and the ids in ``replaces``) wrote before, and the rows of other contributions whose
    ``replace_key`` reappears (``superseded``).

    One writer may also write rows into other contributions of the table
    (``write(rows, contribution=...)``, or :meth:`claim` for one that ends up empty): rows
    computed from several inputs, such as the Zabbix stream's day x node-bucket parts of
    ``node_io``. Each such contribution is replaced whole by the same commit.
    """

    def __init__(
        self,
        lake: str | os.PathLike | None,
        table: str,
        source_id: str,
        replaces: Iterable[str] = (),
    ) -> None:
        self.spec = spec(table)
        self.lake = lake_path(lake)
        self.source_id = source_id
        self.replaces = sorted(set(replaces) - {source_id})
        self.contributions: set[str] = set()  # other contributions written (replaced whole)
        self.rows = 0
        self.superseded = 0  # rows of older contributions replaced on commit
        self.stale = 0  # staged rows kept out on commit: the lake holds newer ones
        self.version: int | None = None  # the committed version
        name = f"{self.spec.name}-{uuid.uuid4().hex[:12]}"
        try:
            self._scratch = _Owned(self.lake / STAGING / name)
        except OSError as err:
            raise (_lake_error(err, self.lake) or err) from err
        self._writer: pq.ParquetWriter | None = None
        self._sink: pa.NativeFile | None = None
        self._files: list[Path] = []
        self._file_rows = 0

    @property
    def staging(self) -> Path:
        return self._scratch.path

    def claim(self, contributions: Iterable[str]) -> None:
        """Replace these contributions in the commit, whether or not rows are written to them."""
        self.contributions.update(contributions)

    def write(self, rows: pa.Table | pa.RecordBatch, contribution: str | None = None) -> None:
        """Stage rows of this writer's contribution, or of ``contribution`` (see class doc)."""
        if contribution is not None and contribution != self.source_id:
            self.contributions.add(contribution)
        table = conform(rows, self.spec)
        if table.num_rows == 0:
            return
        stored = _stored(table, self.spec, contribution or self.source_id)
        self.rows += table.num_rows
        try:
            if self._writer is not None and self._file_rows >= ROWS_PER_FILE:
                self._close()
            if self._writer is None:
                path = self.staging / f"part-{len(self._files):04d}.parquet"
                self._files.append(path)
                self._sink = pa.OSFile(str(path), "wb")  # closed by _close whatever happens
                self._writer = pq.ParquetWriter(self._sink, stored.schema, compression="zstd")
                self._file_rows = 0
            self._writer.write_table(stored)
        except OSError as err:
            raise (_lake_error(err, self.lake) or err) from err
        self._file_rows += stored.num_rows

    def commit(self) -> int:
        """Commit the staged rows as one Delta version; returns rows written."""
        try:
            self._close()
            with _locked(self.lake, self.spec.name):
                for attempt in range(COMMIT_RETRIES):
                    try:
                        self.version = _commit(self)
                        self.rows -= self.stale
                        break
                    except CommitFailedError:
                        if attempt == COMMIT_RETRIES - 1:
                            raise
                        time.sleep(0.05 * (attempt + 1))
                current = _RUN.get()
                if current is not None and current.lake == self.lake:
                    current.written[self.spec.name] = self.version
                else:
                    _republish(self.lake, self.spec.name, self.version)
        except (OSError, DeltaError) as err:
            raise (_lake_error(err, self.lake) or err) from err
        finally:
            self.abort()
        return self.rows

    def owned(self) -> list[str]:
        """Every contribution the commit replaces: its own, ``replaces`` and those written."""
        return [self.source_id, *self.replaces, *sorted(self.contributions - {self.source_id})]

    def _close(self) -> None:
        """Finish the staged file being written; its file handle is closed even on error (a
        full disk), so no deleted file stays open."""
        writer, sink, self._writer, self._sink = self._writer, self._sink, None, None
        try:
            if writer is not None:
                writer.close()
        finally:
            if sink is not None and not sink.closed:
                sink.close()

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._close()
        self._scratch.remove()
        with contextlib.suppress(OSError):
            (self.lake / STAGING).rmdir()  # only when no other write is staged

    def __enter__(self) -> ContributionWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def _republish(root: Path, table: str, version: int) -> None:
    """A write outside a run into a table a run publishes is visible at once."""
    folder = root / RUNS
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        record = json.loads(path.read_text())
        if table in record.get("tables", {}):
            record["tables"][table] = version
            scratch = path.with_suffix(f".{os.getpid()}.tmp")
            scratch.write_text(json.dumps(record, indent=1, sort_keys=True))
            os.replace(scratch, path)


def _commit(writer: ContributionWriter) -> int:
    """One Delta commit of a staged contribution; sets the writer's ``superseded`` and
    ``stale`` counts and returns the new version."""
    table_spec, path = writer.spec, writer.lake / writer.spec.name
    schema = delta_schema(table_spec)
    ids = writer.owned()
    predicate = f"{SOURCE} IN ({', '.join(map(_quote, ids))})"
    new = ds.dataset([str(f) for f in writer._files], schema=schema, format="parquet")
    current = _RUN.get()
    metadata = current.metadata() if current is not None and current.lake == writer.lake else {}
    metadata["burstlake.source_id"] = writer.source_id
    partition_by = [DAY] if table_spec.partition_by else None
    if not is_delta(path):  # created empty first, so the rows below stream in
        write_deltalake(
            path, schema.empty_table(), mode="append", partition_by=partition_by, name=path.name
        )
    dt = DeltaTable(path)
    outcome = _resolve(dt, table_spec, writer)
    writer.superseded, writer.stale = outcome.superseded, outcome.stale
    data: pa.Table | pa.RecordBatchReader = new.scanner().to_reader()
    if outcome.landing is not None:
        data = outcome.landing.cast(schema)
    if outcome.superseded:
        if table_spec.partition_by:
            predicate += f" OR {DAY} IN ({', '.join(_quote(str(d)) for d in outcome.days)})"
        else:
            predicate = None  # the whole table is rewritten
        landing = outcome.landing if outcome.landing is not None else new.to_table()
        data = pa.concat_tables([landing.cast(schema), outcome.kept.cast(schema)])
    metadata[PREDICATE] = predicate or ""  # what the commit replaced (see undo_landing)
    properties = CommitProperties(custom_metadata=metadata)
    write_deltalake(
        dt,
        data,
        mode="overwrite",
        predicate=predicate,
        schema_mode="merge",
        commit_properties=properties,
    )
    dt.update_incremental()
    return dt.version()


@dataclass
class _Outcome:
    """What a commit does besides replacing its own contributions (see :func:`_resolve`)."""

    superseded: int = 0  # rows of other contributions replaced by staged rows
    kept: pa.Table | None = None  # the other rows of the days (or the table) rewritten
    days: list = field(default_factory=list)  # the days rewritten
    stale: int = 0  # staged rows kept out: the lake holds newer content for their key
    landing: pa.Table | None = None  # the staged rows that land, when some are kept out


def _files_sql(paths: Iterable[str]) -> str:
    return "[" + ", ".join(_quote(p) for p in paths) + "]"


def _resolve(dt: DeltaTable, table_spec: TableSpec, writer: ContributionWriter) -> _Outcome:
    """Which staged rows land and which rows of other contributions they replace.

    Rows meet by ``replace_key`` (NULL matches NULL); only the days the staged rows touch are
    compared (the whole table when it is not partitioned). A staged row lands unless the lake
    holds a newer row of its key (``precedence``), or, for a table that ``follows`` another,
    unless another contribution holds that table's row of its key; the rows it meets are
    replaced. Records win by their content, so every order of landing ends the same.
    """
    if not table_spec.replace_key or not writer._files:
        return _Outcome()
    own = set(writer.owned())
    mine = ", ".join(map(_quote, own))
    key = table_spec.replace_key
    match = " AND ".join(f'o."{k}" IS NOT DISTINCT FROM n."{k}"' for k in key)
    with duckdb.connect() as con:
        staged = _files_sql(str(f) for f in writer._files)
        con.execute(f"CREATE TEMP VIEW s AS SELECT * FROM read_parquet({staged})")
        uris = [u.removeprefix("file://") for u in dt.file_uris()]
        if table_spec.partition_by:
            days = {r[0] for r in con.execute(f"SELECT DISTINCT {DAY} FROM s").fetchall()}
            uris = [u for u in uris if Path(u).parent.name in {f"{DAY}={d}" for d in days}]
        _older_view(con, table_spec, uris, mine)
        land = _landing_sql(con, table_spec, writer.lake, mine)
        columns = ", ".join(f'"{k}"' for k in key)
        con.execute(f"CREATE TEMP TABLE n AS SELECT DISTINCT {columns} FROM s WHERE {land}")
        outcome = _Outcome(
            stale=con.execute(f"SELECT count(*) FROM s WHERE NOT ({land})").fetchone()[0]
        )
        if outcome.stale:
            outcome.landing = con.execute(f"SELECT * FROM s WHERE {land}").fetch_arrow_table()
        hit = f"EXISTS (SELECT 1 FROM n WHERE {match})"
        outcome.superseded = con.execute(f"SELECT count(*) FROM o WHERE {hit}").fetchone()[0]
        if not outcome.superseded:
            return outcome
        scope = ""
        if table_spec.partition_by:
            query = f"SELECT DISTINCT CAST({DAY} AS DATE) FROM o WHERE {hit}"
            outcome.days = [r[0] for r in con.execute(query).fetchall()]
            scope = (
                f"CAST(o.{DAY} AS DATE) IN ({', '.join(_quote(str(d)) for d in outcome.days)}) AND "
            )
        names = ", ".join(f'o."{c}"' for c in table_spec.schema.names)
        kept = con.execute(
            f"SELECT {names}, o.{SOURCE} FROM o WHERE {scope}NOT ({hit})"
        ).fetch_arrow_table()
    outcome.kept = conform(kept, table_spec).append_column(SOURCE, kept.column(SOURCE))
    if table_spec.partition_by:
        outcome.kept = outcome.kept.append_column(
            DAY, _day_keys(outcome.kept, table_spec.partition_by)
        )
    return outcome


def _older_view(
    con: duckdb.DuckDBPyConnection, table_spec: TableSpec, uris: list[str], mine: str
) -> None:
    """View ``o``: the rows of other contributions in ``uris`` (files of an older layout lack
    the contract's newer columns: they read as nulls)."""
    if not uris:
        con.execute(f"CREATE TEMP VIEW o AS SELECT * FROM s WHERE {SOURCE} IS NULL")
        return
    hive = "true" if table_spec.partition_by else "false"
    con.execute(
        f"CREATE TEMP VIEW f AS SELECT * FROM read_parquet({_files_sql(uris)}, "
        f"hive_partitioning={hive}, hive_types_autocast=false, union_by_name=true)"
    )
    stored = {row[0] for row in con.execute("DESCRIBE f").fetchall()}
    newer = "".join(f', NULL AS "{c}"' for c in table_spec.schema.names if c not in stored)
    con.execute(f"CREATE TEMP VIEW o AS SELECT *{newer} FROM f WHERE {SOURCE} NOT IN ({mine})")


def _landing_sql(
    con: duckdb.DuckDBPyConnection, table_spec: TableSpec, lake: Path, mine: str
) -> str:
    """SQL condition on a staged row ``s``: whether it lands (see :func:`_resolve`)."""
    key = table_spec.replace_key
    if table_spec.follows:
        parent = spec(table_spec.follows)
        uris = (
            [u.removeprefix("file://") for u in _open(lake, parent.name, None).file_uris()]
            if is_delta(lake / parent.name)
            else []
        )
        if not uris:
            return "true"
        pkey = ", ".join(f'"{k}"' for k in parent.replace_key)
        con.execute(
            f"CREATE TEMP TABLE x AS SELECT DISTINCT {pkey} FROM read_parquet({_files_sql(uris)}, "
            f"hive_partitioning=false, union_by_name=true) WHERE {SOURCE} NOT IN ({mine})"
        )
        same = " AND ".join(f'x."{k}" IS NOT DISTINCT FROM s."{k}"' for k in parent.replace_key)
        return f"NOT EXISTS (SELECT 1 FROM x WHERE {same})"
    if not table_spec.precedence:
        return "true"
    ranks = ", ".join(f"{expr} AS r{i}" for i, expr in enumerate(table_spec.precedence))
    as_of = f"max({table_spec.as_of or 'NULL'}) OVER (PARTITION BY {SOURCE}) AS ra"
    columns = ", ".join(f'"{k}"' for k in key)
    names = table_spec.schema.names
    content = "hash(" + ", ".join(f'"{c}"' for c in names) + ")"
    con.execute(
        f"CREATE TEMP TABLE x AS SELECT {columns}, {SOURCE}, mine, {ranks}, {as_of}, "
        f"{content} AS h FROM (SELECT *, true AS mine FROM s "
        "UNION ALL BY NAME SELECT *, false AS mine FROM o)"
    )
    order = ", ".join(f"r{i} DESC NULLS LAST" for i in range(len(table_spec.precedence)))
    con.execute(
        f"CREATE TEMP TABLE w AS SELECT {columns}, mine, h FROM x QUALIFY row_number() OVER "
        f"(PARTITION BY {columns} ORDER BY {order}, ra DESC NULLS LAST, {SOURCE} DESC) = 1"
    )
    same = " AND ".join(f'w."{k}" IS NOT DISTINCT FROM s."{k}"' for k in key)
    # a staged row the same as the newest lands too (it changes nothing): not older
    staged = "hash(" + ", ".join(f's."{c}"' for c in names) + ")"
    return f"EXISTS (SELECT 1 FROM w WHERE {same} AND (w.mine OR w.h = {staged}))"


def write_table(
    lake: str | os.PathLike | None,
    table: str,
    rows: pa.Table | Iterable[pa.Table | pa.RecordBatch],
    source_id: str,
    replaces: Iterable[str] = (),
) -> int:
    """Write a whole contribution (one table, or an iterable of batches) as one commit.

    ``replaces`` names other source_ids whose rows the same commit removes (a file re-ingested
    with new content replaces what its earlier content wrote).
    """
    with ContributionWriter(lake, table, source_id, replaces) as writer:
        for batch in [rows] if isinstance(rows, pa.Table) else rows:
            writer.write(batch)
    return writer.rows


def delete_contribution(
    lake: str | os.PathLike | None, source_id: str, tables: Iterable[str] | None = None
) -> int:
    """Delete what ``source_id`` contributed to ``tables`` (default: every table), one commit
    per table that has its rows. Returns rows deleted."""
    root = lake_path(lake)
    names = list(tables) if tables is not None else sorted(REGISTRY)
    removed = 0
    for name in names:
        path = root / name
        if not is_delta(path):
            continue
        try:
            with _locked(root, name):
                dt = DeltaTable(path)
                metrics = dt.delete(
                    f"{SOURCE} = {_quote(source_id)}",
                    commit_properties=CommitProperties(
                        custom_metadata={"burstlake.deleted": source_id}
                    ),
                )
                removed += int(metrics.get("num_deleted_rows") or 0)
                dt.update_incremental()
                _republish(root, name, dt.version())
        except (OSError, DeltaError) as err:
            raise (_lake_error(err, root) or err) from err
    return removed


def undo_landing(
    lake: str | os.PathLike | None, source_id: str, tables: Iterable[str], since: float
) -> int:
    """Undo the commits a killed landing of ``source_id`` made since ``since`` (epoch s).

    Each commit is undone by one new commit that puts back what it replaced (the rows its
    predicate covered, as of the version before it), newest first, so every table is as it
    was before the landing: earlier contents of the same path come back with their
    ``ingest_log`` row. Sound because a landing's contributions are written by no one else
    until it is reconciled (writers of a shared contribution hold their source's lock, see
    ``Source.serial``). Returns the number of commits undone.
    """
    root = lake_path(lake)
    undone = 0
    for name in tables:
        path = root / name
        if not is_delta(path):
            continue
        try:
            with _locked(root, name):
                for version, sid in _commit_sources(root, name, since - 5):
                    if sid != source_id:
                        continue
                    info = commit_metadata(root, name, version)
                    if PREDICATE not in info or "burstlake.deleted" in info:
                        continue
                    _put_back(root, name, version, info[PREDICATE] or None, source_id)
                    undone += 1
        except (OSError, DeltaError) as err:
            raise (_lake_error(err, root) or err) from err
    return undone


def _put_back(root: Path, name: str, version: int, predicate: str | None, source_id: str) -> None:
    """One commit restoring the rows ``predicate`` covered before ``version`` (all if None)."""
    table_spec, path = spec(name), root / name
    schema = delta_schema(table_spec)
    before = DeltaTable(path, version=version - 1)
    uris = [u.removeprefix("file://") for u in before.file_uris()]
    if uris:
        listed = "[" + ", ".join(_quote(u) for u in uris) + "]"
        hive = "true" if table_spec.partition_by else "false"
        where = f" WHERE {predicate}" if predicate else ""
        with duckdb.connect() as con:
            rows = con.execute(
                f"SELECT * FROM read_parquet({listed}, hive_partitioning={hive}, "
                f"union_by_name=true){where}"
            ).fetch_arrow_table()
        rows = rows.select(schema.names).cast(schema)
    else:
        rows = schema.empty_table()
    dt = DeltaTable(path)
    write_deltalake(
        dt,
        rows,
        mode="overwrite",
        predicate=predicate,
        schema_mode="merge",
        commit_properties=CommitProperties(custom_metadata={"burstlake.deleted": source_id}),
    )
    dt.update_incremental()
    _republish(root, name, dt.version())


# --- housekeeping -----------------------------------------------------------------------------


def vacuum(lake: str | os.PathLike | None, retention_hours: int) -> dict[str, int]:
    """Delete files no version newer than ``retention_hours`` needs, table by table.

    The versions readers are pinned to (published runs, unfinished landings) are kept whatever
    their age. Returns the number of files removed per table; staging leftovers go too.
    """
    root = lake_path(lake)
    clean_leftovers(root)
    published = _published(root)
    cut = _consistent_cut(root)  # versions readers see while a landing is unfinished
    removed: dict[str, int] = {}
    for name in sorted(REGISTRY):
        path = root / name
        if not is_delta(path):
            continue
        with _locked(root, name):
            dt = DeltaTable(path)
            keep = [v for v in (published.get(name), cut.get(name)) if v is not None] or None
            files = dt.vacuum(
                retention_hours=retention_hours,
                dry_run=False,
                enforce_retention_duration=False,
                keep_versions=keep,
            )
        removed[name] = len(files)
    return removed


# --- migration from the staged-Parquet layout -------------------------------------------------

MIGRATE = "_migrate"


def legacy_tables(lake: str | os.PathLike | None = None) -> list[str]:
    """Tables still in the pre-Delta layout (``<table>/[day=…/]src-<id>-<n>.parquet``)."""
    root = lake_path(lake)
    return [
        name
        for name in sorted(REGISTRY)
        if (root / name).is_dir()
        and not is_delta(root / name)
        and any((root / name).rglob("src-*.parquet"))
    ]


def migrate(lake: str | os.PathLike | None = None) -> dict[str, int]:
    """Convert every table still in the pre-Delta layout to a Delta table, every row kept.

    Each table is written whole to ``_migrate/<table>`` as one commit (each old file's
    ``source_id`` kept as its contribution), its row count checked against the old files, then
    swapped in; the old files are removed last. Re-running after a kill finishes the job.
    Returns rows per converted table.
    """
    root = lake_path(lake)
    scratch = root / MIGRATE
    for done in sorted(scratch.glob("*")) if scratch.is_dir() else []:
        if done.name in REGISTRY and is_delta(done) and not (root / done.name).exists():
            os.replace(done, root / done.name)  # killed between the two renames
    converted: dict[str, int] = {}
    for name in legacy_tables(root):
        table_spec = spec(name)
        old = sorted((root / name).rglob("src-*.parquet"))
        expected = sum(pq.ParquetFile(f).metadata.num_rows for f in old)
        target = scratch / name
        shutil.rmtree(target, ignore_errors=True)
        schema = delta_schema(table_spec)

        def batches(
            files: list[Path] = old, ts: TableSpec = table_spec
        ) -> Iterator[pa.RecordBatch]:
            for path in files:
                source_id = path.name[4:].rsplit("-", 1)[0]
                yield from _stored(conform(pq.read_table(path), ts), ts, source_id).to_batches()

        write_deltalake(
            target,
            pa.RecordBatchReader.from_batches(schema, batches()),
            mode="append",
            partition_by=[DAY] if table_spec.partition_by else None,
            commit_properties=CommitProperties(custom_metadata={"burstlake.migrated": name}),
        )
        got = DeltaTable(target).count()
        if got != expected:
            raise LakeError(f"{name}: migration wrote {got} rows, the old files hold {expected}")
        with _locked(root, name):
            legacy = scratch / f"legacy-{name}"
            shutil.rmtree(legacy, ignore_errors=True)
            os.replace(root / name, legacy)
            os.replace(target, root / name)
            shutil.rmtree(legacy, ignore_errors=True)
        converted[name] = got
    shutil.rmtree(root / STAGING, ignore_errors=True)
    with contextlib.suppress(OSError):
        scratch.rmdir()
    return converted
