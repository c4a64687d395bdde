"""The I/O node remapping what-if on a synthesized month, beside paper 004 §7.4-7.5.

For each preset (``tianhe1a``: 24 days, ``cs19``: 29 days, or ``python -m bench.ion_remap
[preset [days]]``) the synthesizer writes a lake and the shipped ``ion_remap`` scenario replays
it under block and cyclic mapping on that machine (per-job scores off: they do not bear on
these figures). Reported beside the paper's values:

- the busiest 10 % of IONs' share of the traffic per interval, block and cyclic (004 §7.4.1,
  Fig. 15c: 58.6 % → 37.9 % on Tianhe-1A; §7.4.2, Fig. 16c: "reduces almost 1/3" on CS19),
  and the offered (trace) share under block that the synthesizer is calibrated to;
- the distinct IONs serving the busiest 1 % of nodes per interval, and cyclic over block
  (004 §7.5, Fig. 17a: "about twice as many" on CS19).

Results: ``bench/results/ion_remap_<preset>.json``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench import python_step, write_result

PAPER = {
    "tianhe1a": {"top10_ion_share_block": 0.586, "top10_ion_share_cyclic": 0.379},
    "cs19": {"top10_ion_share_reduction": 1 / 3},
}
BUSIEST_RATIO_PAPER = 2.0  # 004 Fig. 17a (CS19): about twice as many IONs under remapping

SYNTH = """
import json
from burstlake.jobs.synth.run import synthesize
from burstlake.jobs.synth.stats import spatial_shares
synthesize({preset!r}, lake={lake!r}, days={days}, seed=0)
print(json.dumps(spatial_shares({lake!r})))
"""

WHAT_IF = """
import dataclasses, json
from burstlake.replay import scenario
spec = scenario.load(scenario.SCENARIOS / "ion_remap.yaml")
spec = dataclasses.replace(
    spec, topology=dict(spec.topology, name={preset!r}), job_scores=False, cluster={preset!r}
)
table = scenario.run(spec, {lake!r}).to_pylist()
print(json.dumps({{f"{{r['metric']}}@{{r['policy']}}": r["value"] for r in table}}))
"""


def main(preset: str | None = None, days: float | None = None) -> Path:
    from burstlake.presets import machine

    presets = [preset] if preset else ["tianhe1a", "cs19"]
    path = Path()
    for name in presets:
        span = days or machine(name).days
        with tempfile.TemporaryDirectory(prefix="burstlake-bench-ion-") as tmp:
            lake = str(Path(tmp) / "lake")
            trace = python_step(SYNTH.format(preset=name, lake=lake, days=span))
            scores = python_step(WHAT_IF.format(preset=name, lake=lake))
        block, cyclic = (scores.get(f"top10_ion_share@{p}") for p in ("block", "cyclic"))
        used = [scores.get(f"busiest1pct_nodes_ions@{p}") for p in ("block", "cyclic")]
        result = {
            "preset": name,
            "days": span,
            "offered_top10_ion_share_block": trace.get("top_ion_share"),
            "top10_ion_share_block": block,
            "top10_ion_share_cyclic": cyclic,
            "top10_ion_share_reduction": 1 - cyclic / block if block and cyclic else None,
            "busiest1pct_nodes_ions_block": used[0],
            "busiest1pct_nodes_ions_cyclic": used[1],
            "busiest1pct_ions_ratio": used[1] / used[0] if all(used) else None,
            "paper": PAPER[name] | {"busiest1pct_ions_ratio": BUSIEST_RATIO_PAPER},
            "trace": trace,
            "scores": scores,
        }
        path = write_result(f"ion_remap_{name}", result)
    return path


if __name__ == "__main__":
    main(*sys.argv[1:2], *(float(d) for d in sys.argv[2:3]))
