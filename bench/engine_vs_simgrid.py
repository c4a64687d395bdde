"""burstlake's flow solver against SimGrid's max-min network model (docs/design.md, "Replay";
paper 000 §3).

Flow sets of several shapes (``BURSTLAKE_BENCH_FLOWS``: comma-separated names of ``SETS``):

- ``random-1k``, ``random-5k``, ``random-20k``: random flows on a two-level fat-tree: hosts with
  a 12.5 GB/s up and down link, leaves joined to every spine by 25 GB/s links each way, routes
  of 4 links (host up, leaf→spine, spine→leaf, host down; the spine by D-mod-k), sizes of
  1–45 MB, starts spread over 10 ms per 1,000 flows (the 5k set is the shape of issue 10: 600
  links, about 1,600 flows in flight);
- ``incast``: clients writing through a few forwarding nodes to servers (one flow each, the
  I/O forwarding layer of paper 000 §2): forwarders and servers both near saturation, so every
  flow is in one component and every completion changes every rate;
- ``burst-20k``: the 20k fat-tree with its flows starting in 20 bursts of 1,000 simultaneous
  starts.

Each set runs through ``burstlake flows`` and, when the system ``python3`` has SimGrid's
bindings (Debian's ``python3-simgrid``), through SimGrid 3.x (CM02, TCP-gamma 0, no cross
traffic, ``bench/_simgrid_flows.py``) driven the fast way (one actor, ``Comm.sendto_async`` at
each start, completions by ``Comm.wait_any``) and, for the random sets, one actor per flow as
a second figure. All run one after the other in one bench run, each in its own process (its
own peak RSS). Every completion time is compared. Wall and CPU seconds of each solver are
reported (on a shared machine the CPU ratio is the steadier one); the figures go to
``bench/results/engine_vs_simgrid.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from bench import Goal, measure, write_result

SYSTEM_PYTHON = "/usr/bin/python3"
SIMGRID_SCRIPT = Path(__file__).resolve().parent / "_simgrid_flows.py"
AGREEMENT = 1e-9  # relative, on every completion time
GOAL = 10  # burstlake at least this many times faster than SimGrid's fast driver
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


def generate(
    flows: int, hosts: int, leaves: int, spines: int, seed: int = 0, bursts: int = 0
) -> dict:
    """A flow document (``burstlake flows`` input) whose flows also name ``src`` and ``dst``:
    random flows on a fat-tree; ``bursts`` > 0 starts them in that many groups of
    simultaneous starts, 20 ms apart."""
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
    if bursts:
        start = np.repeat(np.arange(bursts) * 0.02, -(-flows // bursts))[:flows]
    documents = []
    for s, d, b, t in zip(src, dst, size, start, strict=True):
        spine = (d // leaves) % spines  # D-mod-k over the hosts of a leaf
        route = [f"h{s}-up", f"l{leaf_of[s]}-s{spine}", f"s{spine}-l{leaf_of[d]}", f"h{d}-down"]
        documents.append(
            {"route": route, "size": int(b), "start": float(t), "src": f"h{s}", "dst": f"h{d}"}
        )
    return {"links": links, "flows": documents}


def incast(clients: int, forwarders: int, servers: int, seed: int = 0) -> dict:
    """Clients (one flow each, 1–45 MB, starts over 10 ms) writing through ``forwarders``
    (12.5 GB/s in and out, client ``c`` on forwarder ``c mod forwarders``) to a random server
    (its down link 12.5 GB/s · forwarders / servers): the forwarders and the servers both
    saturate, so the flows form one component."""
    rng = np.random.default_rng(seed)
    links = {f"c{c}-up": HOST_LINK for c in range(clients)}
    for f in range(forwarders):
        links[f"f{f}-in"] = links[f"f{f}-out"] = HOST_LINK
    links |= {f"s{s}-down": HOST_LINK * forwarders / servers for s in range(servers)}
    server = rng.integers(0, servers, clients)
    size = rng.integers(1_000_000, 45_000_000, clients)
    start = np.sort(rng.uniform(0, 0.01, clients))
    documents = []
    for c in range(clients):
        f, s = c % forwarders, server[c]
        documents.append(
            {
                "route": [f"c{c}-up", f"f{f}-in", f"f{f}-out", f"s{s}-down"],
                "size": int(size[c]),
                "start": float(start[c]),
                "src": f"c{c}",
                "dst": f"s{s}",
            }
        )
    return {"links": links, "flows": documents}


# name -> (the flow document, whether SimGrid's per-flow driver runs on it too)
SETS: dict[str, tuple[Callable[[], dict], bool]] = {
    "random-1k": (lambda: generate(1_000, 64, 8, 8), True),
    "random-5k": (lambda: generate(5_000, 200, 10, 10), True),
    "random-20k": (lambda: generate(20_000, 800, 20, 20), True),
    "incast": (lambda: incast(3_000, 6, 24), False),
    "burst-20k": (lambda: generate(20_000, 800, 20, 20, bursts=20), False),
}


def simgrid_available() -> bool:
    if not Path(SYSTEM_PYTHON).exists():
        return False
    probe = [SYSTEM_PYTHON, "-c", "import simgrid"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


def run_simgrid(path: Path, driver: str = "fast") -> dict:
    out = path.with_suffix(f".simgrid-{driver}.json")
    _run([SYSTEM_PYTHON, str(SIMGRID_SCRIPT), str(path), str(out), driver])
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


def compare(ours: dict, theirs: dict, prefix: str) -> dict:
    """SimGrid's figures beside ours: times, ratios and the largest relative difference."""
    relative = np.abs(np.subtract(ours["finish"], theirs["finish"])) / np.abs(theirs["finish"])
    return {
        f"{prefix}_s": theirs["wall_s"],
        f"{prefix}_cpu_s": theirs["cpu_s"],
        f"{prefix}_peak_rss_mb": theirs["peak_rss_mb"],
        f"{prefix}_speedup": theirs["wall_s"] / ours["wall_s"],
        f"{prefix}_speedup_cpu": theirs["cpu_s"] / ours["cpu_s"],
        f"{prefix}_max_relative_difference": float(relative.max()),
    }


def main() -> Path:
    names = os.environ.get("BURSTLAKE_BENCH_FLOWS", ",".join(SETS)).split(",")
    simgrid = simgrid_available()
    if not simgrid:
        print(f"SimGrid's Python bindings are not importable by {SYSTEM_PYTHON}: burstlake only")
    sets = []
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-flows-") as tmp:
        for name in names:
            build, per_flow = SETS[name]
            document = build()
            path = Path(tmp) / f"{name}.json"
            path.write_text(json.dumps(document))
            ours = run_burstlake(path)
            entry = {
                "set": name,
                "flows": len(document["flows"]),
                "links": len(document["links"]),
                "max_in_flight": in_flight(document, ours["finish"]),
                "burstlake_s": ours["wall_s"],
                "burstlake_cpu_s": ours["cpu_s"],
                "burstlake_peak_rss_mb": ours["peak_rss_mb"],
            }
            if simgrid:
                theirs = run_simgrid(path, "fast")
                entry |= {"simgrid_version": theirs["simgrid"]} | compare(ours, theirs, "simgrid")
                entry["agree_1e-9"] = entry["simgrid_max_relative_difference"] <= AGREEMENT
                entry[f"goal_{GOAL}x"] = entry["simgrid_speedup"] >= GOAL
                entry[f"goal_{GOAL}x_cpu"] = entry["simgrid_speedup_cpu"] >= GOAL
                if per_flow:
                    entry |= compare(ours, run_simgrid(path, "per-flow"), "simgrid_per_flow")
            print(json.dumps(entry), flush=True)
            sets.append(entry)
    result = {"simgrid_available": simgrid, "sets": sets}
    goals = None
    if simgrid:
        result[f"goal_{GOAL}x_every_set"] = all(s[f"goal_{GOAL}x"] for s in sets)
        wall = [s["simgrid_speedup"] for s in sets]
        cpu = [s["simgrid_speedup_cpu"] for s in sets]
        worst = max(s["simgrid_max_relative_difference"] for s in sets)
        goals = [
            Goal(
                f"{GOAL}× SimGrid on every set, wall",
                f"{min(wall):.1f}× at least",
                min(wall) >= GOAL,
            ),
            Goal(
                f"{GOAL}× SimGrid on every set, CPU", f"{min(cpu):.1f}× at least", min(cpu) >= GOAL
            ),
            Goal(f"agreement within {AGREEMENT:g}", f"{worst:.1g} at most", worst <= AGREEMENT),
        ]
    return write_result("engine_vs_simgrid", result, goals)


if __name__ == "__main__":
    print(main())
