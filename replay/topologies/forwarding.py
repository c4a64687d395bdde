"""I/O forwarding machines (paper 004 §2.1, §5): compute nodes behind I/O nodes (IONs)
in front of the storage servers.

Resources: each compute node's injection (``tx``) and ejection (``rx``) link, each ION's
forwarding capacity, and the storage servers as one aggregate; only the ejection link is a
switch port (the network's switch sends on it: the packet model's ``router_delay``). The
compute network itself is taken as non-blocking: 004 §5.2 argues its overhead is negligible
next to the I/O path. Hops to the ION follow 004 §5.2 on machines with NRM boards (CS19): 2
within a board row or column, 4 otherwise, with the IONs on ``ION_BOARDS`` boards in board
row ``ION_ROW``.

Two families: ``forwarding``, a machine of ``nodes`` compute nodes under the block mapping of
``nodes_per_ion`` nodes per ION (with ``board_size`` and ``board_columns`` for the NRM board
grid), whose presets are the machines of :data:`burstlake.presets.PRESETS` (``tianhe1a``,
``cs19``, ``tiny``); and ``lake``, the machine the lake's own ``topology`` table describes,
under the mapping it records. Virtual channels: none needed (every hop on VC 0); a route
crosses one node link, then the ION and the storage, so no channel waits on another in a
cycle.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from burstlake.presets import PRESETS, ForwardingMachine
from burstlake.replay.graph import ResourceSet, Router, Topology
from burstlake.replay.topologies import Family, preset, register

# Capacities in bytes/s (settings; a scenario's ``capacities:`` overrides them).
NODE_LINK = 6.0e9  # compute node injection / ejection (56 Gb/s-class interconnect)
ION = 1.5e9  # one ION's forwarding throughput to Lustre (one Lustre client)
STORAGE = 50.0e9  # the storage servers together
ION_BOARDS = 6  # CS19: IONs on 6 NRM boards in one row (004 §5.2)
ION_ROW = 0  # board row holding the ION boards (a setting: the paper does not say which)

CAPACITY_KEYS = ("node_link", "ion", "storage")  # the capacities a scenario may set
LINK_KINDS = ("node_link",)  # a node's links pay link_latency (0 unless a scenario sets it)


@dataclass(frozen=True)
class ForwardingRouter(Router):
    """Routes node → ION → storage; board geometry for hop counts when the machine has it.
    The compute network is not modelled (004 §5.2): a route between nodes is their links."""

    network = False

    tx: np.ndarray
    rx: np.ndarray
    ion: np.ndarray
    storage: int
    boards: np.ndarray | None  # (nodes, 2) board row/col of each node, or None
    ion_boards: np.ndarray | None  # (ions, 2) board row/col of each ION

    def io_route(self, node: int, target: int) -> list[int]:
        return [int(self.tx[node]), int(self.ion[target]), self.storage]

    def route(self, src: int, dst: int) -> list[int]:
        return [int(self.tx[src]), int(self.rx[dst])]

    def hops(self, node: int, target: int) -> int | None:
        if self.boards is None or self.ion_boards is None:
            return None
        here, there = self.boards[node], self.ion_boards[target]
        return 2 if here[0] == there[0] or here[1] == there[1] else 4


def build(
    name: str,
    nodes: list[str],
    ions: list[str],
    ion_of: np.ndarray,
    capacities: dict[str, float] | None = None,
    boards: np.ndarray | None = None,
) -> Topology:
    """A forwarding topology over ``nodes`` served by ``ions`` under mapping ``ion_of``."""
    caps = {"node_link": NODE_LINK, "ion": ION, "storage": STORAGE, **(capacities or {})}
    resources = ResourceSet()
    tx = np.array([resources.add(f"tx:{n}", "node_link", caps["node_link"]) for n in nodes])
    # a node's link down from the network (not modelled beyond it) is a switch's port
    rx = np.array(
        [resources.add(f"rx:{n}", "node_link", caps["node_link"], switch_port=True) for n in nodes]
    )
    ion = np.array([resources.add(f"ion:{n}", "ion", caps["ion"]) for n in ions])
    storage = resources.add("storage", "storage", caps["storage"])
    ion_boards = None
    if boards is not None:
        columns = np.arange(len(ions)) * ION_BOARDS // len(ions)
        ion_boards = np.stack([np.full(len(ions), ION_ROW), columns], axis=1)
    router = ForwardingRouter(tx, rx, ion, storage, boards, ion_boards)
    return Topology(
        name, resources, tuple(nodes), tuple(ions), np.asarray(ion_of), router, dict(caps)
    )


def from_machine(
    machine: ForwardingMachine, capacities: dict[str, float] | None = None
) -> Topology:
    """A preset machine (burstlake.presets) under its default block mapping."""
    index = np.arange(machine.nodes)
    boards = None
    if machine.board_size and machine.board_columns:
        board = index // machine.board_size
        boards = np.stack([board // machine.board_columns, board % machine.board_columns], axis=1)
    return build(
        machine.name,
        [machine.node_name(i) for i in index],
        [f"ion{j:03d}" for j in range(machine.ions)],
        np.asarray([machine.block_ion(i) for i in index]),
        capacities,
        boards,
    )


def natural_key(name: str) -> tuple:
    """Sort key putting ``cn2`` before ``cn10``: node i of a mapping is the i-th in this order."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def from_table(
    topology: pa.Table, name: str = "lake", capacities: dict[str, float] | None = None
) -> Topology:
    """The machine described by a lake ``topology`` table, under the mapping it records."""
    if topology.num_rows == 0:
        raise ValueError("the lake has no topology rows: ingest or synthesize a topology first")
    rows = {r["node"]: r["ion"] for r in topology.select(["node", "ion"]).to_pylist()}
    missing = [node for node, ion in rows.items() if ion is None]
    if missing:
        raise ValueError(
            f"topology: {len(missing)} nodes have no ION (e.g. {missing[0]}); "
            "the forwarding replay needs the ion column"
        )
    nodes = sorted(rows, key=natural_key)
    ions = sorted(set(rows.values()), key=natural_key)
    ion_index = {ion: j for j, ion in enumerate(ions)}
    return build(name, nodes, ions, np.array([ion_index[rows[n]] for n in nodes]), capacities)


GEOMETRY = ("nodes", "nodes_per_ion", "board_size", "board_columns")  # a machine's settings


def _machine(name: str, settings: Mapping[str, Any]) -> ForwardingMachine:
    """The block-mapped machine a scenario's settings describe, checked with one-line errors:
    ``nodes`` and ``nodes_per_ion`` integers ≥ 1, ``board_size`` and ``board_columns`` both
    integers ≥ 1 or both absent (no board grid: no hop model)."""
    for key in GEOMETRY:
        value = settings.get(key)
        if value is None and key in ("board_size", "board_columns"):
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"topology {name}: {key} must be an integer ≥ 1, got {value!r}")
    boards = settings.get("board_size"), settings.get("board_columns")
    if (boards[0] is None) != (boards[1] is None):
        raise ValueError(f"topology {name}: give board_size and board_columns together")
    # a ForwardingMachine's cabinets and days are the synthesizer's; the replay reads its geometry
    return ForwardingMachine(
        name,
        settings["nodes"],
        settings["nodes_per_ion"],
        settings["nodes_per_ion"],
        days=0,
        board_size=boards[0],
        board_columns=boards[1],
    )


def _build_machine(
    name: str, settings: dict[str, Any], capacities: dict[str, float] | None, _lake: Any
) -> Topology:
    return from_machine(_machine(name, settings), capacities)


def _build_lake(
    name: str, _settings: dict[str, Any], capacities: dict[str, float] | None, lake: Any
) -> Topology:
    from burstlake.lake import cluster_of

    return from_table(cluster_of(lake).read("topology"), name, capacities)


register(
    "forwarding",
    Family(
        settings=frozenset(GEOMETRY),
        capacities=CAPACITY_KEYS,
        check=_machine,
        build=_build_machine,
        link_kinds=LINK_KINDS,
    ),
)
for _name, _preset in PRESETS.items():
    preset(_name, "forwarding", **{key: getattr(_preset, key) for key in GEOMETRY})
register(
    "lake",
    Family(
        settings=frozenset(),
        capacities=CAPACITY_KEYS,
        check=lambda _name, _settings: None,
        build=_build_lake,
        link_kinds=LINK_KINDS,
        reads_lake=True,
    ),
)
