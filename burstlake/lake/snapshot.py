"""Versions: what a reader sees (a :class:`Snapshot` it is given, else the consistent cut around
landings in progress) and multi-table runs published whole.

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from burstlake.lake.errors import as_lake_error
from burstlake.lake.layout import RUNS, TXN, lake_path, table_dir
from burstlake.lake.locks import OwnedFolder, _abandoned, exclusive
from burstlake.schemas import REGISTRY

log = logging.getLogger(__name__)

# --- versions: snapshots, published runs ----------------------------------------------------


@dataclass(frozen=True, eq=False)
class Snapshot:
    """One version of each of some tables of a lake (see :func:`snapshot`).

    A reader given it in place of the lake's path (:func:`burstlake.lake.read_table`, a
    :class:`burstlake.lake.Cluster` of it, ...) reads exactly those versions, whatever commits
    follow; a table it does not name is read at its read version of the moment. It is also the
    lake's path (``os.fspath``), so whatever takes a lake takes it.
    """

    lake: Path
    versions: dict[str, int | None]

    def __fspath__(self) -> str:
        return str(self.lake)

    def version(self, table: str) -> int | None:
        """The version of ``table`` this snapshot reads."""
        if table in self.versions:
            return self.versions[table]
        return _read_versions(self.lake, [table])[table]


@dataclass(frozen=True, eq=False)
class Run(Snapshot):
    """A job reading one snapshot and committing tables under one id (see :func:`run`): a
    writer given it in place of the lake stamps its commit with the run and records the
    version in ``written``."""

    name: str
    id: str
    written: dict[str, int] = field(default_factory=dict)

    @property
    def inputs(self) -> dict[str, int | None]:
        return self.versions

    def metadata(self) -> dict[str, str]:
        return {
            "burstlake.run": f"{self.name}:{self.id}",
            "burstlake.inputs": json.dumps(self.inputs, sort_keys=True),
        }


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
    """The version of ``table`` a reader given ``lake`` sees (see :func:`read_versions`)."""
    return read_versions(lake, [table])[table]


def read_versions(
    lake: str | os.PathLike | None, tables: Iterable[str] | None = None
) -> dict[str, int | None]:
    """The versions a reader given ``lake`` sees: one consistent state of the lake.

    Given a :class:`Snapshot`, the versions it names; else a table a multi-table run writes is
    read at the last published run's version; else at the newest version that holds no commit
    of a landing still in progress (or killed and not reconciled yet), cut consistently across
    tables (see :func:`_consistent_cut`).
    """
    names = list(tables) if tables is not None else sorted(REGISTRY)
    if isinstance(lake, Snapshot):
        return {name: lake.version(name) for name in names}
    return _read_versions(lake_path(lake), names)


def _read_versions(root: Path, names: list[str]) -> dict[str, int | None]:
    published = _published(root)
    cut = _consistent_cut(root)
    out: dict[str, int | None] = {}
    for name in names:
        latest = cut[name] if name in cut else latest_version(root, name)
        version = published.get(name)
        out[name] = (
            version if version is not None and latest is not None and version <= latest else latest
        )
    return out


# --- landings in progress: intent records and the consistent cut --------------------------------


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
        with exclusive(root, "snapshot"):
            owned = OwnedFolder(path)
            info = {**record, "source_id": source_id, "started": time.time()}
            (owned.path / "intent.json").write_text(json.dumps(info))
    except OSError as err:  # nothing committed yet: no intent left behind either
        shutil.rmtree(path, ignore_errors=True)
        raise (as_lake_error(err, root) or err) from err
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
    with exclusive(root, "snapshot"):
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


def snapshot(lake: str | os.PathLike | None, tables: Iterable[str]) -> Snapshot:
    """The versions of ``tables`` a reader sees now, held: a reader given the snapshot sees
    exactly them, whatever commits follow."""
    root = lake_path(lake)
    return Snapshot(root, _read_versions(root, list(tables)))


@contextlib.contextmanager
def run(
    lake: str | os.PathLike | None, name: str, inputs: Iterable[str], publish: bool = False
) -> Iterator[Run]:
    """A job run: the :class:`Run` it yields is a :func:`snapshot` of ``inputs`` for the job's
    readers, and every commit of a writer given it is stamped with the run id and the input
    versions (Delta commit metadata). With ``publish``, the tables the run wrote become visible
    to readers together, when the block ends without error; a run killed part-way leaves
    readers on the previous run's tables.
    """
    root = lake_path(lake)
    current = Run(root, snapshot(root, inputs).versions, name, uuid.uuid4().hex[:12])
    yield current
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
