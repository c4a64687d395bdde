"""The DAGs under Airflow's real scheduler, DAG processor and API server (``airflow
standalone`` on a SQLite metadata DB): files dropped into the drop directories are landed by
the ingest DAGs on their schedule, and the asset events then run `metrics` and `replay` with no
manual trigger."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest

from burstlake.lake import read_table
from tests.builders.paths import REPO
from tests.builders.zabbix import zabbix_export, zabbix_line

AIRFLOW = Path(sys.executable).with_name("airflow")
NODES = [f"cn{i:03d}" for i in range(1, 9)]
T0 = int(datetime(2024, 3, 4, 10, 0, tzinfo=UTC).timestamp())
DEADLINE_S = 900
INGESTS = {f"ingest_{s}" for s in ("slurm", "zabbix", "topology")}  # those with drops
DAGS = {f"ingest_{s}" for s in ("slurm", "zabbix", "darshan", "topology")} | {"metrics", "replay"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _drop_inputs(drop: Path) -> int:
    """A 2-cabinet, 8-node machine, two jobs and an hour of Lustre counters; returns bytes."""
    for source in ("topology", "slurm", "zabbix"):
        (drop / source).mkdir(parents=True)
    (drop / "topology" / "machine.csv").write_text(
        "node,cabinet,ion\n"
        + "".join(f"{n},cab{i // 4},ion{i // 4}\n" for i, n in enumerate(NODES))
    )
    day = "2024-03-04"
    (drop / "slurm" / "sacct.txt").write_text(
        "JobIDRaw|JobName|User|UID|Submit|Eligible|Start|End|ReqCPUS|AllocCPUS|NNodes|NodeList|"
        "State|Cluster\n"
        f"11|ior|ann|501|{day}T09:59:00|{day}T09:59:00|{day}T10:00:00|{day}T10:30:00|"
        "64|64|4|cn[001-004]|COMPLETED|tiny\n"
        f"12|wrf|bo|502|{day}T10:20:00|{day}T10:20:00|{day}T10:30:00|{day}T11:00:00|"
        "64|64|4|cn[005-008]|COMPLETED|tiny\n"
    )
    lines, total = [], 0
    for n, node in enumerate(NODES):
        value = 0
        for k in range(360):
            clock = T0 + 10 * k
            busy = (n < 4 and k < 180) or (n >= 4 and k >= 180)
            step = (1 + n) * 1_000_000 if busy else 0
            value += step
            total += step if k else 0
            lines.append(
                zabbix_line(
                    node,
                    clock,
                    value,
                    itemid=100 + n,
                    name="Lustre write bytes",
                    groups=["compute"],
                    item_tags=[{"tag": "component", "value": "lustre"}],
                )
            )
    (drop / "zabbix" / "history-syncer-1.ndjson").write_text(zabbix_export(lines))
    return total


def _query(db: Path, sql: str, *parameters: object) -> list[tuple]:
    """Read the metadata DB directly (nothing yet if its tables are not created)."""
    if not db.exists():
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute(sql, parameters).fetchall()
    except sqlite3.OperationalError:  # tables not created yet, or locked for a moment
        return []


def _healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/monitor/health", timeout=5):
            return True
    except OSError:
        return False


def _runs(db: Path) -> list[tuple[str, str, str, str | None, str | None]]:
    """Every DAG run (dag_id, state, run_type, start, end), read straight from the metadata DB."""
    return _query(
        db, "SELECT dag_id, state, run_type, start_date, end_date FROM dag_run ORDER BY id"
    )


def _settled(db: Path) -> bool:
    """Every drop is landed (its ingest DAG emitted its asset events), and metrics and replay
    runs that began after the last of those events have succeeded."""
    events = _query(db, "SELECT source_dag_id, timestamp FROM asset_event")
    landed = [at for dag, at in events if dag in INGESTS]
    if {dag for dag, _ in events} & INGESTS != INGESTS:
        return False
    done = _query(
        db, "SELECT dag_id FROM dag_run WHERE state = 'success' AND start_date >= ?", max(landed)
    )
    return {"metrics", "replay"} <= {dag for (dag,) in done}


@pytest.mark.slow
def test_scheduler_lands_drops_then_runs_metrics_and_replay(tmp_path):
    home, lake, drop, scenarios = (tmp_path / d for d in ("airflow", "lake", "drop", "scen"))
    home.mkdir()
    scenarios.mkdir()
    (scenarios / "ion_remap.yaml").write_text(
        "name: sched_ion_remap\nworkload: {source: lake}\ntopology: {name: lake}\n"
        "policies: [block, cyclic]\n"
    )
    written = _drop_inputs(drop)
    port = _free_port()
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(port),
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
        "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(_free_port()),
        "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(_free_port()),
        # A 2-core CI machine running the suite answers slowly; the default 5 s kills tasks.
        "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "120",
        "AIRFLOW__CORE__PARALLELISM": "4",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "2",
        "BURSTLAKE_LAKE": str(lake),
        "BURSTLAKE_DROP": str(drop),
        "BURSTLAKE_SCENARIOS": str(scenarios),
        "PATH": f"{AIRFLOW.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    log = (tmp_path / "standalone.log").open("wb")
    proc = subprocess.Popen(
        [str(AIRFLOW), "standalone"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    runs: list[tuple] = []
    db = home / "airflow.db"
    try:
        # As an operator would: once the API server answers and the DAG processor has parsed
        # every DAG, unpause them. From then on only the schedule and asset events start runs.
        started = time.monotonic()
        while not (_healthy(port) and {d for (d,) in _query(db, "SELECT dag_id FROM dag")} >= DAGS):
            assert proc.poll() is None, f"airflow standalone exited: see {log.name}"
            assert time.monotonic() - started < DEADLINE_S, "Airflow did not come up"
            time.sleep(3)
        subprocess.run(
            [
                str(AIRFLOW),
                "dags",
                "unpause",
                "--treat-dag-id-as-regex",
                "-y",
                "^(ingest_|metrics|replay)",
            ],
            env=env,
            check=True,
            capture_output=True,
        )
        while time.monotonic() - started < DEADLINE_S:
            assert proc.poll() is None, f"airflow standalone exited: see {log.name}"
            runs = _runs(db)
            if _settled(db):
                break
            time.sleep(5)
        else:
            pytest.fail(f"no replay run within {DEADLINE_S} s; runs so far: {runs}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()
    # Nothing failed; metrics and replay ran on asset events alone, never on the clock.
    assert not [run for run in runs if run[1] == "failed"], runs
    assert {run_type for dag, _, run_type, *_ in runs if dag in ("metrics", "replay")} == {
        "asset_triggered"
    }
    node_io = read_table(lake, "node_io", columns=["write_bytes"]).column("write_bytes")
    assert sum(v or 0 for v in node_io.to_pylist()) == written
    assert read_table(lake, "jobs").num_rows == 2
    assert read_table(lake, "platform_summary").num_rows > 0
    scores = read_table(lake, "replay_scores").to_pylist()
    assert {r["policy"] for r in scores if r["scenario"] == "sched_ion_remap"} == {
        "block",
        "cyclic",
    }
