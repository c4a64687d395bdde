"""Ctrl-C and SIGTERM during ``burstlake ingest``, and a reader that goes away: one line saying
what landed, exit 130 / 143, the file in progress undone; a broken pipe exits quietly."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from burstlake.lake import read_table
from tests.builders.paths import REPO
from tests.builders.zabbix import zabbix_line

pytestmark = pytest.mark.slow
RUN = "import sys; from burstlake.cli import main; sys.exit(main())"


def _history(path: Path, lines: int, host: str) -> Path:
    """An export of ``lines`` samples of one counter."""
    with path.open("w") as out:
        for k in range(lines):
            clock = 1_700_000_000 + 10 * k
            out.write(zabbix_line(host, clock, 100 * k, itemid=7, host_name=False) + "\n")
    return path


def _landed(lake: Path) -> list[str]:
    try:
        return [
            Path(f).name for f in read_table(lake, "ingest_log", ["file"]).column(0).to_pylist()
        ]
    except Exception:  # the lake is being made
        return []


@pytest.mark.parametrize(
    "sent, code, said", [(signal.SIGINT, 130, "Ctrl-C"), (signal.SIGTERM, 143, "SIGTERM")]
)
def test_a_stopped_ingest_says_what_landed(tmp_path: Path, sent, code: int, said: str) -> None:
    small = _history(tmp_path / "a-small.ndjson", 50, "cn1")
    big = _history(tmp_path / "b-big.ndjson", 1_500_000, "cn2")
    lake = tmp_path / "lake"
    argv = ["ingest", "zabbix", str(small), str(big), "--lake", str(lake)]
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, *argv],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while (
        _landed(lake) != ["a-small.ndjson"] and time.monotonic() < deadline and proc.poll() is None
    ):
        time.sleep(0.2)
    time.sleep(1.0)  # well into the big file
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sent)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err, err
    last = err.strip().splitlines()[-1]
    assert last == (
        f"burstlake ingest: stopped by {said}; 1 file(s) landed ({small}); the file in progress "
        "was undone"
    ), err
    assert _landed(lake) == ["a-small.ndjson"]


def test_a_reader_going_away_is_quiet(tmp_path: Path) -> None:
    """``burstlake sql ... | head -1``: the rest of the output has nowhere to go; no message."""
    lake = tmp_path / "lake"
    small = _history(tmp_path / "a.ndjson", 50, "cn1")
    subprocess.run(
        [sys.executable, "-c", RUN, "ingest", "zabbix", str(small), "--lake", str(lake)],
        cwd=REPO, check=True, capture_output=True,
    )  # fmt: skip
    query = "SELECT * FROM range(2000000)"
    cmd = f"{sys.executable} -c '{RUN}' sql --lake {lake} --max-rows 1000000 '{query}' | head -1"
    done = subprocess.run(
        ["bash", "-c", cmd + "; echo ${PIPESTATUS[0]} >&2"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.stderr.strip().splitlines() == ["141"], done.stderr


def test_flows_stop_within_a_second_on_ctrl_c(tmp_path: Path) -> None:
    """``burstlake flows`` of 1 M flows over 4 links: Ctrl-C while the model runs ends it
    within a second (it returns to Python every 0.25 s), exit 130, one line."""
    flows = tmp_path / "flows.json"
    links = ["a", "b", "c", "d"]
    with flows.open("w") as out:
        out.write('{"links": {"a": 1e9, "b": 1e9, "c": 2e9, "d": 5e8}, "flows": [')
        out.write(
            ", ".join(
                f'{{"route": ["{links[k % 4]}", "{links[(k + 1) % 4]}"], "size": {1e6 + k}, '
                f'"start": {k * 1e-6}}}'
                for k in range(1_000_000)
            )
        )
        out.write("]}")
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, "flows", str(flows), "--out", str(tmp_path / "out.json")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(25)  # loaded, compiled and well into the events
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    stopped = time.monotonic() - sent
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "burstlake flows: stopped by Ctrl-C", err
    assert stopped < 5.0, stopped  # 20-44 s before; a second and the exit now
    assert not (tmp_path / "out.json").exists()


def test_packets_stop_within_a_second_on_ctrl_c(tmp_path: Path) -> None:
    """``burstlake flows`` under the packet model (2,000 flows of 4 GB from links a and b
    into c and d: some 4 G packet hops, minutes of work): Ctrl-C while it runs ends it within
    a second (the compiled loop returns to Python about every 0.25 s, not every 2 M events),
    exit 130."""
    flows = tmp_path / "flows.json"
    links = ["a", "b", "c", "d"]
    routes = [f'{{"route": ["{links[k % 2]}", "{links[2 + k % 2]}"], "size": 4e9, '
              f'"start": {k * 1e-6}}}' for k in range(2000)]  # fmt: skip
    flows.write_text(
        '{"links": {"a": 1e9, "b": 1e9, "c": 2e9, "d": 5e8}, "model": "packet", '
        f'"flows": [{", ".join(routes)}]}}'
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", RUN, "flows", str(flows), "--out", str(tmp_path / "out.json")],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    time.sleep(15)  # loaded, compiled and well into the events
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    stopped = time.monotonic() - sent
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "burstlake flows: stopped by Ctrl-C", err
    assert stopped < 5.0, stopped
    assert not (tmp_path / "out.json").exists()
