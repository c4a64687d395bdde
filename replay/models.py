"""Contention models (docs/design.md, "Contention models"): how the requests a workload issues
share a topology's resources. Both run the same :class:`~burstlake.replay.events.Requests`
(route, size, start, release, window) and give the same
:class:`~burstlake.replay.events.Timeline`, so every workload and policy runs under either.

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
:class:`Model` here (docs/design.md, "To add a contention model").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

import numpy as np

from burstlake.replay import events, packet

Progress = Callable[[int], None] | None


@dataclass(frozen=True)
class Model:
    """One contention model: ``settings(mapping, where)`` checks a scenario's settings for it
    (one-line errors naming the key) and returns them; ``run(requests, capacity, settings,
    vcs, switch_port, progress)`` replays the requests on resources of the given capacities
    (bytes/s), ``vcs`` the virtual channel of every route entry (None: all 0), ``switch_port``
    whether a switch sends on each resource (:class:`~burstlake.replay.graph.ResourceSet`;
    None for bare links). A model that uses virtual channels says so (``virtual_channels``),
    so only it pays for the router's rule."""

    name: str
    settings: Callable[[Mapping[str, Any], str], Any]
    run: Callable[
        [events.Requests, np.ndarray, Any, np.ndarray | None, np.ndarray | None, Progress],
        events.Timeline,
    ]
    doc: str = ""
    virtual_channels: bool = False


@dataclass(frozen=True)
class Contention:
    """A model with its settings: what a scenario's ``model:`` key chose."""

    model: Model
    settings: Any = None

    @property
    def name(self) -> str:
        return self.model.name

    def spec(self) -> dict[str, Any]:
        """The chosen model as a ``model:`` mapping :func:`parse` reads back: its name and
        settings (a settings dataclass's fields; none for a model without settings)."""
        return {"name": self.name} | (asdict(self.settings) if is_dataclass(self.settings) else {})

    def simulate(
        self, topology: Any, requests: events.Requests, progress: Progress = None
    ) -> events.Timeline:
        """Replay ``requests`` on ``topology`` (a :class:`~burstlake.replay.graph.Topology`,
        which imports this module, so it is not named here), on its router's virtual
        channels and switch ports. A router with an ``adaptive(paths)`` hook (the dragonfly's)
        routes packets per packet under a model with virtual channels: its
        :class:`~burstlake.replay.packet.Adaptive` goes to the model as ``adaptive=``; one with
        ``link_delays()`` (seconds per resource) gives it each wire's propagation delay."""
        hook = getattr(topology.router, "adaptive", None)
        extra = {}
        if self.model.virtual_channels and hook is not None:
            extra["adaptive"] = hook(requests.paths)
        delays = getattr(topology.router, "link_delays", None)  # per-resource propagation
        if self.model.virtual_channels and delays is not None:
            extra["link_delay"] = delays()
        routed = self.model.virtual_channels and "adaptive" not in extra  # else its own VCs
        vcs = topology.route_vcs(requests.paths) if routed else None
        resources = topology.resources
        return self.model.run(
            requests,
            resources.capacity,
            self.settings,
            vcs,
            resources.is_switch_port,
            progress,
            **extra,
        )

    def simulate_links(
        self, requests: events.Requests, capacity: np.ndarray, progress: Progress = None
    ) -> events.Timeline:
        """Replay ``requests`` on bare resources of ``capacity`` bytes/s, with no topology
        and so no router: every hop on virtual channel 0, and every resource a route enters
        after another one taken as a switch's port (``burstlake flows``)."""
        return self.model.run(
            requests, np.asarray(capacity, np.float64), self.settings, None, None, progress
        )


_MODELS: dict[str, Model] = {}


def register(model: Model) -> Model:
    _MODELS[model.name] = model
    return model


def names() -> list[str]:
    return sorted(_MODELS)


def parse(spec: Any, where: str = "model") -> Contention:
    """A scenario's ``model:`` value: absent (the flow model), a name, or a mapping with a
    ``name`` and that model's settings."""
    if spec is None:
        return DEFAULT
    given = {"name": spec} if isinstance(spec, str) else spec
    if not isinstance(given, Mapping):
        raise ValueError(f"{where}: a model name ({', '.join(names())}) or a mapping, got {spec!r}")
    given = dict(given)
    name = given.pop("name", None)
    if name not in _MODELS:
        raise ValueError(f"{where}: unknown model {name!r}; choose one of {', '.join(names())}")
    model = _MODELS[name]
    return Contention(model, model.settings(given, f"{where} {name}"))


def _no_settings(given: Mapping[str, Any], where: str) -> None:
    if given:
        raise ValueError(f"{where}: takes no settings, got {sorted(given)}")


FLOW = register(
    Model(
        "flow",
        _no_settings,
        lambda requests, capacity, _settings, _vcs, _ports, progress: events.simulate(
            requests, capacity, progress
        ),
        "max-min fluid sharing (SimGrid's flow model)",
    )
)
PACKET = register(
    Model(
        "packet",
        packet.PacketSettings.from_mapping,
        lambda requests, capacity, settings, vcs, ports, progress, **hooks: packet.simulate(
            requests, capacity, settings, vcs, progress=progress, switch_port=ports, **hooks
        ),
        "lossless packets, buffers and credits (CODES, paper 000 §2.5)",
        virtual_channels=True,
    )
)
DEFAULT = Contention(FLOW)
