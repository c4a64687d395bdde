"""Locks on the lake and the scratch folders held through them, and the cleanup of those a
killed process left (all ``fcntl`` locks: released when the process dies).

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

from burstlake.lake.layout import LOCKS, STAGING, lake_path

log = logging.getLogger(__name__)


READERS = "readers"  # the lock queries on the lake hold shared and vacuum holds exclusive


@contextlib.contextmanager
def exclusive(
    lake: str | os.PathLike | None, name: str, on_wait: Callable[[], None] | None = None
) -> Iterator[None]:
    """An exclusive lock ``name`` on the lake, held for the block (a table's commits, one
    source's landings, the catalog's rebuild, a vacuum against the readers); ``on_wait`` is
    called once if another process holds it, before waiting for it."""
    folder = lake_path(lake) / LOCKS
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{name}.lock").open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def shared(lake: str | os.PathLike | None, name: str) -> Iterator[None]:
    """A shared lock ``name`` on the lake, held for the block: any number of holders at once,
    none while a process holds it exclusive (a query reading files against a vacuum deleting
    them). On a lake this user cannot write, whose lock file cannot be made, nothing is held:
    no vacuum of this user's runs there either."""
    path = lake_path(lake) / LOCKS / f"{name}.lock"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = path.open("a")
    except OSError:
        try:
            handle = path.open("r")
        except OSError:
            log.debug("no %s lock on %s: it cannot be made here", name, path)
            yield
            return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    reader sees them; :func:`burstlake.lake.vacuum` deletes them.
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
