"""The lake's folder and its files: paths, the hidden columns, locks, scratch folders and their
cleanup, the test hook that pauses a process, and the one-line error of a full or read-only lake.

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from burstlake.schemas import REGISTRY, TableSpec, spec

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


class OwnedFolder:
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


TXN = "_txn"  # intent records of landings in progress (see snapshot.landing)
MIGRATE = "_migrate"  # scratch folder of a migration (see maintenance.migrate)


def check_writable(lake: str | os.PathLike | None, what: str) -> None:
    """Raise a one-line LakeError now, before ``what`` runs, when the lake (or, for a new lake,
    the folder it would be made in) cannot be written."""
    root = lake_path(lake)
    folder = next((p for p in (root, *root.parents) if p.exists()), root)
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".burstlake-writable-"):
            pass
    except OSError as err:
        found = _lake_error(err, root) or LakeError(errno.EACCES, f"lake {root}: {err.strerror}")
        raise LakeError(found.errno, f"{found}: {what} would have nowhere to land") from None


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
