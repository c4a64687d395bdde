"""burstlake's flow solver against SimGrid's max-min network model (docs/design.md, "Replay";
paper 000 §3).

Random flow sets of 1k, 5k and 20k flows (``BURSTLAKE_BENCH_FLOWS``, comma-separated) on a
two-level fat-tree: hosts with a 12.5 GB/s up and down link, leaves joined to every spine by
25 GB/s links each way, routes of 4 links (host up, leaf→spine, spine→leaf, host down; the spine
by D-mod-k), sizes of 1–45 MB, starts spread over 10 ms per 1,000 flows. The 5k set is the
shape of issue 10: 600 links, about 1,600 flows in flight. Each set runs through
``burstlake flows`` and, when the system ``python3`` has SimGrid's bindings
(Debian's ``python3-simgrid``), through SimGrid 3.x (CM02, TCP-gamma 0, no cross traffic,
``bench/_simgrid_flows.py``), each in its own process (its own peak RSS). Every completion time
is compared. Wall and CPU seconds of each solver are reported (on a shared machine the CPU
ratio is the steadier one); the figures go to ``bench/results/engine_vs_simgrid.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from bench import measure, write_result

SYSTEM_PYTHON = "/usr/bin/python3"
SIMGRID_SCRIPT = Path(__file__).resolve().parent / "_simgrid_flows.py"
AGREEMENT = 1e-6  # relative, on every completion time
SHAPES = {  # flows: (hosts, leaves, spines) -> 2 hosts + 2 leaves x spines links
    1_000: (64, 8, 8),
    5_000: (200, 10, 10),
    20_000: (800, 20, 20),
}
HOST_LINK = 12.5e9
SPINE_LINK = 25e9

BURSTLAKE = """
import json, resource, sys, time
from burstlake.replay.flows import finish_times, load
from burstlake.replay.flows import FlowSet
flows = load(sys.argv[1])
one = FlowSet(flows.names, flows.capacity, flows.paths.take([0]), flows.size[:1], flows.start[:1])
finish_times(one)  # load the compiled code outside the CPU count
cpu = time.process_time()
finish, wall = finish_times(flows)
cpu = time.process_time() - cpu
print(json.dumps({"finish": finish.tolist(), "wall_s": wall, "cpu_s": cpu,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def generate(flows: int, hosts: int, leaves: int, spines: int, seed: int = 0) -> dict:
    """A flow document (``burstlake flows`` input) whose flows also name ``src`` and ``dst``."""
    rng = np.random.default_rng(seed)
    links = {f"h{h}-up": HOST_LINK for h in range(hosts)}
    links |= {f"h{h}-down": HOST_LINK for h in range(hosts)}
    for leaf in range(leaves):
        for spine in range(spines):
            links[f"l{leaf}-s{spine}"] = SPINE_LINK
            links[f"s{spine}-l{leaf}"] = SPINE_LINK
    leaf_of = np.arange(hosts) % leaves
    src = rng.integers(0, hosts, flows)
    # a destination on another leaf: 4-link routes, as between racks of a fat-tree
    dst = src + leaves * rng.integers(0, hosts // leaves, flows) + rng.integers(1, leaves, flows)
    dst %= hosts
    size = rng.integers(1_000_000, 45_000_000, flows)
    start = np.sort(rng.uniform(0, 1e-5 * flows, flows))
    documents = []
    for s, d, b, t in zip(src, dst, size, start, strict=True):
        spine = (d // leaves) % spines  # D-mod-k over the hosts of a leaf
        route = [f"h{s}-up", f"l{leaf_of[s]}-s{spine}", f"s{spine}-l{leaf_of[d]}", f"h{d}-down"]
        documents.append(
            {"route": route, "size": int(b), "start": float(t), "src": f"h{s}", "dst": f"h{d}"}
        )
    return {"links": links, "flows": documents}


def simgrid_available() -> bool:
    if not Path(SYSTEM_PYTHON).exists():
        return False
    probe = [SYSTEM_PYTHON, "-c", "import simgrid"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def run_simgrid(path: Path) -> dict:
    out = path.with_suffix(".simgrid.json")
    _run([SYSTEM_PYTHON, str(SIMGRID_SCRIPT), str(path), str(out)])
    return json.loads(out.read_text())


def run_burstlake(path: Path) -> dict:
    return json.loads(_run([sys.executable, "-c", BURSTLAKE, str(path)]).splitlines()[-1])


def in_flight(document: dict, finish: list[float]) -> int:
    """The largest number of flows in flight at once."""
    start = np.array([f["start"] for f in document["flows"]])
    times = np.r_[start, finish]
    steps = np.r_[np.ones(len(start)), -np.ones(len(finish))]
    order = np.lexsort((steps, times))  # an end before a start at the same instant
    return int(np.cumsum(steps[order]).max())


def _run(command: list[str]) -> str:
    return measure(command).stdout


def main() -> Path:
    sizes = [int(s) for s in os.environ.get("BURSTLAKE_BENCH_FLOWS", "1000,5000,20000").split(",")]
    simgrid = simgrid_available()
    if not simgrid:
        print(f"SimGrid's Python bindings are not importable by {SYSTEM_PYTHON}: burstlake only")
    sets = []
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-flows-") as tmp:
        for flows in sizes:
            shape = SHAPES.get(flows) or SHAPES[min(SHAPES, key=lambda s: abs(s - flows))]
            document = generate(flows, *shape)
            path = Path(tmp) / f"flows-{flows}.json"
            path.write_text(json.dumps(document))
            ours = run_burstlake(path)
            entry = {
                "flows": flows,
                "links": len(document["links"]),
                "route_links": 4,
                "max_in_flight": in_flight(document, ours["finish"]),
                "burstlake_s": ours["wall_s"],
                "burstlake_cpu_s": ours["cpu_s"],
                "burstlake_peak_rss_mb": ours["peak_rss_mb"],
            }
            if simgrid:
                theirs = run_simgrid(path)
                relative = np.abs(np.subtract(ours["finish"], theirs["finish"])) / np.abs(
                    theirs["finish"]
                )
                entry |= {
                    "simgrid_version": theirs["simgrid"],
                    "simgrid_s": theirs["wall_s"],
                    "simgrid_cpu_s": theirs["cpu_s"],
                    "simgrid_setup_s": theirs["setup_s"],
                    "simgrid_peak_rss_mb": theirs["peak_rss_mb"],
                    "speedup": theirs["wall_s"] / ours["wall_s"],
                    "speedup_cpu": theirs["cpu_s"] / ours["cpu_s"],
                    "max_relative_difference": float(relative.max()),
                    "agree_1e-6": bool(relative.max() <= AGREEMENT),
                }
            print(json.dumps(entry), flush=True)
            sets.append(entry)
    result = {"simgrid_available": simgrid, "sets": sets}
    five = [s for s in sets if s["flows"] == 5_000 and "speedup" in s]
    if five:
        result["goal_10x_simgrid_at_5k"] = five[0]["speedup"] >= 10
        result["goal_10x_simgrid_at_5k_cpu"] = five[0]["speedup_cpu"] >= 10
    return write_result("engine_vs_simgrid", result)


if __name__ == "__main__":
    print(main())
