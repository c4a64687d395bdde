"""Per-job I/O behaviour → per-node per-interval traffic (paper 004 §3.2, §6.2, §6.3).

Each application has characteristics — rank-0 or all-rank I/O, even or uneven spread of an
all-rank job's bytes over its nodes, data-intensive or not, low communication or not — and each
job keeps them except with probability ``flip_share`` (the consistency degree of Def. 3).
An uneven application's heavy nodes either stay put job after job or move (the distribution
divergence of Def. 4).

A job's I/O comes in phases: an input read at the start and a checkpoint write at the end of
every checkpoint period. Ordinary jobs burst, each node at ``node_rate_bytes_s``. A
data-intensive job sustains its application's per-node write rate for a large share of its run
(its duty), a few nodes at a time: its nodes write in staggered windows, so its bytes over the
whole run keep their per-node distribution while only a few nodes (growing as
``n^writers_exponent``, at least ``adjacent_run_nodes``) write in any interval: adjacent nodes
in rank order (an application with ``adjacent`` writers, so they share an ION under block
mapping: 004 §7.4.1, "adjacent compute nodes often perform I/O concurrently") or runs of
``adjacent_run_nodes`` adjacent nodes strided over the job. Duty and
writers are set so that ``writing_node_share`` of the machine's nodes write at any moment on
average; the volume is rate × writers × duty × run time. At any moment the machine's traffic
then comes from many data-intensive jobs writing at comparable rates from few nodes each,
spread over many cabinets: the top 1 % of nodes carry most of it, the top 20 % of cabinets
about 80 % (004 §4.1, Fig. 8), the top 10 % of IONs under block mapping 58.6 % (§7.4.1).
Communication rides on the same intervals (gathers before rank-0 writes, halo exchanges), so
``net bytes − Lustre bytes`` is the job's communication volume.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from burstlake.jobs.metrics.nud import nud_of
from burstlake.jobs.synth.calibration import Calibration
from burstlake.jobs.synth.sampling import weighted_pick
from burstlake.jobs.synth.submissions import Applications
from burstlake.schemas.tables import NODE_IO_TRAFFIC

XFER_BYTES = np.array([64 << 10, 256 << 10, 1 << 20, 4 << 20])
TEMPER_STEPS = np.linspace(0.0, 1.0, 201)[:, None]
RANK0_QUIET_SHARE = 0.5  # rank-0 jobs whose other nodes do no I/O at all
DUTY_SPREAD = 0.5  # a data-intensive job's writing nodes vary ± this around the common level


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
    write_rate: np.ndarray  # sustained per-node bytes/s of its data-intensive jobs
    adjacent: np.ndarray  # its nodes write in waves of adjacent nodes, not strided


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
    writers: np.ndarray  # nodes writing at once during an I/O phase
    run_nodes: np.ndarray  # they come in runs of this many adjacent nodes (1: single nodes)
    adjacent: np.ndarray  # those nodes are adjacent (rank order), else strided over the job
    node_rate: np.ndarray  # bytes/s of each writing node during an I/O phase
    comm_bytes: np.ndarray  # intended communication bytes
    io_nud: np.ndarray  # NUD of the intended per-node shares (NaN for single-node jobs)
    max_node_share: np.ndarray
    flat_shares: np.ndarray  # per-node share of the job's bytes, aligned with flat_nodes
    cpu_load: np.ndarray
    mem_used_bytes: np.ndarray


@dataclass(frozen=True)
class Phases:
    """I/O phases: job, first interval, length in intervals, read or write, bytes, and the
    bytes a writing node moves per interval."""

    job: np.ndarray
    first: np.ndarray
    length: np.ndarray
    read: np.ndarray
    io_bytes: np.ndarray
    comm_bytes: np.ndarray
    node_bytes_per_interval: np.ndarray

    def __len__(self) -> int:
        return len(self.job)

    def take(self, index: np.ndarray) -> Phases:
        return Phases(*(getattr(self, f)[index] for f in self.__dataclass_fields__))


def _departed(p: float, flip: float) -> float:
    """App-level share q such that flipping jobs with ``flip`` keeps the job share ``p``."""
    return float(np.clip((p - flip) / (1 - 2 * flip), 0, 1))


def _pick_by_class(
    member: np.ndarray,
    weight: np.ndarray,
    share_given,
    flip: float,
    rng: np.random.Generator,
    preference: np.ndarray | None = None,
) -> np.ndarray:
    """A trait whose share differs inside and outside a class of apps (``share_given(bool)``)."""
    p_in, p_out = (_departed(share_given(c), flip) for c in (True, False))
    inside = weighted_pick(member, weight, p_in, rng, preference)
    return inside | weighted_pick(~member, weight, p_out, rng, preference)


def app_traits(cal: Calibration, apps: Applications, rng: np.random.Generator) -> Traits:
    """Draw each application's characteristics so the job mix meets the preset's shares."""
    count, flip, weight = len(apps), cal.flip_share, apps.weight
    multi = apps.nnodes > 1
    rank0 = weighted_pick(multi, weight, _departed(cal.rank0_share, flip), rng)
    allrank = multi & ~rank0
    even = weighted_pick(allrank, weight, _departed(cal.even_share, flip), rng)
    noise = cal.data_intensive_runtime_noise * rng.standard_normal(count)
    long_runs = np.log(apps.runtime_s) + noise  # data-intensive apps: the long-running ones
    di = _pick_by_class(allrank, weight, cal.data_intensive_given, flip, rng, long_runs)
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
        write_rate=np.minimum(
            cal.writer_rate_bytes_s * np.exp(cal.writer_rate_sigma * rng.standard_normal(count)),
            cal.node_rate_bytes_s,
        ),
        # drawn only when some apps have them, so a preset without keeps its earlier traces
        adjacent=rng.random(count) < cal.adjacent_writers_share
        if cal.adjacent_writers_share > 0
        else np.zeros(count, dtype=bool),
    )


def _temper(p: np.ndarray, nud_max: float, nud_min: float, share_max: float) -> np.ndarray:
    """Mix ``p`` with the uniform distribution: the most uneven mix with NUD ≤ ``nud_max`` and
    max share ≤ ``share_max``, or the least uneven with NUD ≥ ``nud_min`` if that is none.

    Along the segment from uniform to ``p`` entropy only falls (it is concave), so NUD and the
    max share both grow with the mixing weight.
    """
    mixes = (1 - TEMPER_STEPS) / len(p) + TEMPER_STEPS * p
    degrees = nud_of(mixes)
    within = (mixes.max(axis=1) <= share_max) & (degrees <= nud_max)
    best = int(np.flatnonzero(within)[-1]) if within.any() else 0
    if degrees[best] < nud_min:
        enough = np.flatnonzero((degrees >= nud_min) & (mixes.max(axis=1) <= share_max))
        best = int(enough[0]) if len(enough) else best
    return mixes[best].copy()  # a row of mixes, not a view holding all of it (201 x n)


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


def _sustained(
    cal: Calibration,
    jobs: RunningJobs,
    di: np.ndarray,
    machine_nodes: int,
    window_s: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """Writers at once and I/O duty per job. Ordinary jobs: all nodes, duty unused (0).

    A data-intensive job keeps on average c = level × u × n^writers_exponent of its n nodes
    writing (u uniform within ±DUTY_SPREAD, c ≤ n): w = max(⌈c⌉, min(adjacent_run_nodes, n))
    writers at once for c/w of its run (a longer run of writers, the same bytes).
    The common level is solved by bisection so that ``writing_node_share`` of the machine's
    nodes write at any moment on average over the window.
    """
    n, run_s = jobs.nnodes.astype(np.float64), (jobs.end_s - jobs.start_s) * di
    weight = rng.uniform(1 - DUTY_SPREAD, 1 + DUTY_SPREAD, len(n)) * n**cal.writers_exponent
    target = cal.writing_node_share * machine_nodes * window_s
    low, high = 0.0, float(np.max(n / weight, initial=1.0))
    for _ in range(60):
        level = (low + high) / 2
        if np.sum(np.minimum(level * weight, n) * run_s) < target:
            low = level
        else:
            high = level
    concurrency = np.minimum(high * weight, n)
    run = np.minimum(cal.adjacent_run_nodes, n)
    writers = np.where(di, np.maximum(np.ceil(concurrency), run), n).astype(np.int64)
    return writers, np.where(di, concurrency / writers, 0.0)


def _volumes(
    cal: Calibration,
    di: np.ndarray,
    jobs: RunningJobs,
    rate: np.ndarray,
    writers: np.ndarray,
    duty: np.ndarray,
    rng: np.random.Generator,
) -> np.ndarray:
    """Lustre bytes per job (§6.2). A data-intensive job sustains ``rate`` on ``writers`` nodes
    for its duty share of its run (at least just above the threshold); the others are
    log-uniform over decades below the threshold, scaled so that data-intensive jobs carry
    ``data_intensive_traffic_share`` of all bytes."""
    count, threshold = len(di), cal.data_intensive_bytes
    sustained = rate * writers * duty * (jobs.end_s - jobs.start_s)
    heavy = np.maximum(sustained, threshold * 1.01)
    light = 10.0 ** -(cal.non_di_log10_width * rng.random(count))
    share = cal.data_intensive_traffic_share
    wanted = heavy[di].sum() * (1 - share) / share if di.any() else threshold
    light *= wanted / max(light[~di].sum(), 1e-300)
    light = np.clip(light, jobs.nnodes * float(1 << 20), 0.99 * threshold)
    return np.where(di, heavy, light).astype(np.int64)


def job_behaviour(
    cal: Calibration,
    apps: Applications,
    traits: Traits,
    jobs: RunningJobs,
    machine_nodes: int,
    window_s: int,
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
    writers, duty = _sustained(cal, jobs, di, machine_nodes, window_s, rng)
    node_rate = np.where(di, traits.write_rate[app], cal.node_rate_bytes_s)
    io_bytes = _volumes(cal, di, jobs, node_rate, writers, duty, rng)
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
            degrees[j] = nud_of(vector)
    uneven = multi & (degrees > cal.uneven_nud)
    return Behaviour(
        rank0=rank0,
        uneven=uneven,
        data_intensive=di,
        low_comm=low_comm,
        io_bytes=io_bytes,
        writers=writers,
        run_nodes=np.where(di, np.minimum(cal.adjacent_run_nodes, jobs.nnodes), 1),
        adjacent=traits.adjacent[app] & di,
        node_rate=node_rate,
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

    A job's run is cut into a read segment (its read share of the run) and one segment per
    checkpoint period; the read phase opens the first, a write phase closes each other one.
    A phase lasts as long as its nodes need at the job's node rate (the busiest node alone, the
    others ``writers`` at a time), at most its segment; a phase cut short writes faster.
    Phases sit in the intervals wholly inside the job's run, leaving out its last one, so an
    interval with traffic always has its two Zabbix samples inside the run.
    """
    iv = cal.interval_s
    first = -(-jobs.start_s // iv)
    span = -(-jobs.end_s // iv) - 1 - first
    periods = (span * iv / traits.checkpoint_s[jobs.app]).astype(np.int64) + 1
    segments = np.clip(periods, 2, np.maximum(span // 2, 2))
    job = np.repeat(np.arange(len(jobs)), segments)
    ordinal = np.arange(len(job)) - np.repeat(np.cumsum(segments) - segments, segments)
    read = ordinal == 0
    k = segments[job]
    read_share = traits.read_share[jobs.app][job]

    def boundary(s: np.ndarray) -> np.ndarray:
        """Segment s starts after the read share of the run, then equal write segments; each
        segment keeps at least one interval."""
        fraction = np.where(s == 0, 0.0, read_share + (1 - read_share) * (s - 1) / (k - 1))
        return first[job] + np.round(fraction * (span[job] - k)).astype(np.int64) + s

    low, high = boundary(ordinal), boundary(ordinal + 1)
    io = behaviour.io_bytes[job].astype(np.float64)
    io_bytes = np.where(read, io * read_share, io * (1 - read_share) / (k - 1)).astype(np.int64)
    busiest = io_bytes * behaviour.max_node_share[job]
    per_writer = np.maximum(busiest, io_bytes / behaviour.writers[job])
    per_interval = behaviour.node_rate[job] * iv
    duration = np.clip(np.ceil(per_writer / per_interval), 1, high - low).astype(np.int64)
    per_interval = np.maximum(per_interval, np.ceil(per_writer / duration)).astype(np.int64)
    start = np.where(read, low, high - duration)
    comm = behaviour.comm_bytes[job] // segments[job]
    order = np.lexsort((job, start))
    return Phases(job, start, duration, read, io_bytes, comm, per_interval).take(order)


TRAFFIC_COLUMNS = NODE_IO_TRAFFIC


def traffic(
    phases: Phases, jobs: RunningJobs, behaviour: Behaviour, xfer_bytes: np.ndarray
) -> dict[str, np.ndarray]:
    """Node × interval rows of the given phases (only rows with some traffic).

    Each node writes its share of a phase at the phase's node rate, in a window of the phase
    staggered by its position in the job, so about ``writers`` nodes write at once: the first
    ``writers`` nodes in rank order, then the next (``adjacent``), or runs of ``run_nodes``
    adjacent nodes strided over the job (run r in wave r mod waves).
    Returns columns ``job``, ``slot`` (index into flat_nodes), ``node`` (index), ``interval``,
    the traffic columns of ``node_io`` and the gauges.
    """
    return traffic_columns(traffic_rows(phases, jobs, behaviour), behaviour, xfer_bytes)


def traffic_rows(phases: Phases, jobs: RunningJobs, behaviour: Behaviour) -> dict[str, np.ndarray]:
    """The rows of :func:`traffic` before their columns: ``job``, ``slot``, ``node``,
    ``interval``, ``read`` (a read phase's row), ``lustre`` and ``comm`` bytes. Sort or cut
    these few columns, then :func:`traffic_columns` derives the rest."""
    nodes = jobs.nnodes[phases.job]
    pair_phase = np.repeat(np.arange(len(phases)), nodes)
    position = np.arange(len(pair_phase)) - np.repeat(np.cumsum(nodes) - nodes, nodes)
    job = phases.job[pair_phase]
    slot = jobs.node_offset[job] + position
    length = phases.length[pair_phase]
    node_bytes = np.floor(behaviour.flat_shares[slot] * phases.io_bytes[pair_phase]).astype(
        np.int64
    )
    window = np.clip(-(-node_bytes // phases.node_bytes_per_interval[pair_phase]), 1, length)
    waves = -(-jobs.nnodes[job] // behaviour.writers[job])
    runs = position // behaviour.run_nodes[job]
    wave = np.where(behaviour.adjacent[job], position // behaviour.writers[job], runs % waves)
    offset = wave * (length - window + 1) // waves
    row_pair = np.repeat(np.arange(len(pair_phase)), window)
    step = np.arange(len(row_pair)) - np.repeat(np.cumsum(window) - window, window)
    per_phase = np.bincount(pair_phase, weights=window, minlength=len(phases)).astype(np.int64)
    phase = pair_phase[row_pair]
    job, slot = job[row_pair], slot[row_pair]
    node_bytes, window = node_bytes[row_pair], window[row_pair]
    lustre = node_bytes // window + (step < node_bytes % window)
    comm = phases.comm_bytes[phase] // per_phase[phase]
    keep = np.flatnonzero((lustre > 0) | (comm > 0))
    job, slot, phase = job[keep], slot[keep], phase[keep]
    return {
        "job": job,
        "slot": slot,
        "node": jobs.flat_nodes[slot],
        "interval": phases.first[phase] + offset[row_pair[keep]] + step[keep],
        "read": phases.read[phase],
        "lustre": lustre[keep],
        "comm": comm[keep],
    }


def traffic_columns(
    rows: dict[str, np.ndarray], behaviour: Behaviour, xfer_bytes: np.ndarray
) -> dict[str, np.ndarray]:
    """:func:`traffic`'s columns from :func:`traffic_rows`: the ``node_io`` traffic columns
    (operations of the job's transfer size) and the gauges."""
    job, read, lustre, comm = rows["job"], rows["read"], rows["lustre"], rows["comm"]
    xfer = xfer_bytes[job]
    out = {name: rows[name] for name in ("job", "slot", "node", "interval")}
    out["read_bytes"] = np.where(read, lustre, 0)
    out["write_bytes"] = np.where(read, 0, lustre)
    out["read_ops"] = -(-out["read_bytes"] // xfer)
    out["write_ops"] = -(-out["write_bytes"] // xfer)
    out["osc_read_bytes"] = out["read_bytes"].copy()
    out["osc_write_bytes"] = out["write_bytes"].copy()
    out["net_rx_bytes"] = out["read_bytes"] + comm // 2
    out["net_tx_bytes"] = out["write_bytes"] + comm - comm // 2
    out["cpu_load"] = behaviour.cpu_load[job]
    out["mem_used_bytes"] = behaviour.mem_used_bytes[job]
    return out
