"""What-if policies by name (docs/design.md, "Policies"). A policy transforms the machine or the
demand and leaves the engine alone: ``apply(topology, demand) -> (topology, demand)``. A module
registers its policies with :func:`register`; scenarios name them (``cyclic``) or give settings
(``{name: file, path: map.csv}``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from burstlake.replay.graph import Topology

Apply = Callable[[Topology, Any], tuple[Topology, Any]]
_FACTORIES: dict[str, Callable[..., Apply]] = {}


def register(name: str) -> Callable[[Callable[..., Apply]], Callable[..., Apply]]:
    """Decorator: register a policy factory ``factory(**settings) -> apply``."""

    def add(factory: Callable[..., Apply]) -> Callable[..., Apply]:
        _FACTORIES[name] = factory
        return factory

    return add


@dataclass(frozen=True)
class Policy:
    label: str  # the name scores are reported under
    apply: Apply


def names() -> list[str]:
    _load()
    return sorted(_FACTORIES)


def policy(entry: str | Mapping[str, Any]) -> Policy:
    """The policy a scenario entry names: ``cyclic`` or ``{name: ..., label: ..., **settings}``."""
    _load()
    settings = {"name": entry} if isinstance(entry, str) else dict(entry)
    name = settings.pop("name", None)
    label = str(settings.pop("label", name))
    if name not in _FACTORIES:
        raise ValueError(f"unknown policy {name!r}; choose one of {', '.join(names())}")
    try:
        return Policy(label, _FACTORIES[name](**settings))
    except TypeError as err:
        raise ValueError(f"policy {name}: bad settings {sorted(settings)}: {err}") from err


def _load() -> None:
    from burstlake.replay.policies import (  # noqa: F401 - register their policies
        bridges,
        combine,
        coordination,
        dragonfly,
        mapping,
        placement,
        reallocation,
        servers,
        throttle,
    )
