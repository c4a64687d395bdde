"""``burstlake ingest zabbix --db``: Zabbix history read from a real PostgreSQL server loaded
with Zabbix 6.0's own schema (Debian's zabbix-server-pgsql ``schema.sql.gz``).

The server is started by the ``server`` fixture (tests/ingest/conftest.py, built by
tests/builders/zabbix_db.py) on loopback (Debian's ``postgresql`` package; ``make test-all``
installs both packages when missing and root). Without them the tests are skipped with the
reason.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from burstlake.cli import main
from burstlake.jobs.ingest.zabbix import database
from burstlake.lake import read_table
from tests.builders.zabbix import zabbix_line
from tests.builders.zabbix_db import (
    NODES,
    PASSWORD,
    T0,
    db_ingest,
    history_samples,
    mapping_file,
    node_io,
    run_sql,
)

pytestmark = pytest.mark.slow


def _samples_of(lake: Path) -> list[tuple]:
    """The (cluster, item, t_ns) of the samples the lake holds (``zabbix_samples``)."""
    rows = read_table(lake, "zabbix_samples", ["cluster", "item", "t_ns"]).to_pylist()
    return sorted((r["cluster"] or "", r["item"], r["t_ns"]) for r in rows)


def _balance(out: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.startswith("  ") and "seen" in line]


def test_db_rows_and_the_export_give_the_same_node_io(loaded, tmp_path, capsys) -> None:
    mapping = mapping_file(tmp_path)
    assert db_ingest(tmp_path / "db", loaded, mapping) == 0
    from_db = capsys.readouterr().out
    export = tmp_path / "history-1.ndjson"
    export.write_text(
        "".join(
            zabbix_line(node, clock, value, itemid=itemid, name=key, key=key, kind=vt,
                        host_name=False) + "\n"
            for node, itemid, key, vt, value, clock in history_samples()
        )
    )  # fmt: skip
    argv = ["ingest", "zabbix", str(export), "--lake", str(tmp_path / "file")]
    assert main([*argv, "--mapping", str(mapping)]) == 0
    from_file = capsys.readouterr().out
    assert node_io(tmp_path / "db") == node_io(tmp_path / "file")
    assert len(node_io(tmp_path / "db")) > 100
    stream = _balance(from_db)[-2:]
    assert stream == _balance(from_file)[-2:]
    assert any("gap" in line and "reset" in line for line in stream), stream
    assert "230 history rows read" in from_db  # 5 samples x 2 items missing


def test_overlapping_windows_and_reruns_never_count_twice(loaded, tmp_path, capsys) -> None:
    mapping = mapping_file(tmp_path)
    whole = tmp_path / "whole"
    assert db_ingest(whole, loaded, mapping) == 0
    parts = tmp_path / "parts"
    assert db_ingest(parts, loaded, mapping, "--until", str(T0 + 900)) == 0
    assert db_ingest(parts, loaded, mapping, "--since", str(T0 + 600)) == 0
    out = capsys.readouterr().out
    assert "already in the lake skipped" in out
    assert db_ingest(parts, loaded, mapping) == 0  # a re-run of everything: nothing new
    assert "0 history rows read" in capsys.readouterr().out
    assert node_io(parts) == node_io(whole)


def test_a_row_inserted_late_before_the_watermark_lands_once(loaded, tmp_path, capsys) -> None:
    """A row inserted late, before what landed, is not in the lake: it lands, and the lake
    equals one clean read of the database as it now stands; a re-run reads nothing."""
    import psycopg

    mapping = mapping_file(tmp_path)
    assert db_ingest(tmp_path / "lake", loaded, mapping) == 0
    with psycopg.connect(loaded, password=PASSWORD, autocommit=True) as con:
        con.execute("INSERT INTO history_uint VALUES (100, %s, 1, 5)", (T0 + 30 * 21,))
    capsys.readouterr()
    assert db_ingest(tmp_path / "lake", loaded, mapping) == 0
    assert "1 history rows read, 230 already in the lake skipped" in capsys.readouterr().out
    assert db_ingest(tmp_path / "clean", loaded, mapping) == 0
    assert node_io(tmp_path / "lake") == node_io(tmp_path / "clean")
    assert len(_samples_of(tmp_path / "lake")) == len(_samples_of(tmp_path / "clean")) == 231
    assert db_ingest(tmp_path / "lake", loaded, mapping) == 0
    assert "0 history rows read, 231 already in the lake skipped" in capsys.readouterr().out


def _reasons(lake: Path) -> list[str]:
    return read_table(lake, "quarantine", ["reason"]).column(0).to_pylist()


FUTURE = 2147483000  # 2038-01-19, near the last clock Zabbix's int4 holds


def test_a_far_future_clock_is_quarantined(loaded, tmp_path, capsys) -> None:
    """A 2038 row among the first half: quarantined, and the second half, inserted later,
    lands: the lake equals one clean read of the real rows. A re-run does not quarantine the
    2039 row again; once its clock is within the tolerance it is read again."""
    mapping = mapping_file(tmp_path)
    clean = tmp_path / "clean"
    assert db_ingest(clean, loaded, mapping) == 0
    half = T0 + 900
    run_sql(
        loaded,
        f"CREATE TABLE later_uint AS SELECT * FROM history_uint WHERE clock >= {half}",
        f"CREATE TABLE later AS SELECT * FROM history WHERE clock >= {half}",
        f"DELETE FROM history_uint WHERE clock >= {half}",
        f"DELETE FROM history WHERE clock >= {half}",
        f"INSERT INTO history_uint VALUES (100, {FUTURE}, 99999999, 0)",
    )
    try:
        lake = tmp_path / "lake"
        assert db_ingest(lake, loaded, mapping) == 0
        out = capsys.readouterr().out
        assert "(1 later than the read time + the tolerance: quarantined)" in out
        run_sql(
            loaded,
            "INSERT INTO history_uint SELECT * FROM later_uint",
            "INSERT INTO history SELECT * FROM later",
        )
        assert db_ingest(lake, loaded, mapping) == 0
        out = capsys.readouterr().out
        assert "1 quarantined by an earlier read skipped" in out, out
        assert node_io(lake) == node_io(clean)
        assert _samples_of(lake) == _samples_of(clean)
        future = [r for r in _reasons(lake) if "in the future" in r]
        assert future == [
            f"clock {FUTURE} is in the future: later than the database read time "
            "+ --future-tolerance (read again once it is not)"
        ]
        assert db_ingest(lake, loaded, mapping, "--future-tolerance", "600000000") == 0
        assert "1 history rows read, 230 already in the lake skipped" in capsys.readouterr().out
        assert ("", "100", FUTURE * 10**9) in _samples_of(lake)
    finally:
        run_sql(loaded, "DROP TABLE IF EXISTS later_uint", "DROP TABLE IF EXISTS later")


def test_an_earlier_window_after_a_later_one_is_read(loaded, tmp_path, capsys) -> None:
    """``--since T`` then ``--until T`` (a backfill): the second read lands the rows before T,
    and the lake equals one read of everything; a third read of all finds nothing new."""
    mapping = mapping_file(tmp_path)
    whole = tmp_path / "whole"
    assert db_ingest(whole, loaded, mapping) == 0
    lake = tmp_path / "lake"
    assert db_ingest(lake, loaded, mapping, "--since", str(T0 + 900)) == 0
    capsys.readouterr()
    assert db_ingest(lake, loaded, mapping, "--until", str(T0 + 900)) == 0
    out = capsys.readouterr().out
    assert "110 history rows read" in out and "skipped" not in out.split("\n")[0], out
    assert node_io(lake) == node_io(whole)
    assert _samples_of(lake) == _samples_of(whole)
    assert db_ingest(lake, loaded, mapping) == 0
    assert "0 history rows read, 230 already in the lake skipped" in capsys.readouterr().out


def test_rows_of_a_node_added_to_the_topology_land_on_retry(loaded, tmp_path, capsys) -> None:
    """cn02 is not in the topology at the first read: its rows are refused. Once the topology
    has it, the next read lands them on its own (their reason is gone), and so does
    ``--retry-quarantined``: node_io equals a clean read, and a later read reads nothing."""
    import pyarrow as pa

    from burstlake.lake import write_table

    mapping = mapping_file(tmp_path)

    def topology(lake: Path, nodes: list[str]) -> None:
        rows = pa.table({"node": nodes, "cabinet": ["c0"] * len(nodes)})
        write_table(lake, "topology", rows, "topo", replaces=["topo"])

    clean = tmp_path / "clean"
    topology(clean, list(NODES))
    assert db_ingest(clean, loaded, mapping) == 0
    for flag in ((), ("--retry-quarantined",)):
        lake = tmp_path / f"lake{len(flag)}"
        topology(lake, ["cn01"])
        assert db_ingest(lake, loaded, mapping) == 0
        assert {r[0] for r in node_io(lake)} == {"cn01"}
        refused = read_table(lake, "quarantine", ["location"]).column(0).to_pylist()
        assert f"host cn02 (120 samples of {database.source(loaded)})" in refused  # the bad node
        assert db_ingest(lake, loaded, mapping) == 0  # still not in the topology: nothing new
        assert {r[0] for r in node_io(lake)} == {"cn01"}
        topology(lake, list(NODES))
        capsys.readouterr()
        assert db_ingest(lake, loaded, mapping, *flag) == 0
        assert "120 history rows read" in capsys.readouterr().out
        assert node_io(lake) == node_io(clean)
        assert db_ingest(lake, loaded, mapping) == 0
        assert "0 history rows read, 230 already in the lake skipped" in capsys.readouterr().out


def test_duplicate_rows_resolve_by_the_smallest_value_on_every_run(loaded, tmp_path) -> None:
    """Rows repeating (itemid, clock, ns) with other values: the smallest lands, the others
    are quarantined; two lakes read apart get the same bytes, and a re-run changes nothing."""
    clock = T0 + 30 * 30
    run_sql(
        loaded,
        "ALTER TABLE history_uint DROP CONSTRAINT IF EXISTS history_uint_pkey",
        f"INSERT INTO history_uint VALUES (100, {clock}, 999999, 0), (100, {clock}, 3, 0)",
    )
    mapping = mapping_file(tmp_path)
    lakes = [tmp_path / "a", tmp_path / "b"]
    for lake in lakes:
        assert db_ingest(lake, loaded, mapping) == 0
    assert node_io(lakes[0]) == node_io(lakes[1])
    duplicates = [r for r in _reasons(lakes[0]) if "duplicate sample" in r]
    assert len(duplicates) == 2 and all(r.endswith("(kept 3)") for r in duplicates), duplicates
    before = node_io(lakes[0])
    assert db_ingest(lakes[0], loaded, mapping) == 0
    assert node_io(lakes[0]) == before
    assert sum("duplicate sample" in r for r in _reasons(lakes[0])) == 2


def test_unnamed_then_named_owner_counts_once(loaded, tmp_path, capsys) -> None:
    """Rows read with no machine, then with ``--cluster edison`` (the lake's only named
    machine, which owns the unnamed rows): the second read lands nothing."""
    import pyarrow as pa

    from burstlake.lake import write_table

    lake = tmp_path / "lake"
    rows = pa.table({"node": list(NODES), "cluster": ["edison"] * 2, "cabinet": ["c0"] * 2})
    write_table(lake, "topology", rows, "topo")
    mapping = mapping_file(tmp_path)
    assert db_ingest(lake, loaded, mapping) == 0
    before = node_io(lake)
    capsys.readouterr()
    assert db_ingest(lake, loaded, mapping, "--cluster", "edison") == 0
    assert "0 history rows read, 230 already in the lake skipped" in capsys.readouterr().out
    assert node_io(lake) == before
    assert len(_samples_of(lake)) == 230


def test_a_null_ns_is_one_quarantined_row(loaded, tmp_path, capsys) -> None:
    """A row with no ns once its item has a watermark: one quarantine row, the run and every
    later run succeed."""
    mapping = mapping_file(tmp_path)
    lake = tmp_path / "lake"
    assert db_ingest(lake, loaded, mapping) == 0
    before = node_io(lake)
    run_sql(
        loaded,
        "ALTER TABLE history_uint ALTER COLUMN ns DROP NOT NULL",
        f"INSERT INTO history_uint VALUES (100, {T0 + 30 * 22}, 5, NULL)",
    )
    try:
        assert db_ingest(lake, loaded, mapping) == 0
        assert [r for r in _reasons(lake) if r.startswith("ns ")] == ["ns  is not 0..999999999"]
        # the row is named by its database, item, instant and host, not by the read's
        # scratch file (deleted when the command ends)
        where = read_table(lake, "quarantine", ["location", "reason"]).to_pylist()
        (location,) = [r["location"] for r in where if r["reason"].startswith("ns ")]
        assert (
            location == f"{database.source(loaded)} item 100 clock {T0 + 660} ns null (host cn01)"
        )
        assert node_io(lake) == before
        capsys.readouterr()
        assert db_ingest(lake, loaded, mapping) == 0
        assert "1 quarantined by an earlier read skipped" in capsys.readouterr().out
    finally:
        run_sql(
            loaded,
            "DELETE FROM history_uint WHERE ns IS NULL",
            "ALTER TABLE history_uint ALTER COLUMN ns SET NOT NULL",
        )


def test_an_item_of_a_text_value_type_is_quarantined(loaded, tmp_path) -> None:
    import psycopg

    with psycopg.connect(loaded, password=PASSWORD, autocommit=True) as con:
        con.execute("UPDATE items SET value_type = 4 WHERE itemid = 110")
    assert db_ingest(tmp_path / "lake", loaded, mapping_file(tmp_path)) == 0
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
    assert db_ingest(tmp_path / "lake", url, mapping_file(tmp_path)) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after 'starting a new one'
    assert err.startswith("burstlake ingest: ") and message in err and PASSWORD not in err, err


def test_a_connection_dropped_mid_stream_lands_what_came_before(
    loaded, tmp_path, capsys, monkeypatch
) -> None:
    """The server ends the session (pg_terminate_backend) after the first rows of
    history_uint: those land, exit 1, and the next run continues from the watermark to the
    same node_io as one uninterrupted read."""
    import psycopg

    from burstlake.jobs.ingest.zabbix import database as zabbix_db

    mapping = mapping_file(tmp_path)
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
    assert db_ingest(lake, loaded, mapping) == 1
    captured = capsys.readouterr()
    assert "connection lost reading history_uint" in captured.err
    assert "what came before it landed" in captured.err
    assert "155 history rows read" in captured.out  # history's 115, then 40 of history_uint
    monkeypatch.setattr(zabbix_db, "_copy_rows", real)
    assert db_ingest(lake, loaded, mapping) == 0
    whole = tmp_path / "whole"
    assert db_ingest(whole, loaded, mapping) == 0
    assert node_io(lake) == node_io(whole)


def test_the_hourly_dag_reads_the_database_of_the_deployment_file(
    loaded, run_dag, lake, tmp_path
) -> None:
    """``ingest_zabbix_db`` under Airflow: the database and the machine's options come from
    burstlake.yaml; a second run finds nothing new."""
    mapping = mapping_file(tmp_path)
    lake.mkdir(parents=True, exist_ok=True)
    (lake / "burstlake.yaml").write_text(
        f"machines: {{m: {{sources: {{zabbix: {{mapping: {mapping}}}}}}}}}\n"
        f"zabbix_db: {{m: {{url: '{loaded}', password_env: ZBX_PASSWORD}}}}\n"
    )
    assert run_dag("ingest_zabbix_db").state == "success"
    assert run_dag("ingest_zabbix_db").state == "success"
    expected = tmp_path / "cli"
    assert db_ingest(expected, loaded, mapping, "--cluster", "m") == 0
    assert node_io(lake) == node_io(expected)
    assert {r["cluster"] for r in read_table(lake, "node_io", ["cluster"]).to_pylist()} == {"m"}


def test_one_database_down_leaves_the_others_landing(loaded, run_dag, lake, tmp_path) -> None:
    """Each database is its own task: machine ``n``'s database refuses the connection, machine
    ``m``'s lands as the command line lands it."""
    mapping = mapping_file(tmp_path)
    lake.mkdir(parents=True, exist_ok=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens there once the socket closes
    down = f"postgresql://zabbix@127.0.0.1:{closed}/zabbix"
    (lake / "burstlake.yaml").write_text(
        f"machines: {{m: {{sources: {{zabbix: {{mapping: {mapping}}}}}}}, n: {{}}}}\n"
        "zabbix_db:\n"
        f"  n: {{url: '{down}', password_env: ZBX_PASSWORD}}\n"
        f"  m: {{url: '{loaded}', password_env: ZBX_PASSWORD}}\n"
    )
    run = run_dag("ingest_zabbix_db")
    states = {ti.map_index: ti.state for ti in run.get_task_instances() if ti.task_id == "land"}
    assert sorted(states.values()) == ["failed", "success"], states
    expected = tmp_path / "cli"
    assert db_ingest(expected, loaded, mapping, "--cluster", "m") == 0
    assert node_io(lake) == node_io(expected)
