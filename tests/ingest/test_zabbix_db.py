"""``burstlake ingest zabbix --db``: Zabbix history read from a real PostgreSQL server loaded
with Zabbix 6.0's own schema (Debian's zabbix-server-pgsql ``schema.sql.gz``).

The server is started by the fixture on loopback (Debian's ``postgresql`` package; ``make
test-all`` installs both packages when missing and root). Without them the tests are skipped
with the reason.
"""

from __future__ import annotations

import glob
import gzip
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from burstlake.cli import main
from burstlake.lake import read_table

pytestmark = pytest.mark.slow

SCHEMA = Path("/usr/share/zabbix-server-pgsql/schema.sql.gz")
T0 = 1700000010  # a multiple of 30 s
PASSWORD = "zbx-test-password"
NODES = ("cn01", "cn02")


def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 with a database ``zabbix`` holding Zabbix 6.0's
    schema; yields its URL (without the password, which is in $ZBX_PASSWORD)."""
    bin_dir = _pg_bin()
    if bin_dir is None or not SCHEMA.is_file():
        pytest.skip(
            "needs Debian's postgresql and zabbix-server-pgsql (make test-all installs them)"
        )
    # not under pytest's 0700 base: the server runs as user postgres when we are root
    root = Path(tempfile.mkdtemp(prefix="burstlake-pg-"))
    data, port = root / "data", _free_port()
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


def _samples() -> list[tuple[str, int, str, int, object, int]]:
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


@pytest.fixture
def loaded(server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The server's zabbix database holding the generated history (emptied afterwards)."""
    import psycopg

    monkeypatch.setenv("ZBX_PASSWORD", PASSWORD)
    with psycopg.connect(server, password=PASSWORD, autocommit=True) as con:
        for n, node in enumerate(NODES):
            con.execute(
                "INSERT INTO hosts (hostid, host, name) VALUES (%s, %s, %s)", (n + 1, node, node)
            )
        items = {(r[1], r[0], r[2], r[3]) for r in _samples()}
        for itemid, node, key, value_type in sorted(items):
            con.execute(
                "INSERT INTO items (itemid, hostid, name, key_, value_type) "
                "VALUES (%s, %s, %s, %s, %s)",
                (itemid, NODES.index(node) + 1, key, key, value_type),
            )
        with con.cursor() as cur:
            for _node, itemid, _, value_type, value, clock in _samples():
                table = "history_uint" if value_type == 3 else "history"
                cur.execute(
                    f"INSERT INTO {table} (itemid, clock, value, ns) VALUES (%s, %s, %s, 0)",
                    (itemid, clock, value),
                )
    yield server
    with psycopg.connect(server, password=PASSWORD, autocommit=True) as con:
        for table in ("history", "history_uint", "items", "hosts"):
            con.execute(f"DELETE FROM {table}")


def _mapping(tmp_path: Path) -> Path:
    path = tmp_path / "mapping.yaml"
    path.write_text(
        "items:\n"
        "  - {metric: read_bytes, kind: counter, keys: [lustre.read_bytes]}\n"
        "  - {metric: write_bytes, kind: counter, keys: [lustre.write_bytes]}\n"
    )
    return path


def _db(lake: Path, url: str, mapping: Path, *extra: str) -> int:
    return main(
        ["ingest", "zabbix", "--db", url, "--password-env", "ZBX_PASSWORD", "--lake", str(lake),
         "--mapping", str(mapping), *extra]
    )  # fmt: skip


def _node_io(lake: Path) -> list[tuple]:
    rows = read_table(lake, "node_io", ["node", "ts", "read_bytes", "write_bytes"]).to_pylist()
    return sorted((r["node"], r["ts"], r["read_bytes"], r["write_bytes"]) for r in rows)


def _balance(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.startswith("  ") and "seen" in line]


def test_db_rows_and_the_export_give_the_same_node_io(loaded, tmp_path, capsys) -> None:
    mapping = _mapping(tmp_path)
    assert _db(tmp_path / "db", loaded, mapping) == 0
    from_db = capsys.readouterr().out
    export = tmp_path / "history-1.ndjson"
    export.write_text(
        "".join(
            json.dumps({"host": {"host": node}, "itemid": itemid, "name": key, "key_": key,
                        "clock": clock, "ns": 0, "value": value, "type": vt}) + "\n"
            for node, itemid, key, vt, value, clock in _samples()
        )
    )  # fmt: skip
    argv = ["ingest", "zabbix", str(export), "--lake", str(tmp_path / "file")]
    assert main([*argv, "--mapping", str(mapping)]) == 0
    from_file = capsys.readouterr().out
    assert _node_io(tmp_path / "db") == _node_io(tmp_path / "file")
    assert len(_node_io(tmp_path / "db")) > 100
    stream = _balance(from_db)[-2:]
    assert stream == _balance(from_file)[-2:]
    assert any("gap" in line and "reset" in line for line in stream), stream
    assert "230 history rows read" in from_db  # 5 samples x 2 items missing


def test_overlapping_windows_and_reruns_never_count_twice(loaded, tmp_path, capsys) -> None:
    mapping = _mapping(tmp_path)
    whole = tmp_path / "whole"
    assert _db(whole, loaded, mapping) == 0
    parts = tmp_path / "parts"
    assert _db(parts, loaded, mapping, "--until", str(T0 + 900)) == 0
    assert _db(parts, loaded, mapping, "--since", str(T0 + 600)) == 0
    out = capsys.readouterr().out
    assert "at or before their item's watermark skipped" in out
    assert _db(parts, loaded, mapping) == 0  # a re-run of everything: nothing new
    assert "0 history rows read" in capsys.readouterr().out
    assert _node_io(parts) == _node_io(whole)


def test_a_row_older_than_the_watermark_is_skipped_and_said(loaded, tmp_path, capsys) -> None:
    """A clock going backwards (a row inserted late, before what landed) never rewrites."""
    import psycopg

    mapping = _mapping(tmp_path)
    assert _db(tmp_path / "lake", loaded, mapping) == 0
    before = _node_io(tmp_path / "lake")
    with psycopg.connect(loaded, password=PASSWORD, autocommit=True) as con:
        con.execute("INSERT INTO history_uint VALUES (100, %s, 1, 5)", (T0 + 30 * 21,))
    capsys.readouterr()
    assert _db(tmp_path / "lake", loaded, mapping) == 0
    assert "0 history rows read, 231 at or before" in capsys.readouterr().out
    assert _node_io(tmp_path / "lake") == before


def test_an_item_of_a_text_value_type_is_quarantined(loaded, tmp_path) -> None:
    import psycopg

    with psycopg.connect(loaded, password=PASSWORD, autocommit=True) as con:
        con.execute("UPDATE items SET value_type = 4 WHERE itemid = 110")
    assert _db(tmp_path / "lake", loaded, _mapping(tmp_path)) == 0
    reasons = read_table(tmp_path / "lake", "quarantine", ["reason"]).column(0).to_pylist()
    assert reasons.count("value type 4 (text) is not numeric (0 float, 3 unsigned)") == 60


@pytest.mark.parametrize(
    "change, message",
    [
        ({"ZBX_PASSWORD": "wrong"}, 'password authentication failed for user "zabbix"'),
        ({"database": "empty"}, 'relation "items" does not exist'),
        ({"ZBX_PASSWORD": None}, "$ZBX_PASSWORD (the password) is not set"),
    ],
)
def test_database_faults_are_one_line(
    loaded, tmp_path, capsys, monkeypatch, change, message
) -> None:
    url = loaded.rsplit("/", 1)[0] + "/" + change.get("database", "zabbix")
    if "ZBX_PASSWORD" in change:
        if change["ZBX_PASSWORD"] is None:
            monkeypatch.delenv("ZBX_PASSWORD")
        else:
            monkeypatch.setenv("ZBX_PASSWORD", change["ZBX_PASSWORD"])
    assert _db(tmp_path / "lake", url, _mapping(tmp_path)) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after 'starting a new one'
    assert err.startswith("burstlake ingest: ") and message in err and PASSWORD not in err, err


def test_a_connection_dropped_mid_stream_lands_what_came_before(
    loaded, tmp_path, capsys, monkeypatch
) -> None:
    """The server ends the session (pg_terminate_backend) after the first rows of
    history_uint: those land, exit 1, and the next run continues from the watermark to the
    same node_io as one uninterrupted read."""
    import psycopg

    from burstlake.jobs.ingest import zabbix_db

    mapping = _mapping(tmp_path)
    monkeypatch.setattr(zabbix_db, "FETCH_ROWS", 40)
    real = zabbix_db._copy_rows

    class Cutting:
        """Passes rows on; after the first batch of history_uint, the server ends the
        session, so the next fetch fails as a dropped connection does."""

        def __init__(self, writer, pid: int) -> None:
            self.writer, self.pid = writer, pid

        def writerows(self, rows) -> None:
            self.writer.writerows(rows)
            with psycopg.connect(loaded, password=PASSWORD, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", (self.pid,))
            time.sleep(0.2)

    def cut(con, table, window, marks, writer, result):
        if table == "history_uint":
            writer = Cutting(writer, con.info.backend_pid)
        return real(con, table, window, marks, writer, result)

    monkeypatch.setattr(zabbix_db, "_copy_rows", cut)
    lake = tmp_path / "lake"
    assert _db(lake, loaded, mapping) == 1
    captured = capsys.readouterr()
    assert "connection lost reading history_uint" in captured.err
    assert "what came before it landed" in captured.err
    assert "155 history rows read" in captured.out  # history's 115, then 40 of history_uint
    monkeypatch.setattr(zabbix_db, "_copy_rows", real)
    assert _db(lake, loaded, mapping) == 0
    whole = tmp_path / "whole"
    assert _db(whole, loaded, mapping) == 0
    assert _node_io(lake) == _node_io(whole)


def test_the_hourly_dag_reads_the_database_of_the_deployment_file(
    loaded, run_dag, lake, tmp_path
) -> None:
    """``ingest_zabbix_db`` under Airflow: the database and the machine's options come from
    burstlake.yaml; a second run finds nothing new."""
    mapping = _mapping(tmp_path)
    lake.mkdir(parents=True, exist_ok=True)
    (lake / "burstlake.yaml").write_text(
        f"machines: {{m: {{sources: {{zabbix: {{mapping: {mapping}}}}}}}}}\n"
        f"zabbix_db: {{m: {{url: '{loaded}', password_env: ZBX_PASSWORD}}}}\n"
    )
    assert run_dag("ingest_zabbix_db").state == "success"
    assert run_dag("ingest_zabbix_db").state == "success"
    expected = tmp_path / "cli"
    assert _db(expected, loaded, mapping, "--cluster", "m") == 0
    assert _node_io(lake) == _node_io(expected)
    assert {r["cluster"] for r in read_table(lake, "node_io", ["cluster"]).to_pylist()} == {"m"}
