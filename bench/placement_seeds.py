"""The shipped ``placement_fattree`` scenario (paper 000 §5.1-5.2 at reduced size, packet model)
on five seeds (docs/design.md, "Seeds and spread"): each run draws the MPI partners, the first
placement, every random policy and the packet model's tie order from its seed.

Reported: per policy and seed the MPI and I/O slowdowns, each policy's mean with its 95 %
interval, and each policy's paired difference from ``given`` (random-node placement with
isolated-target servers, 000 §3.1) over the same seeds: random-switch (000 §5.1: "minimal"
slowdown against about 8x under random-node) must come out significant; spread-target (§5.2)
is reported with its interval, significant or within noise.

Results: ``bench/results/placement_seeds.json``.
"""

from __future__ import annotations

from pathlib import Path

from bench import python_step, write_result

SEEDS = 5
METRICS = ("mpi_slowdown", "io_slowdown")

RUN = """
import dataclasses, json
from burstlake.replay import scenario, spread
spec = scenario.load(scenario.SCENARIOS / "placement_fattree.yaml")
spec = dataclasses.replace(spec, seeds=tuple(range({seeds})))
table = scenario.runs(spec)
keep = {metrics!r}
runs = [r for r in table.select(["policy", "metric", "seed", "value"]).to_pylist()
        if r["metric"] in keep]
summary = [r for r in spread.summary(table).to_pylist() if r["metric"] in keep]
for r in summary:
    r.pop("computed_at")
print(json.dumps({{"runs": runs, "summary": summary}}))
"""


def main() -> Path:
    got = python_step(RUN.format(seeds=SEEDS, metrics=METRICS))
    summary = got.get("summary", [])
    per_seed: dict[str, dict[str, list[float]]] = {}
    for row in got.get("runs", []):
        per_seed.setdefault(row["metric"], {}).setdefault(row["policy"], []).append(row["value"])

    def find(policy: str, metric: str, against: str | None) -> dict | None:
        return next(
            (
                r
                for r in summary
                if (r["policy"], r["metric"], r["against"]) == (policy, metric, against)
            ),
            None,
        )

    switch = find("random-switch", "mpi_slowdown", "given")
    spread_target = find("spread-target", "mpi_slowdown", "given")
    result = {
        "scenario": "placement_fattree",
        "seeds": SEEDS,
        "per_seed": per_seed,
        "summary": summary,
        "random_switch_minus_given_mpi_slowdown": switch,
        "random_switch_significant": None if switch is None else not switch["within_noise"],
        "spread_target_minus_given_mpi_slowdown": spread_target,
        "paper": {"random_node_mpi_slowdown": "about 8x (000 §5.1)", "random_switch": "minimal"},
        "wall_s": got["step_wall_s"],
        "cpu_s": got["step_cpu_s"],
        "peak_rss_mb": got["step_peak_rss_mb"],
    }
    return write_result("placement_seeds", result)


if __name__ == "__main__":
    main()
