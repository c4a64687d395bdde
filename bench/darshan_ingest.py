"""Darshan ingest throughput and memory: small logs per second, DXT segments per second.

Measures, each step in its own process (:func:`bench.measure`), in one run so the figures
share the machine's load:

- pydarshan's own read of the small logs (``DarshanReport(read_all=True)``), the floor;
- ``burstlake ingest darshan`` of the same logs into a new lake, with ``--workers 1`` and
  ``--workers 2``: logs/s of wall time and per CPU-second (the goal is 50 logs/s per core),
  and the wall-time speedup of two workers (goal 1.7x; the machine's load is recorded, and
  the CPU-seconds of both, since a shared machine's other work slows the wall time);
- the 800k-segment DXT log of the shared samples (``generated/``): segments/s including the
  Delta write, per CPU-second (goal 1 M/s per core), and the peak RSS of the whole process
  tree, reader process included (goal < 600 MB); beside it, pydarshan's own DXT reader. The
  CPU-seconds are the whole command's, starting two Python processes (~1.3 CPU-s before the
  first segment), so the same rate is also given for the >= 5 M-segment log and between the
  two logs (``dxt_marginal_segments_per_cpu_s``).

The small logs are ``$BURSTLAKE_BENCH_DARSHAN_LOGS`` (a folder of ``*.darshan``), written by
Darshan's runtime (the ``darshan-gen`` of the issue's peer folder, one log per run of 1-4
ranks): none ships with the repository. ``$BURSTLAKE_BENCH_DARSHAN_HUGE``, if set, is a log of
at least 5 M DXT segments measured like the 800k one. Results:
``bench/results/darshan_ingest.json``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from bench import Goal, load_average, measure, python_step, write_result

REPO = Path(__file__).resolve().parents[1]
SAMPLES = Path(os.environ.get("BURSTLAKE_SAMPLES") or REPO.parent / "shared" / "data")
BIG = SAMPLES / "darshan" / "generated" / "iogen_job4245_8r_4hosts_800k_dxt.darshan"

COUNT = "SELECT count(*) AS segments FROM darshan_dxt"
PYDARSHAN_READ = """
import glob, json, time, darshan
files = sorted(glob.glob({folder!r} + "/*.darshan"))
started = time.perf_counter()
for f in files:
    with darshan.DarshanReport(f, read_all=True) as report:
        pass
print(json.dumps({{"logs": len(files), "wall_s": time.perf_counter() - started}}))
"""

PYDARSHAN_DXT = """
import json, time, darshan
from darshan.backend import cffi_backend as backend
started = time.perf_counter()
segments = 0
with darshan.DarshanReport({path!r}, read_all=False) as report:
    for module in ("DXT_POSIX", "DXT_MPIIO"):
        while (record := backend.log_get_dxt_record(report.log, module)) is not None:
            segments += len(record["read_segments"]) + len(record["write_segments"])
print(json.dumps({{"segments": segments, "wall_s": time.perf_counter() - started}}))
"""


def _cli() -> str:
    return str(Path(sys.executable).with_name("burstlake"))


def _ingest(paths: list[str], lake: Path, workers: int) -> dict:
    command = [_cli(), "ingest", "darshan", *paths, "--lake", str(lake)]
    step = measure([*command, "--workers", str(workers)], cwd=REPO)
    summary = next(line for line in step.stdout.splitlines() if line.startswith("darshan: "))
    return {
        "wall_s": round(step.wall_s, 2),
        "cpu_s": round(step.cpu_s, 2),
        "peak_rss_mb": round(step.peak_mb),
        "summary": summary,
    }


def main() -> Path:
    folder = os.environ.get("BURSTLAKE_BENCH_DARSHAN_LOGS")
    if not folder or not list(Path(folder).glob("*.darshan")):
        raise SystemExit(
            "set BURSTLAKE_BENCH_DARSHAN_LOGS to a folder of small Darshan logs written by "
            "Darshan's runtime (see the module doc)"
        )
    logs = sorted(str(p) for p in Path(folder).glob("*.darshan"))
    result: dict = {"logs": len(logs), "load_average_before": load_average()}
    floor = python_step(PYDARSHAN_READ.format(folder=folder))
    result["pydarshan_read_all"] = {
        "wall_s": round(floor["wall_s"], 2),
        "logs_per_s": round(floor["logs"] / floor["wall_s"], 1),
    }
    with tempfile.TemporaryDirectory(prefix="bench-darshan-") as scratch:
        untimed = Path(scratch) / "warm-up"  # the first process to load GX reads it from disk
        measure([_cli(), "ingest", "darshan", logs[0], "--lake", str(untimed)], cwd=REPO)
        for workers in (1, 2):
            run = _ingest(logs, Path(scratch) / f"lake{workers}", workers)
            run["logs_per_s"] = round(len(logs) / run["wall_s"], 1)
            run["logs_per_cpu_s"] = round(len(logs) / run["cpu_s"], 1)
            result[f"ingest_workers_{workers}"] = run
        result["workers_2_speedup"] = round(
            result["ingest_workers_1"]["wall_s"] / result["ingest_workers_2"]["wall_s"], 2
        )
        result["workers_2_cpu_ratio"] = round(  # CPU-s of 2 workers over 1: the cost of them
            result["ingest_workers_2"]["cpu_s"] / result["ingest_workers_1"]["cpu_s"], 2
        )
        huge = os.environ.get("BURSTLAKE_BENCH_DARSHAN_HUGE")  # a log of >= 5 M segments
        for name, path in (("dxt_800k", BIG), ("dxt_huge", Path(huge) if huge else None)):
            if path is None or not path.is_file():
                continue
            lake = Path(scratch) / name
            big = _ingest([str(path)], lake, 1)
            count = measure([_cli(), "sql", "--lake", str(lake), COUNT], cwd=REPO).stdout
            big["segments"] = segments = int(count.split()[-1])
            big["segments_per_s"] = round(segments / big["wall_s"])
            big["segments_per_cpu_s"] = round(segments / big["cpu_s"])
            result[name] = big
        if "dxt_800k" in result and "dxt_huge" in result:  # beyond the fixed start-up cost
            small, huge = result["dxt_800k"], result["dxt_huge"]
            more = huge["segments"] - small["segments"]
            result["dxt_marginal_segments_per_cpu_s"] = round(
                more / max(huge["cpu_s"] - small["cpu_s"], 1e-9)
            )
        if BIG.is_file():
            own = python_step(PYDARSHAN_DXT.format(path=str(BIG)))
            result["pydarshan_dxt_800k"] = {
                "wall_s": round(own["wall_s"], 2),
                "segments": own["segments"],
                "peak_rss_mb": round(own["step_peak_rss_mb"]),
            }
    result["load_average_after"] = load_average()
    return write_result("darshan_ingest", result, goals(result))


def goals(result: dict) -> list[Goal]:
    """The issue's goals against this run's figures, each met or missed."""
    one, dxt = result["ingest_workers_1"], result.get("dxt_800k", {})
    found = [
        Goal(
            "small logs: >= 50 logs/s per core",
            f"{one['logs_per_cpu_s']} logs/CPU-s",
            one["logs_per_cpu_s"] >= 50,
        ),
        Goal(
            "--workers 2 at least 1.7x one worker",
            f"{result['workers_2_speedup']}x",
            result["workers_2_speedup"] >= 1.7,
        ),
        Goal(
            "DXT, the 800k-segment log: >= 1 M segments/s per core, Delta write included",
            f"{dxt.get('segments_per_cpu_s', 'not run')} segments/CPU-s",
            dxt.get("segments_per_cpu_s", 0) >= 1e6,
        ),
        Goal(
            "the 800k-segment log under 600 MB peak",
            f"{dxt.get('peak_rss_mb', 'not run')} MB",
            dxt.get("peak_rss_mb", 1e9) < 600,
        ),
    ]
    if "dxt_huge" in result and dxt:
        huge = result["dxt_huge"]
        found += [
            Goal(
                "DXT, the >= 5 M-segment log: >= 1 M segments/s per core, Delta write included",
                f"{huge['segments_per_cpu_s']} segments/CPU-s",
                huge["segments_per_cpu_s"] >= 1e6,
            ),
            Goal(
                ">= 5 M segments under 1 GB peak",
                f"{huge['peak_rss_mb']} MB ({huge['segments']} segments)",
                huge["peak_rss_mb"] < 1000,
            ),
            Goal(
                "the big log's peak within 25 % of the 800k log's",
                f"{huge['peak_rss_mb'] / dxt['peak_rss_mb']:.2f}x",
                huge["peak_rss_mb"] <= 1.25 * dxt["peak_rss_mb"],
            ),
        ]
    return found


if __name__ == "__main__":
    print(json.dumps(str(main())))
