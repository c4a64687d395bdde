"""Per-job I/O behaviour → per-node per-interval traffic (paper 004 §3.2, §6.2, §6.3).

Each application has characteristics — rank-0 or all-rank I/O, even or uneven spread of an
all-rank job's bytes over its nodes, data-intensive or not, low communication or not — and each
job keeps them except with probability ``flip_share`` (the consistency degree of Def. 3).
An uneven application's heavy nodes either stay put job after job or move (the distribution
divergence of Def. 4). A job's I/O comes in bursts: an input read at the start and a checkpoint
write at the end of every checkpoint period, each as short as the node's Lustre rate allows.
Communication rides on the same intervals (gathers before rank-0 writes, halo exchanges), so
``net bytes − Lustre bytes`` is the job's communication volume.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from burstlake.jobs.synth.calibration import Calibration
from burstlake.jobs.synth.sampling import weighted_pick
from burstlake.jobs.synth.workload import Applications
from burstlake.schemas.tables import NODE_IO_TRAFFIC

XFER_BYTES = np.array([64 << 10, 256 << 10, 1 << 20, 4 << 20])
TEMPER_STEPS = np.linspace(0.0, 1.0, 201)[:, None]
RANK0_QUIET_SHARE = 0.5  # rank-0 jobs whose other nodes do no I/O at all


@dataclass(frozen=True)
class Traits:
    """Application characteristics (before per-job departures)."""

    rank0: np.ndarray
    even: np.ndarray
    data_intensive: np.ndarray
    low_comm: np.ndarray
    divergent: np.ndarray
    read_share: np.ndarray
    checkpoint_s: np.ndarray
    xfer_bytes: np.ndarray


@dataclass(frozen=True)
class RunningJobs:
    """The jobs that ran inside the window: times, and node indices flattened by job."""

    app: np.ndarray
    submit_s: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    nnodes: np.ndarray
    node_offset: np.ndarray  # job j's nodes are flat_nodes[node_offset[j] : + nnodes[j]]
    flat_nodes: np.ndarray

    def __len__(self) -> int:
        return len(self.app)


@dataclass(frozen=True)
class Behaviour:
    """Per job: labels (rank0/uneven are False for single-node jobs), volumes and gauges."""

    rank0: np.ndarray
    uneven: np.ndarray
    data_intensive: np.ndarray
    low_comm: np.ndarray
    io_bytes: np.ndarray  # intended Lustre bytes (read + write)
    comm_bytes: np.ndarray  # intended communication bytes
    io_nud: np.ndarray  # NUD of the intended per-node shares (NaN for single-node jobs)
    max_node_share: np.ndarray
    flat_shares: np.ndarray  # per-node share of the job's bytes, aligned with flat_nodes
    cpu_load: np.ndarray
    mem_used_bytes: np.ndarray


@dataclass(frozen=True)
class Phases:
    """I/O phases: job, first interval, length in intervals, read or write, bytes."""

    job: np.ndarray
    first: np.ndarray
    length: np.ndarray
    read: np.ndarray
    io_bytes: np.ndarray
    comm_bytes: np.ndarray

    def __len__(self) -> int:
        return len(self.job)

    def take(self, index: np.ndarray) -> Phases:
        return Phases(*(getattr(self, f)[index] for f in self.__dataclass_fields__))


def _departed(p: float, flip: float) -> float:
    """App-level share q such that flipping jobs with ``flip`` keeps the job share ``p``."""
    return float(np.clip((p - flip) / (1 - 2 * flip), 0, 1))


def _pick_by_class(
    member: np.ndarray, weight: np.ndarray, share_given, flip: float, rng: np.random.Generator
) -> np.ndarray:
    """A trait whose share differs inside and outside a class of apps (``share_given(bool)``)."""
    inside = weighted_pick(member, weight, _departed(share_given(True), flip), rng)
    return inside | weighted_pick(~member, weight, _departed(share_given(False), flip), rng)


def app_traits(cal: Calibration, apps: Applications, rng: np.random.Generator) -> Traits:
    """Draw each application's characteristics so the job mix meets the preset's shares."""
    count, flip, weight = len(apps), cal.flip_share, apps.weight
    multi = apps.nnodes > 1
    rank0 = weighted_pick(multi, weight, _departed(cal.rank0_share, flip), rng)
    allrank = multi & ~rank0
    even = weighted_pick(allrank, weight, _departed(cal.even_share, flip), rng)
    di = _pick_by_class(allrank, weight, cal.data_intensive_given, flip, rng)
    low_comm = _pick_by_class(allrank & di, weight, cal.low_comm_given, flip, rng)
    return Traits(
        rank0=rank0,
        even=even,
        data_intensive=di,
        low_comm=low_comm,
        divergent=rng.random(count) < cal.divergent_app_share,
        read_share=rng.uniform(0, cal.read_share_max, count),
        checkpoint_s=cal.checkpoint_period_s * np.exp(0.5 * rng.standard_normal(count)),
        xfer_bytes=XFER_BYTES[rng.integers(0, len(XFER_BYTES), count)],
    )


def nud(shares: np.ndarray) -> np.ndarray:
    """NUD = 1 − H/log n over the last axis (004 Def. 2)."""
    n = shares.shape[-1]
    safe = np.where(shares > 0, shares, 1.0)
    entropy = -np.sum(shares * np.log(safe), axis=-1)
    return 1 - entropy / np.log(n)


def _temper(p: np.ndarray, nud_max: float, nud_min: float, share_max: float) -> np.ndarray:
    """Mix ``p`` with the uniform distribution: the most uneven mix with NUD ≤ ``nud_max`` and
    max share ≤ ``share_max``, or the least uneven with NUD ≥ ``nud_min`` if that is none.

    Along the segment from uniform to ``p`` entropy only falls (it is concave), so NUD and the
    max share both grow with the mixing weight.
    """
    mixes = (1 - TEMPER_STEPS) / len(p) + TEMPER_STEPS * p
    degrees = nud(mixes)
    within = (mixes.max(axis=1) <= share_max) & (degrees <= nud_max)
    best = int(np.flatnonzero(within)[-1]) if within.any() else 0
    if degrees[best] < nud_min:
        enough = np.flatnonzero((degrees >= nud_min) & (mixes.max(axis=1) <= share_max))
        best = int(enough[0]) if len(enough) else best
    return mixes[best]


def _normalised(weights: np.ndarray) -> np.ndarray:
    return weights / weights.sum()


def _aggregators(cal: Calibration, n: int, rng: np.random.Generator) -> np.ndarray:
    """An uneven base pattern: a few aggregator nodes carry most bytes (collective I/O)."""
    heavy = max(1, round(n * rng.uniform(0.02, cal.aggregator_share_max)))
    weights = 0.02 * rng.uniform(0.5, 1.5, n)
    weights[rng.choice(n, heavy, replace=False)] = np.exp(0.5 * rng.standard_normal(heavy))
    return _normalised(weights)


def _rank0_shares(cal: Calibration, n: int, rng: np.random.Generator) -> np.ndarray:
    root = rng.uniform(cal.rank0_min_share, 1.0)
    quiet = rng.random() < RANK0_QUIET_SHARE
    rest = np.zeros(n - 1) if quiet else _normalised(rng.uniform(0.5, 1.5, n - 1)) * (1 - root)
    return np.concatenate(([1.0 if quiet else root], rest))


def _job_shares(
    cal: Calibration,
    n: int,
    rank0: bool,
    uneven: bool,
    base: np.ndarray,
    divergent: bool,
    rng: np.random.Generator,
) -> np.ndarray:
    if n == 1:
        return np.ones(1)
    if rank0:
        return _rank0_shares(cal, n, rng)
    if not uneven:
        noise = _normalised(np.exp(0.5 * rng.standard_normal(n)))
        return _temper(noise, rng.uniform(0, cal.even_nud_max), 0.0, 1.0)
    pattern = rng.permutation(base) if divergent else base
    pattern = _normalised(pattern * np.exp(0.05 * rng.standard_normal(n)))
    target = rng.uniform(cal.uneven_nud_min, cal.uneven_nud_max)
    return _temper(pattern, target, cal.uneven_nud_min, cal.allrank_max_share)


def _volumes(cal: Calibration, di: np.ndarray, nnodes: np.ndarray, rng: np.random.Generator):
    """Lustre bytes per job (§6.2): data-intensive jobs above the threshold with a heavy tail,
    growing with job size; the others log-uniform over decades below it, scaled so that
    data-intensive jobs carry ``data_intensive_traffic_share`` of all bytes."""
    count, threshold = len(di), cal.data_intensive_bytes
    size = np.maximum(nnodes / 2, 1.0) ** cal.data_intensive_size_exponent
    spread = np.exp(cal.data_intensive_sigma * np.abs(rng.standard_normal(count)))
    heavy = threshold * 1.01 * spread * size
    light = 10.0 ** -(cal.non_di_log10_width * rng.random(count))
    share = cal.data_intensive_traffic_share
    wanted = heavy[di].sum() * (1 - share) / share if di.any() else threshold
    light *= wanted / max(light[~di].sum(), 1e-300)
    light = np.clip(light, nnodes * float(1 << 20), 0.99 * threshold)
    return np.where(di, heavy, light).astype(np.int64)


def job_behaviour(
    cal: Calibration,
    apps: Applications,
    traits: Traits,
    jobs: RunningJobs,
    seed: int,
    rng: np.random.Generator,
) -> Behaviour:
    """Each job's labels, volumes and per-node shares (an app's base pattern is seeded by app
    id so it does not depend on which of its jobs ran)."""
    count, flip = len(jobs), cal.flip_share
    app, multi = jobs.app, jobs.nnodes > 1

    def departs() -> np.ndarray:
        return rng.random(count) < flip

    rank0 = multi & (traits.rank0[app] ^ departs())
    uneven = multi & ~rank0 & (~traits.even[app] ^ departs())
    di = traits.data_intensive[app] ^ departs()
    low_comm = traits.low_comm[app] ^ departs()
    io_bytes = _volumes(cal, di, jobs.nnodes, rng)
    ratio = np.where(
        low_comm,
        rng.uniform(0.01, cal.low_comm_ratio_max, count),
        np.exp(
            rng.uniform(np.log(cal.high_comm_ratio_min), np.log(cal.high_comm_ratio_max), count)
        ),
    )
    shares, degrees, peaks = [], np.full(count, np.nan), np.ones(count)
    bases: dict[int, np.ndarray] = {}
    for j in range(count):
        a, n = int(app[j]), int(jobs.nnodes[j])
        if n > 1 and a not in bases:
            bases[a] = _aggregators(cal, n, np.random.default_rng((seed, a)))
        vector = _job_shares(
            cal, n, bool(rank0[j]), bool(uneven[j]), bases.get(a), traits.divergent[a], rng
        )
        shares.append(vector)
        peaks[j] = vector.max()
        if n > 1:
            degrees[j] = nud(vector)
    uneven = multi & (degrees > 0.05)
    return Behaviour(
        rank0=rank0,
        uneven=uneven,
        data_intensive=di,
        low_comm=low_comm,
        io_bytes=io_bytes,
        comm_bytes=(io_bytes * ratio).astype(np.int64),
        io_nud=degrees,
        max_node_share=peaks,
        flat_shares=np.concatenate(shares) if shares else np.zeros(0),
        cpu_load=np.round(cal.cpu_load * rng.uniform(0.8, 1.04, count), 2),
        mem_used_bytes=(cal.mem_used_bytes * rng.uniform(0.5, 1.5, count)).astype(np.int64)
        // (1 << 20)
        * (1 << 20),
    )


def phases(cal: Calibration, traits: Traits, jobs: RunningJobs, behaviour: Behaviour) -> Phases:
    """The read phase and checkpoint write phases of every job, sorted by first interval.

    Phases sit in the intervals wholly inside the job's run, leaving out its last one, so an
    interval with traffic always has its two Zabbix samples inside the run.
    """
    iv = cal.interval_s
    first = -(-jobs.start_s // iv)
    last = -(-jobs.end_s // iv) - 2
    span = last - first + 1
    slots = np.clip((span * iv / traits.checkpoint_s[jobs.app]).astype(np.int64), 1, span // 2)
    per_job = slots + 1  # one read phase, one write phase per slot
    job = np.repeat(np.arange(len(jobs)), per_job)
    ordinal = np.arange(len(job)) - np.repeat(np.cumsum(per_job) - per_job, per_job)
    read = ordinal == 0
    slot = np.maximum(ordinal - 1, 0)
    k, length = slots[job], span[job]
    low = first[job] + slot * length // k
    high = first[job] + (slot + 1) * length // k
    read_share = traits.read_share[jobs.app][job]
    io = behaviour.io_bytes[job].astype(np.float64)
    io_bytes = np.where(read, io * read_share, io * (1 - read_share) / k).astype(np.int64)
    peak = io_bytes * behaviour.max_node_share[job]
    need = np.ceil(peak / (cal.node_rate_bytes_s * iv)).astype(np.int64)
    duration = np.clip(need, 1, np.maximum((high - low) // 2, 1))
    start = np.where(read, low, high - duration)
    comm = behaviour.comm_bytes[job] // per_job[job]
    order = np.lexsort((job, start))
    return Phases(job, start, duration, read, io_bytes, comm).take(order)


TRAFFIC_COLUMNS = NODE_IO_TRAFFIC


def traffic(
    phases: Phases, jobs: RunningJobs, behaviour: Behaviour, xfer_bytes: np.ndarray
) -> dict[str, np.ndarray]:
    """Node × interval rows of the given phases (only rows with some traffic).

    Returns columns ``job``, ``slot`` (index into flat_nodes), ``node`` (index), ``interval``,
    the traffic columns of ``node_io`` and the gauges.
    """
    nodes = jobs.nnodes[phases.job]
    per_phase = nodes * phases.length
    phase = np.repeat(np.arange(len(phases)), per_phase)
    within = np.arange(len(phase)) - np.repeat(np.cumsum(per_phase) - per_phase, per_phase)
    length = phases.length[phase]
    job = phases.job[phase]
    slot = jobs.node_offset[job] + within // length
    step = within % length
    node_bytes = np.floor(behaviour.flat_shares[slot] * phases.io_bytes[phase]).astype(np.int64)
    lustre = node_bytes // length + (step < node_bytes % length)
    comm = phases.comm_bytes[phase] // per_phase[phase]
    keep = (lustre > 0) | (comm > 0)
    read = phases.read[phase]
    xfer = xfer_bytes[job]
    rows = {"job": job, "slot": slot, "node": jobs.flat_nodes[slot]}
    rows["interval"] = phases.first[phase] + step
    rows["read_bytes"] = np.where(read, lustre, 0)
    rows["write_bytes"] = np.where(read, 0, lustre)
    rows["read_ops"] = -(-rows["read_bytes"] // xfer)
    rows["write_ops"] = -(-rows["write_bytes"] // xfer)
    rows["osc_read_bytes"] = rows["read_bytes"]
    rows["osc_write_bytes"] = rows["write_bytes"]
    rows["net_rx_bytes"] = rows["read_bytes"] + comm // 2
    rows["net_tx_bytes"] = rows["write_bytes"] + comm - comm // 2
    rows["cpu_load"] = behaviour.cpu_load[job]
    rows["mem_used_bytes"] = behaviour.mem_used_bytes[job]
    return {name: column[keep] for name, column in rows.items()}
