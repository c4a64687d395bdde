"""Every calibration parameter of the trace synthesizer, in one place (issue 4).

A :class:`Calibration` holds the workload, allocator, I/O-behaviour and raw-output parameters.
Each machine preset has its defaults (:data:`PRESET_CALIBRATIONS`): the job-level shares are the
reference values paper 004 measured on Tianhe-1A and CS19 (§3.2 rank-0 and even I/O,
§6.2 Table 3 data-intensive, low-communication and optimizable jobs, and the data-intensive
share of traffic); the allocator and burst parameters are tuned so that the node distribution
(§3.3, Fig. 4), spatial burstiness (§4.1) and the busiest IONs' share under block mapping
(§7.4.1) land near the paper's figures. ``tiny`` uses the
Tianhe-1A shares on a small machine. Any field can be overridden from a YAML file or with
``key=value`` strings (:func:`calibration`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from burstlake.jobs.metrics.settings import GIB, MetricSettings

THRESHOLDS = MetricSettings()  # the metrics' defaults: one definition of each threshold


@dataclass(frozen=True)
class Calibration:
    """Parameters of one synthesizer run; see the field comments for meaning and source."""

    # --- trace window -------------------------------------------------------------------
    interval_s: int = 10  # Zabbix sampling interval (004 §2.2)
    start_date: str = "2017-12-12"  # first traced day, UTC (004 §2.2: Tianhe-1A trace window)

    # --- workload: users, applications, jobs (004 §2.3, §6.1) -----------------------------
    utilization: float = 0.85  # offered node-seconds / machine node-seconds
    users: int = 150
    apps_per_user: float = 4.0  # mean of a geometric count; an app = user + name + size
    app_popularity_shape: float = 2.5  # Pareto shape of an app's weight: few apps run a lot
    multi_node_share: float = 0.575  # 004 Table 3: all-rank 42.7 % of jobs = 74.3 % of multi
    size_log2_scale: float = 1.8  # multi-node apps: log2(nodes) - 1 ~ Exponential(scale)
    pow2_share: float = 0.7  # share of multi-node apps asking for a power of two
    max_job_nodes: int = 1024
    runtime_median_s: float = 7200.0  # lognormal app run time ...
    runtime_sigma: float = 1.2  # ... heavy-tailed
    runtime_job_sigma: float = 0.25  # a job's run time around its application's
    min_runtime_s: int = 120
    max_runtime_s: int = 172_800
    diurnal_amplitude: float = 0.6  # submissions follow the working day
    diurnal_peak_hour: float = 15.0

    # --- allocator (004 §3.3.1) -----------------------------------------------------------
    tree_fit_share: float = 0.7  # jobs placed by the topology step (fewest cabinets) first
    scatter_share: float = 0.0  # jobs skipping the consecutive best fit: scattered nodes
    spread_share: float = 0.57  # scattered jobs taking random free nodes, not the lowest
    backfill_depth: int = 64  # queued jobs the scheduler looks at per pass
    max_head_wait_s: int = 21_600  # after this the head job blocks backfill until it starts

    # --- I/O behaviour (004 §3.2, §6.2, §6.3) ----------------------------------------------
    rank0_share: float = 0.257  # of multi-node jobs (§3.2.1)
    even_share: float = 0.619  # of all-rank jobs: NUD <= uneven_nud (§3.2.2)
    data_intensive_share: float = 0.072  # of all jobs (Table 3)
    data_intensive_allrank_share: float = 0.92  # of data-intensive jobs: multi-node all-rank
    data_intensive_traffic_share: float = 0.981  # of all bytes (§6.2)
    low_comm_share: float = 0.933  # of all jobs (Table 3)
    optimizable_share: float = 0.063  # data-intensive ∧ all-rank ∧ low-comm (Table 3)
    data_intensive_bytes: int = THRESHOLDS.data_intensive_bytes  # the metrics' threshold
    uneven_nud: float = THRESHOLDS.uneven_nud  # the metrics' threshold: synth_truth.uneven is
    # io_nud above it; run ``burstlake metrics --set uneven_nud=...`` with the same value
    data_intensive_runtime_noise: float = 1.0  # data-intensive apps are the long-running ones:
    # picked by log(median run time) + this × N(0, 1), largest first (assumed, not in 004)
    non_di_log10_width: float = 4.0  # other jobs' bytes: log-uniform over this many decades
    flip_share: float = 0.03  # chance a job departs from its app's characteristic (Def. 3)
    divergent_app_share: float = 0.5  # uneven apps whose heavy nodes move job to job (Def. 4)
    even_nud_max: float = 0.03  # even jobs' NUD stays below (and below uneven_nud)
    uneven_nud_min: float = 0.1  # uneven jobs' NUD stays above
    uneven_nud_max: float = 0.6
    aggregator_share_max: float = 0.3  # uneven jobs: share of nodes that carry most bytes
    allrank_max_share: float = 0.85  # no node of an all-rank job carries more (below the
    # metrics' rank0_share, 0.95, above which a job is rank-0)
    rank0_min_share: float = 0.97  # the root's share of a rank-0 job's bytes
    read_share_max: float = 0.5  # input read phase: up to this share of a job's bytes
    checkpoint_period_s: float = 3600.0  # median time between checkpoint (write) phases
    node_rate_bytes_s: float = 1.5e9  # a node's Lustre throughput in an ordinary job's burst
    # data-intensive jobs sustain I/O (§4.1: top 1 % nodes, top 20 % cabinets at all times)
    writer_rate_bytes_s: float = 5e7  # median per-node write rate of an application ...
    writer_rate_sigma: float = 0.5  # ... lognormal over applications, at most node_rate
    writers_exponent: float = 0.8  # nodes writing at once grow as n^this (n job nodes);
    # with adjacent_writers_share and writing_node_share, tuned so that over seeds 0-4 of ten
    # days the busiest 10 % of IONs carry 58.5 % on average under block mapping (§7.4.1,
    # Fig. 15c: 58.6 %; per seed 53.5-64.9 %: a few heavy jobs decide a span). 0.45 with
    # 0.0115 fitted seed 0 alone (59.1 %; mean of five 53.1 %)
    writing_node_share: float = 0.0105  # of the machine's nodes, writing data-intensive I/O
    # at any moment on average (§4.1: the top 1 % of nodes carry 90.8 % of the traffic; over
    # seeds 0-4 of ten days 90.6 %)
    adjacent_writers_share: float = 1.0  # data-intensive apps whose nodes write in waves of
    # adjacent nodes (rank order) rather than strided over the job: the ION locality of the
    # busy nodes (§7.4.1: "adjacent compute nodes often perform I/O concurrently")
    adjacent_run_nodes: int = 1  # a data-intensive job's nodes write in runs of at least
    # this many adjacent nodes (node_index order), at least this many writers at once for a
    # shorter share of its run (the same bytes): fewer jobs writing at once, each from a
    # longer run of busy neighbours (§4.1: "a small number of adjacent compute nodes"). 1
    # keeps the runs as writers_exponent sets them; bench/fig17a_sweep.py shows its effect
    # on Fig. 17a and the calibrated figures
    low_comm_ratio_max: float = 0.8  # low-comm jobs: comm bytes / I/O bytes up to this
    high_comm_ratio_min: float = 1.5  # others: from this ...
    high_comm_ratio_max: float = 20.0  # ... to this
    cpu_load: float = 11.5  # gauge on busy nodes (12 cores), mean of a job's
    mem_used_bytes: int = 8 * GIB  # gauge on busy nodes, mean of a job's

    # --- raw output: Zabbix export imperfections (docs/design.md, Sources) -----------------
    jitter_s: float = 1.0  # sample clocks within ± this of the grid (< interval / 4)
    reset_share: float = 0.05  # nodes rebooted (counters reset) once per day, when idle
    gap_share: float = 0.05  # nodes missing a run of samples per day, when idle
    gap_max_samples: int = 6

    def __post_init__(self) -> None:
        shares = [f.name for f in fields(self) if f.name.endswith("_share")]
        for name in shares:
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"calibration {name} must be in [0, 1], not {getattr(self, name)}")
        if self.interval_s <= 0 or self.jitter_s * 4 >= self.interval_s:
            raise ValueError("calibration needs interval_s > 0 and jitter_s < interval_s / 4")
        if self.min_runtime_s < 3 * self.interval_s:
            raise ValueError("calibration min_runtime_s must cover at least 3 intervals")
        if not 0 <= self.writers_exponent <= 1:
            raise ValueError("calibration writers_exponent must be in [0, 1]")
        if self.adjacent_run_nodes < 1:
            raise ValueError(
                f"calibration adjacent_run_nodes must be >= 1, not {self.adjacent_run_nodes}"
            )
        if not 0 < self.writer_rate_bytes_s <= self.node_rate_bytes_s:
            raise ValueError("calibration needs 0 < writer_rate_bytes_s <= node_rate_bytes_s")
        nuds = (self.even_nud_max, self.uneven_nud, self.uneven_nud_min, self.uneven_nud_max)
        if not 0 <= nuds[0] < nuds[1] < nuds[2] <= nuds[3]:
            raise ValueError(
                "calibration needs even_nud_max < uneven_nud < uneven_nud_min <= uneven_nud_max "
                f"(got {', '.join(map(str, nuds))})"
            )
        if not self.allrank_max_share < THRESHOLDS.rank0_share < self.rank0_min_share:
            raise ValueError(
                "calibration needs allrank_max_share < the metrics' rank0_share "
                f"({THRESHOLDS.rank0_share}) < rank0_min_share"
            )
        if self.optimizable_share > self.data_intensive_share * self.data_intensive_allrank_share:
            raise ValueError(
                "calibration optimizable_share exceeds data_intensive_share × "
                "data_intensive_allrank_share: no job mix can reach it"
            )

    def metric_settings(self) -> MetricSettings:
        """The metrics thresholds the trace's ``synth_truth`` labels follow."""
        return dataclasses.replace(
            THRESHOLDS, uneven_nud=self.uneven_nud, data_intensive_bytes=self.data_intensive_bytes
        )

    def to_json(self) -> str:
        """The parameters as one JSON object (kept with the run's ground truth)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    # --- derived probabilities ------------------------------------------------------------
    @property
    def allrank_job_share(self) -> float:
        """All-rank jobs among all jobs (multi-node and not rank-0)."""
        return self.multi_node_share * (1 - self.rank0_share)

    def data_intensive_given(self, allrank: bool) -> float:
        """P(data-intensive | all-rank or not) that meets both Table 3 shares."""
        di_allrank = self.data_intensive_share * self.data_intensive_allrank_share
        if allrank:
            return _probability(di_allrank / self.allrank_job_share, "data_intensive_share")
        other = self.data_intensive_share - di_allrank
        return _probability(other / (1 - self.allrank_job_share), "data_intensive_share")

    def low_comm_given(self, data_intensive_allrank: bool) -> float:
        """P(low-comm | data-intensive all-rank or not) meeting low-comm and optimizable."""
        di_allrank = self.data_intensive_share * self.data_intensive_allrank_share
        if data_intensive_allrank:
            return _probability(self.optimizable_share / di_allrank, "optimizable_share")
        rest = self.low_comm_share - self.optimizable_share
        return _probability(rest / (1 - di_allrank), "low_comm_share")


def _probability(p: float, name: str) -> float:
    if not 0 <= p <= 1:
        raise ValueError(f"calibration: {name} is inconsistent with the other shares (p={p:.3f})")
    return p


PRESET_CALIBRATIONS: dict[str, dict[str, Any]] = {
    "tianhe1a": {},
    "cs19": {
        "start_date": "2019-02-27",
        "multi_node_share": 0.475,  # Table 3: all-rank 44.4 % of jobs = 93.4 % of multi-node
        "size_log2_scale": 2.2,
        "max_job_nodes": 2048,
        "tree_fit_share": 0.0,
        "scatter_share": 0.5,  # Fig. 4: only 49.2 % in minimal cabinets despite 128-node ones
        "spread_share": 0.1,  # Fig. 5: 71.3 % of multi-cabinet jobs uneven
        "rank0_share": 0.066,
        "even_share": 0.529,
        "data_intensive_share": 0.301,
        "data_intensive_allrank_share": 0.85,
        "data_intensive_traffic_share": 0.910,
        "data_intensive_runtime_noise": 3.0,  # 30 % of jobs: barely longer than the rest
        "writing_node_share": 0.008,  # §4.1: the top 1 % of nodes carry 96.6 %
        "writer_rate_bytes_s": 1e7,  # keeps the data-intensive traffic share at 91 %
        "writer_rate_sigma": 0.7,
        "writers_exponent": 0.0,  # the Tianhe-1A ION locality drops the top 20 % of cabinets
        "adjacent_writers_share": 0.0,  # to ~70 % here (Fig. 8: about 80 %)
        "low_comm_share": 0.953,
        "optimizable_share": 0.240,
        "cpu_load": 15.5,  # 16 cores per node
        "mem_used_bytes": 12 * GIB,
    },
    # the demo and test machine: writers spread over the job, as before the Tianhe-1A ION
    # calibration (its lakes and the figures derived from them stay as they were)
    "tiny": {
        "users": 40,
        "max_job_nodes": 64,
        "runtime_median_s": 3600.0,
        "writers_exponent": 0.0,
        "writing_node_share": 0.0115,
        "adjacent_writers_share": 0.0,
    },
}


def _coerce(field: dataclasses.Field, value: Any) -> Any:
    """``value`` (from YAML or a ``key=value`` string) as the field's type, or a ValueError."""
    kind = type(field.default)
    if isinstance(value, str) and kind is not str:
        try:
            value = float(value)  # an int field takes "8" or "1e3", never "2.5" cut to 2
        except ValueError:
            message = f"calibration {field.name} must be a {kind.__name__}, not {value!r}"
            raise ValueError(message) from None
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if kind is int and isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ValueError(f"calibration {field.name} must be a {kind.__name__}, not {value!r}")
    return value


def _apply(base: Calibration, overrides: Mapping[str, Any], origin: str) -> Calibration:
    known = {f.name: f for f in fields(Calibration)}
    unknown = sorted(set(overrides) - set(known))
    if unknown:
        raise ValueError(
            f"{origin}: unknown calibration parameter(s) {', '.join(unknown)}; "
            f"known: {', '.join(known)}"
        )
    return dataclasses.replace(
        base, **{k: _coerce(known[k], v) for k, v in sorted(overrides.items())}
    )


def parse_assignments(assignments: Iterable[str]) -> dict[str, str]:
    """``["key=value", ...]`` → dict; a string without '=' is a ValueError."""
    parsed = {}
    for item in assignments:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects key=value, got {item!r}")
        parsed[key.strip()] = value.strip()
    return parsed


def load_params(path: str | Path) -> dict[str, Any]:
    """Overrides from a YAML file holding one mapping of parameter → value."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except yaml.YAMLError as err:
        raise ValueError(f"{path}: not valid YAML: {err}") from err
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of calibration parameter: value")
    return data


def calibration(
    preset: str,
    params_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Calibration:
    """The preset's calibration, then the YAML file's values, then ``overrides``."""
    if preset not in PRESET_CALIBRATIONS:
        raise ValueError(
            f"unknown preset {preset!r}; choose one of {', '.join(PRESET_CALIBRATIONS)}"
        )
    result = _apply(Calibration(), PRESET_CALIBRATIONS[preset], f"preset {preset}")
    if params_file is not None:
        result = _apply(result, load_params(params_file), str(params_file))
    return _apply(result, overrides or {}, "--set")
