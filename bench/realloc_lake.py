"""A reallocation what-if over a synthesized Tianhe-1A week (paper 004 §6.4, §7.4).

1. ``burstlake synth --preset tianhe1a --days N`` (``BURSTLAKE_BENCH_DAYS``, default 7);
2. ``burstlake metrics`` (Spark): ``job_io_metrics``, which the reallocation predicts from;
3. the what-if: the lake's jobs replayed in start order on ``tianhe1a`` under Slurm's actual
   placement (``given``), a fresh Slurm best fit (``best-fit``) and the reallocations
   (``even-node``, ``even-traffic``), each with every job alone for its slowdown.

Times each step (wall, peak RSS) and records the scores that answer the question: the top-10 %
ION share, ION load NUD, job slowdown and the mean hops between a job's nodes.
Results: ``bench/results/realloc_lake.json``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from bench import measure, write_result

SCENARIO = """\
name: bench_realloc
workload: {source: lake}
topology: {name: tianhe1a}
policies: [given, best-fit, even-node, even-traffic]
"""

REPLAY = """
import json, time
from burstlake.replay.scenario import load, run
t0 = time.perf_counter()
table = run(load({path!r}), {lake!r})
print(json.dumps({{"what_if_s": time.perf_counter() - t0, "rows": table.to_pylist()}},
                 default=str))
"""

METRICS = (
    "top10_ion_share",
    "ion_load_nud",
    "ion_load_max_over_mean",
    "backlog_seconds",
    "job_slowdown_mean",
    "job_pair_hops_mean",
    "jobs_with_io",
)


def main() -> Path:
    days = float(os.environ.get("BURSTLAKE_BENCH_DAYS", "7"))
    cli = [str(Path(sys.executable).parent / "burstlake")]
    with tempfile.TemporaryDirectory(prefix="burstlake-bench-realloc-") as tmp:
        lake = str(Path(tmp) / "lake")
        synth_s, _, synth_mb, _ = measure(
            [*cli, "synth", "--preset", "tianhe1a", "--days", str(days), "--lake", lake]
        )
        metrics_s, _, metrics_mb, _ = measure([*cli, "metrics", "--lake", lake])
        path = Path(tmp) / "bench_realloc.yaml"
        path.write_text(SCENARIO)
        wall_s, _, replay_mb, out = measure(
            [sys.executable, "-c", REPLAY.format(path=str(path), lake=lake)]
        )
    replay = json.loads(out.strip().splitlines()[-1])
    scores = {
        f"{r['policy']}.{r['metric']}": r["value"] for r in replay["rows"] if r["metric"] in METRICS
    }
    result = {
        "tianhe1a_days": days,
        "synth_s": synth_s,
        "synth_peak_mb": synth_mb,
        "metrics_s": metrics_s,
        "metrics_peak_mb": metrics_mb,
        "what_if_s": replay["what_if_s"],
        "what_if_wall_s": wall_s,
        "what_if_peak_mb": replay_mb,
        "policies": ["given", "best-fit", "even-node", "even-traffic"],
        "scores": scores,
        "reallocation_lowers_top10_share": scores["even-traffic.top10_ion_share"]
        < scores["best-fit.top10_ion_share"],
    }
    return write_result("realloc_lake", result)


if __name__ == "__main__":
    print(main())
