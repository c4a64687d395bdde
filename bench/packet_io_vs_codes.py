"""Paper 000 §5.1's I/O figure on the packet model against CODES, both run here: the I/O
configuration of §5 (its first paragraph: 4 MB requests 128 ms apart beside 4 MB MPI messages
every 500 µs), random-node placement, I/O alone and beside MPI.

``bench/packet_vs_codes.py`` runs §5's *MPI* configuration (4 KiB messages beside
checkpoint-style I/O, requests back to back). Its I/O slowdown is near 1.0 in both simulators,
as §4.1 and §4.3 find for checkpoint traffic (its interval is below the I/O-congestion
threshold, so MPI barely matters); §5.1's "the average I/O request time increases by 11.8 %" is
of this configuration instead.

The setting is that of ``packet_vs_codes`` (``replay/paper000.py``: ``cab1296``, servers on
leaves 34, 35, 70, 71, static D-mod-k routes, ``nic_delay`` 0 as CODES applies none) with
:data:`paper000.IO_STUDY`'s sizes and intervals. Scored: requests sent from 100 ms and
delivered by 150 ms, one per I/O client. burstlake issues a client's first request 128 ms ×
U(0.95, 1.05) in (a stream's first request starts at its gap); the CODES driver starts every
client within 1 µs of time 0, a synchronized burst of 612 requests that is checkpoint traffic,
so its scored request is the second, issued 128 ms × U(0.95, 1.05) after the first completed.
Both are one spread-out round of requests beside MPI that has run for 100 ms.

``BURSTLAKE_BENCH_SEED`` (default 12345) is the main seed; burstlake runs on
``BURSTLAKE_BENCH_SEEDS`` more (default 1 to 4, as ``packet_vs_codes``), each with its own tie
seed, CODES on the main seed and ``BURSTLAKE_CODES_SEEDS`` (default none more: its MPI + I/O
case is 1.9 G events, 24 minutes of one core here). ``BURSTLAKE_CODES`` points at the CODES build
(``../shared/peers/codes``); without it only burstlake runs. The goal (issue 22): an I/O
slowdown between 1.0 and 1.15 (paper: 1.118), judged on burstlake's mean over its seeds.

Results: ``bench/results/packet_io_vs_codes.json``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from statistics import mean

from bench import STEP_TIMEOUT_S, write_result
from bench.packet_vs_codes import (
    CASES,
    Window,
    burstlake_case,
    codes_case,
    codes_peer,
    io_row,
    main_seed,
    seed_list,
)
from burstlake.replay import paper000 as paper

IO_WINDOW = Window(0.100, 0.150, 200, 2)  # 200 MPI messages of 4 MiB outlast 150 ms
# CODES' MPI + I/O case: 24 CPU-minutes here, over an hour of wall time with the cores shared
CODES_TIMEOUT_S = max(STEP_TIMEOUT_S, 4 * 3600.0)
RUNS = ("rn-io", "rn-both")
GOAL = (1.0, 1.15)


def figures(cases: dict) -> dict:
    """The I/O row (alone, beside MPI, slowdown) with the MPI messages' latency beside I/O and
    the cost of the MPI + I/O run."""
    both = cases["rn-both"]
    return io_row(cases) | {
        "io_p99_alone_us": cases["rn-io"]["io"]["p99_us"],
        "io_p99_both_us": both["io"]["p99_us"],
        "mpi_mean_us": both["mpi"]["mean_us"],
        "mpi_n": both["mpi"]["n"],
        "events_both": both["events"],
    }


def run_seeds(seeds: list[int], case) -> dict[int, dict]:
    """``case(name, seed)`` for both runs on every seed."""
    out = {}
    for seed in seeds:
        out[seed] = {name: case(name, seed) for name in RUNS}
    return out


def main() -> Path:
    seed = main_seed()
    seeds = [seed, *[s for s in seed_list("BURSTLAKE_BENCH_SEEDS", "1,2,3,4") if s != seed]]
    codes_seeds = [seed, *[s for s in seed_list("BURSTLAKE_CODES_SEEDS", "") if s != seed]]
    peer = codes_peer()
    study, window = paper.IO_STUDY, IO_WINDOW

    def ours(name: str, s: int) -> dict:
        print(f"  {name}: burstlake, seed {s}", flush=True)
        return burstlake_case(*CASES[name], s, study=study, window=window)

    def theirs(name: str, s: int) -> dict:
        print(f"  {name}: CODES, seed {s}", flush=True)
        return codes_case(peer, *CASES[name], s, study, window, CODES_TIMEOUT_S)

    burstlake = run_seeds(seeds, ours)
    rows = {s: figures(cases) for s, cases in burstlake.items()}
    slowdown = mean(row["io_slowdown"] for row in rows.values())
    peak = max(case["step_peak_rss_mb"] for cases in burstlake.values() for case in cases.values())
    result: dict = {
        "study": asdict(study),
        "window": window._asdict(),
        "seeds": seeds,
        "burstlake_runs": {str(s): cases for s, cases in burstlake.items()},
        "burstlake_per_seed": {str(s): row for s, row in rows.items()},
        "burstlake_io_slowdown_mean": slowdown,
        "burstlake_peak_rss_mb": peak,
        "paper_io_slowdown": 1.118,
        "goal_io_slowdown_1_to_1_15": GOAL[0] <= slowdown <= GOAL[1],
        "judged_on": f"burstlake's mean over seeds {seeds}",
    }
    if peer is None:
        result["codes"] = "not run: set BURSTLAKE_CODES to a CODES build (shared/peers/codes)"
        return write_result("packet_io_vs_codes", result)
    write_result("packet_io_vs_codes", result | {"codes": "running"})  # kept if CODES fails
    codes = run_seeds(codes_seeds, theirs)
    codes_rows = {s: figures(cases) for s, cases in codes.items()}
    ours_both, codes_both = burstlake[seed]["rn-both"], codes[seed]["rn-both"]
    result |= {
        "codes_seeds": codes_seeds,
        "codes_runs": {str(s): cases for s, cases in codes.items()},
        "codes_per_seed": {str(s): row for s, row in codes_rows.items()},
        "codes_io_slowdown_mean": mean(row["io_slowdown"] for row in codes_rows.values()),
        "speed_rn_both": {
            "burstlake_wall_s": ours_both["simulate_wall_s"],
            "burstlake_cpu_s": ours_both["simulate_cpu_s"],
            "burstlake_events": ours_both["events"],
            "codes_wall_s": codes_both["wall_s"],
            "codes_cpu_s": codes_both["cpu_s"],
            "codes_events": codes_both["events"],
            "speedup_wall": codes_both["wall_s"] / ours_both["simulate_wall_s"],
            "speedup_cpu": codes_both["cpu_s"] / ours_both["simulate_cpu_s"],
            "codes_peak_rss_mb": codes_both["peak_rss_mb"],
        },
    }
    return write_result("packet_io_vs_codes", result)


if __name__ == "__main__":
    print(main())
