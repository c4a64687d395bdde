"""A preset's calibrated figures over synthesizer seeds: every seed, the mean and its interval.

The synthesizer is calibrated to the mean over seeds, not to one draw (docs/design.md, "Seeds
and spread"). ``bench/ion_remap.py`` does it for Tianhe-1A's month through the lake and the
replay; this does it for any preset on the trace in memory (:func:`trace_shares`, the offered
traffic, no lake): ``python -m bench.synth_seeds [preset [days [seeds]]]``, by default CS19
over seeds 0-4 of ten days, each seed its own process, two at a time. Reported beside paper
004's values for the preset:

- Table 3's job shares (data-intensive, all-rank, low-communication, optimizable) and the
  data-intensive share of the bytes (§6.2);
- the busiest 1 % of nodes' share of the traffic (§4.1: 90.8 % on Tianhe-1A, 96.6 % on CS19);
- the busiest 10 % of IONs' share under block and cyclic mapping, and the reduction
  (§7.4.1, Fig. 15c: 58.6 % → 37.9 % on Tianhe-1A; §7.4.2, Fig. 16c: "almost 1/3" on CS19);
- the distinct IONs serving the busiest 1 % of nodes, cyclic over block (§7.5, Fig. 17a:
  "about twice as many", CS19).

Results: ``bench/results/synth_seeds_<preset>.json``.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from bench import Goal, load_average, python_step, write_result
from bench.ion_remap import BUSIEST_RATIO_PAPER, PAPER, over_seeds

DAYS = 10.0
SEEDS = 5
WORKERS = 2  # the machine's two cores
# how far the mean over seeds may sit from the paper, per figure (fractions)
TOLERANCE = {
    "top10_ion_share_block": 0.03,
    "top10_ion_share_cyclic": 0.03,
    "top_node_share": 0.03,
    "data_intensive_jobs": 0.02,
    "all_rank_jobs": 0.02,
    "low_comm_jobs": 0.02,
    "optimizable_jobs": 0.02,
    "data_intensive_traffic": 0.02,
    "top10_ion_share_reduction": 0.05,
    "busiest1pct_ions_ratio": 0.2,
}

RUN = """
import json
from burstlake.jobs.synth.run import build_trace
from burstlake.jobs.synth.stats import trace_shares
print(json.dumps(trace_shares(build_trace({preset!r}, {days}, {seed}))))
"""


def one_seed(preset: str, days: float, seed: int) -> dict:
    """One seed's span in memory: its figures under the names of ``bench/ion_remap.py``."""
    got = python_step(RUN.format(preset=preset, days=days, seed=seed))
    block, cyclic = got["top_ion_share"], got["top_ion_share_cyclic"]
    used = got["busiest1pct_nodes_ions_block"], got["busiest1pct_nodes_ions_cyclic"]
    return {
        "seed": seed,
        "top10_ion_share_block": block,
        "top10_ion_share_cyclic": cyclic,
        "top10_ion_share_reduction": 1 - cyclic / block if block else None,
        "busiest1pct_nodes_ions_block": used[0],
        "busiest1pct_nodes_ions_cyclic": used[1],
        "busiest1pct_ions_ratio": used[1] / used[0] if used[0] else None,
        **{k: got[k] for k in TOLERANCE if k in got},
        "step_cpu_s": got["step_cpu_s"],
        "step_wall_s": got["step_wall_s"],
        "step_peak_rss_mb": got["step_peak_rss_mb"],
    }


def main(preset: str = "cs19", days: float = DAYS, seeds: int = SEEDS) -> Path:
    paper = PAPER.get(preset, {}) | {"busiest1pct_ions_ratio": BUSIEST_RATIO_PAPER}
    started, loads = time.perf_counter(), [load_average()]
    with ProcessPoolExecutor(WORKERS) as pool:  # each step's CPU counted in its own worker
        runs = list(pool.map(one_seed, [preset] * seeds, [days] * seeds, range(seeds)))
    loads.append(load_average())
    summary, goals = {}, []
    for key, tolerance in TOLERANCE.items():
        got = over_seeds([run[key] for run in runs])
        target = paper.get(key)
        summary[key] = {
            **got,
            "paper": target,
            "mean_minus_paper": None if target is None else got["mean"] - target,
        }
        if target is None:
            continue
        ratio = key == "busiest1pct_ions_ratio"
        shown = (
            f"{got['mean']:.2f} ({got['low']:.2f}-{got['high']:.2f})"
            if ratio
            else (
                f"{got['mean']:.1%} ({got['low']:.1%}-{got['high']:.1%}), "
                f"{100 * (got['mean'] - target):+.1f} points"
            )
        )
        paper_shown = f"{target:.2f}" if ratio else f"{target:.1%}"
        goals.append(
            Goal(
                f"{key}: mean over {seeds} seeds within {tolerance:g} of 004's {paper_shown}",
                shown,
                abs(got["mean"] - target) <= tolerance,
            )
        )
    result = {
        "preset": preset,
        "days": days,
        "seeds": seeds,
        "figures_from": "the trace in memory (trace_shares: offered traffic, no lake)",
        "summary": summary,
        "tolerance": TOLERANCE,
        "paper": paper,
        "wall_s": time.perf_counter() - started,
        "cpu_s": sum(run["step_cpu_s"] for run in runs),
        "load_average_1min_during": f"{min(loads):.1f}-{max(loads):.1f}",
        "runs": runs,
    }
    return write_result(f"synth_seeds_{preset}", result, goals)


if __name__ == "__main__":
    main(
        *sys.argv[1:2],
        *(float(d) for d in sys.argv[2:3]),
        *(int(n) for n in sys.argv[3:4]),
    )
