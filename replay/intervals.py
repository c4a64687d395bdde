"""Interval replay of ``node_io`` with backlog (docs/design.md, "Replay"): in each interval a node's
bytes are its demand, the resources' capacity is shared max-min fairly (one :func:`max_min_rates`
call with the demand rate ``bytes / interval_s`` as each flow's cap), and what is not served carries
over to the node's next interval.

Rows live in *lanes*: lanes never share the machine, so lane 0 can be the whole trace and lane
``k`` one job alone (for slowdown against the same job alone), all solved in the same batches.
Backlog makes interval t+1 depend on t; the driver solves a whole chunk of intervals at once and
then re-solves only the intervals whose carried-in backlog changed, the first of each run of
such intervals per sweep, until nothing changes: exact, with as many sweeps as the longest
backlog chain and each interval of a chain solved about once.
After the last interval the backlog keeps draining (no new demand) until it is gone.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.solver import max_min_rates

SERVED_TOLERANCE = 1e-9  # unserved below this fraction of the demand counts as served
CHUNK_ROWS = 1_000_000
DRAIN_SPAN = 256  # intervals per drain chunk after the trace ends
KEY_SPACE = 1 << 62  # lanes × intervals × nodes of one replay: its keys are int64


@dataclass(frozen=True)
class Rows:
    """Node-interval rows: lane, interval index, topology node index, bytes."""

    lane: np.ndarray
    t: np.ndarray
    node: np.ndarray
    bytes: np.ndarray

    def __len__(self) -> int:
        return len(self.t)

    def take(self, index: np.ndarray | slice) -> Rows:
        return Rows(self.lane[index], self.t[index], self.node[index], self.bytes[index])


@dataclass(frozen=True)
class Solved:
    """Final outcome of node-interval rows: demand (incl. backlog carried in) and bytes served."""

    lane: np.ndarray
    t: np.ndarray
    node: np.ndarray
    demand: np.ndarray
    served: np.ndarray


class IntervalReplay:
    """Replays rows (sorted by ``t``) through ``topology`` with intervals of ``interval_s``."""

    def __init__(self, topology: Topology, interval_s: float, chunk_rows: int = CHUNK_ROWS):
        if interval_s <= 0:
            raise ValueError(f"interval length must be positive, got {interval_s}")
        self.topology = topology
        self.interval_s = float(interval_s)
        self.chunk_rows = chunk_rows
        self.paths = topology.io_paths()
        self.capacity = topology.resources.capacity
        self.nodes = len(topology.nodes)
        self.sweeps = 0

    def run(self, rows: Rows, progress=None) -> Iterator[Solved]:
        """Final results chunk by chunk, then the drain of what is left after the last row."""
        stream = self.stream(progress)
        yield from stream.feed(rows)
        yield from stream.finish()

    def stream(self, progress=None) -> ReplayStream:
        """A replay fed part by part (e.g. one day of the trace at a time, 004 §7.4): only the
        rows not yet solved and the backlog carried to the next interval stay in memory."""
        return ReplayStream(self, progress)

    def _check_keys(self, rows: Rows, carry: Rows, t0: int, t1: int) -> None:
        """A chunk's keys, (lane, interval in the chunk, node), must fit one int64."""
        lanes = max(int(rows.lane.max(initial=0)), int(carry.lane.max(initial=0))) + 1
        if lanes * (t1 - t0 + 1) * max(self.nodes, 1) >= KEY_SPACE:
            raise ValueError(
                f"interval replay of {lanes} lanes × {t1 - t0 + 1} intervals × {self.nodes} "
                f"nodes is beyond {KEY_SPACE:.2e} keys: replay a narrower window"
            )

    def _chunk(self, raw: Rows, carry_in: Rows, t0: int, t1: int) -> tuple[Solved, Rows]:
        """Solve intervals [t0, t1) with ``carry_in`` landing at t0; returns the carry at t1."""
        span = t1 - t0 + 1  # one more group per lane holds the carry leaving the chunk
        n = self.nodes
        raw_key, raw_bytes = _merge(_key(raw, t0, span, n), raw.bytes)
        carry_key, carry_bytes = _merge(_key(carry_in, t0, span, n), carry_in.bytes)
        dirty = _unique(np.concatenate([raw_key // n, carry_key // n]))
        solved: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]] = []
        sweep = 0
        while len(dirty):
            # first every interval, then the head of each run of dirty intervals: its
            # predecessor is settled, so each interval of a backlog chain is solved about once
            heads = dirty if sweep == 0 else dirty[~np.isin(dirty - 1, dirty)]
            key, demand = _merge(
                np.concatenate([_in_groups(raw_key, heads, n), _in_groups(carry_key, heads, n)]),
                np.concatenate(
                    [_pick(raw_key, raw_bytes, heads, n), _pick(carry_key, carry_bytes, heads, n)]
                ),
            )
            served = self._serve(key, demand, n)
            solved.append((key, demand, served, sweep))
            unserved = demand - served
            moved = unserved > 0
            new_key, new_bytes = key[moved] + n, unserved[moved]  # same lane and node, t + 1
            carry_key, carry_bytes, changed = _replace_carry(
                carry_key, carry_bytes, heads + 1, new_key, new_bytes, n
            )
            dirty = np.union1d(np.setdiff1d(dirty, heads, assume_unique=True), changed)
            dirty = dirty[(dirty % span) != span - 1]  # carry leaving the chunk is not solved here
            sweep += 1
        self.sweeps += sweep
        key, demand, served = _latest(solved, n)
        group = key // n
        out = Solved(group // span, t0 + group % span, key % n, demand, served)
        leaving = (carry_key // n) % span == span - 1
        lane = carry_key[leaving] // n // span
        carry = Rows(lane, np.full(len(lane), t1), carry_key[leaving] % n, carry_bytes[leaving])
        return out, carry

    def _serve(self, key: np.ndarray, demand: np.ndarray, n: int) -> np.ndarray:
        if not len(key):
            return np.zeros(0)
        rate = max_min_rates(
            self.paths.take(key % n), self.capacity, demand / self.interval_s, key // n
        )
        served = np.minimum(rate * self.interval_s, demand)
        return np.where(demand - served <= SERVED_TOLERANCE * demand, demand, served)


def _no_rows() -> Rows:
    return Rows(*(np.zeros(0, dtype=d) for d in (np.int64, np.int64, np.int64, float)))


def _joined(a: Rows, b: Rows) -> Rows:
    if not len(a):
        return b
    return Rows(
        *(np.concatenate([getattr(a, f), getattr(b, f)]) for f in Rows.__dataclass_fields__)
    )


class ReplayStream:
    """An :class:`IntervalReplay` fed parts of rows in interval order (:meth:`feed`), then
    :meth:`finish`-ed. Chunks of about ``chunk_rows`` rows are cut between intervals as the rows
    arrive, where one fed whole would cut them, so the outcome does not depend on the parts; a
    chunk is solved once a later interval has arrived (its backlog lands there) and leaves only
    its carried backlog behind."""

    def __init__(self, replay: IntervalReplay, progress=None) -> None:
        self.replay = replay
        self.progress = progress
        self.pending = _no_rows()  # rows fed, not yet solved
        self.carry = _no_rows()  # backlog landing in the first pending interval
        self.last_t: int | None = None  # the last interval fed

    def feed(self, rows: Rows) -> Iterator[Solved]:
        """Solve what ``rows`` (sorted by ``t``, none before an interval already fed) complete."""
        if not len(rows):
            return
        if np.any(np.diff(rows.t) < 0) or (self.last_t is not None and rows.t[0] < self.last_t):
            raise ValueError("interval replay needs rows sorted by interval")
        self.last_t = int(rows.t[-1])
        buffer, size = _joined(self.pending, rows), self.replay.chunk_rows
        while len(buffer) > size:
            cut = int(np.searchsorted(buffer.t, buffer.t[size - 1], side="right"))
            if cut >= len(buffer):  # its last interval may go on in the next part
                break
            yield self._solve(buffer.take(slice(0, cut)), int(buffer.t[cut]))
            buffer = buffer.take(slice(cut, None))
        self.pending = buffer

    def finish(self) -> Iterator[Solved]:
        """Solve the rows left, then drain the backlog after the last row until it is gone."""
        if len(self.pending):
            yield self._solve(self.pending, int(self.pending.t[-1]) + 1)
            self.pending = _no_rows()
        end = self.last_t + 1 if self.last_t is not None else 0
        while len(self.carry):
            solved, self.carry = self.replay._chunk(
                self.carry.take(slice(0, 0)), self.carry, end, end + DRAIN_SPAN
            )
            end += DRAIN_SPAN
            yield solved

    def _solve(self, chunk: Rows, t1: int) -> Solved:
        """Intervals [first row, t1) of ``chunk``; its backlog lands at ``t1``."""
        t0 = int(chunk.t[0])
        self.replay._check_keys(chunk, self.carry, t0, t1)
        solved, self.carry = self.replay._chunk(chunk, self.carry, t0, t1)
        if self.progress is not None:
            self.progress(len(chunk))
        return solved


def _key(rows: Rows, t0: int, span: int, n: int) -> np.ndarray:
    return ((rows.lane * span) + (rows.t - t0)) * n + rows.node


def _unique(key: np.ndarray) -> np.ndarray:
    """Sorted unique keys; one linear pass when ``key`` is already sorted."""
    if np.all(key[1:] >= key[:-1]):
        return key[np.r_[True, key[1:] != key[:-1]]] if len(key) else key
    return np.unique(key)


def _merge(key: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys and the sum of ``values`` per key."""
    if np.all(key[1:] > key[:-1]):  # already sorted and unique: each sum is its one value
        return key, np.asarray(values, dtype=np.float64)
    unique, inverse = np.unique(key, return_inverse=True)
    sums = np.bincount(inverse, weights=values, minlength=len(unique))
    return unique, sums.astype(np.float64, copy=False)  # bincount of nothing is int64


def _group_rows(key: np.ndarray, groups: np.ndarray, n: int) -> np.ndarray:
    """Positions in sorted ``key`` of the rows whose group (key // n) is in sorted ``groups``."""
    lo = np.searchsorted(key, groups * n, side="left")
    hi = np.searchsorted(key, (groups + 1) * n, side="left")
    lengths = hi - lo
    starts = np.repeat(lo - np.cumsum(lengths) + lengths, lengths)
    return starts + np.arange(lengths.sum())


def _in_groups(key: np.ndarray, groups: np.ndarray, n: int) -> np.ndarray:
    return key[_group_rows(key, groups, n)]


def _pick(key: np.ndarray, values: np.ndarray, groups: np.ndarray, n: int) -> np.ndarray:
    return values[_group_rows(key, groups, n)]


def _replace_carry(
    key: np.ndarray,
    values: np.ndarray,
    targets: np.ndarray,
    new_key: np.ndarray,
    new_values: np.ndarray,
    n: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replace the carry landing in ``targets`` by the new one (sorted keys, no re-sort of the
    rest); also return the targets whose carried-in backlog changed (to be solved again)."""
    old = _group_rows(key, targets, n)
    diff_key, diff = _merge(
        np.concatenate([key[old], new_key]), np.concatenate([-values[old], new_values])
    )
    _, scale = _merge(
        np.concatenate([key[old], new_key]), np.concatenate([values[old], new_values])
    )
    changed = np.unique(diff_key[np.abs(diff) > SERVED_TOLERANCE * np.maximum(scale, 1.0)] // n)
    keep = np.ones(len(key), dtype=bool)
    keep[old] = False
    key, values = key[keep], values[keep]
    at = np.searchsorted(key, new_key)
    return np.insert(key, at, new_key), np.insert(values, at, new_values), changed


def _latest(
    solved: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]], n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each group's rows from the last sweep that solved it."""
    if not solved:
        return np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0)
    if len(solved) == 1:
        return solved[0][:3]
    key = np.concatenate([s[0] for s in solved])
    demand = np.concatenate([s[1] for s in solved])
    served = np.concatenate([s[2] for s in solved])
    sweep = np.concatenate([np.full(len(s[0]), s[3]) for s in solved])
    groups, inverse = np.unique(key // n, return_inverse=True)
    last = np.full(len(groups), -1)
    np.maximum.at(last, inverse, sweep)
    keep = sweep == last[inverse]
    return key[keep], demand[keep], served[keep]
