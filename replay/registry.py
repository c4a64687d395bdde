"""One shape for every extension point of the replay (docs/design.md, "Extension points"):
contention models (:mod:`burstlake.replay.models`), topology families
(:mod:`burstlake.replay.topologies`), workloads (:mod:`burstlake.replay.workloads`) and
policies (:mod:`burstlake.replay.policies`) each keep their entries in a :class:`Registry`.

An entry has a name, a settings *schema* (the keys a scenario may give it besides its name),
a *check* (refuse bad values in one line, before any work) and a *build* (what the scenario
runner uses: a contention model's replay, a topology, a workload's demand and scores, a
policy's ``apply``). The registry refuses an unknown name or setting with one wording,
:func:`refuse_unknown`, whatever the extension point.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def refuse_unknown(where: str, what: str, unknown: Iterable[Any], allowed: Iterable[Any]) -> None:
    """The one refusal of a name or key the replay does not know: ``{where}: unknown {what}
    {unknown}; allowed: {allowed}`` (a misspelled key is an error, not ignored)."""
    unknown = sorted(unknown, key=repr)
    if unknown:
        shown = repr(unknown[0]) if len(unknown) == 1 else repr(unknown)
        listed = ", ".join(sorted(allowed)) or "none"
        raise ValueError(f"{where}: unknown {what} {shown}; allowed: {listed}")


def signature_schema(build: Callable[..., Any]) -> tuple[frozenset[str], frozenset[str]]:
    """The settings a ``build(**settings)`` takes and those it requires, from its signature
    (a ``**settings`` parameter is refused: such a build declares its schema itself)."""
    params = inspect.signature(build).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        raise TypeError(f"{build!r} takes **settings: register it with its schema")
    names = frozenset(p.name for p in params)
    required = frozenset(p.name for p in params if p.default is inspect.Parameter.empty)
    return names, required


class Registry(Generic[T]):
    """Entries of one extension point by name.

    ``what`` names an entry in refusals (``model``, ``topology``...); ``schema(entry)`` gives
    the settings an entry takes; ``load`` imports the modules that register the shipped
    entries (called before the first look-up, so a registry module never imports them at
    the top and no import circle forms)."""

    def __init__(
        self,
        what: str,
        schema: Callable[[T], Iterable[str]],
        load: Callable[[], None] | None = None,
    ) -> None:
        self.what = what
        self.schema = schema
        self._load = load
        self._entries: dict[str, T] = {}
        self._loaded = load is None

    def register(self, name: str, entry: T) -> T:
        """Add ``entry`` as ``name``; a second, different entry of one name is refused."""
        if not isinstance(name, str) or not name:
            raise ValueError(f"a {self.what} needs a non-empty name, got {name!r}")
        known = self._entries.get(name)
        if known is not None and known is not entry and known != entry:
            raise ValueError(f"{self.what} {name!r} is registered twice")
        self._entries[name] = entry
        return entry

    def copy(self) -> Registry[T]:
        """A registry holding the same entries (the shipped ones loaded), to add to without
        changing this one (a test's toy entry)."""
        self._ready()
        other: Registry[T] = Registry(self.what, self.schema)
        other._entries = dict(self._entries)
        return other

    def _ready(self) -> None:
        if not self._loaded and self._load is not None:
            self._loaded = True
            self._load()

    def names(self) -> list[str]:
        self._ready()
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        self._ready()
        return name in self._entries

    def get(self, name: Any, where: str) -> T:
        """The entry ``name``; refused in one line (:func:`refuse_unknown`) if unknown."""
        self._ready()
        if not isinstance(name, str) or name not in self._entries:
            refuse_unknown(where, self.what, [name], self.names())
        return self._entries[name]

    def settings(
        self, where: str, entry: T, given: Mapping[str, Any], common: Iterable[str] = ()
    ) -> dict[str, Any]:
        """``given`` as a dict, refusing keys outside the entry's schema and ``common``."""
        allowed = {*self.schema(entry), *common}
        refuse_unknown(where, "settings", set(given) - allowed, allowed)
        return dict(given)

    def parse(
        self, spec: Any, where: str, key: str = "name", common: Iterable[str] = ()
    ) -> tuple[str, T, dict[str, Any]]:
        """A scenario's value for this extension point: a name, or a mapping of the name (under
        ``key``) and settings. The name, the entry and its settings, refused in one line if
        the name or a setting is unknown."""
        given = {key: spec} if isinstance(spec, str) else spec
        if not isinstance(given, Mapping):
            raise ValueError(
                f"{where}: a {self.what} name ({', '.join(self.names())}) or a mapping, "
                f"got {spec!r}"
            )
        given = dict(given)
        name = given.pop(key, None)
        entry = self.get(name, where)
        return name, entry, self.settings(f"{where} {name}", entry, given, common)
