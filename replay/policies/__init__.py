"""What-if policies by name (docs/design.md, "Policies"). A policy transforms the machine or the
demand and leaves the engine alone: ``apply(topology, demand) -> (topology, demand)``. A module
registers its policies with :func:`register`; scenarios name them (``cyclic``) or give settings
(``{name: file, path: map.csv}``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from burstlake.replay.graph import Topology
from burstlake.replay.registry import Registry, signature_schema

Apply = Callable[[Topology, Any], tuple[Topology, Any]]


@dataclass(frozen=True)
class Kind:
    """One policy (an entry of :data:`POLICIES`, :mod:`burstlake.replay.registry`):
    ``build(**settings) -> apply``; ``schema``, the settings a scenario may give it (besides
    ``name`` and ``label``), and ``required``, those it must give, are read from ``build``'s
    signature unless given. A bad value is refused by ``build`` in one line."""

    build: Callable[..., Apply]
    schema: frozenset[str]
    required: frozenset[str] = frozenset()

    def check(self, where: str, settings: dict[str, Any]) -> None:
        """Refuse a missing setting (unknown ones are the registry's)."""
        missing = sorted(self.required - set(settings))
        if missing:
            raise ValueError(f"{where}: missing settings {missing}")


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


POLICIES: Registry[Kind] = Registry("policy", lambda kind: kind.schema, _load)


def register(
    name: str, schema: Iterable[str] | None = None
) -> Callable[[Callable[..., Apply]], Callable[..., Apply]]:
    """Decorator: register a policy factory ``factory(**settings) -> apply``; its settings are
    its parameters (``schema`` names them for a factory taking ``**settings``)."""

    def add(factory: Callable[..., Apply]) -> Callable[..., Apply]:
        if schema is None:
            keys, required = signature_schema(factory)
        else:
            keys, required = frozenset(schema), frozenset()
        POLICIES.register(name, Kind(factory, keys, required))
        return factory

    return add


@dataclass(frozen=True)
class Policy:
    label: str  # the name scores are reported under
    apply: Apply


def names() -> list[str]:
    return POLICIES.names()


def policy(entry: str | Mapping[str, Any]) -> Policy:
    """The policy a scenario entry names: ``cyclic`` or ``{name: ..., label: ..., **settings}``."""
    given = {"name": entry} if isinstance(entry, str) else dict(entry)
    label = given.pop("label", None)
    name, kind, settings = POLICIES.parse(given, "policy")
    kind.check(f"policy {name}", settings)
    return Policy(str(name if label is None else label), kind.build(**settings))
