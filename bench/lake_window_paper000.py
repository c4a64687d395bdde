"""Paper 000's two jobs through the trace path at full size: ``burstlake synth --preset
paper000`` writes them as a lake (612 MPI and 612 I/O clients on ``cab1296``, 45 messages and
16 requests each, as ``packet_vs_codes`` runs them), random-node on the benchmark's main seed
and random-switch on another, and ``lake_window`` replays the window under the packet model.
The MPI slowdowns are held to ``packet_vs_codes``'s (burstlake's and CODES' on that seed).

Results: ``bench/results/lake_window_paper000.json``.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

import yaml

from bench import RESULTS, Goal, load_average, write_result
from burstlake.paper000_lake import scenario, write_paper000
from burstlake.replay import paper000 as paper
from burstlake.replay import scenario as sn

RANDOM_SWITCH_SEED = 1
MESSAGES, REQUESTS = 45, 16  # packet_vs_codes's MPI window: enough to fill 20 ms


def slowdown_of(figure: str) -> float:
    """The main seed's slowdown in a ``packet_vs_codes`` cell ("11.7×; 11.4× (...)")."""
    return float(figure.split("×")[0])


def reference() -> dict[str, float]:
    """``packet_vs_codes``'s random-node MPI slowdown on its main seed: burstlake's, CODES'."""
    result = json.loads((RESULTS / "packet_vs_codes.json").read_text())
    row = next(r for r in result["figures"] if r["figure"].startswith("random-node MPI slowdown"))
    return {"burstlake": slowdown_of(row["burstlake_fcfs"]), "codes": slowdown_of(row["codes"])}


def run(placement: str, seed: int, root: Path) -> dict:
    lake = root / placement / "lake"
    t0, c0 = time.perf_counter(), time.process_time()
    written = write_paper000(lake, placement, seed, paper.CLIENTS, MESSAGES, REQUESTS)
    synth_s = time.perf_counter() - t0
    path = root / placement / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario(seed)))
    table = sn.run(sn.load(path), lake)
    scores = {r["metric"]: r["value"] for r in table.to_pylist()}
    mpi = {k.split(".")[-1]: v for k, v in scores.items() if k.startswith("w0.mpi@")}
    io = {k.split(".")[-1]: v for k, v in scores.items() if k.startswith("w0.io@")}
    return {
        "placement": placement,
        "seed": seed,
        "rows_written": written,
        "synth_wall_s": round(synth_s, 2),
        "wall_s": round(time.perf_counter() - t0, 2),
        "cpu_s": round(time.process_time() - c0, 2),
        "events": scores.get("w0.events"),
        "mpi_slowdown": mpi["mpi_slowdown"],
        "mpi_latency_mean_us": mpi["mpi_latency_mean"] * 1e6,
        "mpi_latency_p99_us": mpi["mpi_latency_p99"] * 1e6,
        "mpi_latency_max_us": mpi["mpi_latency_max"] * 1e6,
        "messages": mpi["messages"],
        "io_bytes": io["io_bytes"],
        "io_from_dxt": io["io_from_dxt"],
        "io_slowdown": io["io_slowdown"],
    }


def main() -> Path:
    load = load_average()
    ref = reference()
    with tempfile.TemporaryDirectory() as tmp:
        node = run("random-node", paper.SEED, Path(tmp))
        switch = run("random-switch", RANDOM_SWITCH_SEED, Path(tmp))
    got = node["mpi_slowdown"]
    off_b, off_c = got / ref["burstlake"] - 1, got / ref["codes"] - 1
    goals = [
        Goal(
            f"random-node MPI slowdown within 10 % of packet_vs_codes's burstlake figure on seed "
            f"{paper.SEED}",
            f"{got:.2f}× against {ref['burstlake']}× ({off_b:+.0%})",
            abs(off_b) <= 0.10,
        ),
        Goal(
            f"random-node MPI slowdown within 35 % of CODES' on seed {paper.SEED}",
            f"{got:.2f}× against {ref['codes']}× ({off_c:+.0%})",
            abs(off_c) <= 0.35,
        ),
        Goal(
            "random-switch MPI slowdown at most 2×",
            f"{switch['mpi_slowdown']:.2f}× (seed {RANDOM_SWITCH_SEED})",
            switch["mpi_slowdown"] <= 2.0,
        ),
    ]
    result = {
        "load": f"{load:.1f} at the start",
        "reference": ref | {"source": "bench/results/packet_vs_codes.json (seed 12345)"},
        "runs": [node, switch],
        "notes": [
            "The trace path scores every message of the window (the jobs workload in "
            "packet_vs_codes scores those sent after 5 ms and delivered by 20 ms), and its "
            "MPI partners are lake_window's random pairs drawn from the scenario's seed, "
            "not the jobs workload's: the same rule, another draw.",
            "The I/O job's DXT segments are recorded 2.7 ms apart (000 §3.3) and replayed "
            "each no sooner than its record and after its rank's previous request.",
        ],
    }
    return write_result("lake_window_paper000", result, goals)


if __name__ == "__main__":
    main()
