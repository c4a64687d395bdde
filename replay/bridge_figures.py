"""Paper 003's figures (Malakar et al., BG/Q bridge nodes), at boot (*default*) and after the
reassignment (*optimized*): the standard deviation of the messages sent from bridge nodes, the
messages routed through a bridge node, and the write-time gain of whole-partition writes. What
benchmarks, notebooks and the report set beside burstlake's ``given`` and ``bridge-route``."""

from __future__ import annotations

KB, MB = 1024, 1024 * 1024
# 003: sd of messages sent from bridge nodes (default, optimized) per (nodes, bytes per rank),
# 1 rank per node
PAPER_SENT_SD = {
    (512, 64 * KB): (0.09, 0.02),
    (1024, 64 * KB): (0.05, 0.01),
    (2048, 64 * KB): (0.08, 0.002),
    (512, 2 * MB): (0.07, 0.02),
    (1024, 2 * MB): (0.11, 0.01),
    (2048, 2 * MB): (0.11, 0.002),
}
# 003: average messages routed through a bridge node per bytes per rank (default, optimized),
# 2,048 nodes, 4 ranks per node
PAPER_THROUGH = {64 * KB: (12.7, 8.5), 2 * MB: (407.7, 289.0)}
PAPER_GAIN = "60 % average over default independent writes, up to 15x (64 KB)"
PAPER_GAIN_PCT = 60.0  # 003: the average write-time gain, percent


def paired(figures: tuple[float, float]) -> dict[str, float]:
    """003's (default, optimized) figures under burstlake's policy labels."""
    return dict(zip(("given", "bridge-route"), figures, strict=True))
