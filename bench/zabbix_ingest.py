"""Zabbix ingest throughput and memory on a generated export of >= 1 GB.

Writes an ``item_tags`` real-time export (counters of the default mapping for a few hundred
nodes, mostly idle, bursts of traffic) into a temporary directory, ingests its first 20 MB
untimed (a warm-up: see ``WARM_UP_BYTES``), then measures in separate processes:
``burstlake ingest zabbix`` with its default options (one process, one thread: MB/s, MB per
CPU-second, lines/s, peak RSS), the same with ``--threads`` set to the machine's cores (still
one process; into a second lake) and, as the floor for reading the same bytes,
``pyarrow.json.read_json`` alone (all cores). The machine may be shared: the 1-minute load
average is recorded before the ingest as well as at the end, and CPU seconds beside wall time.
Size: ``BURSTLAKE_BENCH_GB`` (default 1.0). Results: ``bench/results/zabbix_ingest.json``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import Goal, load_average, measure, write_result

T0 = 1_700_000_000
# An untimed ingest of the export's first lines runs first: the first process to load
# DuckDB, pyarrow and Great Expectations after a while reads them from disk (on this VM the
# first quiet run of a session spent 15 s of its 50 s waiting on that, 34 s on CPU).
WARM_UP_BYTES = 20_000_000
GOAL_MB_PER_S = 25.0  # single process, one thread (issue 26)
INTERVAL = 10
NODES = 256
ITEMS = (  # (itemid offset, export name, mean bytes per busy interval)
    (1, "Lustre read bytes", 400e6),
    (2, "Lustre write bytes", 800e6),
    (3, "Lustre read ops", 400),
    (4, "Lustre write ops", 800),
    (5, "Lustre OSC read bytes", 400e6),
    (6, "Lustre OSC write bytes", 800e6),
    (7, "Network received bytes", 50e6),
    (8, "Network sent bytes", 50e6),
)
LINE = (
    '{"host":{"host":"cn%05d","name":"cn%05d"},"groups":["compute"],'
    '"item_tags":[{"tag":"component","value":"lustre"}],"itemid":%d,"name":"%s",'
    '"clock":%d,"ns":%d,"value":%d,"type":3}\n'
)


def generate(path: Path, target_bytes: int, seed: int = 1) -> int:
    """Write an export of at least ``target_bytes``; returns its line count."""
    rng = np.random.default_rng(seed)
    totals = np.zeros((NODES, len(ITEMS)), dtype=np.int64)
    lines = 0
    step = 0
    with path.open("w") as out:
        while out.tell() < target_bytes:
            busy = rng.random(NODES) < 0.05
            clock = T0 + step * INTERVAL + rng.integers(-1, 2, NODES)
            ns = rng.integers(0, 10**9, NODES)
            for column, (offset, name, mean) in enumerate(ITEMS):
                totals[:, column] += (busy * rng.exponential(mean, NODES)).astype(np.int64)
                out.writelines(
                    LINE % (n, n, n * 100 + offset, name, clock[n], ns[n], totals[n, column])
                    for n in range(NODES)
                )
            lines += NODES * len(ITEMS)
            step += 1
    return lines


def _slice(export: Path, into: Path, size: int) -> None:
    """The first whole lines of ``export`` up to ``size`` bytes, into ``into``."""
    with export.open("rb") as source:
        head = source.read(size)
    into.write_bytes(head[: head.rfind(b"\n") + 1])


def _ingest(export: str, lake: str, threads: str = "1") -> None:
    from burstlake.jobs.ingest import zabbix
    from burstlake.jobs.ingest.landing import ingest

    (report,) = ingest(zabbix.SOURCE, [export], lake, options={"threads": int(threads)})
    print(report.records_in, report.landed, report.quarantined, report.rows.get("node_io", 0))


def _pyarrow(export: str) -> None:
    import pyarrow.json

    print(pyarrow.json.read_json(export).num_rows)


def step(*args: str) -> tuple[float, float, float, str]:
    """Run a step of this module in a fresh interpreter (:func:`bench.measure`): (seconds, CPU
    seconds, peak RSS in MB, last stdout line). CPU seconds matter on a shared machine, where
    wall time also counts waiting for a core.

    (``python -m``, not ``-c``: pyspark, imported by Great Expectations, exits a ``-c``
    interpreter it takes for a doctest run.)
    """
    wall, cpu, peak, stdout = measure(
        [sys.executable, "-m", "bench.zabbix_ingest", *args], cwd=Path(__file__).parents[1]
    )
    return wall, cpu, peak, stdout.strip().splitlines()[-1]


def main() -> Path:
    target = int(float(os.environ.get("BURSTLAKE_BENCH_GB", "1.0")) * 1e9)
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-zabbix-") as tmp:
        export = Path(tmp) / "history-bench.ndjson"
        start = time.perf_counter()
        lines = generate(export, target)
        generate_s = time.perf_counter() - start
        size_mb = export.stat().st_size / 1e6
        warm_up = Path(tmp) / "history-warm-up.ndjson"
        _slice(export, warm_up, WARM_UP_BYTES)
        step("ingest", str(warm_up), str(Path(tmp) / "lake-warm-up"))
        lake = str(Path(tmp) / "lake")
        load_at_start = load_average()
        ingest_s, ingest_cpu, ingest_rss, out = step("ingest", str(export), lake)
        records_in, landed, quarantined, rows = map(int, out.split())
        cores = os.cpu_count() or 1
        threaded = step("ingest", str(export), str(Path(tmp) / "lake-threads"), str(cores))
        assert threaded[3] == out, f"--threads {cores} landed {threaded[3]}, one thread {out}"
        arrow_s, arrow_cpu, arrow_rss, _ = step("pyarrow", str(export))
    result = {
        "benchmark": "zabbix_ingest",
        "file_mb": round(size_mb, 1),
        "lines": lines,
        "records_in": records_in,
        "landed": landed,
        "quarantined": quarantined,
        "node_io_rows": rows,
        "generate_s": round(generate_s, 1),
        "load_average_1min_at_start": load_at_start,
        "ingest_s": round(ingest_s, 1),
        "ingest_cpu_s": round(ingest_cpu, 1),
        "ingest_mb_per_s": round(size_mb / ingest_s, 1),
        "ingest_mb_per_cpu_s": round(size_mb / ingest_cpu, 1),
        "ingest_lines_per_s": round(lines / ingest_s),
        "ingest_peak_rss_mb": round(ingest_rss),
        "threads_ingest": {
            "threads": cores,
            "ingest_s": round(threaded[0], 1),
            "ingest_cpu_s": round(threaded[1], 1),
            "ingest_mb_per_s": round(size_mb / threaded[0], 1),
            "ingest_peak_rss_mb": round(threaded[2]),
        },
        "pyarrow_json_s": round(arrow_s, 1),
        "pyarrow_json_cpu_s": round(arrow_cpu, 1),
        "pyarrow_json_mb_per_s": round(size_mb / arrow_s, 1),
        "pyarrow_json_peak_rss_mb": round(arrow_rss),
        "ingest_vs_pyarrow": round(ingest_s / arrow_s, 2),
    }
    speed = size_mb / ingest_s
    goals = [
        Goal(
            f"{GOAL_MB_PER_S:g} MB/s single-process, one thread (issue 26)",
            f"{speed:.1f} MB/s",
            speed >= GOAL_MB_PER_S,
        )
    ]
    return write_result("zabbix_ingest", result, goals)


if __name__ == "__main__":
    {"ingest": _ingest, "pyarrow": _pyarrow}[sys.argv[1]](*sys.argv[2:])
