"""Full-scale synthesizer run: ``tianhe1a`` (24 days, 10 s intervals) straight into a lake.

Measures wall time, peak RSS of the process and rows written, and the headline statistics of
the run (truth labels, node distribution, traffic-weighted top-1 % node and top-20 % cabinet
shares) against the paper's values; writes ``bench/results/synth_full_<preset>.json``.
``python -m bench.synth_full [preset [days]]`` runs another preset. Aim (issue 4): < 10 min
and < 8 GB on a 2-core machine.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from pathlib import Path

from bench import Goal, write_result

GOAL_S = 600  # the full preset in under 10 minutes (issue 4)
GOAL_GB = 8.0  # and under 8 GB of peak RSS


def main(preset: str = "tianhe1a", days: float | None = None) -> Path:
    from burstlake.cli.bars import rendered
    from burstlake.jobs.synth.run import synthesize
    from burstlake.jobs.synth.stats import cabinet_spread, spatial_shares
    from burstlake.lake import read_table
    from burstlake.presets import machine

    with tempfile.TemporaryDirectory(prefix="burstlake-synth-") as lake:
        began = time.perf_counter()
        with rendered() as report:
            written = synthesize(preset, lake=lake, days=days, seed=0, report=report)
        seconds = time.perf_counter() - began
        peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        truth = read_table(lake, "synth_truth").to_pandas()
        spread = cabinet_spread(lake, machine(preset).nodes_per_cabinet)
        spatial = spatial_shares(lake)
    multi = truth[truth.nnodes > 1]
    result = {
        "preset": preset,
        "days": days or machine(preset).days,
        "wall_s": round(seconds, 1),
        "peak_rss_gb": round(peak_gb, 2),
        "rows": written,
        "node_io_rows_per_s": round(written["node_io"] / seconds),
        "truth": {
            "rank0_share": float(multi.rank0.mean()),
            "even_share": float(1 - multi[~multi.rank0.astype(bool)].uneven.mean()),
            "data_intensive_share": float(truth.data_intensive.mean()),
            "data_intensive_traffic_share": float(
                truth.io_bytes[truth.data_intensive].sum() / truth.io_bytes.sum()
            ),
            "low_comm_share": float(truth.low_comm.mean()),
            "optimizable_share": float(truth.optimizable.mean()),
            "min_cabinets_share": float(spread.in_min_cabinets.mean()),
            "uneven_cabinets_share": float((spread[spread.cabinets > 1].cabinet_nud > 0.05).mean()),
            **{name: float(value) for name, value in spatial.items()},
        },
    }
    goals = [
        Goal("the full preset under 10 minutes", f"{seconds:.0f} s", seconds < GOAL_S),
        Goal("under 8 GB of peak RSS", f"{peak_gb:.1f} GB", peak_gb < GOAL_GB),
    ]
    return write_result(f"synth_full_{preset}", result, goals)


if __name__ == "__main__":
    main(*sys.argv[1:2], *(float(d) for d in sys.argv[2:3]))
