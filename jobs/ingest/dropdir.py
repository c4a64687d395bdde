"""Drop-directory ingestion for scheduled pipelines: what is new, and land it.

Centres drop raw files into folders the scheduled ingest DAGs watch: the drop folders of the
deployment file (:mod:`burstlake.config`), each with its source, machine and options, else
``<drop>/<source>/``. Each scheduled run lands the files whose content the lake has not seen
(by content id, so a rerun or a re-dropped file is a no-op), with the folder's options.
Nothing here names a source: the source's hooks do the rest (``Source.after_landing``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from burstlake.jobs.ingest import source_module
from burstlake.jobs.ingest.accounting import totals
from burstlake.jobs.ingest.landing import content_id, expand_paths, ingest
from burstlake.lake import lake_path, read_table, table_files

LOG = logging.getLogger(__name__)
DEFAULT_DROP = "drop"


def drop_path(drop: str | os.PathLike | None = None) -> Path:
    """The drop directory: the argument, else ``$BURSTLAKE_DROP``, else ``./drop``."""
    return Path(drop or os.environ.get("BURSTLAKE_DROP") or DEFAULT_DROP).absolute()


def drop_folders(
    source: str, lake: str | os.PathLike | None = None, config: str | os.PathLike | None = None
) -> list[tuple[Path, dict[str, Any]]]:
    """The folders files of ``source`` are dropped in, each with the options they land with:
    the deployment file's drops of that source, else ``<drop>/<source>`` with no options."""
    from burstlake.config import load

    deployment = load(config, lake)
    if deployment.path is None:
        return [(drop_path() / source, {})]
    return [(d.path, deployment.drop_options(d)) for d in deployment.drops if d.source == source]


def _unseen(files: list[Path], lake: str | os.PathLike | None) -> list[Path]:
    """The files whose content is not in the lake's ingest_log yet."""
    seen: set[str] = set()
    if table_files(lake, "ingest_log"):
        seen = set(read_table(lake, "ingest_log", columns=["source_id"]).column(0).to_pylist())
    return [f for f in files if not f.is_file() or content_id(f) not in seen]


def pending_files(
    source: str,
    drop: str | os.PathLike | None = None,
    lake: str | os.PathLike | None = None,
) -> list[str]:
    """Files in the folder ``drop`` (default ``<drop>/<source>``) whose content is not in the
    lake's ingest_log yet."""
    folder = Path(drop) if drop is not None else drop_path() / source
    if not folder.is_dir():
        return []
    pattern = source_module(source).SOURCE.file_pattern
    return [str(f) for f in _unseen(expand_paths([folder], pattern), lake)]


def land_files(
    source: str,
    files: list[str],
    lake: str | os.PathLike | None = None,
    options: Mapping[str, Any] | None = None,
) -> dict:
    """Ingest those of ``files`` of ``source`` the lake has not seen, with ``options`` (the
    parse options, as on the command line); returns the row accounting (``already_landed``:
    the others) and the findings of the source's checks of rows landed earlier. Raises if any
    was unusable, or when the lake failed (:class:`IngestFailed` names what landed): a retry
    of the task lands only the rest, so a task that failed after committing is safe to run
    again."""
    spec = source_module(source).SOURCE
    todo = _unseen([Path(f) for f in files], lake)
    reports = ingest(spec, todo, lake_path(lake), dict(options or {}))
    unusable = [f"{r.file}: {r.error}" for r in reports if r.error]
    if unusable:
        raise ValueError(f"{source}: unusable input files: {'; '.join(unusable)}")
    result: dict = {**totals(reports), "already_landed": len(files) - len(todo)}
    for check, lines in spec.after_landing(lake_path(lake)).items():
        result[check] = lines
        for line in lines:
            LOG.warning("%s check of rows landed earlier: %s", source, line)
    return result


def land_pulled(
    source: str, options: Mapping[str, Any], lake: str | os.PathLike | None = None
) -> dict:
    """Read a source's input from elsewhere (``CounterStream.pull``: a database) and land it, as
    ``burstlake ingest`` does; returns the row accounting and the pull's notes. Raises when the
    read ended early (what came before it landed; the next run continues) or a file was
    unusable."""
    import tempfile

    stream = source_module(source).SOURCE.stream
    if stream is None or stream.pull is None:
        raise ValueError(f"{source} reads files only")
    with tempfile.TemporaryDirectory(prefix=f"burstlake-{source}-") as scratch:
        pulled = stream.pull(options, lake_path(lake), Path(scratch))
        if pulled is None:
            raise ValueError(f"{source}: the options name nothing to read")
        result = land_files(
            source, [str(f) for f in pulled.files], lake, {**options, **pulled.options}
        )
    result["notes"] = pulled.notes
    for note in pulled.notes:
        LOG.info("%s", note)
    if pulled.error:
        raise ValueError(f"{pulled.error}; what came before it landed")
    return result
