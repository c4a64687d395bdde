"""The lake's windows fanned out on Spark (docs/design.md, "The lake's jobs at two fidelities";
issue 37): 20 window runs (window × policy × together or alone) under the packet model, once in
one local process and once as Spark tasks on a loopback standalone cluster (a master and one
worker started by ``infra/spark-standalone.sh`` from the installed pyspark), writing the same
rows.

The lake is a synthesized ``tiny`` machine (one day); the windows are among its 200 busiest 10-s
windows by ION load (``busiest``): the most of them whose runs (together, then each job alone,
under 2 policies) come to 20. Each replay runs in its own process (``python_step``); the
cluster's worker and executor processes are not its children, so the Spark step's CPU and peak
RSS are the driver's alone. Results: ``bench/results/lake_window_fanout.json``.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import Goal, load_average, python_step, write_result

RUNS = 20  # window × policy × together-or-alone runs, the count
POLICIES = ["given", "random-node"]
SCRIPT = Path(__file__).resolve().parents[1] / "infra" / "spark-standalone.sh"

SYNTH = """
from burstlake.jobs.synth.run import synthesize
synthesize("tiny", lake={lake!r}, days=1, seed=1)
"""

PICK = """
import json
from burstlake.lake import cluster_of
from burstlake.replay import topologies
from burstlake.replay.windows import busiest
from burstlake.replay.workloads import lake_window

lake = cluster_of({lake!r})
topology = topologies.build({{"name": "lake"}}, lake)
candidates = []
for window in busiest(lake, topology, 200, 10, "ion"):
    spec = {{"source": "lake_window", "window": {{"start": window.start.isoformat(),
             "end": window.end.isoformat()}}}}
    jobs = len(lake_window.demand(spec, topology, lake).windows[0].jobs)
    candidates.append(spec["window"] | {{"jobs": jobs, "ion_bytes": window.value}})
best = {{0: []}}  # runs per policy -> the most windows needing exactly that many
for each in candidates:
    cost = 1 + each["jobs"]
    for total, chosen in list(best.items()):  # each window once
        need = total + cost
        if each["jobs"] and need * {policies} <= {runs} and len(best.get(need, [])) <= len(chosen):
            best[need] = [*chosen, each]
most = max(best)
picked, runs = list(best[most]), most * {policies}
picked.sort(key=lambda c: c["start"])
print(json.dumps({{"windows": picked, "runs": runs}}))
"""

REPLAY = """
import json, time
import yaml
from pathlib import Path
from burstlake.replay import scenario

spec = {{"name": "fanout", "workload": {workload!r}, "topology": "lake", "model": "packet",
        "policies": {policies!r}, "job_scores": True}}
path = Path({scratch!r}) / "fanout-{label}.yaml"
path.write_text(yaml.safe_dump(spec))
t0 = time.perf_counter()
rows = scenario.run(scenario.load(path), {lake!r})
took = time.perf_counter() - t0
keep = rows.select(["policy", "metric", "value", "unit"]).to_pylist()
Path({scratch!r}, "rows-{label}.json").write_text(json.dumps(keep))
print(json.dumps({{"replay_s": took, "rows": len(keep)}}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> Path:
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-") as scratch:
        lake = str(Path(scratch) / "lake")
        synth = python_step(SYNTH.format(lake=lake))
        picked = python_step(PICK.format(lake=lake, policies=len(POLICIES), runs=RUNS))
        windows = [{"start": w["start"], "end": w["end"]} for w in picked["windows"]]
        workload = {"source": "lake_window", "windows": windows, "request_bytes": 1048576}
        load_before = load_average()
        local = python_step(
            REPLAY.format(
                workload=workload, policies=POLICIES, scratch=scratch, label="local", lake=lake
            )
        )
        env = os.environ | {"PYTHON": sys.executable, "BURSTLAKE_SPARK_DIR": f"{scratch}/spark"}
        start = [str(SCRIPT), "start", "--port", str(_free_port()), "--cores", "2"]
        try:
            started = subprocess.run(
                [*start, "--memory", "2g"], env=env, capture_output=True, text=True, timeout=600
            )
            if started.returncode:
                raise RuntimeError(f"the standalone cluster did not start: {started.stderr}")
            master = started.stdout.strip().splitlines()[-1]
            spark = python_step(
                REPLAY.format(
                    workload=workload | {"spark_master": master},
                    policies=POLICIES,
                    scratch=scratch,
                    label="spark",
                    lake=lake,
                )
            )
        finally:
            subprocess.run([str(SCRIPT), "stop"], env=env, timeout=120, check=False)
        rows = {
            label: json.loads((Path(scratch) / f"rows-{label}.json").read_text())
            for label in ("local", "spark")
        }
    identical = rows["local"] == rows["spark"] and len(rows["local"]) > 0
    differing = sum(a != b for a, b in zip(rows["local"], rows["spark"], strict=False))
    goals = [
        Goal(
            "20 window runs fanned out on the loopback Spark standalone cluster write rows "
            "identical to the local run's",
            f"{picked['runs']} runs ({len(windows)} windows × {len(POLICIES)} policies × "
            f"together and each job alone): {len(rows['local'])} rows, "
            + ("identical" if identical else f"{differing} rows differ"),
            identical and picked["runs"] == RUNS,
        )
    ]
    return write_result(
        "lake_window_fanout",
        {
            "preset": "tiny",
            "days": 1,
            "model": "packet",
            "policies": POLICIES,
            "windows": picked["windows"],
            "runs": picked["runs"],
            "rows": len(rows["local"]),
            "identical": identical,
            "synth": synth,
            "local": local,
            "spark_standalone": spark | {"workers": 1, "cores": 2},
            "load_average_1min_before_replays": load_before,
            "notes": [
                "spark_standalone's step_cpu_s and step_peak_rss_mb are the driver's: the "
                "cluster's worker and executors are not its children; its wall time includes "
                "starting the driver's JVM and the executor",
            ],
        },
        goals,
    )


if __name__ == "__main__":
    main()
