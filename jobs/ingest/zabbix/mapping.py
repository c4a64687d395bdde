"""What Zabbix items and hosts mean in ``node_io`` terms (docs/design.md, 'Sources').

The item mapping is a YAML file (the documented default is ``zabbix_mapping.yaml`` beside this
module): per node_io metric, the item names (real-time export) and keys (item table, DB, API)
that measure it, and whether they are cumulative counters, per-second rates or gauges.
Host names are normalised to the node names Slurm and the topology use.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from importlib import resources
from pathlib import Path

import pyarrow as pa
import yaml

from burstlake.schemas.tables import NODE_IO_GAUGES as GAUGES  # mean of samples; last sample
from burstlake.schemas.tables import NODE_IO_TRAFFIC as TRAFFIC

DEFAULT_MAPPING = "zabbix_mapping.yaml"
_IPV4 = re.compile(r"^\d+\.\d+\.\d+\.\d+$")


@dataclass(frozen=True)
class ItemRule:
    """Items (by export name or by key) that measure one metric, and how they count."""

    metric: str
    kind: str
    names: tuple[str, ...]
    keys: tuple[str, ...]
    scale: Decimal = Decimal(1)


IGNORE = "ignore"  # the kind of an item on the ignore list


@dataclass(frozen=True)
class ItemMapping:
    """The item rules of one mapping file, and the items it ignores (counted, not
    quarantined: a template's disk or CPU items that node_io does not need)."""

    rules: tuple[ItemRule, ...]
    origin: str
    ignore_names: tuple[str, ...] = ()
    ignore_keys: tuple[str, ...] = ()

    def table(self) -> pa.Table:
        """One row per matchable identifier: ``match`` ('name' or 'key'), ident, metric, kind,
        scale (decimal(18,6)); ignored items have kind ``ignore`` and no metric."""
        rows = [
            {"match": match, "ident": ident, "metric": r.metric, "kind": r.kind, "scale": r.scale}
            for r in self.rules
            for match, idents in (("name", r.names), ("key", r.keys))
            for ident in idents
        ]
        rows += [
            {"match": match, "ident": ident, "metric": None, "kind": IGNORE, "scale": None}
            for match, idents in (("name", self.ignore_names), ("key", self.ignore_keys))
            for ident in idents
        ]
        schema = pa.schema(
            [
                ("match", pa.string()),
                ("ident", pa.string()),
                ("metric", pa.string()),
                ("kind", pa.string()),
                ("scale", pa.decimal128(18, 6)),
            ]
        )
        return pa.Table.from_pylist(rows, schema=schema)


def _strings(entry: dict, field: str, where: str) -> tuple[str, ...]:
    value = entry.get(field, [])
    value = [value] if isinstance(value, str) else value
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{where}: '{field}' must be a list of non-empty strings")
    return tuple(value)


def _rule(entry: object, where: str) -> ItemRule:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: expected a mapping with metric, kind, names/keys")
    metric, kind = entry.get("metric"), entry.get("kind", "counter")
    if metric not in TRAFFIC + GAUGES:
        raise ValueError(f"{where}: metric {metric!r} is not one of {', '.join(TRAFFIC + GAUGES)}")
    allowed = ("gauge",) if metric in GAUGES else ("counter", "rate")
    if kind not in allowed:
        raise ValueError(f"{where}: {metric} must be of kind {' or '.join(allowed)}, not {kind!r}")
    names, keys = _strings(entry, "names", where), _strings(entry, "keys", where)
    if not names and not keys:
        raise ValueError(f"{where}: give at least one item name or key for {metric}")
    try:
        scale = Decimal(str(entry.get("scale", 1)))
    except InvalidOperation:
        raise ValueError(f"{where}: scale {entry.get('scale')!r} is not a number") from None
    if not scale.is_finite() or not scale > 0:
        given = entry.get("scale")
        raise ValueError(f"{where}: scale must be > 0 (a finite number), got {given!r}")
    return ItemRule(metric, kind, names, keys, scale)


def _check_unique(mapping: ItemMapping) -> None:
    idents = Counter(
        (match, ident)
        for rule in mapping.rules
        for match, idents in (("name", rule.names), ("key", rule.keys))
        for ident in idents
    )
    idents.update(("name", i) for i in mapping.ignore_names)
    idents.update(("key", i) for i in mapping.ignore_keys)
    origin = mapping.origin
    twice = [f"{match} {ident!r}" for (match, ident), n in idents.items() if n > 1]
    if twice:
        raise ValueError(f"{origin}: item {', '.join(twice)} mapped more than once")


def load_mapping(path: str | os.PathLike | None = None) -> ItemMapping:
    """Read a mapping file (default: the packaged ``zabbix_mapping.yaml``); ValueError if bad."""
    if path is None:
        text = resources.files(__package__).joinpath(DEFAULT_MAPPING).read_text()
        origin = DEFAULT_MAPPING
    else:
        text, origin = Path(path).read_text(), str(path)
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(err, "problem", None) or "cannot be parsed"
        raise ValueError(f"{origin}: not valid YAML{where}: {problem}") from None
    items = document.get("items") if isinstance(document, dict) else None
    if not isinstance(items, list) or not items:
        raise ValueError(f"{origin}: expected a top-level 'items' list (see {DEFAULT_MAPPING})")
    rules = tuple(_rule(entry, f"{origin}: items[{i}]") for i, entry in enumerate(items))
    ignore = document.get("ignore") or {}
    if not isinstance(ignore, dict):
        raise ValueError(f"{origin}: 'ignore' must be a mapping with names and/or keys")
    mapping = ItemMapping(
        rules,
        origin,
        _strings(ignore, "names", f"{origin}: ignore"),
        _strings(ignore, "keys", f"{origin}: ignore"),
    )
    _check_unique(mapping)
    return mapping


@dataclass(frozen=True)
class HostNames:
    """How a Zabbix host name becomes a node name: strip the DNS domain (IPv4 addresses are
    kept whole), then rewrite the first matching prefix (e.g. ``nid`` → ``cn``)."""

    strip_domain: bool = True
    prefixes: tuple[tuple[str, str], ...] = ()

    def node(self, host: str) -> str:
        name = host.strip()
        if self.strip_domain and not _IPV4.match(name):
            name = name.split(".", 1)[0]
        for old, new in self.prefixes:
            if name.startswith(old):
                return new + name[len(old) :]
        return name


def prefix_rewrite(text: str) -> tuple[str, str]:
    """Parse ``OLD=NEW`` (command-line ``--host-prefix``)."""
    old, sep, new = text.partition("=")
    if not sep or not old:
        raise ValueError(f"host prefix rewrite {text!r} is not OLD=NEW")
    return old, new
