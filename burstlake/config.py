"""The deployment file ``burstlake.yaml``: one centre's machines, sources and drop folders,
read by the command line and the DAGs alike (docs/design.md, "Deployment").

Where it is: ``--config FILE``, else ``$BURSTLAKE_CONFIG``, else ``<lake>/burstlake.yaml``;
without one, every option comes from the command line (or its defaults). The shape::

    machines:                       # the machines of the lake, each with its ingest options
      edison:
        sources:
          slurm: {tz: America/Los_Angeles}
          zabbix: {host_prefix: [nid=cn], gap_factor: 3}
    drops:                          # folders the scheduled ingest DAGs watch
      - {path: drop/edison/zabbix, source: zabbix, machine: edison, options: {interval: 10}}
    zabbix_db:                      # Zabbix databases the hourly DAG reads, per machine
      edison:
        url: postgresql://zabbix@db.example.org:5432/zabbix
        password_env: ZABBIX_EDISON_PASSWORD     # or airflow_conn_id: zabbix_edison
    replay:                         # scenario files the scheduled replay runs, in this order
      - scenarios/ion_remap.yaml

Options are a source's options (``Source.options``, the schema its command-line flags are
built from) by name (``host_prefix`` or ``host-prefix``), each checked against its declared
type and bounds before any work; a machine's options apply to all its files of that source, a
drop folder's on top of them, and a flag given on the command line on top of both, whatever
its value. Relative paths (a drop
folder, a source's file options such as ``mapping``) are relative to the file's folder.
Passwords never live in the file: a key naming a secret, or a URL holding a password, is
refused wherever it is. The file is read as :mod:`burstlake.strict_yaml` reads YAML (no aliases,
no key given twice, so no machine given twice, no deep nesting), at most
:data:`MAX_FILE_BYTES` bytes and :data:`MAX_MACHINES` machines, refused at once beyond. A drop
folder that is or holds the lake, or that two drops share, is refused. Every error is one line
naming the file and the key.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from burstlake.strict_yaml import StrictYAMLError, loads

if TYPE_CHECKING:
    from burstlake.jobs.ingest.source import Option

LOG = logging.getLogger(__name__)
FILE_NAME = "burstlake.yaml"
TOP_KEYS = ("machines", "drops", "zabbix_db", "replay")
DB_KEYS = ("url", "password_env", "airflow_conn_id")
MAX_FILE_BYTES = 4 << 20  # a deployment file of a few hundred machines is a few kB
MAX_MACHINES = 1000  # machines of one lake; each is checked with every source's options
_SECRET_KEY = re.compile(r"(?i)(password|passwd|pwd|secret|token|api_?key|credential)")
_SECRET_VALUE = re.compile(r"(?i)(://[^/@\s:]*:[^/@\s]*@|[?&;](password|passwd|pwd)=)")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ConfigError(ValueError):
    """A deployment file that cannot be used; the message is one line naming file and key."""


@dataclass(frozen=True)
class Drop:
    """A drop folder: files of one source from one machine, landed with these options."""

    path: Path
    source: str
    machine: str | None
    options: dict[str, Any]


@dataclass(frozen=True)
class Database:
    """A Zabbix database: its URL (without password) and where the password comes from."""

    machine: str
    url: str
    password_env: str | None = None
    airflow_conn_id: str | None = None


@dataclass(frozen=True)
class Deployment:
    """A checked deployment file (empty when there is none)."""

    path: Path | None = None
    machines: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    drops: tuple[Drop, ...] = ()
    databases: tuple[Database, ...] = ()
    scenarios: tuple[Path, ...] = ()  # what the scheduled replay runs (``replay:``)

    def options(self, source: str, machine: str | None) -> dict[str, Any]:
        """The ingest options the file gives a source's files of one machine (with
        ``cluster``: the machine)."""
        if machine is None:
            return {}
        return {**self.machines.get(machine, {}).get(source, {}), "cluster": machine}

    def drop_options(self, drop: Drop) -> dict[str, Any]:
        return {**self.options(drop.source, drop.machine), **drop.options}


def config_path(
    config: str | os.PathLike | None = None, lake: str | os.PathLike | None = None
) -> Path | None:
    """The deployment file in use: ``config``, else ``$BURSTLAKE_CONFIG``, else the lake's
    ``burstlake.yaml`` if it exists; None when there is none. A file named explicitly must
    exist."""
    from burstlake.lake import lake_path

    named = config or os.environ.get("BURSTLAKE_CONFIG")
    if named:
        path = Path(named).absolute()
        if not path.is_file():
            raise ConfigError(f"{path}: no such deployment file")
        return path
    default = lake_path(lake) / FILE_NAME
    return default if default.is_file() else None


def load(
    config: str | os.PathLike | None = None, lake: str | os.PathLike | None = None
) -> Deployment:
    """The deployment file found by :func:`config_path`, checked (ConfigError)."""
    from burstlake.lake import lake_path

    path = config_path(config, lake)
    if path is None:
        return Deployment()
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ConfigError(f"{path}: {size} bytes; a deployment file is at most {MAX_FILE_BYTES}")
    try:
        data = loads(path.read_text(encoding="utf-8"))
    except StrictYAMLError as err:
        raise ConfigError(f"{path}: {err}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: file: not valid YAML (not UTF-8 text)") from None
    _no_secrets(path, "", data)
    return _check(path, data if data is not None else {}, lake_path(lake).absolute())


def _no_secrets(path: Path, key: str, value: Any) -> None:
    """Refuse a secret anywhere: a key naming one (``password_env`` names a variable, not a
    secret), or a value holding a URL's password or a ``password=`` parameter."""
    if isinstance(value, dict):
        for name, item in value.items():
            here = f"{key}.{name}" if key else str(name)
            if _SECRET_KEY.search(str(name)) and str(name) != "password_env":
                raise _fail(path, here, "passwords never live in the file: use password_env")
            _no_secrets(path, here, item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _no_secrets(path, f"{key}[{i}]", item)
    elif isinstance(value, str) and _SECRET_VALUE.search(value):
        raise _fail(
            path,
            key or "(top level)",
            "holds a password: give it in password_env or airflow_conn_id",
        )


def _fail(path: Path, key: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: {key}: {message}")


def _mapping(path: Path, key: str, value: Any) -> dict:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(path, key, f"must be a mapping, not {type(value).__name__}")
    return value


def _check(path: Path, data: Any, lake: Path) -> Deployment:
    top = _mapping(path, "(top level)", data)
    unknown = sorted(set(map(str, top)) - set(TOP_KEYS))
    if unknown:
        raise _fail(path, unknown[0], f"unknown key; expected one of {', '.join(TOP_KEYS)}")
    declared = _mapping(path, "machines", top.get("machines"))
    if len(declared) > MAX_MACHINES:
        raise _fail(path, "machines", f"{len(declared)} machines; at most {MAX_MACHINES}")
    machines = {}
    for name, entry in declared.items():
        key = f"machines.{name}"
        _check_machine(path, key, name)
        entry = _mapping(path, key, entry)
        if set(entry) - {"sources"}:
            raise _fail(path, f"{key}.{sorted(set(entry) - {'sources'})[0]}", "unknown key")
        sources = _mapping(path, f"{key}.sources", entry.get("sources"))
        machines[str(name)] = {
            source: _options(path, f"{key}.sources.{source}", source, opts, name)
            for source, opts in sources.items()
        }
    drops = tuple(
        _drop(path, f"drops[{i}]", entry, machines)
        for i, entry in enumerate(_list(path, "drops", top.get("drops")))
    )
    _check_folders(path, drops, lake)
    databases = tuple(
        _database(path, f"zabbix_db.{machine}", machine, entry, machines)
        for machine, entry in _mapping(path, "zabbix_db", top.get("zabbix_db")).items()
    )
    scenarios = tuple(
        _scenario(path, f"replay[{i}]", entry)
        for i, entry in enumerate(_list(path, "replay", top.get("replay")))
    )
    return Deployment(path, machines, drops, databases, scenarios)


def _scenario(path: Path, key: str, entry: Any) -> Path:
    """A scenario file the scheduled replay runs: an existing file, relative to the
    deployment file's folder."""
    if not isinstance(entry, str) or not entry.strip():
        raise _fail(path, key, f"a scenario file's path (text), not {entry!r}")
    scenario = (path.parent / entry).absolute()
    if not scenario.is_file():
        raise _fail(path, key, f"no scenario file {scenario}")
    return scenario


def _check_folders(path: Path, drops: tuple[Drop, ...], lake: Path) -> None:
    """No drop folder is the lake or holds it (the DAG would ingest the lake's own files), and
    no two drops share a folder (a file would land under one machine only)."""
    seen: dict[Path, int] = {}
    for i, drop in enumerate(drops):
        folder = Path(os.path.realpath(drop.path))
        real_lake = Path(os.path.realpath(lake))
        if real_lake == folder or real_lake.is_relative_to(folder):
            raise _fail(
                path,
                f"drops[{i}].path",
                f"{drop.path} is or holds the lake {lake}: give a folder apart",
            )
        if folder in seen:
            raise _fail(
                path, f"drops[{i}].path", f"{drop.path} is drops[{seen[folder]}]'s folder too"
            )
        seen[folder] = i


def _list(path: Path, key: str, value: Any) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(path, key, f"must be a list, not {type(value).__name__}")
    return value


def _check_machine(path: Path, key: str, name: Any) -> None:
    from burstlake.lake import check_cluster

    if not isinstance(name, str):
        raise _fail(path, key, f"a machine name is text, not {name!r}")
    try:
        check_cluster(name, "machine name")
    except ValueError as err:
        raise _fail(path, key, str(err)) from None


def _known_machine(path: Path, key: str, name: Any, machines: Mapping[str, Any]) -> None:
    if name not in machines:
        known = ", ".join(sorted(machines)) or "none declared"
        raise _fail(path, key, f"machine {name!r} is not under machines ({known})")


@functools.cache
def source_options(source: str) -> dict[str, Option]:
    """A source's options by name (the parse options' keys), from its schema."""
    from burstlake.jobs.ingest import source_module

    return {option.name: option for option in source_module(source).SOURCE.options}


def _options(path: Path, key: str, source: Any, options: Any, machine: str | None) -> dict:
    """A source's options from the file: known names, values of the option's type within its
    bounds, paths resolved against the file's folder, and the source's own check."""
    from burstlake.jobs.ingest import SOURCES, source_module

    if source not in SOURCES:
        raise _fail(path, key, f"unknown source; choose one of {', '.join(SOURCES)}")
    known = source_options(source)
    checked: dict[str, Any] = {}
    for name, value in _mapping(path, key, options).items():
        option = known.get(str(name).replace("-", "_"))
        if option is None:
            hint = ", ".join(sorted(known)) or "none"
            raise _fail(path, f"{key}.{name}", f"not an option of {source} (options: {hint})")
        checked[option.name] = _value(path, f"{key}.{name}", option, value)
    source_spec = source_module(source).SOURCE
    for dest in source_spec.path_options:
        if isinstance(checked.get(dest), str):
            checked[dest] = str((path.parent / checked[dest]).resolve())
    try:
        source_spec.check_options({**checked, "cluster": machine})
    except (ValueError, OSError) as err:
        raise _fail(path, key, str(err)) from None
    return checked


def _value(path: Path, key: str, option: Option, value: Any) -> Any:
    """A value as the command line would have given it (:meth:`Option.convert`: its type,
    choices and bounds; a list for a repeated option; true/false for a flag)."""
    if option.flag:
        if not isinstance(value, bool):
            raise _fail(path, key, f"must be true or false, not {value!r}")
        return value
    values = value if option.repeated and isinstance(value, list) else [value]
    if (not option.repeated and isinstance(value, list | dict)) or any(
        isinstance(v, list | dict) for v in values
    ):
        raise _fail(path, key, f"must be a single value, not {value!r}")
    try:
        converted = [option.convert(str(v)) for v in values]
    except ValueError as err:
        raise _fail(path, key, str(err)) from None
    return converted if option.repeated else converted[0]


def _drop(path: Path, key: str, entry: Any, machines: Mapping[str, Any]) -> Drop:
    entry = _mapping(path, key, entry)
    unknown = sorted(set(entry) - {"path", "source", "machine", "options"})
    if unknown:
        raise _fail(path, f"{key}.{unknown[0]}", "unknown key (path, source, machine, options)")
    for required in ("path", "source"):
        if not isinstance(entry.get(required), str) or not entry[required].strip():
            raise _fail(path, f"{key}.{required}", "required (text)")
    machine = entry.get("machine")
    if machine is not None:
        if not isinstance(machine, str):
            raise _fail(path, f"{key}.machine", f"a machine name is text, not {machine!r}")
        _known_machine(path, f"{key}.machine", machine, machines)
    options = _options(path, f"{key}.options", entry["source"], entry.get("options"), machine)
    return Drop((path.parent / entry["path"]).absolute(), entry["source"], machine, options)


def _database(
    path: Path, key: str, machine: Any, entry: Any, machines: Mapping[str, Any]
) -> Database:
    _known_machine(path, key, machine, machines)
    entry = _mapping(path, key, entry)
    unknown = sorted(set(entry) - set(DB_KEYS))
    if unknown:
        raise _fail(path, f"{key}.{unknown[0]}", f"unknown key ({', '.join(DB_KEYS)})")
    url = entry.get("url")
    if not isinstance(url, str) or not url.startswith(("postgresql://", "postgres://")):
        raise _fail(path, f"{key}.url", "required: postgresql://user@host:port/database")
    from urllib.parse import urlsplit

    if urlsplit(url).password is not None:
        raise _fail(
            path, f"{key}.url", "holds a password: give it in password_env or airflow_conn_id"
        )
    for name in ("password_env", "airflow_conn_id"):
        value = entry.get(name)
        if value is not None and (not isinstance(value, str) or not _ENV_NAME.fullmatch(value)):
            raise _fail(path, f"{key}.{name}", f"a name of letters, digits and _, not {value!r}")
    return Database(str(machine), url, entry.get("password_env"), entry.get("airflow_conn_id"))
