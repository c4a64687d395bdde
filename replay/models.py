"""Contention models (docs/design.md, "Contention models"): how the requests a workload issues
share a topology's resources. Both run the same :class:`~burstlake.replay.requests.Requests`
(route, size, start, release, window) and give the same
:class:`~burstlake.replay.requests.Timeline`, so every workload and policy runs under either.

- ``flow`` (the default): max-min fluid sharing, as SimGrid's flow model
  (:mod:`burstlake.replay.events`). Fast over months of ``node_io``; right for ION- and
  server-level what-ifs (papers 001, 003, 004), where a bottleneck's share is the answer.
- ``packet``: the lossless packet-level model of CODES, the simulator of paper 000 §2.5
  (:mod:`burstlake.replay.packet`): finite buffers, credits and head-of-line blocking, so
  congestion spreads from a saturated server link to traffic that never crosses it
  (000 §4.2, §5.1). Right for interconnect interference between jobs.

A scenario picks one with ``model: packet`` or ``model: {name: packet, buffer_bytes: 32768}``,
a flow file of ``burstlake flows`` with ``"model": "packet"`` or the same mapping in JSON
(bare links, no topology: :meth:`Contention.simulate_links`); a new model registers a
:class:`Model` in :data:`MODELS` here (docs/design.md, "To add a contention model").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from functools import partial
from typing import Any

import numpy as np

from burstlake.replay import events, packet
from burstlake.replay.registry import Registry
from burstlake.replay.requests import Network, Requests, Timeline

Progress = Callable[[int], None] | None


@dataclass(frozen=True)
class Model:
    """One contention model (an entry of :data:`MODELS`, :mod:`burstlake.replay.registry`):
    ``schema``, the settings a scenario may give it; ``check(mapping, where)`` checks their
    values (one-line errors naming the key) and returns the model's settings;
    ``run(requests, capacity, settings, vcs, switch_port, progress)`` replays the requests on
    resources of the given capacities (bytes/s), ``vcs`` the virtual channel of every route
    entry (None: all 0), ``switch_port`` whether a switch sends on each resource
    (:class:`~burstlake.replay.graph.ResourceSet`; None for bare links). A model that uses
    virtual channels says so (``virtual_channels``), so only it pays for the router's rule.
    A model that routes packets itself says so (``per_packet``): its ``run`` also takes the
    router's hooks as ``adaptive=`` (:meth:`~burstlake.replay.graph.Router.adaptive`, whose
    routes and VCs then replace ``vcs``) and ``link_delay=``
    (:meth:`~burstlake.replay.graph.Router.link_delays`), each None where the router does not
    model it."""

    name: str
    schema: frozenset[str]
    check: Callable[[Mapping[str, Any], str], Any]
    run: Callable[
        [Requests, np.ndarray, Any, np.ndarray | None, np.ndarray | None, Progress],
        Timeline,
    ]
    doc: str = ""
    virtual_channels: bool = False
    per_packet: bool = False


@dataclass(eq=False)
class Replays:
    """A tally of the replays run under one contention model: a score is labelled with a
    model only when that model replayed something."""

    runs: int = 0

    def add(self, runs: int) -> None:
        self.runs += runs


@dataclass(frozen=True)
class Contention:
    """A model with its settings: what a scenario's ``model:`` key chose. ``replays``, where
    given, counts the replays run under it (:meth:`ran`), here or by workers given its
    :meth:`spec`."""

    model: Model
    settings: Any = None
    replays: Replays | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return self.model.name

    def spec(self) -> dict[str, Any]:
        """The chosen model as a ``model:`` mapping :func:`parse` reads back: its name and
        settings (a settings dataclass's fields; none for a model without settings)."""
        return {"name": self.name} | (asdict(self.settings) if is_dataclass(self.settings) else {})

    def counted(self, replays: Replays) -> Contention:
        """The same model, its replays counted in ``replays``."""
        return Contention(self.model, self.settings, replays)

    def ran(self, runs: int) -> None:
        """Count ``runs`` replays under this model: its own, or runs handed to workers
        (processes, Spark tasks) as its :meth:`spec`, where its tally cannot see them."""
        if self.replays is not None:
            self.replays.add(runs)

    def simulate(
        self, topology: Network, requests: Requests, progress: Progress = None
    ) -> Timeline:
        """Replay ``requests`` on ``topology`` (a :class:`~burstlake.replay.graph.Topology`),
        on its router's virtual channels and switch ports, and under a ``per_packet`` model
        its per-packet routing and wire delays (:class:`Model`)."""
        run: Callable[..., Timeline] = self.model.run
        adaptive = None
        if self.model.per_packet:
            adaptive = topology.route_adaptive(requests.paths)
            run = partial(run, adaptive=adaptive, link_delay=topology.link_delays())
        routed = self.model.virtual_channels and adaptive is None  # else its own VCs
        vcs = topology.route_vcs(requests.paths) if routed else None
        resources = topology.resources
        self.ran(1)
        return run(
            requests, resources.capacity, self.settings, vcs, resources.is_switch_port, progress
        )

    def simulate_links(
        self, requests: Requests, capacity: np.ndarray, progress: Progress = None
    ) -> Timeline:
        """Replay ``requests`` on bare resources of ``capacity`` bytes/s, with no topology
        and so no router: every hop on virtual channel 0, and every resource a route enters
        after another one taken as a switch's port (``burstlake flows``)."""
        return self.model.run(
            requests, np.asarray(capacity, np.float64), self.settings, None, None, progress
        )


MODELS: Registry[Model] = Registry("model", lambda model: model.schema)


def register(model: Model) -> Model:
    return MODELS.register(model.name, model)


def names() -> list[str]:
    return MODELS.names()


def parse(spec: Any, where: str = "model") -> Contention:
    """A scenario's ``model:`` value: absent (the flow model), a name, or a mapping with a
    ``name`` and that model's settings."""
    if spec is None:
        return DEFAULT
    name, model, given = MODELS.parse(spec, where)
    return Contention(model, model.check(given, f"{where} {name}"))


def _no_settings(given: Mapping[str, Any], where: str) -> None:
    MODELS.settings(where, FLOW, given)


FLOW = register(
    Model(
        "flow",
        frozenset(),
        _no_settings,
        lambda requests, capacity, _settings, _vcs, _ports, progress: events.simulate(
            requests, capacity, progress
        ),
        "max-min fluid sharing (SimGrid's flow model)",
    )
)


def _packet(
    requests: Requests,
    capacity: np.ndarray,
    settings: packet.PacketSettings,
    vcs: np.ndarray | None,
    ports: np.ndarray | None,
    progress: Progress,
    adaptive: packet.Adaptive | None = None,
    link_delay: np.ndarray | None = None,
) -> Timeline:
    return packet.simulate(
        requests, capacity, settings, vcs, progress=progress, switch_port=ports,
        adaptive=adaptive, link_delay=link_delay,
    )  # fmt: skip


PACKET = register(
    Model(
        "packet",
        frozenset(f.name for f in fields(packet.PacketSettings)),
        packet.PacketSettings.from_mapping,
        _packet,
        "lossless packets, buffers and credits (CODES, paper 000 §2.5)",
        virtual_channels=True,
        per_packet=True,
    )
)
DEFAULT = Contention(FLOW)
