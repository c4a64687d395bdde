"""I/O node mapping what-ifs (paper 004 §5.1, Fig. 9): which forwarding target serves compute
node i of m, with n targets. ``block`` ⌊i / (m/n)⌋ (the default: a cabinet's nodes share an
ION), ``cyclic`` i mod n (adjacent nodes to different IONs), ``file`` (a CSV ``node,ion``),
``given`` (the mapping the topology came with)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, register


def block(m: int, n: int) -> np.ndarray:
    """⌊i / (m/n)⌋ for i in 0..m-1, in integer arithmetic."""
    return np.arange(m, dtype=np.int64) * n // m


def cyclic(m: int, n: int) -> np.ndarray:
    return np.arange(m, dtype=np.int64) % n


def read_mapping(path: str | Path, topology: Topology) -> np.ndarray:
    """A mapping from a CSV with columns ``node`` and ``ion`` covering every compute node."""
    path = Path(path)
    with path.open(newline="") as handle:
        reader = csv.DictReader(handle)
        if not reader.fieldnames or not {"node", "ion"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: a mapping file needs a header with columns node,ion")
        pairs = [(row["node"], row["ion"], reader.line_num) for row in reader]
    mapping = np.full(len(topology.nodes), -1, dtype=np.int64)
    for node, ion, line in pairs:
        i, j = topology.node_index.get(node), topology.ion_index.get(ion)
        if i is None or j is None:
            what = f"node {node!r}" if i is None else f"ion {ion!r}"
            raise ValueError(f"{path} line {line}: unknown {what} in topology {topology.name}")
        if mapping[i] >= 0 and mapping[i] != j:
            raise ValueError(f"{path} line {line}: node {node} mapped twice")
        mapping[i] = j
    unmapped = np.flatnonzero(mapping < 0)
    if len(unmapped):
        raise ValueError(
            f"{path}: {len(unmapped)} compute nodes have no ion "
            f"(e.g. {topology.nodes[unmapped[0]]})"
        )
    return mapping


def _remap(compute) -> Apply:
    def apply(topology: Topology, demand: Any) -> tuple[Topology, Any]:
        return topology.remapped(compute(topology)), demand

    return apply


@register("given")
def given() -> Apply:
    return lambda topology, demand: (topology, demand)


@register("block")
def block_policy() -> Apply:
    return _remap(lambda t: block(len(t.nodes), len(t.ions)))


@register("cyclic")
def cyclic_policy() -> Apply:
    return _remap(lambda t: cyclic(len(t.nodes), len(t.ions)))


@register("file")
def file_policy(path: str) -> Apply:
    return _remap(lambda t: read_mapping(path, t))
