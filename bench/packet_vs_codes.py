"""The packet model against CODES on paper 000's own setting (§3.1, §3.2, §5.1), both run here,
one after the other, in one process tree each (wall, CPU, events, peak memory).

The setting, the same for both: a 3-level fat-tree of 36-port switches (1,296 nodes, 12.5 GB/s
links, 60 ns router delay, 4 KiB packets, 64 KiB buffers per port), static D-mod-k routing,
72 I/O servers on leaves 34, 35, 70, 71 (isolated-target), 612 MPI clients sending 4 KiB to a
random partner 500 µs × U(0.95, 1.05) after the previous message completed, 612 I/O clients
writing 4 MiB requests back to back round robin over the servers; latencies of the messages
sent after 5 ms and delivered by 20 ms. CODES' fat-tree model reads ``soft_delay`` but never
applies it, so burstlake runs with ``nic_delay: 0`` here (its default, 1 µs, is the NIC
overhead paper 000's configuration names).

CODES is the peer (``../shared/peers/codes``: ``build.sh ROSS_SRC CODES_SRC PREFIX``); point
``BURSTLAKE_CODES`` at that PREFIX. Without it only burstlake's side runs, and the result says
so. ``BURSTLAKE_BENCH_SEED`` sets the main seed (default 12345, CODES' default); the speed
comparison is on it (the best of ``SPEED_RUNS`` runs of the MPI + I/O case). Both simulators
run every case on ``BURSTLAKE_BENCH_SEEDS`` placement seeds (default the main seed and 1 to 4;
``BURSTLAKE_CODES_SEEDS`` narrows CODES' to a subset, the main seed always in it): CODES costs
about 2 minutes per seed on a quiet machine (three MPI + I/O cases of about 40 s), so the five
seeds take about 10 minutes beside burstlake's 6. burstlake runs each seed with its own
``tie_seed`` (the placement seed: simultaneous events in a seeded random order, as ROSS orders
them), under each output arbitration (``fcfs``, the default and CODES' fat-tree rule, and
``round-robin``). Every figure is reported per seed, as mean, min and max over seeds, and as
burstlake minus CODES seed by seed. A seed is the same *number* for both, not the same nodes:
the CODES driver draws its roles with its own xorshift and its start phases and first servers
from ROSS's generators, burstlake from NumPy's, so the per-seed differences are of two
independent draws. The event order alone moves the I/O slowdown by about 1 % at one
placement: ``BURSTLAKE_BENCH_TIE_SEEDS`` (default 101 to 104; empty for none) reruns the
random-node I/O cases on the main seed under other tie seeds and reports that spread. The goals
are judged on burstlake's mean over seeds, the random-node one against CODES' mean over its
seeds; the main seed's figures against CODES' on it are written beside them.

Results: ``bench/results/packet_vs_codes.json``.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from statistics import mean, stdev
from typing import NamedTuple

from bench import STEP_TIMEOUT_S, measure, python_step, write_result
from burstlake.replay import paper000 as paper
from burstlake.replay.packet import ARBITRATIONS


class Window(NamedTuple):
    """What a run scores: messages sent from ``warmup_s`` and delivered by ``end_s``, the run's
    end; ``messages`` per MPI client and ``requests`` per I/O client are enough to fill it."""

    warmup_s: float
    end_s: float
    messages: int
    requests: int


MPI_WINDOW = Window(5e-3, 20e-3, 45, 16)  # the CODES driver's: 5 ms warm-up, 20 ms end
CASES = {  # name: (placement, jobs in the run)
    "rn-mpi": ("random-node", ("mpi",)),
    "rn-io": ("random-node", ("io",)),
    "rn-both": ("random-node", ("mpi", "io")),
    "rs-mpi": ("random-switch", ("mpi",)),
    "rs-both": ("random-switch", ("mpi", "io")),
}
CODES_MODE = {("mpi",): 0, ("io",): 1, ("mpi", "io"): 2}
SPEED_RUNS = 3  # burstlake's runs of the MPI + I/O case on the main seed; the best is timed

RUN = """
import json, time
import numpy as np
from burstlake.replay import traffic as tr
from burstlake.replay.requests import Requests
from burstlake.replay.packet import PacketSettings, simulate
from burstlake.replay.solver import Paths
from burstlake.replay.topologies import build
from burstlake.replay.workloads import jobs

topology = build({topology!r})
settings = PacketSettings(nic_delay=0.0, tie_seed={tie}, arbitration={arbitration!r})
tiny = Requests(np.zeros(1, dtype=np.int64), np.ones(1), np.zeros(1), Paths.from_lists([[0]]))
simulate(tiny, np.ones(1), settings)  # compile, or load Numba's cached code
spec = {spec!r}
demand = jobs.demand(spec, topology)
chosen = [job for job in demand.jobs if job.name in {kinds}]
routed = tr.requests(topology, [(job.traffic, job.nodes) for job in chosen])
t0, c0 = time.perf_counter(), time.process_time()
timeline = simulate(routed.requests, topology.resources.capacity, settings, until={end},
                    switch_port=topology.resources.is_switch_port)
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
kept = (timeline.start >= {warmup}) & np.isfinite(timeline.end)
out = {{"simulate_wall_s": wall, "simulate_cpu_s": cpu, "events": timeline.events,
        "peak_packets": timeline.peak_packets}}
for kind in {kinds}:
    lat = (timeline.end - timeline.start)[kept & (routed.requests.kind == kind)] * 1e6
    out[kind] = {{"n": int(len(lat))}}
    if len(lat):
        out[kind] |= {{"mean_us": float(lat.mean()), "p50_us": float(np.percentile(lat, 50)),
                      "p99_us": float(np.percentile(lat, 99)), "max_us": float(lat.max())}}
print(json.dumps(out))
"""

CODES_LINE = re.compile(r"IOMPI (MPI-latency|IO-request-latency): n=(\d+) mean_us=([\d.]+).*?"
                        r"p50_us=([\d.]+).*?p99_us=([\d.]+) max_us=([\d.]+)")  # fmt: skip
EVENTS = re.compile(r"Net Events Processed\s+(\d+)")


def burstlake_case(
    placement: str,
    kinds: tuple[str, ...],
    seed: int,
    arbitration: str = ARBITRATIONS[0],
    tie: int | None = None,
    study: paper.Study = paper.MPI_STUDY,
    window: Window = MPI_WINDOW,
) -> dict:
    """One case of ``study`` on placement seed ``seed`` scored over ``window``, its events tied
    by ``tie`` (default the seed)."""
    spec = paper.workload(placement, window.messages, window.requests, seed=seed, study=study)
    code = RUN.format(
        tie=seed if tie is None else tie,
        arbitration=arbitration,
        topology=paper.TOPOLOGY,
        spec=spec,
        kinds=list(kinds),
        end=window.end_s,
        warmup=window.warmup_s,
    )
    return python_step(code)


def codes_options(
    placement: str,
    kinds: tuple[str, ...],
    seed: int,
    study: paper.Study = paper.MPI_STUDY,
    window: Window = MPI_WINDOW,
) -> list[str]:
    """The CODES driver's options for one case (times in ns, as ``run.sh`` gives them)."""
    ns = 1e9
    return [
        "--synch=1",
        f"--warmup={window.warmup_s * ns:.0f}",
        f"--end={window.end_s * ns:.0f}",
        f"--mpi_size={study.mpi_bytes}",
        f"--mpi_interval={study.mpi_interval_s * ns:.0f}",
        f"--io_size={study.io_bytes}",
        f"--io_interval={study.io_interval_s * ns:.0f}",
        f"--placement={int(placement == 'random-switch')}",
        f"--mode={CODES_MODE[kinds]}",
        f"--seed={seed}",
        f"--server_leaves={','.join(map(str, paper.SERVER_LEAVES))}",
    ]


def codes_case(
    prefix: Path,
    placement: str,
    kinds: tuple[str, ...],
    seed: int,
    study: paper.Study = paper.MPI_STUDY,
    window: Window = MPI_WINDOW,
    timeout_s: float = STEP_TIMEOUT_S,
) -> dict:
    """One case of the CODES driver (sequential mode), as ``run.sh`` runs it."""
    binary = prefix / "bin" / "model-net-io-mpi-fattree"
    config = prefix / "ft3-k36-n1296-static.conf"
    options = codes_options(placement, kinds, seed, study, window)
    with tempfile.TemporaryDirectory() as work:
        step = measure([str(binary), *options, "--", str(config)], timeout_s, cwd=work)
    out: dict = {"wall_s": step.wall_s, "cpu_s": step.cpu_s, "peak_rss_mb": step.peak_mb}
    found = EVENTS.search(step.stdout)
    out["events"] = int(found.group(1)) if found else None
    for match in CODES_LINE.finditer(step.stdout):
        kind = "mpi" if match.group(1) == "MPI-latency" else "io"
        n, mean, p50, p99, top = match.groups()[1:]
        out[kind] = {
            "n": int(n),
            "mean_us": float(mean),
            "p50_us": float(p50),
            "p99_us": float(p99),
            "max_us": float(top),
        }
    return out


def io_slowdown(cases: dict) -> float:
    """Random-node mean I/O request time beside MPI over alone (paper 000 §5.1)."""
    return cases["rn-both"]["io"]["mean_us"] / cases["rn-io"]["io"]["mean_us"]


def slowdowns(cases: dict) -> dict:
    """Mean MPI slowdown under each placement, I/O slowdown, max MPI latency over alone."""

    def mean(case: str, kind: str) -> float:
        return cases[case][kind]["mean_us"]

    return {
        "random_node_mpi_slowdown": mean("rn-both", "mpi") / mean("rn-mpi", "mpi"),
        "random_switch_mpi_slowdown": mean("rs-both", "mpi") / mean("rs-mpi", "mpi"),
        "io_slowdown": io_slowdown(cases),
        "max_mpi_latency_over_alone_mean": cases["rn-both"]["mpi"]["max_us"]
        / mean("rn-mpi", "mpi"),
    }


def over_seeds(shapes: dict[int, dict]) -> dict:
    """Every figure's mean, min and max over the seeds' ``slowdowns``."""
    figures = next(iter(shapes.values()))
    out = {}
    for figure in figures:
        values = [shape[figure] for shape in shapes.values()]
        out[figure] = {"mean": mean(values), "min": min(values), "max": max(values)}
    return out


def differences(ours: dict[int, dict], theirs: dict[int, dict]) -> dict:
    """burstlake's figures minus CODES' seed by seed, on the seeds both ran, and their mean."""
    common = [s for s in ours if s in theirs]
    per_seed = {
        str(s): {f: ours[s][f] - theirs[s][f] for f in theirs[s] if f in ours[s]} for s in common
    }
    figures = next(iter(per_seed.values()))
    return {
        "per_seed": per_seed,
        "mean": {f: mean(d[f] for d in per_seed.values()) for f in figures},
    }


def io_row(cases: dict) -> dict:
    """The random-node I/O mean request time alone and beside MPI (µs), the requests counted in
    each, and their ratio: the I/O slowdown of :func:`slowdowns` and what it is made of."""
    alone, both = cases["rn-io"]["io"], cases["rn-both"]["io"]
    return {
        "alone_us": alone["mean_us"],
        "both_us": both["mean_us"],
        "alone_n": alone["n"],
        "both_n": both["n"],
        "io_slowdown": io_slowdown(cases),
    }


def io_table(runs: dict[int, dict]) -> dict:
    """:func:`io_row` per seed."""
    return {str(s): io_row(cases) for s, cases in runs.items()}


def io_order_spread(seed: int, ties: list[int]) -> dict:
    """The random-node I/O slowdown on placement seed ``seed`` under other tie seeds (the
    default arbitration): how far the order of simultaneous events alone moves it."""
    shapes = {}
    for tie in ties:
        print(f"  rn-io, rn-both: burstlake, seed {seed}, tie seed {tie}", flush=True)
        cases = {name: burstlake_case(*CASES[name], seed, tie=tie) for name in ("rn-io", "rn-both")}
        shapes[tie] = io_row(cases)
    values = [shape["io_slowdown"] for shape in shapes.values()]
    return {
        "seed": seed,
        "per_tie_seed": {str(t): shape for t, shape in shapes.items()},
        "io_slowdown": {"mean": mean(values), "sd": stdev(values) if len(values) > 1 else 0.0},
    }


def goals(shape: dict, codes: dict) -> dict:
    """The issue's shape goals for one set of figures against CODES' (the same seed's, or the
    mean over seeds beside burstlake's mean)."""
    return {
        "random_node_within_35pct_of_codes": abs(
            shape["random_node_mpi_slowdown"] / codes["random_node_mpi_slowdown"] - 1
        )
        <= 0.35,
        "random_switch_at_most_2x": shape["random_switch_mpi_slowdown"] <= 2,
        "io_slowdown_1_to_1_15": 1.0 <= shape["io_slowdown"] <= 1.15,
        "max_mpi_at_least_100x_alone": shape["max_mpi_latency_over_alone_mean"] >= 100,
    }


def seed_list(name: str, default: str) -> list[int]:
    """The seeds of environment variable ``name`` (``default`` if unset): comma-separated
    integers >= 0, each once; a one-line error naming the variable otherwise."""
    text = os.environ.get(name, default)
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not all(part.isdigit() for part in parts):
        raise SystemExit(f"{name}={text!r}: give comma-separated integers >= 0")
    seeds = [int(part) for part in parts]
    if len(set(seeds)) < len(seeds):
        raise SystemExit(f"{name}={text!r}: a seed is named twice")
    return seeds


def main_seed() -> int:
    """``BURSTLAKE_BENCH_SEED``: the one placement seed speed and CODES' figures are taken on."""
    seeds = seed_list("BURSTLAKE_BENCH_SEED", str(paper.SEED))
    if len(seeds) != 1:
        raise SystemExit(f"BURSTLAKE_BENCH_SEED: give one seed, got {seeds}")
    return seeds[0]


def codes_peer() -> Path | None:
    """``BURSTLAKE_CODES``: the CODES build (``../shared/peers/codes``), None when unset."""
    prefix = os.environ.get("BURSTLAKE_CODES")
    peer = Path(prefix) if prefix else None
    if peer is not None and not (peer / "bin" / "model-net-io-mpi-fattree").exists():
        raise SystemExit(f"BURSTLAKE_CODES={peer}: no bin/model-net-io-mpi-fattree there")
    return peer


def main() -> Path:
    seed = main_seed()
    others = ",".join(str(s) for s in (1, 2, 3, 4) if s != seed)
    seeds = [seed, *[s for s in seed_list("BURSTLAKE_BENCH_SEEDS", others) if s != seed]]
    wanted = {seed, *seed_list("BURSTLAKE_CODES_SEEDS", ",".join(map(str, seeds)))}
    codes_seeds = [s for s in seeds if s in wanted]
    ties = seed_list("BURSTLAKE_BENCH_TIE_SEEDS", "101,102,103,104")
    peer = codes_peer()
    ours = {arb: {s: {} for s in seeds} for arb in ARBITRATIONS}
    theirs: dict = {s: {} for s in codes_seeds}
    for name, (placement, kinds) in CASES.items():
        for arb in ARBITRATIONS:
            for s in seeds:
                print(f"  {name}: burstlake {arb}, seed {s}", flush=True)
                ours[arb][s][name] = burstlake_case(placement, kinds, s, arb)
        for s in codes_seeds if peer is not None else []:
            print(f"  {name}: CODES, seed {s}", flush=True)
            theirs[s][name] = codes_case(peer, placement, kinds, s)
    main_runs = ours[ARBITRATIONS[0]]  # the default arbitration
    speed_runs = [main_runs[seed]["rn-both"]]
    for _ in range(SPEED_RUNS - 1):
        print("  rn-both: burstlake again (speed)", flush=True)
        speed_runs.append(burstlake_case(*CASES["rn-both"], seed))
    shapes = {arb: {s: slowdowns(ours[arb][s]) for s in seeds} for arb in ARBITRATIONS}
    spread = {arb: over_seeds(shapes[arb]) for arb in ARBITRATIONS}
    result: dict = {
        "seed": seed,
        "seeds": seeds,
        "arbitrations": list(ARBITRATIONS),
        "burstlake": main_runs[seed],
        "burstlake_shape": shapes[ARBITRATIONS[0]][seed],
        "burstlake_shape_per_seed": {
            arb: {str(s): shapes[arb][s] for s in seeds} for arb in ARBITRATIONS
        },
        "burstlake_shape_over_seeds": spread,
        "burstlake_runs": {arb: {str(s): ours[arb][s] for s in seeds} for arb in ARBITRATIONS},
    }
    if ties:
        result["burstlake_io_slowdown_over_tie_seeds"] = io_order_spread(seed, ties)
    if peer is None:
        result["codes"] = "not run: set BURSTLAKE_CODES to a CODES build (shared/peers/codes)"
        return write_result("packet_vs_codes", result)
    codes_shapes = {s: slowdowns(theirs[s]) for s in codes_seeds}
    codes_shape, codes_spread = codes_shapes[seed], over_seeds(codes_shapes)
    best_wall = min(run["simulate_wall_s"] for run in speed_runs)
    best_cpu = min(run["simulate_cpu_s"] for run in speed_runs)
    peak = max(
        case["step_peak_rss_mb"]
        for runs in ours.values()
        for seeded in runs.values()
        for case in seeded.values()
    )
    codes_rn_both = theirs[seed]["rn-both"]
    result |= {
        "codes_seeds": codes_seeds,
        "codes": theirs[seed],
        "codes_shape": codes_shape,
        "codes_runs": {str(s): cases for s, cases in theirs.items()},
        "codes_shape_per_seed": {str(s): shape for s, shape in codes_shapes.items()},
        "codes_shape_over_seeds": codes_spread,
        "io_per_seed": {"burstlake": io_table(main_runs), "codes": io_table(theirs)},
        "burstlake_minus_codes": {
            arb: differences(shapes[arb], codes_shapes) for arb in ARBITRATIONS
        },
        "codes_version": "ROSS 9b6ccb18, CODES a5958cfa + shared/peers/codes patch, sequential",
        "speed_rn_both": {
            "arbitration": ARBITRATIONS[0],
            "burstlake_best_wall_s": best_wall,
            "burstlake_best_cpu_s": best_cpu,
            "burstlake_runs": len(speed_runs),
            "burstlake_ns_per_event_cpu": best_cpu / speed_runs[0]["events"] * 1e9,
            "codes_wall_s": codes_rn_both["wall_s"],
            "codes_cpu_s": codes_rn_both["cpu_s"],
        },
        "speedup_rn_both_wall": codes_rn_both["wall_s"] / best_wall,
        "speedup_rn_both_cpu": codes_rn_both["cpu_s"] / best_cpu,
        "goals_main_seed": {arb: goals(shapes[arb][seed], codes_shape) for arb in ARBITRATIONS},
        "goals": {
            arb: goals(
                {f: v["mean"] for f, v in spread[arb].items()},
                {f: v["mean"] for f, v in codes_spread.items()},
            )
            for arb in ARBITRATIONS
        }
        | {
            "judged_on": f"burstlake's mean over seeds {seeds}, CODES' over {codes_seeds}",
            "ten_times_faster_than_codes": codes_rn_both["wall_s"] / best_wall >= 10,
            "peak_memory_under_2gb": peak < 2048,
        },
    }
    return write_result("packet_vs_codes", result)


if __name__ == "__main__":
    print(main())
