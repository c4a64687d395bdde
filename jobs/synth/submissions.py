"""Users, applications and job submissions (paper 004 §2.3, §6.1).

An application is what 004 §6.1 groups jobs by: the same user, job name and job size. Users own
a few applications each; a heavy-tailed popularity makes some applications run many times.
Multi-node sizes and run times are heavy-tailed; submissions follow the working day. Jobs are
drawn until they offer ``utilization`` of the machine's node-seconds over the window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from burstlake.jobs.synth.calibration import Calibration
from burstlake.jobs.synth.sampling import weighted_pick
from burstlake.presets import ForwardingMachine

APP_NAMES = (
    "wrf", "vasp", "lammps", "gromacs", "cfd3d", "namd", "cp2k", "openfoam",
    "weno3d", "btio", "cesm", "qe", "fluent", "nek5000", "amber", "mom6",
)  # fmt: skip
DAY_S = 86_400


@dataclass(frozen=True)
class Applications:
    """One entry per application: owner, job name, node count, run time, popularity."""

    user: np.ndarray  # user index
    name: np.ndarray  # job name (str)
    nnodes: np.ndarray
    runtime_s: np.ndarray  # median run time of its jobs
    weight: np.ndarray  # relative chance that a submitted job is this application

    def __len__(self) -> int:
        return len(self.user)


@dataclass(frozen=True)
class Submissions:
    """One entry per job, in submission order: its application, submit time and run time."""

    app: np.ndarray
    submit_s: np.ndarray  # seconds after the window start
    runtime_s: np.ndarray
    nnodes: np.ndarray

    def __len__(self) -> int:
        return len(self.app)


def user_name(user: int) -> str:
    return f"user{user:03d}"


def user_uid(user: int) -> int:
    return 10_000 + user


def _app_sizes(
    cal: Calibration, machine: ForwardingMachine, weight: np.ndarray, rng: np.random.Generator
):
    count = len(weight)
    exponent = 1 + rng.exponential(cal.size_log2_scale, count)
    pow2 = rng.random(count) < cal.pow2_share
    sizes = np.where(pow2, 2 ** np.round(exponent), np.round(2**exponent))
    multi = weighted_pick(np.ones(count, dtype=bool), weight, cal.multi_node_share, rng)
    limit = min(cal.max_job_nodes, machine.nodes)
    return np.where(multi, np.clip(sizes, 2, limit), 1).astype(np.int64)


def applications(
    cal: Calibration, machine: ForwardingMachine, rng: np.random.Generator
) -> Applications:
    """Draw the users' applications (004 §6.1: same user, job name and size)."""
    per_user = rng.geometric(1 / cal.apps_per_user, cal.users)
    user = np.repeat(np.arange(cal.users), per_user)
    count = len(user)
    ordinal = np.arange(count) - np.repeat(np.cumsum(per_user) - per_user, per_user)
    stem = rng.integers(0, len(APP_NAMES), count)
    name = np.array(
        [APP_NAMES[s] + (f"_{k}" if k else "") for s, k in zip(stem, ordinal, strict=True)]
    )
    runtime = cal.runtime_median_s * np.exp(cal.runtime_sigma * rng.standard_normal(count))
    weight = rng.pareto(cal.app_popularity_shape, count) + 1
    return Applications(user, name, _app_sizes(cal, machine, weight, rng), runtime, weight)


def _submit_times(cal: Calibration, window_s: int, count: int, rng: np.random.Generator):
    """Sorted submit times whose density follows the working day."""
    grid = np.arange(0, window_s + 60, 60, dtype=np.float64)
    hours = (grid % DAY_S) / 3600
    density = 1 + cal.diurnal_amplitude * np.cos(2 * np.pi * (hours - cal.diurnal_peak_hour) / 24)
    cdf = np.concatenate([[0.0], np.cumsum((density[1:] + density[:-1]) / 2)])
    return np.interp(np.sort(rng.random(count)) * cdf[-1], cdf, grid).astype(np.int64)


def submissions(
    cal: Calibration,
    machine: ForwardingMachine,
    apps: Applications,
    window_s: int,
    rng: np.random.Generator,
) -> Submissions:
    """Jobs of the applications offering ``utilization`` of the window's node-seconds."""
    target = cal.utilization * machine.nodes * window_s
    probability = apps.weight / apps.weight.sum()
    mean_work = float(np.sum(probability * apps.nnodes * apps.runtime_s))
    chosen, runtimes, work = [], [], 0.0
    while work < target:
        batch = int(np.ceil((target - work) / mean_work * 1.2)) + 16
        app = rng.choice(len(apps), batch, p=probability)
        jitter = np.exp(cal.runtime_job_sigma * rng.standard_normal(batch))
        runtime = np.clip(apps.runtime_s[app] * jitter, cal.min_runtime_s, cal.max_runtime_s)
        runtime = np.minimum(np.round(runtime), max(window_s // 2, cal.min_runtime_s))
        cumulative = work + np.cumsum(apps.nnodes[app] * runtime)
        keep = int(np.searchsorted(cumulative, target)) + 1
        chosen.append(app[:keep])
        runtimes.append(runtime[:keep])
        work = float(cumulative[min(keep, batch) - 1])
    app = np.concatenate(chosen)
    runtime = np.concatenate(runtimes).astype(np.int64)
    submit = _submit_times(cal, window_s, len(app), rng)
    return Submissions(app, submit, runtime, apps.nnodes[app])
