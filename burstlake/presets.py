"""Machines with I/O forwarding (:class:`ForwardingMachine`: nodes, cabinets, IONs) and their
presets (paper 004 §2.1, §5.2): one definition shared by the trace synthesizer and the replay
engine, and their ``topology`` rows.

Node ``i`` (0-based) is named ``cn%05d``; cabinets hold ``nodes_per_cabinet`` consecutive nodes;
under the machine's default *block* mapping node ``i`` is served by ION ``i // nodes_per_ion``.
Tianhe-1A has no real forwarding layer: the paper assumes one hypothetical ION per 64-node
cabinet. CS19 has 89 IONs (LNET routers), each serving 128 nodes in two frames; 64-node frames
hang off NRM switch boards in a 2-D fat-tree (2 hops within a board row or column, 4 otherwise),
and the IONs sit on 6 NRM boards in one row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class ForwardingMachine:
    """A machine's geometry under I/O forwarding: its nodes, cabinets and IONs (block mapping)."""

    name: str
    nodes: int
    nodes_per_cabinet: int
    nodes_per_ion: int
    days: int
    board_size: int | None = None  # nodes per NRM switch board (CS19)
    board_columns: int | None = None  # width of the 2-D grid of NRM boards (CS19)
    cores_per_node: int = 12  # Tianhe-1A: 2 × 6-core X5670; CS19: 32 cores per 2 nodes

    @property
    def cabinets(self) -> int:
        return math.ceil(self.nodes / self.nodes_per_cabinet)

    @property
    def ions(self) -> int:
        return math.ceil(self.nodes / self.nodes_per_ion)

    def node_name(self, i: int) -> str:
        return f"cn{i:05d}"

    def cabinet_of(self, i: int) -> int:
        return i // self.nodes_per_cabinet

    def block_ion(self, i: int) -> int:
        """ION of node i under block mapping ⌊i / (m/n)⌋ (004 §5.1, Fig. 9)."""
        return i // self.nodes_per_ion

    def board_of(self, i: int) -> tuple[int, int] | None:
        """(row, col) of node i's NRM board in the 2-D fat-tree, or None without boards."""
        if not self.board_size or not self.board_columns:
            return None
        board = i // self.board_size
        return divmod(board, self.board_columns)

    def topology(self) -> pa.Table:
        """The machine's ``topology`` rows under its default block ION mapping."""
        rows = []
        for i in range(self.nodes):
            board = self.board_of(i)
            rows.append(
                {
                    "node": self.node_name(i),
                    "cabinet": f"cab{self.cabinet_of(i):03d}",
                    "ion": f"ion{self.block_ion(i):03d}",
                    "switch": f"nrm{i // self.board_size:03d}" if board else None,
                    "row": board[0] if board else None,
                    "col": board[1] if board else None,
                    "node_type": "compute",
                }
            )
        from burstlake.schemas import spec

        return pa.Table.from_pylist(rows, schema=spec("topology").schema)


PRESETS: dict[str, ForwardingMachine] = {
    "tianhe1a": ForwardingMachine(
        "tianhe1a", nodes=5677, nodes_per_cabinet=64, nodes_per_ion=64, days=24
    ),
    "cs19": ForwardingMachine(
        "cs19",
        nodes=11392,
        nodes_per_cabinet=128,
        nodes_per_ion=128,
        days=29,
        board_size=64,
        board_columns=16,
        cores_per_node=16,
    ),
    "tiny": ForwardingMachine("tiny", nodes=256, nodes_per_cabinet=16, nodes_per_ion=16, days=1),
}


def machine(name: str) -> ForwardingMachine:
    """The preset machine called ``name`` (:data:`PRESETS`)."""
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(
            f"unknown machine preset {name!r}; choose one of {', '.join(PRESETS)}"
        ) from None
