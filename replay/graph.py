"""Topologies as data (docs/design.md, "Replay"): capacitated resources, compute nodes, their
forwarding targets (IONs, bridge nodes or I/O servers) and a router.

A resource is anything a flow's bytes cross at a bounded rate: a node's injection link, a switch
link in one direction, an ION's forwarding capacity, a storage server. Every policy works on a
:class:`Topology` value (e.g. an ION remapping is ``topology.remapped(ion_of)``), so the engine
never changes when a policy is added.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import TYPE_CHECKING, Any

import numpy as np

from burstlake.replay import models
from burstlake.replay.solver import Paths

if TYPE_CHECKING:
    from burstlake.replay.packet import Adaptive
    from burstlake.replay.requests import Requests

MAX_NODES = 1_000_000  # nodes of a built topology: the largest machines have ~10^5
BUILD_BYTES_PER_NODE = 1_200  # measured building a 9,936-host fat-tree (tracemalloc peak)


def check_nodes(name: str, nodes: int) -> None:
    """Refuse, before allocating anything, a topology of more than :data:`MAX_NODES` nodes,
    with the memory its build would take."""
    if nodes > MAX_NODES:
        need = nodes * BUILD_BYTES_PER_NODE / 1e9
        raise ValueError(
            f"topology {name}: {nodes:,} nodes (about {need:,.1f} GB to build); a topology "
            f"has at most {MAX_NODES:,}"
        )


class ResourceSet:
    """Named resources with kinds and capacities (bytes/s), built up by a topology builder.

    A resource is a *switch port* when a switch (or a node's on-chip router) sends on it: a
    packet that crosses it reaches the next device a router delay later (the packet model,
    :mod:`burstlake.replay.packet`); a NIC's injection link, an ION and a storage server are
    not (paper 000 §2.5: CODES' fat-tree adds the router delay when a switch sends, not when a
    NIC does)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.capacities: list[float] = []
        self.switch_ports: list[bool] = []
        self.index: dict[str, int] = {}

    def add(self, name: str, kind: str, capacity: float, *, switch_port: bool = False) -> int:
        if name in self.index:
            raise ValueError(f"resource {name!r} defined twice")
        if not capacity > 0:
            raise ValueError(f"resource {name!r}: capacity must be positive, got {capacity}")
        self.index[name] = len(self.names)
        self.names.append(name)
        self.kinds.append(kind)
        self.capacities.append(float(capacity))
        self.switch_ports.append(switch_port)
        return self.index[name]

    def __getitem__(self, name: str) -> int:
        return self.index[name]

    @property
    def capacity(self) -> np.ndarray:
        return np.asarray(self.capacities, dtype=np.float64)

    @property
    def is_switch_port(self) -> np.ndarray:
        """Whether each resource is a switch port (class docstring), as booleans."""
        return np.asarray(self.switch_ports, dtype=bool)

    def of_kind(self, kind: str) -> np.ndarray:
        return np.flatnonzero(np.asarray(self.kinds) == kind)


class Router:
    """Routing of one topology: resource ids on the way, and hop counts. A family's router
    subclasses it, defines :meth:`io_route`, :meth:`route` and :meth:`hops`, and overrides the
    hooks it has; each hook's default says the router does not model that (the scores then
    give None or fall back, as each hook says)."""

    network: bool = True  # route() follows the compute network hop by hop; False where it is
    # not modelled (a forwarding machine, 004 §5.2: pair hops are counted from groups)
    routing: str | None = None  # the routing setting a scenario may change (a dragonfly's
    # ``minimal``, ``ugal``...), recorded with the scores as ``routing_<name>``; None: one
    # fixed routing
    striped: bool = False  # the forwarding targets are storage servers a file is striped over
    # (Lustre's, paper 000 §3.1's I/O servers on a fat-tree); False: each node's I/O goes to
    # its one forwarding target (an ION, 004 §2.1; a bridge node, 003)

    def io_route(self, node: int, target: int) -> list[int]:
        """Resources from compute node ``node`` through forwarding target ``target`` to storage."""
        raise NotImplementedError

    def route(self, src: int, dst: int) -> list[int]:
        """Resources from compute node ``src`` to compute node ``dst`` (MPI traffic)."""
        raise NotImplementedError

    def hops(self, node: int, target: int) -> int | None:
        """Network hops from ``node`` to forwarding target ``target``; None if not modelled."""
        raise NotImplementedError

    def groups(self) -> np.ndarray | None:
        """The group of every compute node, for job placement (leaf switches on a fat-tree);
        None: the ION groups (:meth:`Topology.groups`)."""
        return None

    def vcs(self, route: list[int]) -> list[int] | None:
        """The virtual channel of each hop of ``route`` for a lossless packet model, the
        family's deadlock-avoidance rule; None: every hop on VC 0 (routes whose channel
        dependencies have no cycle)."""
        return None

    def through(self, target: int) -> list[int] | None:
        """The resources of forwarding target ``target`` that carry the I/O it routes (a
        bridge node's own I/O link and the links leaving it, 003); None: its I/O is the bytes
        of the nodes it serves."""
        return None

    def passes(self, node: int, target: int) -> list[int] | None:
        """The compute nodes whose routers forward the I/O of ``node`` to ``target``, ends
        excluded (003); None where routes pass no compute node's router."""
        return None

    def target_nodes(self) -> np.ndarray | None:
        """The compute node hosting each forwarding target (a BG/Q bridge node), None where
        targets are not compute nodes."""
        return None

    def adaptive(self, paths: Paths) -> Adaptive | None:
        """Per-packet routing of ``paths`` (one row per request) for a model that routes
        packets itself (:class:`burstlake.replay.packet.Adaptive`: the dragonfly's ``ugal``
        and ``par``, Kim et al., ISCA 2008 §4.2); None: not modelled, every packet follows
        its request's route on the :meth:`vcs` rule."""
        return None

    def link_delays(self) -> np.ndarray | None:
        """Each resource's propagation delay (seconds, added to every crossing by a model
        that routes packets: CODES' ``dragonfly-dally`` ``cn_delay``, ``local_delay``,
        ``global_delay``); None: not modelled, wires take no time beyond the router delay."""
        return None


@dataclass(frozen=True)
class Topology:
    """A machine: resources, compute nodes, forwarding targets and the node → target mapping.

    ``ion_of[i]`` is the index in ``ions`` of the target serving compute node ``i`` (an ION on
    a forwarding machine, a bridge node on a BG/Q torus, an I/O server on a fat-tree).
    """

    name: str
    resources: ResourceSet
    nodes: tuple[str, ...]
    ions: tuple[str, ...]
    ion_of: np.ndarray
    router: Router
    settings: dict = field(default_factory=dict)
    # how requests share the resources (burstlake.replay.models.Contention); None: the flow
    # model. A scenario's ``model:`` key sets it on every machine a policy gives.
    contention: Any = None
    # the resource kinds that are network links, each paying ``link_latency`` when crossed:
    # declared by the family (:class:`burstlake.replay.topologies.Family`)
    link_kinds: tuple[str, ...] = ()
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.ion_of) != len(self.nodes):
            raise ValueError(f"{self.name}: mapping covers {len(self.ion_of)} of {len(self.nodes)}")
        if len(self.ion_of) and (self.ion_of.min() < 0 or self.ion_of.max() >= len(self.ions)):
            raise ValueError(f"{self.name}: mapping names a target outside 0..{len(self.ions) - 1}")

    @property
    def node_index(self) -> dict[str, int]:
        return self._memo("node_index", lambda: {n: i for i, n in enumerate(self.nodes)})

    @property
    def ion_index(self) -> dict[str, int]:
        return self._memo("ion_index", lambda: {n: i for i, n in enumerate(self.ions)})

    def simulate(self, requests: Requests, progress: Callable[[int], None] | None = None):
        """Replay ``requests`` on this machine under its contention model (flow or packet,
        :mod:`burstlake.replay.models`): each request's start and end time."""
        return (self.contention or models.DEFAULT).simulate(self, requests, progress)

    def with_contention(self, contention: Any) -> Topology:
        """The same machine replayed under another contention model."""
        return replace(self, contention=contention)

    def remapped(self, ion_of: np.ndarray) -> Topology:
        """The same machine with another node → target mapping (004 §5)."""
        return replace(self, ion_of=np.asarray(ion_of, dtype=np.int64), _cache={})

    def io_paths(self) -> Paths:
        """Each compute node's I/O route under the current mapping (row i = node i)."""
        return self._memo(
            "io_paths",
            lambda: Paths.from_lists(
                [self.router.io_route(i, int(t)) for i, t in enumerate(self.ion_of)]
            ),
        )

    def groups(self) -> np.ndarray:
        """The group of every compute node, for job placement (:mod:`burstlake.allocation`):
        the router's ``groups()`` if it has one (leaf switches on a fat-tree), else the ION
        groups — nodes sharing a target under the block mapping ⌊i / (m/n)⌋ (004 §5.1)."""

        def compute() -> np.ndarray:
            groups = self.router.groups()
            if groups is not None:
                return np.asarray(groups, dtype=np.int64)
            return np.arange(len(self.nodes), dtype=np.int64) * len(self.ions) // len(self.nodes)

        return self._memo("groups", compute)

    def route_latency(self, paths: Paths) -> np.ndarray:
        """Each route's latency: its links (resources of the family's ``link_kinds``) × the
        topology's ``link_latency`` setting (seconds per hop; 0 where the topology sets none)."""
        per_hop = float(self.settings.get("link_latency", 0.0))
        kinds = list(self.link_kinds)
        is_link = self._memo("is_link", lambda: np.isin(self.resources.kinds, kinds))
        crossed = np.concatenate(([0], np.cumsum(is_link[paths.indices])))
        return (crossed[paths.indptr[1:]] - crossed[paths.indptr[:-1]]) * per_hop

    def route_vcs(self, paths: Paths) -> np.ndarray:
        """The virtual channel of every entry of ``paths.indices`` (int8, aligned with it):
        the router's ``vcs`` rule route by route, VC 0 everywhere if it has none."""
        if type(self.router).vcs is Router.vcs:  # no rule: VC 0 everywhere
            return np.zeros(len(paths.indices), dtype=np.int8)
        bounds = paths.indptr.tolist()
        routes = [paths.indices[a:b].tolist() for a, b in pairwise(bounds)]
        vcs = [self.router.vcs(route) for route in routes]
        if any(len(v) != len(r) for v, r in zip(vcs, routes, strict=True)):
            raise ValueError(f"{self.name}: the router's vcs gave a length other than the route's")
        return np.asarray([vc for route in vcs for vc in route], dtype=np.int8)

    def route_adaptive(self, paths: Paths) -> Adaptive | None:
        """The router's per-packet routing of ``paths`` (:meth:`Router.adaptive`)."""
        return self.router.adaptive(paths)

    def link_delays(self) -> np.ndarray | None:
        """The router's propagation delay per resource (:meth:`Router.link_delays`)."""
        return self.router.link_delays()

    def route_hops(self) -> np.ndarray | None:
        """Hops from each compute node to its target (004 §5.2), None if not modelled."""

        def compute() -> np.ndarray | None:
            hops = [self.router.hops(i, int(t)) for i, t in enumerate(self.ion_of)]
            return None if any(h is None for h in hops) else np.asarray(hops, dtype=np.float64)

        return self._memo("hops", compute)

    def _memo(self, key: str, compute: Callable):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]
