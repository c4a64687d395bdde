"""The machines of a lake, each a :class:`Cluster` named by the ``cluster`` column (docs/design.md,
"Several machines in one lake"): the one rule saying which rows belong to which machine, and
the one check of a machine's name.
"""

from __future__ import annotations

import functools
import logging
import operator
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from burstlake.lake.layout import lake_path
from burstlake.lake.read import dataset, read_table
from burstlake.lake.snapshot import Snapshot
from burstlake.lake.sql import sql_literal

log = logging.getLogger(__name__)

CLUSTER_TABLES = ("topology", "node_io", "jobs", "job_nodes")  # which machines a lake holds
CLUSTER_SEP = "\x1f"  # never in a machine name (check_cluster refuses control characters)


def check_cluster(name: object, what: str = "cluster") -> str | None:
    """The one check of a machine's name (``what``: where it was given, e.g. ``--cluster``):
    absent (None), or a name that is not blank and holds no surrounding whitespace, '/' or
    control character (it names contributions and is compared in every join). Returns it;
    raises ValueError with a one-line reason."""
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"{what} names one machine of the lake: it cannot be empty or blank, got {name!r}"
        )
    if name != name.strip():
        raise ValueError(f"{what} {name!r}: no leading or trailing whitespace")
    bad = next((c for c in name if c == "/" or not c.isprintable()), None)
    if bad is not None:
        raise ValueError(f"{what} {name!r}: {bad!r} is not allowed in a machine name")
    return name


def owner_of_unnamed(named: Collection[str]) -> str | None:
    """The machines rule: rows naming no machine belong to the only named machine; with none
    or several named, they form the unnamed machine (None)."""
    return next(iter(named)) if len(named) == 1 else None


def _members(name: str | None, unnamed: bool) -> list[str | None]:
    """The ``cluster`` values of a machine's rows (None: rows naming none)."""
    return [None] if name is None else [name, None] if unnamed else [name]


def cluster_sql(name: str | None, unnamed: bool = False) -> str:
    """The rows of machine ``name`` (with ``unnamed``: also those naming none) as an SQL
    condition (DuckDB and Spark SQL alike)."""
    terms = [
        "cluster IS NULL" if value is None else f"cluster = {sql_literal(value)}"
        for value in _members(name, unnamed)
    ]
    return terms[0] if len(terms) == 1 else f"({' OR '.join(terms)})"


def cluster_filter(name: str | None, unnamed: bool = False) -> pc.Expression:
    """:func:`cluster_sql` as a pyarrow filter."""
    column = pc.field("cluster")
    terms = [column.is_null() if v is None else column == v for v in _members(name, unnamed)]
    return functools.reduce(operator.or_, terms)


def node_keys(clusters: pa.Array | pa.ChunkedArray, nodes: pa.Array | pa.ChunkedArray):
    """A node of one machine as one string, ``cluster`` + U+001F + ``node`` (the unnamed
    machine: an empty cluster): node names are unique only within a machine, so checks against
    ``topology`` compare (cluster, node), a null cluster matching a null one."""
    return pc.binary_join_element_wise(pc.fill_null(clusters, ""), nodes, CLUSTER_SEP)


def checked_keys(clusters: pa.Array | pa.ChunkedArray, nodes, topology_nodes: list[str]):
    """The :func:`node_keys` to look up in ``topology_nodes`` (the topology's keys) for rows of
    ``clusters`` × ``nodes``, each row checked against the topology of its machine: a machine
    without a topology of its own against the unnamed topology, and rows naming no machine,
    when there is no unnamed topology, against the one :func:`owner_of_unnamed` names."""
    named = {key.split(CLUSTER_SEP, 1)[0] for key in topology_nodes}
    unnamed = "" in named
    named.discard("")
    machine = pc.fill_null(clusters, "")
    owner = None if unnamed else owner_of_unnamed(named)
    if owner is not None:
        machine = pc.if_else(pc.equal(machine, ""), owner, machine)
    if unnamed:
        machine = pc.if_else(pc.is_in(machine, pa.array(sorted(named), pa.string())), machine, "")
    return node_keys(machine, nodes)


@dataclass(frozen=True)
class Cluster:
    """One machine of a lake (docs/design.md, "Several machines in one lake"): the rows whose
    ``cluster`` is ``name``, and with ``unnamed`` also the rows that name none (a lake with one
    named machine: a Zabbix export or topology ingested without ``--cluster`` belongs to it).
    ``name`` None: the rows naming none, of a lake without (or with several) named machines.
    What the metrics, the replay and the report read, one machine at a time."""

    lake: Path | Snapshot  # a snapshot: every read of the machine reads it
    name: str | None
    unnamed: bool = False

    @property
    def label(self) -> str:
        return self.name or "(unnamed)"

    def sql(self) -> str:
        """This machine's rows as an SQL condition (:func:`cluster_sql`)."""
        return cluster_sql(self.name, self.unnamed)

    def only(self, condition: pc.Expression | None = None) -> pc.Expression:
        """``condition`` and this machine's rows (a pyarrow filter, :func:`cluster_filter`)."""
        mine = cluster_filter(self.name, self.unnamed)
        return mine if condition is None else mine & condition

    def read(
        self, table: str, columns: list[str] | None = None, filter: pc.Expression | None = None
    ) -> pa.Table:
        """:func:`read_table` of this machine's rows."""
        return read_table(self.lake, table, columns, self.only(filter))


def clusters(lake: str | os.PathLike | None) -> list[Cluster]:
    """The machines a lake holds, from the ``cluster`` of :data:`CLUSTER_TABLES`: one per
    name (sorted); rows naming none belong to the only named machine, or form the unnamed
    machine (last) when there are none or several."""
    found: set[str | None] = set()
    for table in CLUSTER_TABLES:
        for batch in dataset(lake, table).to_batches(columns=["cluster"]):
            found.update(pc.unique(batch.column(0)).to_pylist())
    root = lake if isinstance(lake, Snapshot) else lake_path(lake)  # a snapshot's machines read it
    named = sorted(name for name in found if name is not None)
    owner = owner_of_unnamed(named) if None in found else None
    if owner is not None:
        return [Cluster(root, owner, unnamed=True)]
    return [Cluster(root, name) for name in named] + (
        [Cluster(root, None)] if None in found else []
    )


def cluster_of(lake: str | os.PathLike | Cluster | None, name: str | None = None) -> Cluster:
    """The machine of ``lake`` named ``name``, or without a name the lake's only machine; a
    one-line error lists the machines when the name is unknown or the lake holds several."""
    if isinstance(lake, Cluster):
        return lake
    held = clusters(lake)
    names = ", ".join(each.label for each in held)
    if name is not None:
        for each in held:
            if each.name == name:
                return each
        raise ValueError(f"no cluster {name!r} in lake {lake_path(lake)} (it holds: {names})")
    if len(held) > 1:
        raise ValueError(f"lake {lake_path(lake)} holds several clusters ({names}): name one")
    return held[0] if held else Cluster(lake_path(lake), None)
