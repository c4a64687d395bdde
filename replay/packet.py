"""Lossless packet-level interconnect model (paper 000 §2.5, §4.2, §5.2; docs/design.md,
"Contention models").

Paper 000 measured MPI/I-O interference with CODES, whose fat-tree and torus models move
packets through switches with finite buffers and credit-based (lossless) flow control, as
InfiniBand does. When an I/O server's link is oversubscribed, the buffers upstream of it
fill; packets of other traffic that share those buffers wait behind I/O packets (head-of-line
blocking), and the congestion spreads back across the tree (000 §4.2). A fluid max-min model
has no buffers, so it cannot show this; this model can, on the same routes and the same
:class:`~burstlake.replay.requests.Requests` as the flow model.

The model, in the terms of CODES' ``src/networks/model-net/fattree.c``:

- **Packets.** A request of ``size`` bytes is cut into packets of ``packet_bytes`` (the last
  one shorter); it completes when its last byte reaches the end of its route. A message pays
  ``nic_delay`` once, before its first packet enters its NIC's queue.
- **Buffers and credits.** Every resource of a route (a link direction, a server) has a buffer
  of ``buffer_bytes`` per virtual channel. A packet is *admitted* to the buffer of its next
  resource only when that buffer has room for it; admission charges the buffer and returns the
  credit of the buffer the packet held before. A packet that cannot be admitted waits and
  keeps holding its previous buffer, so traffic behind it on that link stalls even when its
  own next hop is free: head-of-line blocking, and the congestion tree of 000 §4.2.
- **Arbitration** (``arbitration``). The packets waiting for one buffer wait at their
  *input*: the buffer they hold (a switch's input port and virtual channel) or their NIC.
  ``fcfs`` (the default) admits them in arrival order, whatever their input, as CODES'
  fat-tree does (``src/networks/model-net/fattree.c``: ``switch_packet_receive`` appends a
  packet that finds no room to the output port's one queue, ``queued_msgs``, and
  ``switch_buf_update`` admits its head when a credit returns). ``round-robin`` lets the
  inputs take turns, one packet each, each input's packets in arrival order; an input that
  starts waiting joins the round last. No CODES network model turns round robin over input
  ports: its torus (``torus.c``, ``packet_send``) serves packets in transit before newly
  injected ones, its dragonfly (``dragonfly.c``, ``router_packet_send``) the highest virtual
  channel first; ``dragonfly-dally.cxx`` (``get_next_vcg``) turns round robin over QoS
  classes only. The choice matters for paper 000: under ``fcfs`` an MPI packet at an output
  shared with I/O waits behind every I/O packet queued there; under ``round-robin``, for one
  packet of each other input, and the random-node MPI slowdown falls from CODES' 12x to about
  2x (docs/design.md, "Contention models").
- **Links.** An admitted packet leaves on its resource in admission order, one packet at a
  time, taking ``bytes / capacity``; it reaches the next device ``router_delay`` later when the
  resource is a switch's port (``switch_port``, from the topology:
  :class:`~burstlake.replay.graph.ResourceSet`), with no delay when it left a NIC or crossed a
  server (store and forward per hop, as CODES' fat-tree times it: ``switch_packet_send`` adds
  the router delay, ``ft_packet_send``, the NIC, none). A router may also declare each
  resource's propagation delay (``link_delays()``, the dragonfly's: CODES' ``dragonfly-dally``
  ``cn_delay``, ``local_delay``, ``global_delay``), added to every crossing.
- **Servers.** An I/O route ends on its server's storage resource (the server's service rate,
  which a scenario may set below its link's). A packet is written there once it has arrived,
  so a request ends one packet time at that rate after its last packet reached the server
  (store and forward, as at every hop); CODES' driver ends a request when its last packet
  reaches the server's NIC, as it models no storage.
- **Virtual channels.** Each hop's virtual channel comes from the topology's routing
  (:meth:`~burstlake.replay.graph.Topology.route_vcs`: all 0 on a fat-tree; the dateline rule
  on a torus, against deadlock). Virtual channels of one link share its bandwidth and have
  separate buffers.
- **Adaptive routing** (``adaptive``, :class:`Adaptive`, from a router's ``adaptive`` hook:
  the dragonfly's ``ugal`` and ``par``). A request's packets may leave its route: a route
  entry may name a *detour* entry (of another route that shares the entries before it, so
  the buffer the packet holds is the same). A packet about to wait for such an entry takes
  the detour instead when the entry's resource is more occupied than ``factor`` times the
  detour resource's plus ``bias`` bytes (UGAL-L, Kim et al., ISCA 2008 §4.2; CODES'
  ``dragonfly-dally.cxx``, ``dfdally_prog_adaptive_routing``), decided per packet from what
  it sees at that moment. A resource's occupancy is the bytes its buffers hold (all VCs)
  plus the bytes of packets waiting for it (CODES' VC occupancy plus queued count). The
  timeline then also counts each request's hops (entries its packets crossed after the
  first, summed over its packets: CODES' ``my_N_hop``).
- **Streams.** As in the flow model, a stream's next request is issued ``gap`` after the
  previous one completes, never before its ``release`` and never sooner than its ``window``
  after the previous issue. ``Requests.latency`` (the flow model's route latency) is not
  used: this model times every hop itself.

The loop is compiled (Numba) and allocates nothing per event: a row per buffer, per link and
per packet, a packet pool sized by what the buffers can hold (so memory follows packets in
flight, not packets sent), and one 4-ary heap holding each resource's next arrival and each
message's issue, ordered by time, then by a tie-breaker. A stream's first issue enters the heap
only when it is due (the first issues wait sorted in the heap's order beside it), so open-loop
traffic of millions of one-message streams keeps the heap small; the events and their order
are those of one heap holding them all. The loop returns to Python (progress, Ctrl-C) after
``FIRST_CALL_EVENTS`` events, then after at most four times as many as the call before, aiming
at ``CALL_SECONDS`` a call.

**Ties.** On links of one speed many events fall at the same instant. Resolving them by
resource or request number would favour low-numbered links and clients every time (a bias
of 1-2 % in paper 000's mean I/O latency). As ROSS does (``core/ross-inline.h``,
``tw_event_new_user_prio``: with ``USE_RAND_TIEBREAKER``, on by default, every event sent
draws ``event_tiebreaker = tw_rand_unif(sender->core_rng)``, and ``tw_event_sig_compare_ptr``
orders equal times by it), every event pushed draws a random tie-breaker, here from one
xorshift64 stream seeded by ``tie_seed``: one seed, one order, every run. (ROSS also chains
the tie-breakers of zero-delay descendants, its "tie lineage"; this model has no zero-delay
event chains to order, as every hop takes time.)
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

import numba.core.cpu
import numpy as np
from numba import njit

from burstlake.replay.registry import refuse_unknown
from burstlake.replay.requests import Requests, Timeline, issue_time
from burstlake.replay.solver import Paths

MAX_DELAY_S = 86_400.0  # router_delay and nic_delay: a day at most (1e308 gave NaN times)
EVENTS_PER_CALL = 2_000_000  # compiled events between two progress reports, at most
CALL_SECONDS = 0.25  # and fewer when they take longer than this (Ctrl-C within a second)
FIRST_CALL_EVENTS = 64  # the first call's budget, then at most 4x the last call's
ARBITRATIONS = ("fcfs", "round-robin")  # how a buffer admits its waiting packets; default first


@dataclass(frozen=True)
class Adaptive:
    """Per-packet adaptive routing (module docstring): ``routes`` holds every request's
    primary route (rows 0..n-1, in request order, replacing the requests' own routes) and
    then the detour routes; ``vcs`` the virtual channel of each of its entries; ``detour``
    per entry the entry a packet may take instead (-1: none), an entry of a route sharing the
    same resources and VCs before it. A packet takes the detour when the entry's resource
    holds more than ``factor`` × the detour resource's occupancy + ``bias`` bytes."""

    routes: Paths
    vcs: np.ndarray
    detour: np.ndarray
    factor: float = 2.0
    bias: float = 0.0


@dataclass(frozen=True)
class PacketSettings:
    """The packet model's parameters (defaults: paper 000 §3.1's CODES configuration)."""

    packet_bytes: float = 4096.0  # the InfiniBand MTU
    buffer_bytes: float = 65536.0  # per port and virtual channel
    router_delay: float = 60e-9  # seconds per switch
    nic_delay: float = 1e-6  # seconds per message, at the sending NIC
    tie_seed: int = 0  # seeds the order of simultaneous events (ROSS's random tie-breaker)
    arbitration: str = "fcfs"  # CODES' fat-tree: one queue per output; or "round-robin"

    @classmethod
    def from_mapping(cls, given: Mapping[str, Any] | None, where: str = "packet") -> PacketSettings:
        """Settings from a scenario's ``packet:`` mapping; a one-line error names the key."""
        given = dict(given or {})
        refuse_unknown(where, "settings", set(given) - {f.name for f in fields(cls)},
                       [f.name for f in fields(cls)])  # fmt: skip
        values: dict[str, Any] = {}
        types = {f.name: f.type for f in fields(cls)}
        for key, value in given.items():
            if types[key] != "float":
                values[key] = value  # an integer or a name: check() judges it
                continue
            finite = isinstance(value, numbers.Real) and math.isfinite(value)
            if isinstance(value, bool) or not finite:  # "4096" too: a number, not its text
                raise ValueError(f"{where}: {key} must be a number, got {value!r}")
            values[key] = float(value)
        settings = cls(**values)
        settings.check(where)
        return settings

    def check(self, where: str = "packet") -> None:
        seed = self.tie_seed
        if (
            isinstance(seed, bool)
            or not isinstance(seed, int | np.integer)
            or not 0 <= seed < 2**63
        ):
            raise ValueError(f"{where}: tie_seed must be an integer >= 0, got {seed!r}")
        if not isinstance(self.arbitration, str) or self.arbitration not in ARBITRATIONS:
            raise ValueError(
                f"{where}: arbitration must be one of {list(ARBITRATIONS)}, "
                f"got {self.arbitration!r}"
            )
        for key in ("packet_bytes", "buffer_bytes"):
            if not 0 < getattr(self, key) < math.inf:
                raise ValueError(f"{where}: {key} must be positive, got {getattr(self, key)!r}")
        for key in ("router_delay", "nic_delay"):  # a delay past a day overflows no clock
            if not 0 <= getattr(self, key) <= MAX_DELAY_S:
                raise ValueError(
                    f"{where}: {key} must be 0..{MAX_DELAY_S:g} seconds, got {getattr(self, key)!r}"
                )
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
    switch_port: np.ndarray | None = None,
    adaptive: Adaptive | None = None,
    link_delay: np.ndarray | None = None,
) -> Timeline:
    """Replay the streams packet by packet; each request's issue and completion time.

    ``vcs`` gives the virtual channel of every route entry (aligned with
    ``requests.paths.indices``; all 0 when None). ``switch_port`` says which resources a switch
    sends on (their packets pay ``router_delay``); None, for bare links without a topology:
    every resource some route enters after another one. ``until`` stops the clock: requests not
    complete by then end at NaN and deliver what they delivered. ``Timeline.events`` counts
    packet hops and message issues. ``adaptive`` routes packets per packet (:class:`Adaptive`;
    its routes and VCs replace the requests' and ``vcs``). ``link_delay`` adds each resource's
    propagation delay (seconds, the wire's) to the time a packet takes to reach its end."""
    settings = settings or PacketSettings()
    settings.check()
    n = len(requests.stream)
    paths = requests.paths
    detour = np.zeros(0, np.int64)
    factor = bias = 0.0
    if adaptive is not None:
        if adaptive.routes.flows < n or len(adaptive.vcs) != len(adaptive.routes.indices):
            raise ValueError("adaptive: a primary route per request and a VC per entry")
        if len(adaptive.detour) != len(adaptive.routes.indices):
            raise ValueError("adaptive: one detour (or -1) per route entry")
        paths, vcs, detour = adaptive.routes, adaptive.vcs, np.asarray(adaptive.detour, np.int64)
        factor, bias = float(adaptive.factor), float(adaptive.bias)
    capacity = np.asarray(capacity, dtype=np.float64)
    indices = np.asarray(paths.indices, np.int64)
    vcs = np.zeros(len(indices), np.int64) if vcs is None else np.asarray(vcs, np.int64)
    crossed = np.zeros(len(capacity), np.bool_)
    inside, low, high = _scan(indices, vcs if len(vcs) == len(indices) else indices, crossed)
    if not inside:
        raise ValueError("a route names a resource outside the topology")
    if np.any(capacity[crossed] <= 0) or not np.all(np.isfinite(capacity[crossed])):
        raise ValueError("every resource a route crosses needs a positive, finite capacity")
    if len(vcs) != len(indices) or low < 0:
        raise ValueError("vcs: one virtual channel >= 0 per route entry")
    channels = high + 1
    size = np.asarray(requests.size, dtype=np.float64)
    stream = np.asarray(requests.stream, dtype=np.int64)
    gap = np.asarray(requests.gap, dtype=np.float64)
    release = np.full(n, -np.inf) if requests.release is None else np.asarray(requests.release)
    window = np.zeros(n) if requests.window is None else np.asarray(requests.window)
    most = float(size.max()) / settings.packet_bytes if n else 0.0
    if not most < 2**53:  # packet counts stay exact (and within int64)
        raise ValueError(
            f"packet model: a request of {size.max():g} bytes is {most:.3g} packets of "
            f"{settings.packet_bytes:g} bytes, beyond what one replay counts"
        )
    packets = np.maximum(1, np.ceil(size / settings.packet_bytes)).astype(np.int64)

    # each route entry: its resource, its buffer, the buffer its packet held before (-1 after a
    # NIC), its input (what the output's arbiter serves: the buffer itself under fcfs, the
    # (buffer, buffer held before) pair under round robin) times 2, plus 1 on its route's last
    # entry (to the sink)
    buffers = len(capacity) * channels
    if max(n, 2 * buffers, 2 * len(paths.indices)) >= 2**31:
        raise ValueError(
            f"packet model: {n:,} requests over {buffers:,} buffers is beyond one replay "
            "(ids are 32-bit); replay a shorter window"
        )
    entry = np.empty((len(paths.indices), 6), np.int32)
    used = np.zeros(buffers, np.bool_)  # the buffers some route holds
    fcfs = settings.arbitration == "fcfs"
    _entries(np.asarray(paths.indptr, np.int64), indices, vcs, channels, fcfs, entry, used)
    if fcfs:  # one input per buffer, numbered as it: arrival order
        inputs = buffers
    else:  # an input per (buffer, buffer held before) pair, numbered in their order
        pair = entry[:, 1].astype(np.int64) * (buffers + 1) + entry[:, 2] + 1
        unique, input_of_entry = np.unique(pair, return_inverse=True)
        inputs = len(unique)
        entry[:, 3] = 2 * input_of_entry + (entry[:, 3] & 1)
    if len(detour) and not _detours(detour, entry):
        raise ValueError("adaptive: a detour must hold the same buffer before it as its entry")
    if switch_port is None:  # bare links: one that only ever starts a route is a NIC's
        switch_port = np.zeros(len(capacity), bool)
        switch_port[paths.indices[entry[:, 2] >= 0]] = True
    elif len(switch_port) != len(capacity):
        raise ValueError("switch_port: one flag per resource")
    delay = np.where(switch_port, settings.router_delay, 0.0)
    if link_delay is not None:
        if len(link_delay) != len(capacity) or np.any(np.asarray(link_delay) < 0):
            raise ValueError("link_delay: one propagation delay >= 0 seconds per resource")
        delay = delay + np.asarray(link_delay, np.float64)
    streams = int(np.count_nonzero(np.r_[True, stream[1:] != stream[:-1]])) if n else 0
    if len(detour):  # room for the packets of every route: packets may take any of them
        streams += int(np.count_nonzero(detour >= 0))
    # every packet holds one buffer (full packets fill it, each message has one short packet)
    per_buffer = int(settings.buffer_bytes // settings.packet_bytes)
    pool = int(np.count_nonzero(used)) * per_buffer + 2 * streams + 16
    if pool >= 2**31:
        raise ValueError(f"packet model: a pool of {pool:,} packets is beyond one replay")
    state = _State.empty(n, buffers, capacity, delay, settings.packet_bytes, pool, inputs)
    state.ties[0] = np.random.SeedSequence(int(settings.tie_seed)).generate_state(1, np.uint64)[0]
    state.ties[0] |= np.uint64(1)  # xorshift needs a state other than 0
    due, value = _first_issues(
        requests.first(), gap, release, window, settings.nic_delay, state.start, state.ties
    )
    order = np.lexsort((value, due))  # the heap's order: by time, then by value
    fixed = _Fixed(
        stream, size, gap, release, window, packets, paths.indptr, entry,
        settings.packet_bytes, settings.buffer_bytes, settings.nic_delay, float(until),
        channels, factor, bias, due[order], value[order],
    )  # fmt: skip
    budget = FIRST_CALL_EVENTS  # then grown (or shrunk) to CALL_SECONDS a call
    while True:  # back in Python (Ctrl-C, progress) every CALL_SECONDS or so
        began = time.perf_counter()
        done = _advance(budget, fixed, state)
        if done < 0:
            raise RuntimeError("packet model: the packet pool overflowed (a bug: please report)")
        if progress is not None and done:
            progress(done)
        if done < budget:
            break
        took = max(time.perf_counter() - began, 1e-6)
        budget = int(min(EVENTS_PER_CALL, 4 * budget, max(64, budget * CALL_SECONDS / took)))
    waiting = state.counters[0] or state.counters[5] < len(fixed.due)
    if not waiting and np.isnan(state.end).any() and until == math.inf:
        stuck = int(np.isnan(state.end).sum())
        raise ValueError(
            f"packet model: deadlock, {stuck} requests can never complete (a cycle of full "
            "buffers): routes that wrap around need virtual channels (the dateline rule)"
        )
    return PacketTimeline(
        state.start,
        state.end,
        state.delivered,
        int(state.counters[2]),
        occupancy=state.buffer[:, B_BYTES].copy(),
        peak_packets=int(state.counters[3]),
        hops=state.hops,
    )


@dataclass(frozen=True)
class PacketTimeline(Timeline):
    """A :class:`Timeline` with the buffers' final occupancy (bytes; all 0 when every request
    completed: credits are conserved) and the most packets alive at once."""

    occupancy: np.ndarray = field(default_factory=lambda: np.zeros(0))
    peak_packets: int = 0
    hops: np.ndarray = field(default_factory=lambda: np.zeros(0))  # per request, all packets


class _Fixed(NamedTuple):
    """What the compiled loop reads and never writes: the requests, their routes, the settings."""

    stream: np.ndarray  # per request: its stream, bytes, gap, release, window, packets
    size: np.ndarray
    gap: np.ndarray
    release: np.ndarray
    window: np.ndarray
    packets: np.ndarray
    indptr: np.ndarray  # a request's route entries
    entry: np.ndarray  # per route entry: resource, buffer, buffer held before, 2 input + last
    packet_bytes: float
    buffer_bytes: float
    nic_delay: float
    until: float
    channels: int  # virtual channels per resource (buffer b is resource b // channels)
    factor: float  # adaptive routing: detour when load > factor × detour load + bias
    bias: float
    due: np.ndarray  # each stream's first issue (time, heap value), in the heap's order
    due_value: np.ndarray


class _State(NamedTuple):
    """What the compiled loop writes (requests, buffers, resources, packet pool, event heap).

    A buffer's, a resource's and a packet's fields sit in one row of one table, so an event
    touches few cache lines; each table is one block of memory seen twice, as float64
    (``buffer``, ``link``, ``packet``: columns ``*_BYTES``, ``*_TIME``...) and as int32
    (``buffer_ids``...: columns ``*_HEAD``, ``*_NEXT``...)."""

    start: np.ndarray
    end: np.ndarray
    delivered: np.ndarray
    arrived: np.ndarray  # packets of the request delivered
    injected: np.ndarray  # packets of the request cut at its NIC
    hops: np.ndarray  # entries crossed after the first, over the request's packets
    load: np.ndarray  # per resource: bytes its buffers hold plus bytes waiting for it
    buffer: np.ndarray  # bytes charged; the round robin of inputs with packets waiting
    buffer_ids: np.ndarray
    inputs: np.ndarray  # per input (see simulate): its FIFO of waiting packets
    link: np.ndarray  # when free, a full packet's time on it, delay after; packets in flight
    link_ids: np.ndarray
    capacity: np.ndarray  # per resource (bytes/s), for short packets
    packet: np.ndarray  # bytes, when it reaches its resource's end; request, route entry, next
    packet_ids: np.ndarray
    free: np.ndarray  # stack of free packet ids
    heap: np.ndarray  # 4-ary heap of events (time, value), flat, from node ROOT
    work: np.ndarray  # buffers to retry after a credit
    ties: np.ndarray  # the tie-breakers' xorshift64 state
    # heap size, free-stack size, events, deepest pool use, root handled, first issues pushed
    counters: np.ndarray

    @classmethod
    def empty(
        cls,
        n: int,
        buffers: int,
        capacity: np.ndarray,
        delay: np.ndarray,
        packet_bytes: float,
        pool: int,
        inputs: int,
    ) -> _State:
        links = len(capacity)
        buffer, buffer_ids = _table(buffers, 4)
        buffer_ids[:, B_HEAD : B_HEAD + 2] = -1
        link, link_ids = _table(links, 8)
        link[:, L_FULL] = packet_bytes / capacity
        link[:, L_DELAY] = delay
        link_ids[:, L_HEAD : L_HEAD + 2] = -1
        packet, packet_ids = _table(pool, 8)
        # a packet's ids are written when it is taken from the pool: its rows stay untouched
        events = links + n + 1  # a resource's first packet in flight (2r), a message (2k + 1)
        return cls(
            start=np.full(n, np.nan),
            end=np.full(n, np.nan),
            delivered=np.zeros(n),
            arrived=np.zeros(n, np.int64),
            injected=np.zeros(n, np.int64),
            hops=np.zeros(n),
            load=np.zeros(links),
            buffer=buffer,
            buffer_ids=buffer_ids,
            inputs=np.full((inputs, 4), -1, np.int32),
            link=link,
            link_ids=link_ids,
            capacity=capacity,
            packet=packet,
            packet_ids=packet_ids,
            free=np.arange(pool - 1, -1, -1, dtype=np.int32),
            heap=_table(ROOT + events + 4, 4)[0].reshape(-1),
            work=np.zeros(pool + buffers + 1, np.int64),
            ties=np.ones(1, np.uint64),
            counters=np.array([0, pool, 0, 0, 0, 0], np.int64),
        )


def _table(rows: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` zeroed rows of ``width`` int32 columns starting on a 64-byte boundary, seen as
    float64 (``width / 2`` columns) and as int32. With the heap's root at ROOT, a heap node's
    four children (rows 4i + 4 to 4i + 7) share one cache line."""
    flat = np.zeros(rows * width + 16, np.int32)
    skip = (-flat.ctypes.data % 64) // 4
    ints = flat[skip : skip + rows * width].reshape(rows, width)
    return ints.view(np.float64), ints


# The loop allocates nothing, so it runs without Numba's reference counting (``_nrt=False``):
# otherwise every array taken from the state tuple costs atomic increments and decrements in
# the loop (half its time); and without division-by-zero checks (capacities are positive).
# ``_nrt`` is Numba's own (not public) option: where a Numba lacks it the loop keeps the
# reference counting, slower by about half, with the same results.
COMPILED = {"cache": True, "error_model": "numpy"} | (
    {"_nrt": False} if hasattr(numba.core.cpu.CPUTargetOptions, "_nrt") else {}
)
ROOT = 3  # the heap's root: node i sits at 2 (i + ROOT)
B_BYTES, B_HEAD = 0, 2  # buffer: bytes charged (float64); input whose turn it is (int32), last
I_HEAD, I_RING = 0, 2  # input: first and last waiting packet, next input in its round robin
L_FREE, L_FULL, L_DELAY, L_HEAD = 0, 1, 2, 6  # resource: free at, a full packet's time, delay
P_BYTES, P_TIME, P_REQ, P_ENTRY, P_NEXT = 0, 1, 4, 5, 6  # packet
# an event's heap value: its id (2r for resource r, 2k + 1 for request k, below 2**33) plus a
# random tie-breaker of 20 bits times 2**33 (exact in a float64; equal draws fall back on the id)
EVENT_BITS = 33
EVENT_MASK = (1 << EVENT_BITS) - 1


@njit(cache=True, inline="always")
def _put(heap, i, time, value):  # pragma: no cover - compiled
    """Write event (time, value) at heap node ``i``: the heap is flat, node i's time and value
    at 2 (i + ROOT) and the slot after it."""
    heap[2 * (i + ROOT)], heap[2 * (i + ROOT) + 1] = time, value


@njit(cache=True, inline="always")
def _earlier(t, v, other_t, other_v):  # pragma: no cover - compiled
    """Whether event (t, v) comes before (other_t, other_v): by time, then by value (without
    branches, so the compiler selects rather than jumps)."""
    return (t < other_t) | ((t == other_t) & (v < other_v))


@njit(cache=True, inline="always")
def _sift_down(heap, size, i, time, value):  # pragma: no cover - compiled
    """Place event (time, value) in the 4-ary heap from the hole at node ``i`` downwards;
    events are ordered by (time, value), and no two events have the same value."""
    while True:
        child = 4 * i + 1
        if child >= size:
            break
        at = 2 * (child + ROOT)
        best, best_time, best_value = child, heap[at], heap[at + 1]
        if child + 3 < size:  # four children: two pairs, then their winners
            t1, v1 = heap[at + 2], heap[at + 3]
            t2, v2 = heap[at + 4], heap[at + 5]
            t3, v3 = heap[at + 6], heap[at + 7]
            first = _earlier(t1, v1, best_time, best_value)
            best = child + 1 if first else child
            best_time = t1 if first else best_time
            best_value = v1 if first else best_value
            third = _earlier(t3, v3, t2, v2)
            other = child + 3 if third else child + 2
            other_time = t3 if third else t2
            other_value = v3 if third else v2
            second = _earlier(other_time, other_value, best_time, best_value)
            best = other if second else best
            best_time = other_time if second else best_time
            best_value = other_value if second else best_value
        else:
            for c in range(child + 1, size):
                t, v = heap[2 * (c + ROOT)], heap[2 * (c + ROOT) + 1]
                earlier = _earlier(t, v, best_time, best_value)
                best = c if earlier else best
                best_time = t if earlier else best_time
                best_value = v if earlier else best_value
        if not _earlier(best_time, best_value, time, value):
            break
        _put(heap, i, best_time, best_value)
        i = best
    _put(heap, i, time, value)


@njit(cache=True, inline="always")
def _push(heap, counters, time, value):  # pragma: no cover - compiled
    """Add an event. The first event pushed while handling another takes the handled event's
    place at the root (one sift instead of two)."""
    if counters[4]:
        counters[4] = 0
        _sift_down(heap, counters[0], 0, time, value)
        return
    i = counters[0]
    counters[0] += 1
    while i > 0:
        parent = (i - 1) >> 2
        t, v = heap[2 * (parent + ROOT)], heap[2 * (parent + ROOT) + 1]
        if not _earlier(time, value, t, v):
            break
        _put(heap, i, t, v)
        i = parent
    _put(heap, i, time, value)


@njit(cache=True, inline="always")
def _event(ties, event):  # pragma: no cover - compiled
    """Event id ``event`` with a fresh random tie-breaker: its value in the heap."""
    x = ties[0]
    x ^= x << np.uint64(13)
    x ^= x >> np.uint64(7)
    x ^= x << np.uint64(17)
    ties[0] = x
    return np.float64((np.int64(x >> np.uint64(64 - 53 + EVENT_BITS)) << EVENT_BITS) | event)


@njit(cache=True, inline="always")
def _append(queues, head, packet_ids, q, p):  # pragma: no cover - compiled
    """Put packet ``p`` last in queue ``q`` (a buffer's waiting packets, a resource's packets
    in flight; columns ``head``, ``head + 1``): a packet is in one queue at a time, so one
    ``P_NEXT`` links them all."""
    packet_ids[p, P_NEXT] = -1
    if queues[q, head + 1] < 0:
        queues[q, head] = p
    else:
        packet_ids[queues[q, head + 1], P_NEXT] = p
    queues[q, head + 1] = p


@njit(cache=True, inline="always")
def _wait(buffer_ids, inputs, packet_ids, b, i, p):  # pragma: no cover - compiled
    """Packet ``p`` waits at input ``i`` for room in buffer ``b``: last in the input's FIFO;
    an input that had no packet waiting joins the buffer's round robin last (just before the
    input whose turn it is)."""
    if inputs[i, I_HEAD + 1] < 0:
        last = buffer_ids[b, B_HEAD + 1]
        if last < 0:
            buffer_ids[b, B_HEAD] = i
            inputs[i, I_RING] = i
        else:
            inputs[last, I_RING] = i
            inputs[i, I_RING] = buffer_ids[b, B_HEAD]
        buffer_ids[b, B_HEAD + 1] = i
    _append(inputs, I_HEAD, packet_ids, i, p)


@njit(cache=True, inline="always")
def _served(buffer_ids, inputs, b, i, following):  # pragma: no cover - compiled
    """Input ``i`` had its first packet admitted to buffer ``b`` (``following`` is next in its
    FIFO): the turn passes to the next input of the round robin; an input left empty leaves it."""
    inputs[i, I_HEAD] = following
    after = inputs[i, I_RING]
    if following >= 0:
        buffer_ids[b, B_HEAD + 1] = i
        buffer_ids[b, B_HEAD] = after
        return
    inputs[i, I_HEAD + 1] = -1
    if after == i:
        buffer_ids[b, B_HEAD] = -1
        buffer_ids[b, B_HEAD + 1] = -1
    else:
        inputs[buffer_ids[b, B_HEAD + 1], I_RING] = after
        buffer_ids[b, B_HEAD] = after


@njit(cache=True, inline="always")
def _settle(heap, counters):  # pragma: no cover - compiled
    """Remove the handled root event if no new event replaced it."""
    if counters[4]:
        counters[4] = 0
        size = counters[0] - 1
        counters[0] = size
        if size > 0:
            _sift_down(heap, size, 0, heap[2 * (size + ROOT)], heap[2 * (size + ROOT) + 1])


@njit(**COMPILED)
def _advance(budget, fixed, state):  # pragma: no cover - compiled
    """Process up to ``budget`` events; the number processed."""
    size, packets, indptr, entry = fixed.size, fixed.packets, fixed.indptr, fixed.entry
    packet_bytes, buffer_bytes = fixed.packet_bytes, fixed.buffer_bytes
    buffer, buffer_ids, link, link_ids = state.buffer, state.buffer_ids, state.link, state.link_ids
    packet, packet_ids, free, heap = state.packet, state.packet_ids, state.free, state.heap
    inputs = state.inputs
    work, counters = state.work, state.counters
    load, channels, factor, bias = state.load, fixed.channels, fixed.factor, fixed.bias
    due, due_value = fixed.due, fixed.due_value
    done = 0
    while done < budget:
        first = counters[5]  # a stream's first issue enters the heap when it is due
        if first < len(due) and (
            counters[0] == 0 or _earlier(due[first], due_value[first], heap[2 * ROOT],
                                         heap[2 * ROOT + 1])
        ):  # fmt: skip
            _push(heap, counters, due[first], due_value[first])
            counters[5] = first + 1
        if counters[0] == 0:
            break
        now = heap[2 * ROOT]
        if now > fixed.until:
            break
        value = np.int64(heap[2 * ROOT + 1]) & EVENT_MASK
        counters[4] = 1  # the root is handled; the first push replaces it (_push)
        done += 1
        todo = 0  # buffers whose queue may move
        if value & 1:  # a message reaches its NIC's queue
            k = value >> 1
            if indptr[k] == indptr[k + 1]:  # no resource to cross: done at once
                state.end[k] = now
                state.delivered[k] = size[k]
                _next_request(k, now, fixed, state)
                _settle(heap, counters)
                continue
            if counters[1] == 0:
                return -1  # the pool bound was wrong: refuse rather than corrupt state
            counters[1] -= 1
            counters[3] = max(counters[3], len(free) - counters[1])
            p = free[counters[1]]
            packet_ids[p, P_REQ], packet_ids[p, P_ENTRY] = k, -1
            b = entry[indptr[k], 1]
            _wait(buffer_ids, inputs, packet_ids, b, entry[indptr[k], 3] >> 1, p)
            work[todo] = b
            todo += 1
        else:  # the first packet in flight on resource r reaches its end
            r = value >> 1
            p = link_ids[r, L_HEAD]
            following = packet_ids[p, P_NEXT]
            link_ids[r, L_HEAD] = following
            if following < 0:
                link_ids[r, L_HEAD + 1] = -1
            else:  # the next one on r arrives later (FIFO, so its time is not earlier)
                _push(heap, counters, packet[following, P_TIME], _event(state.ties, 2 * r))
            k = packet_ids[p, P_REQ]
            e = packet_ids[p, P_ENTRY]
            released = entry[e, 1]
            if entry[e, 3] & 1:  # delivered: the last buffer drains at once
                nbytes = packet[p, P_BYTES]
                buffer[released, B_BYTES] -= nbytes
                load[entry[e, 0]] -= nbytes
                state.hops[k] += entry[e, 5]
                if buffer_ids[released, B_HEAD] >= 0:
                    work[todo] = released
                    todo += 1
                state.delivered[k] += nbytes
                state.arrived[k] += 1
                free[counters[1]] = p
                counters[1] += 1
                if state.arrived[k] == packets[k]:
                    state.end[k] = now
                    _next_request(k, now, fixed, state)
            else:  # wait for room in the next buffer, holding this one
                nxt = e + 1
                other = entry[nxt, 4]  # adaptive routing: the detour, if less occupied
                if other >= 0 and load[entry[nxt, 0]] > factor * load[entry[other, 0]] + bias:
                    nxt = other
                packet_ids[p, P_ENTRY] = nxt
                load[entry[nxt, 0]] += packet[p, P_BYTES]
                b = entry[nxt, 1]
                _wait(buffer_ids, inputs, packet_ids, b, entry[nxt, 3] >> 1, p)
                work[todo] = b
                todo += 1
        # admit waiting packets wherever room appeared, the inputs in turn (round robin); each
        # admission frees the buffer its packet held, which may admit packets upstream in turn
        while todo > 0:
            todo -= 1
            b = work[todo]
            while buffer_ids[b, B_HEAD] >= 0:
                i = buffer_ids[b, B_HEAD]  # the input whose turn it is, its first packet
                p = inputs[i, I_HEAD]
                k = packet_ids[p, P_REQ]
                e = packet_ids[p, P_ENTRY]
                if e < 0:  # cut the NIC's next packet of the message
                    nbytes = size[k] - state.injected[k] * packet_bytes
                    if nbytes > packet_bytes:
                        nbytes = packet_bytes
                else:
                    nbytes = packet[p, P_BYTES]
                held_bytes = buffer[b, B_BYTES]
                if held_bytes + nbytes > buffer_bytes and held_bytes > 0.0:
                    break
                buffer[b, B_BYTES] = held_bytes + nbytes
                following = packet_ids[p, P_NEXT]
                if e < 0:
                    state.injected[k] += 1
                    if state.injected[k] < packets[k]:  # the rest stays first in line
                        if counters[1] == 0:
                            return -1
                        counters[1] -= 1
                        counters[3] = max(counters[3], len(free) - counters[1])
                        q = free[counters[1]]
                        packet_ids[q, P_REQ], packet_ids[q, P_ENTRY] = k, -1
                        packet_ids[q, P_NEXT] = following
                        following = q
                        if inputs[i, I_HEAD + 1] == p:
                            inputs[i, I_HEAD + 1] = q
                    e = indptr[k]
                    packet_ids[p, P_ENTRY] = e
                    packet[p, P_BYTES] = nbytes
                    load[entry[e, 0]] += nbytes  # a packet from a NIC did not wait in load
                _served(buffer_ids, inputs, b, i, following)
                r = entry[e, 0]
                leave = max(now, link[r, L_FREE])
                if nbytes == packet_bytes:
                    busy_until = leave + link[r, L_FULL]
                else:
                    busy_until = leave + nbytes / state.capacity[r]
                link[r, L_FREE] = busy_until
                arrive = busy_until + link[r, L_DELAY]
                packet[p, P_TIME] = arrive
                if link_ids[r, L_HEAD + 1] < 0:  # r's first packet in flight: its arrival
                    _push(heap, counters, arrive, _event(state.ties, 2 * r))  # is r's event
                _append(link_ids, L_HEAD, packet_ids, r, p)
                held = entry[e, 2]
                if held >= 0:
                    buffer[held, B_BYTES] -= nbytes
                    load[held // channels] -= nbytes
                    if buffer_ids[held, B_HEAD] >= 0:  # someone waits for the credit
                        work[todo] = held
                        todo += 1
        _settle(heap, counters)
    counters[2] += done
    return done


@njit(cache=True)
def _scan(indices, vcs, crossed):  # pragma: no cover - compiled
    """Flag the resources routes cross; whether every entry names one, the lowest and the
    highest VC (0 without entries)."""
    low = high = 0
    for e in range(len(indices)):
        r = indices[e]
        if r < 0 or r >= len(crossed):
            return False, low, high
        crossed[r] = True
        low = min(low, vcs[e]) if e else vcs[e]
        high = max(high, vcs[e]) if e else vcs[e]
    return True, low, high


@njit(cache=True)
def _detours(detour, entry):  # pragma: no cover - compiled
    """Write each entry's detour (-1: none); whether each names an entry that holds the same
    buffer before it."""
    for e in range(len(detour)):
        other = detour[e]
        entry[e, 4] = other
        if other >= len(entry) or (other >= 0 and entry[other, 2] != entry[e, 2]):
            return False
    return True


@njit(cache=True)
def _entries(indptr, indices, vcs, channels, fcfs, entry, used):  # pragma: no cover - compiled
    """Fill the route entries' table (see :func:`simulate`; under round robin column 3 holds
    only the last-entry flag, the inputs numbered after) and flag the buffers used."""
    for row in range(len(indptr) - 1):
        held = -1
        for e in range(indptr[row], indptr[row + 1]):
            b = indices[e] * channels + vcs[e]
            entry[e, 0] = indices[e]
            entry[e, 1] = b
            entry[e, 2] = held
            entry[e, 3] = 2 * b if fcfs else 0
            entry[e, 4] = -1
            entry[e, 5] = e - indptr[row]
            used[b] = True
            held = b
        if indptr[row + 1] > indptr[row]:
            entry[indptr[row + 1] - 1, 3] += 1


@njit(cache=True)
def _first_issues(first, gap, release, window, nic_delay, start, ties):  # pragma: no cover
    """Each stream's first issue: ``start`` of its first request set, and the time and heap
    value (with its tie-breaker, drawn in stream order) of its arrival at the NIC's queue."""
    due = np.empty(len(first))
    value = np.empty(len(first))
    for i in range(len(first)):
        k = first[i]
        issue = issue_time(0.0, gap[k], release[k], -np.inf, window[k])
        start[k] = issue
        due[i] = issue + nic_delay
        value[i] = _event(ties, 2 * k + 1)
    return due, value


@njit(**COMPILED)
def _next_request(k, now, fixed, state):  # pragma: no cover - compiled
    """Issue the stream's next request after request ``k`` completed at ``now``."""
    nxt = k + 1
    if nxt >= len(fixed.stream) or fixed.stream[nxt] != fixed.stream[k]:
        return
    issue = issue_time(now, fixed.gap[nxt], fixed.release[nxt], state.start[k], fixed.window[nxt])
    state.start[nxt] = issue
    _push(state.heap, state.counters, issue + fixed.nic_delay, _event(state.ties, 2 * nxt + 1))
