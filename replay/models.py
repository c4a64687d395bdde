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

A scenario picks one with ``model: packet`` or ``model: {name: packet, buffer_bytes: 32768}``;
a new model registers a :class:`Model` here (docs/design.md, "To add a contention model").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from burstlake.replay import events, packet

Progress = Callable[[int], None] | None


@dataclass(frozen=True)
class Model:
    """One contention model: ``settings(mapping, where)`` checks a scenario's settings for it
    (one-line errors naming the key) and returns them; ``run(topology, requests, settings,
    progress)`` replays the requests on the topology."""

    name: str
    settings: Callable[[Mapping[str, Any], str], Any]
    run: Callable[..., events.Timeline]
    doc: str = ""


@dataclass(frozen=True)
class Contention:
    """A model with its settings: what a scenario's ``model:`` key chose."""

    model: Model
    settings: Any = None

    @property
    def name(self) -> str:
        return self.model.name

    def simulate(
        self, topology: Any, requests: events.Requests, progress: Progress = None
    ) -> events.Timeline:
        """Replay ``requests`` on ``topology`` (a :class:`~burstlake.replay.graph.Topology`,
        which imports this module, so it is not named here)."""
        return self.model.run(topology, requests, self.settings, progress)


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
        lambda topology, requests, _settings, progress: events.simulate(
            requests, topology.resources.capacity, progress
        ),
        "max-min fluid sharing (SimGrid's flow model)",
    )
)
PACKET = register(
    Model(
        "packet",
        packet.PacketSettings.from_mapping,
        lambda topology, requests, settings, progress: packet.simulate(
            requests,
            topology.resources.capacity,
            settings,
            topology.route_vcs(requests.paths),
            progress=progress,
        ),
        "lossless packets, buffers and credits (CODES, paper 000 §2.5)",
    )
)
DEFAULT = Contention(FLOW)
