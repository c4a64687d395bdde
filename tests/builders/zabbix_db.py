"""A real PostgreSQL server with Zabbix 6.0's schema (Debian's zabbix-server-pgsql
``schema.sql.gz``), the history the ``--db`` tests load into it, and the command they run.

The fixtures over these (``server``, ``loaded``) are in tests/ingest/conftest.py. Without
Debian's ``postgresql`` and ``zabbix-server-pgsql`` packages the server skips its test with the
reason (``make test-all`` installs both when missing and root).
"""

from __future__ import annotations

import glob
import gzip
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from burstlake.cli import main
from burstlake.lake import read_table

SCHEMA = Path("/usr/share/zabbix-server-pgsql/schema.sql.gz")
T0 = 1700000010  # a multiple of 30 s
PASSWORD = "zbx-test-password"
NODES = ("cn01", "cn02")


def pg_bin() -> Path | None:
    """The folder of the newest installed PostgreSQL's programs (None: not installed)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def zabbix_server() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 with a database ``zabbix`` holding Zabbix 6.0's
    schema (and an ``empty`` database); yields its URL (without the password, which is
    :data:`PASSWORD`). Skips the test without the packages."""
    bin_dir = pg_bin()
    if bin_dir is None or not SCHEMA.is_file():
        pytest.skip(
            "needs Debian's postgresql and zabbix-server-pgsql (make test-all installs them)"
        )
    # not under pytest's 0700 base: the server runs as user postgres when we are root
    root = Path(tempfile.mkdtemp(prefix="burstlake-pg-"))
    data, port = root / "data", free_port()
    run_as = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if run_as:
        shutil.chown(root, "postgres")
    (root / "pw").write_text(PASSWORD)
    if run_as:
        shutil.chown(root / "pw", "postgres")
    subprocess.run(
        [*run_as, str(bin_dir / "initdb"), "-D", str(data), "-U", "zabbix", "--pwfile",
         str(root / "pw"), "--auth-host=scram-sha-256", "--auth-local=trust", "-E", "UTF8"],
        check=True, capture_output=True,
    )  # fmt: skip
    subprocess.run(
        [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w", "-o",
         f"-h 127.0.0.1 -p {port} -k {root}", "start"],
        check=True, capture_output=True,
    )  # fmt: skip
    try:
        import psycopg

        admin = f"postgresql://zabbix:{PASSWORD}@127.0.0.1:{port}/postgres"
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute("CREATE DATABASE zabbix")
            con.execute("CREATE DATABASE empty")
        with psycopg.connect(admin.replace("/postgres", "/zabbix"), autocommit=True) as con:
            con.execute(gzip.decompress(SCHEMA.read_bytes()).decode())
        yield f"postgresql://zabbix@127.0.0.1:{port}/zabbix"
    finally:
        subprocess.run(
            [*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def history_samples() -> list[tuple[str, int, str, int, object, int]]:
    """(node, itemid, key, value type, value, clock) of two 30 s-sampled counters per node:
    a uint read counter with a reset and an outage, and a float write counter."""
    rows = []
    for n, node in enumerate(NODES):
        read, write = 0, 0.0
        for k in range(60):
            clock = T0 + 30 * k
            if 20 <= k < 25 and n == 0:
                continue  # a 150 s outage: a gap
            read = 7 if k == 40 else read + 1000 * (k % 7) + n  # a reboot at k = 40
            write += 512.5 * (k % 3)
            rows.append((node, 100 + 10 * n, "lustre.read_bytes", 3, read, clock))
            rows.append((node, 101 + 10 * n, "lustre.write_bytes", 0, write, clock))
    return rows


@contextmanager
def loaded_history(url: str) -> Iterator[str]:
    """The server's zabbix database at ``url`` holding :func:`history_samples` (with their
    hosts and items), emptied afterwards; yields ``url``."""
    import psycopg

    with psycopg.connect(url, password=PASSWORD, autocommit=True) as con:
        for n, node in enumerate(NODES):
            con.execute(
                "INSERT INTO hosts (hostid, host, name) VALUES (%s, %s, %s)", (n + 1, node, node)
            )
        items = {(r[1], r[0], r[2], r[3]) for r in history_samples()}
        for itemid, node, key, value_type in sorted(items):
            con.execute(
                "INSERT INTO items (itemid, hostid, name, key_, value_type) "
                "VALUES (%s, %s, %s, %s, %s)",
                (itemid, NODES.index(node) + 1, key, key, value_type),
            )
        with con.cursor() as cur:
            for _node, itemid, _, value_type, value, clock in history_samples():
                table = "history_uint" if value_type == 3 else "history"
                cur.execute(
                    f"INSERT INTO {table} (itemid, clock, value, ns) VALUES (%s, %s, %s, 0)",
                    (itemid, clock, value),
                )
    yield url
    with psycopg.connect(url, password=PASSWORD, autocommit=True) as con:
        for table in ("history", "history_uint", "items", "hosts"):
            con.execute(f"DELETE FROM {table}")


def mapping_file(tmp_path: Path) -> Path:
    """A mapping of the history's two item keys, both counters, written under ``tmp_path``."""
    path = tmp_path / "mapping.yaml"
    path.write_text(
        "items:\n"
        "  - {metric: read_bytes, kind: counter, keys: [lustre.read_bytes]}\n"
        "  - {metric: write_bytes, kind: counter, keys: [lustre.write_bytes]}\n"
    )
    return path


def db_ingest(lake: Path, url: str, mapping: Path, *extra: str) -> int:
    """``burstlake ingest zabbix --db url`` into ``lake`` (the password in $ZBX_PASSWORD)."""
    return main(
        ["ingest", "zabbix", "--db", url, "--password-env", "ZBX_PASSWORD", "--lake", str(lake),
         "--mapping", str(mapping), *extra]
    )  # fmt: skip


def node_io(lake: Path) -> list[tuple]:
    """The lake's (node, ts, read_bytes, write_bytes) rows, sorted."""
    rows = read_table(lake, "node_io", ["node", "ts", "read_bytes", "write_bytes"]).to_pylist()
    return sorted((r["node"], r["ts"], r["read_bytes"], r["write_bytes"]) for r in rows)


def run_sql(url: str, *statements: str) -> None:
    """Run ``statements`` on the database at ``url``, each committed."""
    import psycopg

    with psycopg.connect(url, password=PASSWORD, autocommit=True) as con:
        for statement in statements:
            con.execute(statement)
