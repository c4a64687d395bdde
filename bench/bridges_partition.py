"""Paper 003's whole-partition writes (Malakar et al., BG/Q bridge nodes) on burstlake's packet
model: every node of a 512-, 1,024- or 2,048-node partition writes 64 KB or 2 MB per rank with
1, 4 or 8 ranks per node, at boot (``given``) and after the route-aware reassignment
(``bridge-route``); the write time, the messages routed through a bridge node and the spread
(sd over mean) of the messages bridge nodes send, beside 003's figures. The partitions: mira512
(4×4×4×4×2) and the same midplanes stacked along D (4×4×4×8×2, 4×4×4×16×2), 64 nodes per
bridge node.

Results: ``bench/results/bridges_partition.json``.
"""

from __future__ import annotations

import os
from pathlib import Path

from bench import python_step, write_result
from burstlake.replay.bridge_figures import KB, MB, PAPER_GAIN, PAPER_SENT_SD, PAPER_THROUGH, paired

# (nodes, bytes per rank, ranks per node): 003's network-counter tables (512-2,048 nodes at 1
# rank/node; 2,048 nodes at 4 ranks/node) and its weak-scaling runs at 8 ranks/node
CASES = [
    (512, 64 * KB, 1),
    (512, 2 * MB, 1),
    (512, 64 * KB, 8),
    (512, 2 * MB, 8),
    (1024, 64 * KB, 1),
    (1024, 2 * MB, 1),
    (2048, 64 * KB, 1),
    (2048, 2 * MB, 1),
    (2048, 64 * KB, 4),
    (2048, 2 * MB, 4),
]
DIMS = {512: [4, 4, 4, 4, 2], 1024: [4, 4, 4, 8, 2], 2048: [4, 4, 4, 16, 2]}

RUN = """
import json, tempfile, time, pathlib
from burstlake.replay.scenario import load, scores
text = '''name: bench
workload: {{source: bridge_write, bytes_per_node: {node_bytes}, request_bytes: {rank_bytes},
  ranks_per_node: {ranks}}}
topology: {{name: torus, dims: {dims}, nodes_per_bridge: 64}}
model: packet
policies: [given, bridge-route]
'''
path = pathlib.Path(tempfile.mkdtemp()) / "bench.yaml"
path.write_text(text)
t0 = time.perf_counter()
got = scores(load(path))
print(json.dumps({{"scores": got, "replay_s": time.perf_counter() - t0}}))
"""

METRICS = ("write_time", "bridge_messages_through_mean", "bridge_messages_sent_sd", "mean_hops")


def main() -> Path:
    wanted = os.environ.get("BURSTLAKE_BENCH_CASES")  # e.g. "0,1" to run a few
    chosen = [CASES[int(i)] for i in wanted.split(",")] if wanted else CASES
    cases = []
    for nodes, rank_bytes, ranks in chosen:
        run = python_step(
            RUN.format(
                node_bytes=rank_bytes * ranks, rank_bytes=rank_bytes, ranks=ranks, dims=DIMS[nodes]
            )
        )
        given, moved = run["scores"]["given"], run["scores"]["bridge-route"]
        case = {
            "nodes": nodes,
            "bytes_per_rank": rank_bytes,
            "ranks_per_node": ranks,
            "given": {m: given[m] for m in METRICS},
            "bridge-route": {m: moved[m] for m in METRICS},
            "write_time_lower_pct": 100.0 * (1 - moved["write_time"] / given["write_time"]),
            "replay_s": run["replay_s"],
            "step_wall_s": run["step_wall_s"],
        }
        if ranks == 1 and (nodes, rank_bytes) in PAPER_SENT_SD:
            case["paper_sent_sd"] = paired(PAPER_SENT_SD[nodes, rank_bytes])
        if nodes == 2048 and ranks == 4:
            case["paper_through"] = paired(PAPER_THROUGH[rank_bytes])
        cases.append(case)
    return write_result(
        "bridges_partition", {"model": "packet", "paper_gain": PAPER_GAIN, "cases": cases}
    )


if __name__ == "__main__":
    print(main())
