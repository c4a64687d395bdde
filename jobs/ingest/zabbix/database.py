"""Zabbix history read from its PostgreSQL database (``burstlake ingest zabbix --db URL``).

A month of history lives in Zabbix's database, not in real-time export files. This module reads
Zabbix's own tables (``schema.sql`` of Zabbix 6.0: ``hosts(hostid, host)``,
``items(itemid, hostid, name, key_, value_type)``, ``history(itemid, clock, value DOUBLE, ns)``
for value type 0 and ``history_uint(itemid, clock, value numeric(20), ns)`` for type 3) in a
clock window (``--since``/``--until``, Unix seconds or ISO times), with a server-side cursor so
memory stays bounded, and writes the rows as the history-row files the export path reads
(``itemid, clock, value, ns`` plus the item table). They then land as any file does (the
package doc): the same mapping, node names, sampling rule (:mod:`.deltas`) and byte balance, so
DB rows and the equivalent export give the same ``node_io`` to the byte.

A row lands once, whatever the order of the windows read (Zabbix documentation, "Real-time
export of events, item values, trends": an item's value is identified by its ``itemid``,
``clock`` and ``ns``). Rows are recognised by content: a row whose (item, instant) the lake's
``zabbix_samples`` hold for the machine (the unnamed machine's rows included when the machine
owns them: :func:`burstlake.lake.owner_of_unnamed`), or whose line a DB read quarantined before,
is skipped and counted. The per-item watermark (the latest landed instant) only spares the
comparison: an item whose rows at or before it are as many in the database as in the lake reads
the rows after it alone; any other item (a backfill window, rows inserted late) reads its whole
window and compares each row. Rows later than the read's time plus ``--future-tolerance`` are
quarantined (they never move a watermark) and read again once they are no longer in the future;
a row with no ``ns`` is quarantined. Rows repeating an (itemid, clock, ns) are read ordered by
value: the smallest lands, the others are quarantined as duplicates, on every run alike; a
landed sample is never replaced by a later read. The rows of a node whose rows the lake refused
(a node not yet in the topology) are read again by the first read after the topology has the
node (their reason is gone); ``--retry-quarantined`` reads again every row a read quarantined
and those of every refused node. Rows are read in clock order, so a connection lost
mid-stream lands every row read before it.
The password comes from ``$PGPASSWORD`` (libpq), the environment variable the deployment file
names (``password_env``), or an Airflow connection, never from the URL or the file.
"""

from __future__ import annotations

import csv
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from burstlake.jobs.ingest.zabbix.options import FUTURE_TOLERANCE_S
from burstlake.jobs.ingest.zabbix.stream import DAY_S, STATE_TABLE, region_id

LOG = logging.getLogger(__name__)
TABLES = {"history": 0, "history_uint": 3}  # Zabbix value types 0 (float), 3 (unsigned)
FETCH_ROWS = 50_000  # rows per round trip of the server-side cursor
NS = 1_000_000_000
SCRATCH_PREFIX = "zabbix-db-"  # the history files a read writes (how its quarantine is found)


class DatabaseError(ValueError):
    """The database cannot be read as Zabbix's; the message is one line."""


@dataclass
class Extract:
    """What one read of the database gave: the files to ingest and what happened."""

    history: Path
    items: Path
    rows: int = 0
    skipped: int = 0  # rows whose (item, instant) the lake holds
    known: int = 0  # rows a read quarantined before, not read again
    future: int = 0  # rows later than the read time + the tolerance (quarantined)
    lost: str | None = None  # why the stream ended early (connection lost)
    latest_clock: int = 0  # the last clock (s) a row may have to land


def parse_time(text: str | int | None, name: str) -> int | None:
    """``--since``/``--until``: Unix seconds or an ISO time (UTC unless it names a zone)."""
    if text is None or text == "":
        return None
    if isinstance(text, bool) or not isinstance(text, str | int):
        raise ValueError(f"--{name} {text!r} is neither Unix seconds nor an ISO time")
    if isinstance(text, int) or str(text).lstrip("-").isdigit():
        value = int(text)
        if not -(2**62) < value < 2**62 // NS:
            raise ValueError(f"--{name} {text} is beyond any Unix time")
        return value
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        raise ValueError(f"--{name} {text!r} is neither Unix seconds nor an ISO time") from None
    return int((moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp())


def future_tolerance(options: Mapping[str, Any]) -> int:
    """``--future-tolerance`` in seconds (0 to 20 years), checked."""
    given = options.get("future_tolerance")
    value = FUTURE_TOLERANCE_S if given is None else given
    if isinstance(value, bool) or not isinstance(value, int | str) or not str(value).isdigit():
        raise ValueError(f"--future-tolerance must be whole seconds >= 0, not {given!r}")
    if int(value) > 20 * 365 * 86_400:
        raise ValueError(f"--future-tolerance {value} is more than 20 years")
    return int(value)


_SECRET = re.compile(r"(?i)((?:password|passwd|pwd|secret|token)=)[^&;\s]*")


def where(url: str) -> str:
    """The one redaction of a database URL for messages: scheme, user, host, port and database,
    never a password (of the user part or of a query parameter), whatever the URL's shape."""
    text = str(url)
    try:
        parts = urlsplit(text)
        host = parts.hostname or "localhost"
        user = f"{parts.username}@" if parts.username else ""
        port = parts.netloc.rsplit(":", 1)[1] if ":" in parts.netloc.rsplit("@", 1)[-1] else ""
        port = port if port.isdigit() else ""
        return f"{parts.scheme}://{user}{host}{f':{port}' if port else ''}{parts.path}"
    except ValueError:
        pass
    text = re.sub(r"(//[^/@:]*):[^/@]*@", r"\1@", text)  # user:password@ -> user@
    return _SECRET.sub(r"\1***", text.split("?", 1)[0])


def source(url: str) -> str:
    """How quarantine rows name the database a row came from (:func:`where`): ``db URL``; a
    row's location adds its item, clock, ns and host (:func:`.decode.location`)."""
    return f"db {where(url)}"


def redact(text: str, url: str | None) -> str:
    """``text`` (a driver's message) with the password of ``url`` and any ``password=`` gone."""
    text = _SECRET.sub(r"\1***", text)
    if url:
        try:
            secret = urlsplit(url).password
        except ValueError:
            found = re.search(r"//[^/@:]*:([^/@]*)@", url)
            secret = found.group(1) if found else None
        if secret:
            text = text.replace(secret, "***")
    return text


def connect(url: str, password_env: str | None = None):
    """A connection, or DatabaseError naming the database and what failed."""
    import psycopg

    scheme = str(url).split("://", 1)[0].lower() if "://" in str(url) else ""
    if scheme not in ("postgresql", "postgres"):
        raise DatabaseError(f"--db {where(url)!r}: expected postgresql://user@host:port/database")
    try:
        parts = urlsplit(url)
    except ValueError as err:
        raise DatabaseError(f"--db {where(url)}: not a URL ({_reason(err, url)})") from None
    try:
        parts.port  # noqa: B018 (raises for a port out of range)
    except ValueError:
        raise DatabaseError(f"--db {where(url)}: the port is not 1..65535") from None
    if parts.password or _SECRET.search(parts.query):
        raise DatabaseError(
            f"--db {where(url)}: the URL holds a password; give it in $PGPASSWORD or the "
            "variable --password-env names"
        )
    url = "postgresql" + url[len(scheme) :] if scheme != "postgresql" else url
    password = os.environ.get(password_env) if password_env else None
    if password_env and password is None:
        raise DatabaseError(f"--db {where(url)}: ${password_env} (the password) is not set")
    try:
        return psycopg.connect(url, password=password, connect_timeout=10, autocommit=False)
    except psycopg.Error as err:
        raise DatabaseError(f"cannot connect to {where(url)}: {_reason(err, url)}") from None
    except ValueError as err:  # a URL libpq cannot parse
        raise DatabaseError(f"--db {where(url)}: {_reason(err, url)}") from None


@dataclass
class Held:
    """What the lake holds of the machine's items in the window: per item the latest landed
    instant (ns) and the count of instants at or before it, the instants of the items that
    need a row-by-row comparison, and the rows DB reads quarantined."""

    marks: dict[str, tuple[int, int]] = field(default_factory=dict)
    instants: dict[str, set[int]] = field(default_factory=dict)
    # (item, clock, ns; None for a NULL ns) of the rows DB reads quarantined -> future
    quarantined: dict[tuple[str, int, int | None], bool] = field(default_factory=dict)
    retry: set[tuple[str, int]] = field(default_factory=set)  # (item, t_ns) of refused nodes
    samples: Any = None  # the (item, t_ns) table the marks come from

    def instants_of(self, items: set[str]) -> dict[str, set[int]]:
        """The landed instants of ``items`` in the window."""
        if not items or self.samples is None:
            return {item: set() for item in items}
        import pyarrow as pa
        import pyarrow.compute as pc

        rows = self.samples.filter(pc.is_in(self.samples.column("item"), pa.array(sorted(items))))
        found: dict[str, set[int]] = {item: set() for item in items}
        for item, t_ns in zip(*(c.to_pylist() for c in rows.columns), strict=True):
            found[item].add(t_ns)
        return found


def _machine(lake: Path, cluster: str | None):
    """Filter: the ``zabbix_samples`` rows of the machine (with the unnamed rows it owns)."""
    from burstlake.lake import cluster_filter, clusters

    for each in clusters(lake):
        if each.name == cluster or (cluster is None and each.unnamed):
            return cluster_filter(each.name, each.unnamed)
    return cluster_filter(cluster)


def _window_filter(window: tuple[int | None, int | None]):
    import pyarrow.compute as pc

    since, until = window
    where = pc.scalar(True)
    if since is not None:
        where &= pc.field("t_ns") >= since * NS
    if until is not None:
        where &= pc.field("t_ns") < until * NS
    return where


def held(lake: Path, cluster: str | None, window, retry: bool) -> Held:
    """:class:`Held` from the lake's ``zabbix_samples`` and ``quarantine``."""
    import pyarrow.compute as pc

    from burstlake.lake import dataset, read_table, table_files

    found = Held()
    if table_files(lake, STATE_TABLE):
        mine = _machine(lake, cluster) & _window_filter(window)
        rows = dataset(lake, STATE_TABLE).to_table(["item", "t_ns"], filter=mine)
        found.samples = rows
        latest = rows.group_by("item").aggregate([("t_ns", "max"), ("t_ns", "count_distinct")])
        found.marks = {
            item: (mark, count)
            for item, mark, count in zip(*(c.to_pylist() for c in latest.columns), strict=True)
        }
        if retry:
            found.retry = _refused_nodes(lake, cluster, mine)
    if table_files(lake, "quarantine") and not retry:
        location = pc.field("location")
        where = (pc.field("source") == "zabbix") & (
            pc.starts_with(location, "line ")
            | pc.starts_with(location, "db ")
            | pc.match_substring(location, " samples of db ")
        )
        rows = read_table(lake, "quarantine", ["file", "location", "raw", "reason"], filter=where)
        refused = set()  # nodes whose rows the lake refused
        for file, at, raw, reason in zip(*(c.to_pylist() for c in rows.columns), strict=True):
            node = _REFUSED_NODE.match(at)
            if node:
                refused.add(node.group(1))
                continue
            fields = (raw or "").split("\t")
            # rows a read quarantined: named by the database, or (lakes before) by line of
            # the read's scratch file
            ours = at.startswith("db ") or Path(file).name.startswith(SCRATCH_PREFIX)
            if not ours or len(fields) != 4:
                continue
            clock, ns = _whole(fields[1]), _whole(fields[3]) if fields[3] else None
            if clock is not None and (ns is not None or not fields[3]):
                found.quarantined[(fields[0], clock, ns)] = "future" in reason
        back = _in_topology(lake, cluster, refused)
        if back and found.samples is not None:  # their reason is gone: read them again
            found.retry = _refused_nodes(lake, cluster, mine & pc.field("node").isin(back))
    return found


def _whole(text: str) -> int | None:
    """A clock or ns as a quarantined line holds it: a whole number, negative ones included
    (a row quarantined for a negative clock or ns is recognised as any other), else None."""
    try:
        return int(text) if text.strip() == text else None
    except ValueError:
        return None


# the quarantine row of a node whose rows the lake refused (regions._region's origin)
_REFUSED_NODE = re.compile(r"^host (\S+) \(\d+ samples of db ")


def _in_topology(lake: Path, cluster: str | None, nodes: set[str]) -> list[str]:
    """Of ``nodes``, those the lake's topology now has for the machine (as validation checks
    them: :func:`burstlake.lake.checked_keys`)."""
    import pyarrow as pa

    from burstlake.lake import checked_keys, node_keys, read_table, table_files

    if not nodes or not table_files(lake, "topology"):
        return []
    known = read_table(lake, "topology", columns=["cluster", "node"])
    keys = node_keys(known.column("cluster"), known.column("node")).to_pylist()
    names = sorted(nodes)
    looked = checked_keys(pa.array([cluster] * len(names), pa.string()), pa.array(names), keys)
    have = set(keys)
    return [n for n, key in zip(names, looked.to_pylist(), strict=True) if key in have]


def _refused_nodes(lake: Path, cluster: str | None, mine) -> set[tuple[str, int]]:
    """(item, t_ns) of the machine's samples whose node's rows the lake refused (their
    region's node_io holds no row of the node)."""
    from burstlake.lake import contribution_keys, dataset

    have = contribution_keys(lake, "node_io", ["node"])
    rows = dataset(lake, STATE_TABLE).to_table(
        ["cluster", "node", "item", "t_ns", "bucket"], filter=mine
    )
    out = set()
    for c, node, item, t_ns, bucket in zip(*(x.to_pylist() for x in rows.columns), strict=True):
        if (region_id(t_ns // (DAY_S * NS), bucket, c), node) not in have:
            out.add((item, t_ns))
    return out


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
    latest = int(time.time()) + future_tolerance(options)
    retry = bool(options.get("retry_quarantined"))
    place = where(url)
    span = f"{since or 'start'}-{until or 'now'}"
    host = re.sub(r"[^\w.-]", "_", place.split("://", 1)[-1].split("/", 1)[0])
    result = Extract(
        folder / f"{SCRATCH_PREFIX}{host}-{span}.tsv", folder / "items.tsv", latest_clock=latest
    )
    with connect(url, options.get("password_env")) as con:
        try:
            _write_items(con, result.items)
        except psycopg.Error as err:
            raise DatabaseError(f"{place}: {_reason(err, url)}") from None
        state = held(lake, options.get("cluster"), (since, until), retry)
        with result.history.open("w", newline="") as out:
            writer = csv.writer(out, delimiter="\t", lineterminator="\n")
            writer.writerow(["itemid", "clock", "value", "ns"])
            for table in TABLES:
                try:
                    _copy_rows(con, table, (since, until), state, writer, result)
                except psycopg.OperationalError as err:
                    result.lost = f"{place}: connection lost reading {table}: {_reason(err, url)}"
                    break
                except psycopg.Error as err:
                    raise DatabaseError(f"{place}: {_reason(err, url)}") from None
    return result


def _reason(err: Exception, url: str | None = None) -> str:
    return redact(" ".join(str(err).split()), url) or type(err).__name__


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


def _window_sql(window) -> tuple[str, list[int]]:
    since, until = window
    query, params = "", []
    if since is not None:
        query += " AND h.clock >= %s"
        params.append(since)
    if until is not None:
        query += " AND h.clock < %s"
        params.append(until)
    return query, params


def _compared(con, table: str, window, state: Held) -> set[str]:
    """Items whose rows at or before their watermark are compared row by row: the database
    holds another count of instants there than the lake (a backfill, rows inserted late)."""
    if not state.marks:
        return set()
    items = [int(i) for i in state.marks if i.isdigit()]
    marks = [state.marks[str(i)][0] for i in items]
    clause, params = _window_sql(window)
    with con.cursor() as cur:
        cur.execute(
            f"SELECT h.itemid, count(DISTINCT (h.clock, h.ns)) FROM {table} h "
            "JOIN unnest(%s::bigint[], %s::numeric[]) AS m(itemid, mark) ON m.itemid = h.itemid "
            f"WHERE h.ns IS NOT NULL AND h.clock::numeric * {NS} + h.ns <= m.mark{clause} "
            "GROUP BY h.itemid",
            [items, marks, *params],
        )
        counts = {str(itemid): count for itemid, count in cur}
    return {item for item, count in counts.items() if count != state.marks[item][1]}


def _copy_rows(con, table: str, window, state: Held, writer, result: Extract) -> None:
    """Stream one history table's rows of the window, in clock order (equal instants by
    value), through a server-side cursor; rows the lake holds are skipped (module doc)."""
    compare = _compared(con, table, window, state)
    instants = state.instants_of(compare)
    clause, params = _window_sql(window)
    query = f"SELECT h.itemid, h.clock, h.value, h.ns FROM {table} h WHERE true{clause}"
    query += " ORDER BY h.clock, h.ns, h.itemid, h.value"
    with con.cursor(name=f"burstlake_{table}") as cur:
        cur.itersize = FETCH_ROWS
        cur.execute(query, params)
        while rows := cur.fetchmany(FETCH_ROWS):
            kept = []
            for itemid, clock, value, ns in rows:
                if _skip(str(itemid), clock, ns, state, instants, result):
                    continue
                if clock > result.latest_clock:
                    result.future += 1
                kept.append((itemid, clock, value, "" if ns is None else ns))
            writer.writerows(kept)
            result.rows += len(kept)


def _skip(item: str, clock: int, ns, state: Held, instants, result: Extract) -> bool:
    """Whether a row is one the lake holds or a read quarantined (counted in ``result``)."""
    if ns is not None:
        t_ns = clock * NS + ns
        mark = state.marks.get(item)
        if (
            mark is not None
            and t_ns <= mark[0]
            and (item, t_ns) not in state.retry
            and (item not in instants or t_ns in instants[item])
        ):
            result.skipped += 1
            return True
    future = state.quarantined.get((item, clock, ns))
    if future is not None and not (future and clock <= result.latest_clock):
        result.known += 1
        return True
    return False


def summary(result: Extract) -> str:
    """One line: the rows read, and those skipped as already landed or quarantined."""
    text = f"{result.rows} history rows read"
    if result.future:
        text += f" ({result.future} later than the read time + the tolerance: quarantined)"
    if result.skipped:
        text += f", {result.skipped} already in the lake skipped"
    if result.known:
        text += f", {result.known} quarantined by an earlier read skipped (--retry-quarantined)"
    return text
