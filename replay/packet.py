"""Lossless packet-level interconnect model (paper 000 §2.5, §4.2, §5.2; docs/design.md,
"Contention models").

Paper 000 measured MPI/I-O interference with CODES, whose fat-tree and torus models move
packets through switches with finite buffers and credit-based (lossless) flow control, as
InfiniBand does. When an I/O server's link is oversubscribed, the buffers upstream of it
fill; packets of other traffic that share those buffers wait behind I/O packets (head-of-line
blocking), and the congestion spreads back across the tree (000 §4.2). A fluid max-min model
has no buffers, so it cannot show this; this model can, on the same routes and the same
:class:`~burstlake.replay.events.Requests` as the flow model.

The model, in the terms of CODES' ``src/networks/model-net/fattree.c``:

- **Packets.** A request of ``size`` bytes is cut into packets of ``packet_bytes`` (the last
  one shorter); it completes when its last byte reaches the end of its route. A message pays
  ``nic_delay`` once, before its first packet enters its NIC's queue.
- **Buffers and credits.** Every resource of a route (a link direction, a server) has a buffer
  of ``buffer_bytes`` per virtual channel. A packet is *admitted* to the buffer of its next
  resource only when that buffer has room for it; admission charges the buffer and returns the
  credit of the buffer the packet held before. A packet that cannot be admitted waits in the
  buffer's arrival-order queue and keeps holding its previous buffer, so traffic behind it on
  that link stalls even when its own next hop is free: head-of-line blocking, and the
  congestion tree of 000 §4.2.
- **Links.** An admitted packet leaves on its resource in admission order, one packet at a
  time, taking ``bytes / capacity``; it reaches the next device ``router_delay`` later when it
  left a switch (every hop after the first), with no delay when it left a NIC (store and
  forward per hop, as CODES' fat-tree times it).
- **Virtual channels.** Each hop's virtual channel comes from the topology's routing
  (:meth:`~burstlake.replay.graph.Topology.route_vcs`: all 0 on a fat-tree; the dateline rule
  on a torus, against deadlock). Virtual channels of one link share its bandwidth and have
  separate buffers.
- **Streams.** As in the flow model, a stream's next request is issued ``gap`` after the
  previous one completes, never before its ``release`` and never sooner than its ``window``
  after the previous issue. ``Requests.latency`` (the flow model's route latency) is not
  used: this model times every hop itself.

The loop is compiled (Numba) and allocates nothing per event: arrays per buffer and per link,
a packet pool sized by what the buffers can hold (so memory follows packets in flight, not
packets sent), and one binary heap of events ordered by (time, insertion).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numba import njit

from burstlake.replay.events import Requests, Timeline

EVENTS_PER_CALL = 2_000_000  # compiled events between two progress reports
FIRST, LAST = 1, 2  # bits of a route entry's place: its route's first, its route's last


@dataclass(frozen=True)
class PacketSettings:
    """The packet model's parameters (defaults: paper 000 §3.1's CODES configuration)."""

    packet_bytes: float = 4096.0  # the InfiniBand MTU
    buffer_bytes: float = 65536.0  # per port and virtual channel
    router_delay: float = 60e-9  # seconds per switch
    nic_delay: float = 1e-6  # seconds per message, at the sending NIC

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any] | None, where: str = "packet") -> PacketSettings:
        """Settings from a scenario's ``packet:`` mapping; a one-line error names the key."""
        given = dict(given or {})
        allowed = [f.name for f in fields(cls)]
        unknown = sorted(set(given) - set(allowed))
        if unknown:
            raise ValueError(f"{where}: unknown settings {unknown}; allowed: {allowed}")
        values: dict[str, float] = {}
        for key, value in given.items():
            try:
                number = float(value)
            except (TypeError, ValueError):
                number = math.nan
            if isinstance(value, bool) or not math.isfinite(number):
                raise ValueError(f"{where}: {key} must be a number, got {value!r}")
            values[key] = number
        settings = cls(**values)
        settings.check(where)
        return settings

    def check(self, where: str = "packet") -> None:
        for key in ("packet_bytes", "buffer_bytes"):
            if not 0 < getattr(self, key) < math.inf:
                raise ValueError(f"{where}: {key} must be positive, got {getattr(self, key)!r}")
        for key in ("router_delay", "nic_delay"):
            if not 0 <= getattr(self, key) < math.inf:
                raise ValueError(f"{where}: {key} must be >= 0 seconds, got {getattr(self, key)!r}")
        if self.packet_bytes > self.buffer_bytes:
            raise ValueError(
                f"{where}: packet_bytes ({self.packet_bytes:g}) is larger than buffer_bytes "
                f"({self.buffer_bytes:g}); a buffer must hold at least one packet"
            )


def simulate(
    requests: Requests,
    capacity: np.ndarray,
    settings: PacketSettings | None = None,
    vcs: np.ndarray | None = None,
    until: float = math.inf,
    progress=None,
) -> Timeline:
    """Replay the streams packet by packet; each request's issue and completion time.

    ``vcs`` gives the virtual channel of every route entry (aligned with
    ``requests.paths.indices``; all 0 when None). ``until`` stops the clock: requests not
    complete by then end at NaN and deliver what they delivered. ``Timeline.events`` counts
    packet hops and message issues."""
    settings = settings or PacketSettings()
    settings.check()
    n = len(requests.stream)
    paths = requests.paths
    capacity = np.asarray(capacity, dtype=np.float64)
    if len(paths.indices) and (paths.indices.min() < 0 or paths.indices.max() >= len(capacity)):
        raise ValueError("a route names a resource outside the topology")
    if np.any(capacity[paths.indices] <= 0) or not np.all(np.isfinite(capacity[paths.indices])):
        raise ValueError("every resource a route crosses needs a positive, finite capacity")
    vcs = np.zeros(len(paths.indices), np.int64) if vcs is None else np.asarray(vcs, np.int64)
    if len(vcs) != len(paths.indices) or (len(vcs) and vcs.min() < 0):
        raise ValueError("vcs: one virtual channel >= 0 per route entry")
    channels = int(vcs.max()) + 1 if len(vcs) else 1
    buffer_of_entry = paths.indices * channels + vcs
    size = np.asarray(requests.size, dtype=np.float64)
    stream = np.asarray(requests.stream, dtype=np.int64)
    gap = np.asarray(requests.gap, dtype=np.float64)
    release = np.full(n, -np.inf) if requests.release is None else np.asarray(requests.release)
    window = np.zeros(n) if requests.window is None else np.asarray(requests.window)
    packets = np.maximum(1, np.ceil(size / settings.packet_bytes)).astype(np.int64)

    # where each route entry sits in its route: FIRST (from a NIC), LAST (to the sink)
    place = np.zeros(len(paths.indices), np.int8)
    lengths = paths.lengths
    place[paths.indptr[:-1][lengths > 0]] |= FIRST
    place[paths.indptr[1:][lengths > 0] - 1] |= LAST
    # a resource that some route enters after another one leaves a switch (or a server) and
    # pays router_delay; one that only ever starts a route is a NIC's injection link
    leaves_switch = np.zeros(len(capacity))
    leaves_switch[paths.indices[(place & FIRST) == 0]] = 1.0
    buffers = len(capacity) * channels
    used = np.unique(buffer_of_entry)
    streams = int(np.count_nonzero(np.r_[True, stream[1:] != stream[:-1]])) if n else 0
    # every packet holds one buffer (full packets fill it, each message has one short packet)
    pool = len(used) * int(settings.buffer_bytes // settings.packet_bytes) + 2 * streams + 16
    if max(n, buffers, pool, len(paths.indices)) >= 2**31:
        raise ValueError(
            f"packet model: {n:,} requests over {buffers:,} buffers is beyond one replay "
            "(ids are 32-bit); replay a shorter window"
        )
    state = _State(n, buffers, len(capacity), pool)
    first = np.flatnonzero(np.r_[True, stream[1:] != stream[:-1]]) if n else np.zeros(0, np.int64)
    for k in first:
        issue = max(gap[k], release[k])
        state.start[k] = issue
        _push(state.ht, state.hs, state.hv, state.counters, issue + settings.nic_delay, 2 * k + 1)
    inputs = (
        stream,
        size,
        gap,
        release,
        window,
        packets,
        paths.indptr,
        paths.indices.astype(np.int32),
        buffer_of_entry.astype(np.int32),
        place,
        capacity,
        leaves_switch,
        settings.packet_bytes,
        settings.buffer_bytes,
        settings.router_delay,
        settings.nic_delay,
        float(until),
    )
    while True:
        done = _advance(EVENTS_PER_CALL, *inputs, *state.arrays())
        if done < 0:
            raise RuntimeError("packet model: the packet pool overflowed (a bug: please report)")
        if progress is not None and done:
            progress(done)
        if done < EVENTS_PER_CALL:
            break
    if state.counters[0] == 0 and np.isnan(state.end).any() and until == math.inf:
        stuck = int(np.isnan(state.end).sum())
        raise ValueError(
            f"packet model: deadlock, {stuck} requests can never complete (a cycle of full "
            "buffers); the topology's routes need virtual channels (the dateline rule)"
        )
    return PacketTimeline(
        state.start,
        state.end,
        state.delivered,
        int(state.counters[3]),
        occupancy=state.occupancy,
        peak_packets=int(state.counters[4]),
    )


@dataclass(frozen=True)
class PacketTimeline(Timeline):
    """A :class:`Timeline` with the buffers' final occupancy (bytes; all 0 when every request
    completed: credits are conserved) and the most packets alive at once."""

    occupancy: np.ndarray = field(default_factory=lambda: np.zeros(0))
    peak_packets: int = 0


class _State:
    """The compiled loop's arrays (requests, buffers, links, packet pool, event heap)."""

    def __init__(self, n: int, buffers: int, links: int, pool: int) -> None:
        self.start = np.full(n, np.nan)
        self.end = np.full(n, np.nan)
        self.delivered = np.zeros(n)
        self.arrived = np.zeros(n, np.int64)  # packets of the request delivered
        self.injected = np.zeros(n, np.int64)  # packets of the request cut at its NIC
        self.occupancy = np.zeros(buffers)  # bytes charged to each buffer
        self.head = np.full(buffers, -1, np.int32)  # queue of packets waiting for the buffer
        self.tail = np.full(buffers, -1, np.int32)
        self.link_free = np.zeros(links)  # when each resource finishes its admitted packets
        self.f_head = np.full(links, -1, np.int32)  # each resource's packets in flight, FIFO
        self.f_tail = np.full(links, -1, np.int32)
        self.p_req = np.zeros(pool, np.int32)
        self.p_entry = np.zeros(pool, np.int32)  # its route entry; -1: not yet cut at the NIC
        self.p_bytes = np.zeros(pool)
        self.p_time = np.zeros(pool)  # when the packet reaches the end of its resource
        self.p_next = np.full(pool, -1, np.int32)
        self.free = np.arange(pool - 1, -1, -1, dtype=np.int32)  # stack of free packet ids
        # event heap (time, insertion number, value): a resource's first packet in flight
        # (2r), a message reaching its NIC (2k + 1)
        self.ht = np.zeros(links + n + 1)
        self.hs = np.zeros(links + n + 1, np.int64)
        self.hv = np.zeros(links + n + 1, np.int64)
        self.work = np.zeros(pool + buffers + 1, np.int64)  # buffers to retry after a credit
        # heap size, insertions, free-stack size, events, deepest pool use, root handled
        self.counters = np.array([0, 0, pool, 0, 0, 0], np.int64)

    def arrays(self) -> tuple:
        return (
            self.start,
            self.end,
            self.delivered,
            self.arrived,
            self.injected,
            self.occupancy,
            self.head,
            self.tail,
            self.link_free,
            self.f_head,
            self.f_tail,
            self.p_req,
            self.p_entry,
            self.p_bytes,
            self.p_time,
            self.p_next,
            self.free,
            self.ht,
            self.hs,
            self.hv,
            self.work,
            self.counters,
        )


@njit(cache=True, inline="always")
def _sift_down(ht, hs, hv, size, i, time, seq, value):  # pragma: no cover - compiled
    """Place event (time, seq, value) in the 4-ary heap from the hole at ``i`` downwards."""
    while True:
        child = 4 * i + 1
        if child >= size:
            break
        best = child
        for c in range(child + 1, min(child + 4, size)):
            if ht[c] < ht[best] or (ht[c] == ht[best] and hv[c] < hv[best]):
                best = c
        if not (ht[best] < time or (ht[best] == time and hv[best] < value)):
            break
        ht[i], hs[i], hv[i] = ht[best], hs[best], hv[best]
        i = best
    ht[i], hs[i], hv[i] = time, seq, value


@njit(cache=True, inline="always")
def _push(ht, hs, hv, counters, time, value):  # pragma: no cover - compiled
    """Add an event; ties run in insertion order. The first event pushed while handling
    another takes the handled event's place at the root (one sift instead of two)."""
    seq = counters[1]
    counters[1] += 1
    if counters[5]:
        counters[5] = 0
        _sift_down(ht, hs, hv, counters[0], 0, time, seq, value)
        return
    i = counters[0]
    counters[0] += 1
    while i > 0:
        parent = (i - 1) >> 2
        if not (time < ht[parent] or (time == ht[parent] and value < hv[parent])):
            break
        ht[i], hs[i], hv[i] = ht[parent], hs[parent], hv[parent]
        i = parent
    ht[i], hs[i], hv[i] = time, seq, value


@njit(cache=True, inline="always")
def _append(head, tail, p_next, queue, p):  # pragma: no cover - compiled
    """Put packet ``p`` last in ``queue`` (a buffer's waiting packets, a resource's packets
    in flight): a packet is in one queue at a time, so one ``p_next`` links them all."""
    p_next[p] = -1
    if tail[queue] < 0:
        head[queue] = p
    else:
        p_next[tail[queue]] = p
    tail[queue] = p


@njit(cache=True, inline="always")
def _settle(ht, hs, hv, counters):  # pragma: no cover - compiled
    """Remove the handled root event if no new event replaced it."""
    if counters[5]:
        counters[5] = 0
        size = counters[0] - 1
        counters[0] = size
        if size > 0:
            _sift_down(ht, hs, hv, size, 0, ht[size], hs[size], hv[size])


@njit(cache=True)
def _advance(  # pragma: no cover - compiled
    budget,
    stream,
    size,
    gap,
    release,
    window,
    packets,
    indptr,
    indices,
    buffer_of_entry,
    place,
    capacity,
    leaves_switch,
    packet_bytes,
    buffer_bytes,
    router_delay,
    nic_delay,
    until,
    start,
    end,
    delivered,
    arrived,
    injected,
    occupancy,
    head,
    tail,
    link_free,
    f_head,
    f_tail,
    p_req,
    p_entry,
    p_bytes,
    p_time,
    p_next,
    free,
    ht,
    hs,
    hv,
    work,
    counters,
):
    """Process up to ``budget`` events; the number processed."""
    n = len(stream)
    done = 0
    while done < budget and counters[0] > 0:
        if ht[0] > until:
            break
        now, value = ht[0], hv[0]
        counters[5] = 1  # the root is handled; the first push replaces it (_push)
        done += 1
        todo = 0  # buffers whose queue may move
        if value & 1:  # a message reaches its NIC's queue
            k = value >> 1
            if indptr[k] == indptr[k + 1]:  # no resource to cross: done at once
                end[k] = now
                delivered[k] = size[k]
                _next_request(
                    k, now, n, stream, gap, release, window, nic_delay, start, ht, hs, hv, counters
                )
                _settle(ht, hs, hv, counters)
                continue
            if counters[2] == 0:
                return -1  # the pool bound was wrong: refuse rather than corrupt state
            counters[2] -= 1
            p = free[counters[2]]
            p_req[p], p_entry[p] = k, -1
            b = buffer_of_entry[indptr[k]]
            _append(head, tail, p_next, b, p)
            work[todo] = b
            todo += 1
        else:  # the first packet in flight on resource r reaches its end
            r = value >> 1
            p = f_head[r]
            f_head[r] = p_next[p]
            if f_head[r] < 0:
                f_tail[r] = -1
            else:  # the next one on r arrives later (FIFO, so its time is not earlier)
                _push(ht, hs, hv, counters, p_time[f_head[r]], 2 * r)
            k = p_req[p]
            entry = p_entry[p]
            released = buffer_of_entry[entry]
            if place[entry] & LAST:  # delivered: the last buffer drains at once
                occupancy[released] -= p_bytes[p]
                if head[released] >= 0:
                    work[todo] = released
                    todo += 1
                delivered[k] += p_bytes[p]
                arrived[k] += 1
                free[counters[2]] = p
                counters[2] += 1
                if arrived[k] == packets[k]:
                    end[k] = now
                    _next_request(
                        k,
                        now,
                        n,
                        stream,
                        gap,
                        release,
                        window,
                        nic_delay,
                        start,
                        ht,
                        hs,
                        hv,
                        counters,
                    )
            else:  # wait for room in the next buffer, holding this one
                p_entry[p] += 1
                b = buffer_of_entry[entry + 1]
                _append(head, tail, p_next, b, p)
                work[todo] = b
                todo += 1
        # admit waiting packets wherever room appeared; each admission frees the buffer its
        # packet held, which may admit packets upstream in turn
        while todo > 0:
            todo -= 1
            b = work[todo]
            while head[b] >= 0:
                p = head[b]
                k = p_req[p]
                if p_entry[p] < 0:  # cut the NIC's next packet of the message
                    nbytes = size[k] - injected[k] * packet_bytes
                    if nbytes > packet_bytes:
                        nbytes = packet_bytes
                else:
                    nbytes = p_bytes[p]
                if occupancy[b] + nbytes > buffer_bytes and occupancy[b] > 0.0:
                    break
                occupancy[b] += nbytes
                if p_entry[p] < 0:
                    injected[k] += 1
                    if injected[k] < packets[k]:  # the rest of the message stays first in line
                        if counters[2] == 0:
                            return -1
                        counters[2] -= 1
                        q = free[counters[2]]
                        p_req[q], p_entry[q], p_next[q] = k, -1, p_next[p]
                        head[b] = q
                        if tail[b] == p:
                            tail[b] = q
                    else:
                        head[b] = p_next[p]
                        if head[b] < 0:
                            tail[b] = -1
                    p_entry[p] = indptr[k]
                    p_bytes[p] = nbytes
                else:
                    head[b] = p_next[p]
                    if head[b] < 0:
                        tail[b] = -1
                entry = p_entry[p]
                r = indices[entry]
                leave = max(now, link_free[r])
                link_free[r] = leave + nbytes / capacity[r]
                arrive = link_free[r]
                arrive += router_delay * leaves_switch[r]
                p_time[p] = arrive
                if f_tail[r] < 0:  # r's first packet in flight: the heap holds its arrival
                    _push(ht, hs, hv, counters, arrive, 2 * r)
                _append(f_head, f_tail, p_next, r, p)
                if not place[entry] & FIRST:
                    held = buffer_of_entry[entry - 1]
                    occupancy[held] -= nbytes
                    if head[held] >= 0:  # someone waits for the credit
                        work[todo] = held
                        todo += 1
        _settle(ht, hs, hv, counters)
        in_use = len(free) - counters[2]
        if in_use > counters[4]:
            counters[4] = in_use
    counters[3] += done
    return done


@njit(cache=True)
def _next_request(
    k, now, n, stream, gap, release, window, nic_delay, start, ht, hs, hv, counters
):  # pragma: no cover - compiled
    """Issue the stream's next request after request ``k`` completed at ``now``."""
    nxt = k + 1
    if nxt >= n or stream[nxt] != stream[k]:
        return
    issue = now + gap[nxt]
    if release[nxt] > issue:
        issue = release[nxt]
    if window[nxt] > 0 and start[k] + window[nxt] > issue:
        issue = start[k] + window[nxt]
    start[nxt] = issue
    _push(ht, hs, hv, counters, issue + nic_delay, 2 * nxt + 1)
