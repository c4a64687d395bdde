"""``synthesize``: a machine-wide trace with known answers, into the lake or as raw files.

Order of work (each step its own module): applications and submissions (submissions), the
Slurm-like scheduler and allocator, per-job I/O behaviour and phases, then the writers. Every
random draw comes from a NumPy Generator seeded from ``seed`` (one stream per step), so the
same preset, seed and parameters give byte-identical tables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from burstlake.jobs.synth import allocator, behaviour, submissions
from burstlake.jobs.synth.calibration import Calibration, calibration
from burstlake.jobs.synth.trace import DAY_S, Trace
from burstlake.jobs.synth.writers import check_raw_size, write_lake, write_raw
from burstlake.lake import check_cluster
from burstlake.presets import ForwardingMachine
from burstlake.presets import machine as machine_preset
from burstlake.progress import Report, silent


def _streams(seed: int) -> list[np.random.Generator]:
    """Independent random streams: workload, allocator, behaviour, raw-file imperfections."""
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)]


def build_trace(
    preset: str,
    days: float | None = None,
    seed: int = 0,
    params_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    cluster: str | None = None,
) -> Trace:
    """Decide the whole trace (jobs, placement, behaviour, phases) without writing anything.
    Its rows name the machine ``cluster`` (default: the preset's name)."""
    machine = machine_preset(preset)
    cal = calibration(preset, params_file, overrides)
    window_s = _window_s(machine, cal, days)
    if seed < 0:
        raise ValueError(f"--seed must be >= 0, not {seed}")
    streams = _streams(seed)
    apps = submissions.applications(cal, machine, streams[0])
    submitted = submissions.submissions(cal, machine, apps, window_s, streams[0])
    placement = allocator.schedule(cal, machine, submitted, window_s, streams[1])
    jobs = _running(submitted, placement, window_s)
    traits = behaviour.app_traits(cal, apps, streams[2])
    decided = behaviour.job_behaviour(
        cal, apps, traits, jobs, machine.nodes, window_s, seed, streams[2]
    )
    epoch = datetime.fromisoformat(cal.start_date).replace(tzinfo=UTC)
    return Trace(
        preset=preset,
        cluster=cluster or preset,
        seed=seed,
        machine=machine,
        cal=cal,
        epoch_s=int(epoch.timestamp()),
        window_s=window_s,
        apps=apps,
        traits=traits,
        jobs=jobs,
        behaviour=decided,
        phases=behaviour.phases(cal, traits, jobs, decided),
    )


def _window_s(machine: ForwardingMachine, cal: Calibration, days: float | None) -> int:
    """The trace window in seconds, a whole number of intervals."""
    days = machine.days if days is None else days
    window_s = round(days * DAY_S) // cal.interval_s * cal.interval_s
    if window_s < 4 * cal.min_runtime_s:
        raise ValueError(f"--days {days} is too short: the window must hold a few jobs")
    return window_s


def _running(
    submitted: submissions.Submissions, placement: allocator.Placement, window_s: int
) -> behaviour.RunningJobs:
    """The jobs that started and ended inside the window, in submission order."""
    end = placement.start_s + submitted.runtime_s
    ran = np.flatnonzero((placement.start_s >= 0) & (end <= window_s))
    nnodes = submitted.nnodes[ran]
    offsets = np.concatenate(([0], np.cumsum(nnodes)[:-1])).astype(np.int64)
    nodes = [placement.nodes[j] for j in ran]
    return behaviour.RunningJobs(
        app=submitted.app[ran],
        submit_s=submitted.submit_s[ran],
        start_s=placement.start_s[ran],
        end_s=end[ran],
        nnodes=nnodes,
        node_offset=offsets,
        flat_nodes=np.concatenate(nodes) if nodes else np.zeros(0, dtype=np.int64),
    )


def synthesize(
    preset: str,
    lake: str | os.PathLike | None = None,
    raw: str | os.PathLike | None = None,
    days: float | None = None,
    seed: int = 0,
    params_file: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    report: Report = silent,
    cluster: str | None = None,
) -> dict[str, int]:
    """Synthesize a trace of ``preset`` into ``lake`` and/or as raw files under ``raw``.

    ``cluster`` names the machine in the lake (default: the preset's name), so two machines
    built from one preset can share a lake (docs/design.md, "Several machines in one lake").

    Returns rows (or lines) written per table or file kind, plus ``jobs_synthesized``; progress
    goes to ``report`` (:mod:`burstlake.progress`).
    """
    if lake is None and raw is None:
        raise ValueError("synthesize needs a lake directory or a raw output directory")
    if raw is not None:
        cal = calibration(preset, params_file, overrides)
        check_raw_size(machine_preset(preset), cal, _window_s(machine_preset(preset), cal, days))
    if cluster is not None:
        check_cluster(cluster, "--cluster")
    trace = build_trace(preset, days, seed, params_file, overrides, cluster)
    written = {"jobs_synthesized": len(trace.jobs)}
    if raw is not None:
        raw_files = write_raw(trace, raw, _streams(seed)[3], report)
        written |= {f"raw_{k}": v for k, v in raw_files.items()}
    if lake is not None:
        written |= write_lake(trace, lake, report)
    return written
