"""Paper 002 (Taffet et al., SC17) on the ``quartz186`` partition: the shipped
``split_tapered`` (block task mapping) and ``split_tapered_cyclic`` scenarios, six 30-node
AMG-, UMT- and pF3D-like applications under Control, 2-, 3-, 6-way splits and random
placement, and ``split_bully`` (each split 2 ways beside MPIBW-like bullies). Reports each
application's figure of merit against Control (002 Table 2, with its "Bully MPIBW" row) and
cyclic against block (002 Table 3), ours beside the paper's, whichever way they fall.

Results: ``bench/results/split_apps.json``.
"""

from __future__ import annotations

from pathlib import Path

from bench import python_step, write_result

RUN = """
import json, time
from burstlake.replay import splits
from burstlake.replay.scenario import SCENARIOS, load
t0 = time.perf_counter()
block = splits.figures_of_merit(load(SCENARIOS / "split_tapered.yaml"))
t1 = time.perf_counter()
cyclic = splits.figures_of_merit(load(SCENARIOS / "split_tapered_cyclic.yaml"))
t2 = time.perf_counter()
bully = splits.figures_of_merit(load(SCENARIOS / "split_bully.yaml"))
t3 = time.perf_counter()
print(json.dumps({
    "table2_block": splits.versus_control(block),
    "table2_cyclic": splits.versus_control(cyclic),
    "table3_cyclic_over_block": splits.cyclic_over_block(block, cyclic),
    "paper_table2_block": splits.PAPER_TABLE2_BLOCK,
    "paper_table2_cyclic": splits.PAPER_TABLE2_CYCLIC,
    "paper_table3": splits.PAPER_TABLE3,
    "bully_mpibw_block": splits.versus_control(bully)["split2"],
    "paper_bully_mpibw": splits.PAPER_BULLY_MPIBW,
    "block_s": t1 - t0, "cyclic_s": t2 - t1, "bully_s": t3 - t2,
}))
"""


def main() -> Path:
    return write_result("split_apps", {"model": "flow", **python_step(RUN)})


if __name__ == "__main__":
    print(main())
