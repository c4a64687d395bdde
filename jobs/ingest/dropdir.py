"""Drop-directory ingestion for scheduled pipelines: what is new, and land it.

Centres drop raw files into ``<drop>/<source>/``; each scheduled run lands the files whose
content the lake has not seen (by content id, so a rerun or a re-dropped file is a no-op).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from burstlake.jobs.ingest import source_module
from burstlake.jobs.ingest.base import content_id, expand_paths, ingest, totals
from burstlake.lake import lake_path, read_table, table_files

LOG = logging.getLogger(__name__)
DEFAULT_DROP = "drop"


def drop_path(drop: str | os.PathLike | None = None) -> Path:
    """The drop directory: the argument, else ``$BURSTLAKE_DROP``, else ``./drop``."""
    return Path(drop or os.environ.get("BURSTLAKE_DROP") or DEFAULT_DROP).absolute()


def _unseen(files: list[Path], lake: str | os.PathLike | None) -> list[Path]:
    """The files whose content is not in the lake's ingest_log yet."""
    seen: set[str] = set()
    if table_files(lake, "ingest_log"):
        seen = set(read_table(lake, "ingest_log", columns=["source_id"]).column(0).to_pylist())
    return [f for f in files if not f.is_file() or content_id(f) not in seen]


def pending_files(
    source: str, drop: str | os.PathLike | None = None, lake: str | os.PathLike | None = None
) -> list[str]:
    """Files in ``<drop>/<source>`` whose content is not in the lake's ingest_log yet."""
    folder = drop_path(drop) / source
    if not folder.is_dir():
        return []
    pattern = getattr(source_module(source), "FILE_PATTERN", "*")
    return [str(f) for f in _unseen(expand_paths([folder], pattern), lake)]


def land_files(source: str, files: list[str], lake: str | os.PathLike | None = None) -> dict:
    """Ingest those of ``files`` of ``source`` the lake has not seen; returns the row
    accounting (``already_landed``: the others). Raises if any was unusable, or when the lake
    failed (:class:`IngestFailed` names what landed): a retry of the task lands only the rest,
    so a task that failed after committing is safe to run again."""
    todo = _unseen([Path(f) for f in files], lake)
    reports = ingest(source_module(source).SOURCE, todo, lake_path(lake))
    unusable = [f"{r.file}: {r.error}" for r in reports if r.error]
    if unusable:
        raise ValueError(f"{source}: unusable input files: {'; '.join(unusable)}")
    result: dict = {**totals(reports), "already_landed": len(files) - len(todo)}
    if source == "topology":  # rows that landed before their topology are checked now
        from burstlake.jobs.ingest.topology import describe_unknown, unknown_nodes

        result["not_in_topology"] = describe_unknown(unknown_nodes(lake_path(lake)))
        for line in result["not_in_topology"]:
            LOG.warning("topology check of rows landed earlier: %s", line)
    return result
