"""Cross-application I/O coordination (paper 001 §III-A, §IV; CALCioM): what the machine
wastes when I/O phases meet, under four strategies.

- ``interfere``: the phases share the storage max-min, as they would without coordination;
- ``fcfs``: a phase that arrives while another holds the storage waits until it is done
  (001 §IV-B: only the later phase is delayed, by the earlier one's remaining time);
- ``interrupt``: the newcomer pauses the phase in progress, which resumes afterwards
  (001 §IV-C: only the earlier phase is delayed). ``granularity: request`` pauses it after
  its requests in flight; ``granularity: file`` only at the end of a file, which gives the
  saw-tooth of 001 Fig. 10;
- ``dynamic``: at each arrival, the option minimising the target metric over the known phases,
  predicted from their alone times as CALCioM does (001 §IV-D): a place in the queue or an
  interruption. ``metric: cpu_time`` is f = Σ N·T, ``metric: interference`` is f = Σ I.

``domain`` says which phases coordinate: ``storage`` (default) all of them, as on 001's one
shared file system; ``ion`` those whose nodes go mostly through the same forwarding target (on
a forwarding machine the bytes contend at the I/O nodes, 004 §5), each ION its own queue.

Each strategy computes a schedule on the *coordination model* — one storage, each phase moving
at its alone speed while it holds it (T_alone from the phase replayed alone) — and hands it to
the engine as ``release`` times of the phases' request rounds; the one event-driven
``simulate()`` replays the result, so the scores are the engine's, not the model's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from burstlake.replay.demands import PhaseDemand, Phases, require
from burstlake.replay.graph import Topology
from burstlake.replay.policies import Apply, register

GRANULARITIES = ("request", "file")
METRICS = ("cpu_time", "interference")
TIE = 1e-9  # relative: options whose f differ by less are equal (the earlier listed is kept)


@dataclass
class _Phase:
    """A phase on the coordination model: its work in alone-seconds and where it may pause."""

    arrival: float
    work: float
    weight: float
    stops: np.ndarray  # progress (alone-seconds) after each round where it may pause; last = work
    done: float = 0.0
    finish: float = np.nan
    segments: list[tuple[float, float]] = field(default_factory=list)  # (begin time, progress)

    def next_stop(self) -> float:
        """Where it can pause next: at once if it has not moved yet, else its next stop."""
        if self.done <= TIE * self.work:
            return self.done
        at = np.searchsorted(self.stops, self.done - TIE * self.work, side="left")
        return float(self.stops[min(at, len(self.stops) - 1)])

    def copy(self) -> _Phase:
        return _Phase(
            self.arrival,
            self.work,
            self.weight,
            self.stops,
            self.done,
            self.finish,
            list(self.segments),
        )


@dataclass
class _Storage:
    """The coordination model's storage: the phase holding it, from when, and who waits."""

    phases: list[_Phase]
    clock: float = 0.0
    running: int | None = None
    waiting: list[int] = field(default_factory=list)

    def copy(self, newcomer: int) -> _Storage:
        """A trial copy: only the phases the newcomer's choice can change are copied."""
        phases = list(self.phases)
        for k in self.involved(newcomer):
            phases[k] = phases[k].copy()
        return _Storage(phases, self.clock, self.running, list(self.waiting))

    def involved(self, newcomer: int) -> list[int]:
        running = [] if self.running is None else [self.running]
        return [*running, *self.waiting, newcomer]

    def _start(self, i: int, at: float) -> None:
        self.running, self.clock = i, at
        self.phases[i].segments.append((at, self.phases[i].done))

    def advance(self, until: float) -> None:
        """Run the storage up to ``until`` (no-op if the clock is already past it)."""
        while self.running is not None:
            phase = self.phases[self.running]
            ends = self.clock + (phase.work - phase.done)
            if ends > until:
                if until > self.clock:
                    phase.done += until - self.clock
                    self.clock = until
                return
            phase.done, phase.finish = phase.work, ends
            self.running = None
            if self.waiting:
                self._start(self.waiting.pop(0), ends)
            else:
                self.clock = ends
        self.clock = max(self.clock, until)

    def arrive(self, i: int, place: int | None) -> None:
        """Phase i arrives at the clock: run it if the storage is free, else put it at
        ``place`` in the queue, or (``place`` None) interrupt the running phase at its next
        stop and run i then; the paused phase resumes first after it."""
        if self.running is None:
            self._start(i, self.clock)
            return
        if place is not None:
            self.waiting.insert(place, i)
            return
        paused, current = self.running, self.phases[self.running]
        stop = current.next_stop()
        self.clock += stop - current.done
        current.done = stop
        if stop < current.work:
            self.waiting.insert(0, paused)
        else:  # its next stop was its end
            current.finish = self.clock
        self._start(i, self.clock)

    def finish(self) -> _Storage:
        self.advance(np.inf)
        return self


def _options(storage: _Storage) -> list[int | None]:
    """A newcomer's options (001 §III-A, last paragraph): each place in the queue, from the
    back (first-come-first-served) to the front, then interrupting the running phase."""
    if storage.running is None:
        return [len(storage.waiting)]
    return [*range(len(storage.waiting), -1, -1), None]


@dataclass(frozen=True)
class Settings:
    """A strategy and its settings (see the module docstring)."""

    strategy: str
    granularity: str = "request"
    metric: str = "cpu_time"
    domain: str = "storage"


def domains(case: Phases, topology: Topology, domain: str) -> np.ndarray:
    """The storage each phase coordinates on: one for the machine (``storage``: 001's shared
    file system), or the forwarding target serving most of the phase's nodes (``ion``: where
    the bytes of a forwarding machine contend, 004 §5)."""
    if domain == "storage":
        return np.zeros(len(case.phases), dtype=np.int64)
    return np.asarray([np.bincount(topology.ion_of[p.nodes]).argmax() for p in case.phases])


def schedule(case: Phases, topology: Topology, settings: Settings) -> Phases:
    """The strategy's schedule of ``case`` as release times of its rounds."""
    alone = case.alone_times(topology)
    model = []
    for i, phase in enumerate(case.phases):
        rounds = case.rounds(i)
        progress = np.cumsum(rounds) / phase.bytes_per_node * alone[i]
        every = np.ones(len(rounds), bool)
        pause = case.file_ends(i) if settings.granularity == "file" else every
        pause[-1] = True
        weight = phase.n if settings.metric == "cpu_time" else 1.0 / alone[i]
        model.append(_Phase(phase.start, float(alone[i]), weight, progress[pause]))
    where = domains(case, topology, settings.domain)
    for key in np.unique(where):
        _coordinate(_Storage([model[k] for k in np.flatnonzero(where == key)]), settings.strategy)
    releases = []
    for i, phase in enumerate(case.phases):
        rounds = case.rounds(i)
        begins = np.r_[0.0, np.cumsum(rounds)[:-1]] / phase.bytes_per_node * alone[i]
        release = np.full(len(rounds), -np.inf)
        for at, done in model[i].segments:
            first = int(np.argmin(np.abs(begins - done)))
            release[first] = max(release[first], at)
        releases.append(release)
    return Phases(case.phases, case.request_bytes, tuple(releases), alone, case.dt)


def _coordinate(storage: _Storage, strategy: str) -> None:
    """Run the phases of one storage through the strategy, in arrival order."""
    model = storage.phases
    for i in sorted(range(len(model)), key=lambda k: (model[k].arrival, k)):
        storage.advance(model[i].arrival)
        if strategy == "fcfs":
            storage.arrive(i, len(storage.waiting))
        elif strategy == "interrupt":
            storage.arrive(i, None if storage.running is not None else 0)
        else:  # dynamic: the option with the least f over the phases known so far
            best, chosen = np.inf, None
            involved = storage.involved(i)
            for place in _options(storage):
                trial = storage.copy(i)
                trial.arrive(i, place)
                cost = _cost(trial.finish(), involved)
                if cost < best * (1 - TIE):
                    best, chosen = cost, place
            storage.arrive(i, chosen)
    storage.finish()


def _cost(storage: _Storage, phases: list[int]) -> float:
    """f over ``phases`` (the phases the choice changes; the later ones are not known yet)."""
    return float(
        sum(
            storage.phases[k].weight * (storage.phases[k].finish - storage.phases[k].arrival)
            for k in phases
        )
    )


DOMAINS = ("storage", "ion")


def _strategy(settings: Settings) -> Apply:
    name = settings.strategy
    for key, allowed in (
        ("granularity", GRANULARITIES),
        ("metric", METRICS),
        ("domain", DOMAINS),
    ):
        value = getattr(settings, key)
        if value not in allowed:
            raise ValueError(
                f"policy {name}: {key} must be one of {', '.join(allowed)}, got {value!r}"
            )

    def apply(topology: Topology, demand: Any) -> tuple[Topology, PhaseDemand]:
        work = require(demand, f"policy {name}")
        return topology, work.map(lambda case: schedule(case, topology, settings))

    return apply


@register("interfere")
def interfere() -> Apply:
    """Max-min sharing: the phases as they are (the engine shares the storage)."""

    def apply(topology: Topology, demand: Any) -> tuple[Topology, PhaseDemand]:
        return topology, require(demand, "policy interfere")

    return apply


@register("fcfs")
def fcfs(domain: str = "storage") -> Apply:
    return _strategy(Settings("fcfs", domain=domain))


@register("interrupt")
def interrupt(granularity: str = "request", domain: str = "storage") -> Apply:
    return _strategy(Settings("interrupt", granularity, domain=domain))


@register("dynamic")
def dynamic(
    metric: str = "cpu_time", granularity: str = "request", domain: str = "storage"
) -> Apply:
    return _strategy(Settings("dynamic", granularity, metric, domain))
