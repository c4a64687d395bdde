"""Zabbix history read from its PostgreSQL database (``burstlake ingest zabbix --db URL``).

A month of history lives in Zabbix's database, not in real-time export files. This module reads
Zabbix's own tables (``schema.sql`` of Zabbix 6.0: ``hosts(hostid, host)``,
``items(itemid, hostid, name, key_, value_type)``, ``history(itemid, clock, value DOUBLE, ns)``
for value type 0 and ``history_uint(itemid, clock, value numeric(20), ns)`` for type 3) in a
clock window (``--since``/``--until``, Unix seconds or ISO times), with a server-side cursor so
memory stays bounded, and writes the rows as the history-row files the export path reads
(``itemid, clock, value, ns`` plus the item table). They then land through :mod:`.zabbix`: the
same mapping, node names, sampling rule (:mod:`.counters`) and byte balance, so DB rows and the
equivalent export give the same ``node_io`` to the byte.

Re-runs and overlapping windows never count a row twice: the watermark of an item is the
latest sample of it the lake holds for the machine (``zabbix_samples``); rows at or before it
are skipped (and counted in the log). Rows are read in clock order, so a connection lost
mid-stream lands every row read before it, and the watermark never passes a row not landed.
The password comes from ``$PGPASSWORD`` (libpq), the environment variable the deployment file
names (``password_env``), or an Airflow connection, never from the URL or the file.
"""

from __future__ import annotations

import csv
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

LOG = logging.getLogger(__name__)
TABLES = {"history": 0, "history_uint": 3}  # Zabbix value types 0 (float), 3 (unsigned)
FETCH_ROWS = 50_000  # rows per round trip of the server-side cursor


class DatabaseError(ValueError):
    """The database cannot be read as Zabbix's; the message is one line."""


@dataclass
class Extract:
    """What one read of the database gave: the files to ingest and what happened."""

    history: Path
    items: Path
    rows: int = 0
    skipped: int = 0  # rows at or before their item's watermark (already in the lake)
    lost: str | None = None  # why the stream ended early (connection lost)


def parse_time(text: str | int | None, name: str) -> int | None:
    """``--since``/``--until``: Unix seconds or an ISO time (UTC unless it names a zone)."""
    if text is None or text == "":
        return None
    if isinstance(text, int) or str(text).lstrip("-").isdigit():
        return int(text)
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        raise ValueError(f"--{name} {text!r} is neither Unix seconds nor an ISO time") from None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def where(url: str) -> str:
    """The URL without any password, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    user = f"{parts.username}@" if parts.username else ""
    return f"{parts.scheme}://{user}{host}{f':{parts.port}' if parts.port else ''}{parts.path}"


def connect(url: str, password_env: str | None = None):
    """A connection, or DatabaseError naming the database and what failed."""
    import psycopg

    if not url.startswith(("postgresql://", "postgres://")):
        raise DatabaseError(f"--db {url!r}: expected postgresql://user@host:port/database")
    password = os.environ.get(password_env) if password_env else None
    if password_env and password is None:
        raise DatabaseError(f"--db {where(url)}: ${password_env} (the password) is not set")
    try:
        return psycopg.connect(url, password=password, connect_timeout=10, autocommit=False)
    except psycopg.Error as err:
        reason = " ".join(str(err).split())
        raise DatabaseError(f"cannot connect to {where(url)}: {reason}") from None


def watermarks(lake: Path, cluster: str | None) -> dict[str, int]:
    """itemid -> the latest sample time (ns) the lake holds for the machine."""
    from burstlake.jobs.ingest.zabbix import STATE_TABLE, same_machine
    from burstlake.lake import dataset, table_files

    if not table_files(lake, STATE_TABLE):
        return {}
    rows = dataset(lake, STATE_TABLE).to_table(["item", "t_ns"], filter=same_machine(cluster))
    latest = rows.group_by("item").aggregate([("t_ns", "max")])
    return dict(zip(latest.column(0).to_pylist(), latest.column(1).to_pylist(), strict=True))


def extract(
    url: str,
    folder: Path,
    lake: Path,
    options: Mapping[str, Any],
) -> Extract:
    """Read items and the history rows of the window into files under ``folder``."""
    import psycopg

    since = parse_time(options.get("since"), "since")
    until = parse_time(options.get("until"), "until")
    if since is not None and until is not None and until <= since:
        raise ValueError(f"--until {until} is not after --since {since}")
    marks = watermarks(lake, options.get("cluster"))
    place = where(url)
    span = f"{since or 'start'}-{until or 'now'}"
    result = Extract(
        folder / f"zabbix-db-{urlsplit(url).hostname}-{span}.tsv", folder / "items.tsv"
    )
    with connect(url, options.get("password_env")) as con:
        try:
            _write_items(con, result.items)
        except psycopg.Error as err:
            raise DatabaseError(f"{place}: {_reason(err)}") from None
        with result.history.open("w", newline="") as out:
            writer = csv.writer(out, delimiter="\t", lineterminator="\n")
            writer.writerow(["itemid", "clock", "value", "ns"])
            for table in TABLES:
                try:
                    _copy_rows(con, table, (since, until), marks, writer, result)
                except psycopg.OperationalError as err:
                    result.lost = f"{place}: connection lost reading {table}: {_reason(err)}"
                    break
                except psycopg.Error as err:
                    raise DatabaseError(f"{place}: {_reason(err)}") from None
    return result


def _reason(err: Exception) -> str:
    return " ".join(str(err).split()) or type(err).__name__


def _write_items(con, path: Path) -> None:
    """The item table the history rows name (host, key, name, value type)."""
    with con.cursor() as cur, path.open("w", newline="") as out:
        cur.execute(
            "SELECT i.itemid, h.host, i.key_, i.name, i.value_type "
            "FROM items i JOIN hosts h ON h.hostid = i.hostid ORDER BY i.itemid"
        )
        writer = csv.writer(out, delimiter="\t", lineterminator="\n")
        writer.writerow(["itemid", "host", "key_", "name", "value_type"])
        for row in cur:
            writer.writerow(row)


def _copy_rows(con, table: str, window, marks: dict[str, int], writer, result: Extract) -> None:
    """Stream one history table's rows of the window, in clock order, through a server-side
    cursor; rows at or before their item's watermark are skipped."""
    since, until = window
    query = f"SELECT itemid, clock, value, ns FROM {table} WHERE true"
    params: list[int] = []
    if since is not None:
        query += " AND clock >= %s"
        params.append(since)
    if until is not None:
        query += " AND clock < %s"
        params.append(until)
    query += " ORDER BY clock, ns, itemid"
    with con.cursor(name=f"burstlake_{table}") as cur:
        cur.itersize = FETCH_ROWS
        cur.execute(query, params)
        while rows := cur.fetchmany(FETCH_ROWS):
            kept = []
            for itemid, clock, value, ns in rows:
                mark = marks.get(str(itemid))
                if mark is not None and clock * 1_000_000_000 + ns <= mark:
                    result.skipped += 1
                    continue
                kept.append((itemid, clock, value, ns))
            writer.writerows(kept)
            result.rows += len(kept)


def summary(result: Extract) -> str:
    """One line: the rows read, and those skipped as already landed."""
    text = f"{result.rows} history rows read"
    if result.skipped:
        text += f", {result.skipped} at or before their item's watermark skipped (in the lake)"
    return text
