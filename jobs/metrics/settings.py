"""Thresholds of the metrics, with the papers' defaults (paper 004 §3, §4, §6)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

GIB = 1 << 30
RECORD = "metric_settings.json"  # in the lake's folder: the settings its metrics last ran with


@dataclass(frozen=True)
class MetricSettings:
    """Every threshold the metrics use; the defaults are the paper's where it gives one."""

    rank0_share: float = 0.95
    """Rank-0 I/O: one node carries more than this share of the job's bytes (004 §3.2.1)."""
    uneven_nud: float = 0.05
    """Uneven I/O or node distribution: NUD above this (004 §3.2.2, §3.3.2)."""
    divergence_consistent: float = 0.3
    """An application's traffic distribution is consistent at or below this (004 §6.3)."""
    data_intensive_bytes: int = 10 * GIB
    """Data-intensive job: total I/O above this. 004 §6.2 leaves the value open; 10 GiB puts
    roughly the paper's share of Tianhe-1A jobs (7.2 %) above it on calibrated traces."""
    min_app_jobs: int = 5
    """Applications are analysed when they have more than this many jobs (004 §6.3)."""
    top_node_fraction: float = 0.01
    """Busiest share of the system's nodes per interval (004 §4.1, §7.5)."""
    top_cabinet_fraction: float = 0.2
    """Busiest share of cabinets per interval (004 §4.1, Fig. 8)."""
    top_ion_fraction: float = 0.1
    """Busiest share of I/O nodes per interval (004 §7.4, Figs. 15c, 16c)."""
    low_throughput_fraction: float = 0.33
    """Temporal burstiness: intervals below this fraction of the peak (004 §1, Intrepid)."""
    io_phase_bytes_per_s: float = float(1 << 20)
    """A job is in an I/O phase in an interval where its nodes move at least this rate."""
    io_phase_gap_s: float = 30.0
    """A job's I/O-phase intervals separated by a quiet gap shorter than this are one phase
    (the io_phases table; paper 001's unit of coordination)."""
    darshan_modules: tuple[str, ...] = ("POSIX", "STDIO", "DAOS")
    """Darshan modules whose bytes reach storage (MPI-IO, HDF5, PnetCDF sit above POSIX)."""
    dxt_interval_s: int = 60
    """Interval of the DXT time series (dxt_job_series) on a machine without node_io; with
    node_io, its interval."""
    nodes_per_cabinet: int | None = None
    """Cabinet size for minimal cabinets ⌈N / size⌉; None: the largest cabinet in topology."""
    time_bucket_s: int = 86400
    """Width of the time buckets that turn the job × interval range join into an equi-join (each
    allocation is one broadcast row per bucket its run touches: a day keeps them few)."""
    broadcast_rows: int = 4_000_000
    """Most allocation × bucket rows the range join sends to every task (about 100 bytes each);
    beyond it, both sides are shuffled instead, so a long lake does not swamp the driver."""

    def __post_init__(self) -> None:
        for name in FRACTIONS:
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"metrics setting {name} must be in (0, 1]")
        if self.io_phase_gap_s < 0:
            raise ValueError("metrics setting io_phase_gap_s must be >= 0")
        if self.time_bucket_s <= 0 or (self.nodes_per_cabinet or 1) <= 0:
            raise ValueError("metrics settings time_bucket_s and nodes_per_cabinet must be > 0")
        if self.dxt_interval_s <= 0:
            raise ValueError("metrics setting dxt_interval_s must be > 0")
        if self.broadcast_rows < 0:
            raise ValueError("metrics setting broadcast_rows must be >= 0")

    def with_overrides(self, pairs: list[str]) -> MetricSettings:
        """These settings with ``NAME=VALUE`` overrides, each typed like its default."""
        names = [f.name for f in fields(self)]
        changes: dict[str, object] = {}
        for pair in pairs:
            name, sep, text = pair.partition("=")
            if not sep or name not in names:
                known = ", ".join(names)
                raise ValueError(
                    f"bad metrics setting {pair!r}: use NAME=VALUE, NAME one of {known}"
                )
            changes[name] = _parse(name, text, getattr(self, name))
        return replace(self, **changes)


FRACTIONS = (
    "rank0_share",
    "uneven_nud",
    "top_node_fraction",
    "top_cabinet_fraction",
    "top_ion_fraction",
    "low_throughput_fraction",
)


def _parse(name: str, text: str, default: object) -> object:
    """A setting's value from text, typed like its default (int settings accept 1e9)."""
    if isinstance(default, tuple):
        return tuple(t.strip() for t in text.split(",") if t.strip())
    kind = float if isinstance(default, float) else int
    try:
        return kind(text) if kind is float else int(float(text))
    except ValueError:
        raise ValueError(f"metrics setting {name}: {text!r} is not a {kind.__name__}") from None


def top_count(fraction: float, count: int) -> int:
    """k of a top-k: ⌈fraction × count⌉, at least 1 (004 §4.1: the busiest 1 % of nodes)."""
    return max(1, math.ceil(fraction * count - 1e-9))


def record(settings: MetricSettings, lake: str | os.PathLike) -> Path:
    """Write ``settings`` into the lake's folder (``metric_settings.json``): the thresholds its
    metrics ran with, which the replay's scores and the report read back (:func:`recorded`),
    so ``burstlake metrics --set top_ion_fraction=0.2`` reaches them."""
    path = Path(lake) / RECORD
    scratch = path.with_name(f".{RECORD}.{os.getpid()}")
    scratch.write_text(json.dumps(asdict(settings), indent=2, sort_keys=True) + "\n")
    scratch.replace(path)  # whole or not at all
    return path


def recorded(lake: str | os.PathLike | None) -> MetricSettings:
    """The settings the lake's metrics last ran with (:func:`record`); the defaults for a lake
    whose metrics never ran (or no lake). A file that cannot be read is an error naming it."""
    path = None if lake is None else Path(lake) / RECORD
    if path is None or not path.exists():
        return MetricSettings()
    try:
        given = json.loads(path.read_text())
        known = {f.name: f for f in fields(MetricSettings)}
        if not isinstance(given, dict) or set(given) - set(known):
            raise ValueError(f"keys must be among {sorted(known)}")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in given.items()}
        return MetricSettings(**values)
    except (ValueError, TypeError) as err:
        raise ValueError(
            f"{path}: not the metric settings burstlake metrics writes ({err}); "
            "run `burstlake metrics` again or delete the file"
        ) from None
