"""The packet model (burstlake.replay.packet) against packet timings derived by hand.

Units are chosen so the arithmetic is exact: a packet of P = 4096 bytes on a link of 4096
bytes/s takes 1 s, so times count packet transmissions. Every expected value is derived in
the test from the model's rules (packets, buffers and credits, store and forward per hop,
``router_delay`` per switch port, ``nic_delay`` per message)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from burstlake.replay import models
from burstlake.replay.events import simulate as flow_simulate
from burstlake.replay.packet import PacketSettings, simulate
from burstlake.replay.requests import Requests
from burstlake.replay.solver import Paths
from burstlake.replay.topologies import fattree

P = 4096.0
ONE = P  # bytes/s: one packet per second


def requests(routes, sizes, gaps=None, streams=None, **extra) -> Requests:
    n = len(routes)
    return Requests(
        np.arange(n) if streams is None else np.asarray(streams),
        np.asarray(sizes, dtype=float),
        np.zeros(n) if gaps is None else np.asarray(gaps, dtype=float),
        Paths.from_lists(routes),
        **extra,
    )


def settings(buffer_packets: float = 16, router_delay: float = 0.0, nic_delay: float = 0.0):
    return PacketSettings(P, buffer_packets * P, router_delay, nic_delay)


def test_one_message_over_h_hops() -> None:
    # NIC delay once, then store and forward: h transmissions, a router delay per switch
    B, rd, nic = 12.5e9, 60e-9, 1e-6
    for h in (1, 2, 6):
        t = simulate(requests([list(range(h))], [P]), np.full(h, B), PacketSettings())
        assert t.end[0] - t.start[0] == pytest.approx(nic + h * P / B + (h - 1) * rd, rel=1e-12)
    # n packets pipeline: the last leaves the NIC after n transmissions, then h - 1 more hops
    n, h = 5, 4
    t = simulate(requests([list(range(h))], [n * P]), np.full(h, B), PacketSettings())
    assert t.end[0] == pytest.approx(nic + n * P / B + (h - 1) * (P / B + rd), rel=1e-12)


def test_an_io_request_pays_router_delay_only_where_a_switch_sends() -> None:
    # A 3-packet write across pods of a radix-4 fat-tree (compute host 0 on leaf 0, its server
    # host 4 on leaf 2), every resource at one packet per second: the route is host 0's NIC
    # link, four switch links, leaf 2's port down to host 4 and the server's storage.
    topology = fattree.build(
        fattree.FatTreeShape(radix=4, leaves=4), {"link": ONE, "server": ONE}, np.array([4, 5])
    )
    route = topology.router.io_route(0, 0)
    names = [topology.resources.names[r] for r in route]
    assert names == ["up:h0", "l0>a0.0", "a0.0>c0.0", "c0.0>a1.0", "a1.0>l2", "down:h4", "ios:h4"]
    rd, nic, m = 0.25, 0.5, 3
    given = {"packet_bytes": P, "buffer_bytes": 16 * P, "router_delay": rd, "nic_delay": nic}
    packet = models.parse({"name": "packet", **given})
    write = requests([route], [m * P])
    # the last packet leaves the NIC at nic + m (no delay: a NIC sends), crosses the five
    # switch ports (1 s and rd each: 6.25 s) and is written by the server in 1 s, with no
    # router delay after it (a server is not a switch): 0.5 + 3 + 6.25 + 1
    timeline = topology.with_contention(packet).simulate(write)
    assert timeline.end[0] - timeline.start[0] == pytest.approx(nic + m + 5 * (1 + rd) + 1)
    # a server at half the link's rate writes a packet per 2 s: packet i reaches it at
    # nic + (i + 1) + 6.25 = 7.75 + i, so it writes over [7.75, 9.75], [9.75, 11.75] and
    # [11.75, 13.75]
    slow = fattree.build(
        fattree.FatTreeShape(radix=4, leaves=4), {"link": ONE, "server": ONE / 2}, np.array([4, 5])
    )
    assert slow.with_contention(packet).simulate(write).end[0] == pytest.approx(13.75)
    # on bare links (no topology, so no switch ports known) every hop after the NIC pays rd
    bare = packet.simulate_links(write, topology.resources.capacity)
    assert bare.end[0] == pytest.approx(nic + m + 6 * (1 + rd))


def test_a_short_last_packet_takes_its_own_bytes() -> None:
    # 2.5 packets over 2 links: link 1 carries the full packets over [1,2] and [2,3]; the half
    # packet reaches it at 2.5 s, waits for it until 3 s and crosses in 0.5 s
    t = simulate(requests([[0, 1]], [2.5 * P]), np.full(2, ONE), settings())
    assert t.end[0] == pytest.approx(3.5)
    assert t.delivered[0] == 2.5 * P


def test_two_flows_share_one_link_half_each_to_the_packet() -> None:
    # both inject at the link rate into link 2: it serves their packets alternately, so the
    # first finishes one packet before the other and each got half the link
    m = 40
    t = simulate(requests([[0, 2], [1, 2]], [m * P, m * P]), np.full(3, ONE), settings())
    # link 2 is busy from 1 s (the first packets arrive) for 2m packets
    assert sorted(t.end) == pytest.approx([1 + 2 * m - 1, 1 + 2 * m])


def test_n_senders_into_one_link_get_the_link_rate_in_total() -> None:
    n, m = 7, 30
    routes = [[i, n] for i in range(n)]
    t = simulate(requests(routes, [m * P] * n), np.full(n + 1, ONE), settings())
    assert t.end.max() == pytest.approx(1 + n * m)  # n·m packets back to back after 1 s
    assert t.delivered.sum() == n * m * P


def test_a_one_packet_buffer_stalls_its_sender() -> None:
    # link 1 is 4× slower. With a buffer of one packet, a packet is admitted to link 1's buffer
    # only when the previous one was delivered, so link 1 idles for the router delay between
    # packets, and the sender waits for credits: each of the m packets costs 4 s + rd
    m, rd = 10, 0.5
    capacity = np.array([ONE, ONE / 4])
    t = simulate(requests([[0, 1]], [m * P]), capacity, settings(1, router_delay=rd))
    assert t.end[0] == pytest.approx(1 + m * (4 + rd))
    # with room for two packets the next one is already admitted: link 1 never idles
    t = simulate(requests([[0, 1]], [m * P]), capacity, settings(2, router_delay=rd))
    assert t.end[0] == pytest.approx(1 + 4 * m + rd)


def test_head_of_line_blocking() -> None:
    # Buffers of one packet. A sends 2 packets over a0 -> L -> busy (10× slower); B sends one
    # packet over b0 -> L -> free at 2.5 s.
    #   A1: a0 [0,1], L [1,2], admitted to busy at 2 (freeing L), busy [2,12], delivered 12.
    #   A2: a0 [1,2] (a0's credit came back when A1 entered L), L [2,3]; busy's buffer is
    #       full until 12, so A2 waits at the switch holding L's buffer.
    #   B:  b0 [2.5,3.5]; L's buffer is held by A2, so B waits although `free` is idle.
    #   At 12 A1 is delivered: A2 enters busy (busy [12,22]), L's credit returns, B crosses
    #   L [12,13] and free [13,14].
    a0, b0, L, busy, free = range(5)
    capacity = np.array([ONE, ONE, ONE, ONE / 10, ONE])
    routes = [[a0, L, busy], [b0, L, free]]
    t = simulate(requests(routes, [2 * P, P], gaps=[0, 2.5]), capacity, settings(1))
    assert t.end.tolist() == pytest.approx([22.0, 14.0])
    # alone, or with room for a second packet in L's buffer, B takes its 3 transmissions
    t = simulate(requests(routes, [2 * P, P], gaps=[0, 2.5]), capacity, settings(2))
    assert t.end[1] - t.start[1] == pytest.approx(3.0)


def test_inputs_take_turns_for_an_output_round_robin() -> None:
    # Buffers of two packets; A sends 4 packets over a -> out, B 4 packets over b -> out from
    # 3.5 s; `out` is 10x slower, so its buffer (2 packets) admits one packet per delivery.
    #   A1 a [0,1], admitted to out at 1: out [1,11]; A2 a [1,2], admitted at 2: out [11,21];
    #   A3 (a [2,3]) and A4 (a [3,4]) wait at input a, holding a's buffer.
    #   B1 b [3.5,4.5] and B2 b [4.5,5.5] wait at input b, which joined the round after a.
    # Round robin, one admission per delivery at 11, 21, 31...: A3 (11), B1 (21), A4 (31),
    # then B2 (41), B3 (51), B4 (61). `out` carries A1 A2 A3 B1 A4 B2 B3 B4: A ends at 51,
    # B at 81. First come first served (CODES' fat-tree) admits A3, A4 (waiting since 3 and
    # 4) before B1 (4.5): `out` carries A1-A4 then B1-B4, A ending at 41.
    a, b, out = range(3)
    capacity = np.array([ONE, ONE, ONE / 10])
    r = requests([[a, out], [b, out]], [4 * P, 4 * P], gaps=[0, 3.5])
    turns = PacketSettings(P, 2 * P, 0.0, 0.0, arbitration="round-robin")
    assert simulate(r, capacity, turns).end.tolist() == pytest.approx([51.0, 81.0])
    assert simulate(r, capacity, settings(2)).end.tolist() == pytest.approx([41.0, 81.0])
    # with one input there is no one to take turns with: A's packets leave back to back
    # (out [1,41]), and a second request on the same stream, issued at 41, crosses a [41,42]
    # and out from 42 for 4 packets: 82
    r = requests([[a, out], [a, out]], [4 * P, 4 * P], streams=[0, 0])
    assert simulate(r, capacity, turns).end.tolist() == pytest.approx([41.0, 82.0])


def test_credits_are_conserved() -> None:
    rng = np.random.default_rng(3)
    # routes in increasing resource order: no cycle of buffers, so no deadlock
    routes = [sorted(rng.choice(6, size=rng.integers(1, 5), replace=False)) for _ in range(40)]
    sizes = rng.integers(1, 10 * P, 40).astype(float)  # whole bytes: sums of them are exact
    streams = np.sort(rng.integers(0, 8, 40))
    capacity = rng.uniform(0.5, 2.0, 6) * ONE
    t = simulate(requests(routes, sizes, streams=streams), capacity, settings(2.5))
    np.testing.assert_array_equal(t.occupancy, 0.0)  # every buffer drained
    np.testing.assert_allclose(t.delivered, sizes)  # every byte arrived
    assert np.all(t.end >= t.start)
    assert t.peak_packets > 0


def test_streams_issue_after_completion_gap_release_and_window() -> None:
    # one stream of three 1-packet requests over one link: gap 2 after each completion,
    # the third released no sooner than 9, and a window of 5 between issues
    r = requests([[0]] * 3, [P] * 3, gaps=[0, 2, 2], streams=[0, 0, 0])
    t = simulate(r, [ONE], settings())
    assert t.start.tolist() == [0, 3, 6] and t.end.tolist() == [1, 4, 7]
    r = requests(
        [[0]] * 3, [P] * 3, gaps=[0, 2, 2], streams=[0, 0, 0], release=np.array([0, 0, 9.0])
    )
    assert simulate(r, [ONE], settings()).start.tolist() == [0, 3, 9]
    r = requests([[0]] * 3, [P] * 3, gaps=[0, 2, 2], streams=[0, 0, 0], window=np.full(3, 5.0))
    assert simulate(r, [ONE], settings()).start.tolist() == [0, 5, 10]


def test_first_issues_enter_in_time_order_whenever_due() -> None:
    # three one-packet streams over one link released at 2, 0 and 100 (the link idle, the
    # heap empty, before the last): each served at its release, one packet time each
    r = requests([[0]] * 3, [P] * 3, release=np.array([2.0, 0.0, 100.0]))
    t = simulate(r, [ONE], settings())
    assert t.start.tolist() == [2, 0, 100] and t.end.tolist() == [3, 1, 101]
    assert t.events == 3 + 3  # an issue and a hop each
    # stopped before the last is due: its start is its issue, it never ends
    t = simulate(r, [ONE], settings(), until=50.0)
    assert t.end[:2].tolist() == [3, 1] and np.isnan(t.end[2]) and t.start[2] == 100


def test_the_loop_returns_to_python_often(monkeypatch) -> None:
    """Ctrl-C and progress between compiled calls: the first runs FIRST_CALL_EVENTS events,
    each later one at most 4x the one before (and at most EVENTS_PER_CALL); the calls change
    nothing in the result."""
    from burstlake.replay import packet

    routes = [[k % 4, 4 + k % 2] for k in range(200)]
    r = requests(routes, [20 * P] * 200, gaps=np.full(200, 1e-3), streams=np.arange(200) // 4)
    capacity = np.full(6, 1e9)
    calls: list[int] = []
    t = simulate(r, capacity, PacketSettings(nic_delay=0.0), progress=calls.append)
    assert sum(calls) == t.events > 64 * (1 + 4 + 16)
    assert calls[0] == packet.FIRST_CALL_EVENTS == 64
    assert all(b <= 4 * a for a, b in itertools.pairwise(calls))
    assert max(calls) <= packet.EVENTS_PER_CALL
    monkeypatch.setattr(packet, "FIRST_CALL_EVENTS", packet.EVENTS_PER_CALL)
    once: list[int] = []
    u = simulate(r, capacity, PacketSettings(nic_delay=0.0), progress=once.append)
    assert once == [t.events]
    assert np.array_equal(t.end, u.end) and np.array_equal(t.start, u.start)


def test_until_stops_the_clock() -> None:
    r = requests([[0]] * 3, [P] * 3, gaps=[0, 0, 0], streams=[0, 0, 0])
    t = simulate(r, [ONE], settings(), until=1.5)
    assert t.end[0] == 1.0 and np.isnan(t.end[1:]).all()


def test_agrees_with_the_flow_model_on_one_bottleneck() -> None:
    # equal flows through one bottleneck: max-min gives each 1/n of it; the packet model's
    # throughput is within 2 % (it differs by the pipeline's fill time only)
    B = 12.5e9
    for n in (2, 5, 16):
        routes = [[i, n, n + 1 + i] for i in range(n)]
        sizes = [4e6] * n
        capacity = np.full(2 * n + 1, B)
        fluid = flow_simulate(requests(routes, sizes), capacity)
        packet = simulate(requests(routes, sizes), capacity, PacketSettings())
        assert packet.end.max() == pytest.approx(fluid.end.max(), rel=0.02)


def test_deadlock_is_refused_with_a_reason() -> None:
    # a ring of three one-packet buffers, every flow holding one and wanting the next
    routes = [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    with pytest.raises(ValueError, match="deadlock"):
        simulate(requests(routes, [3 * P] * 3), np.full(3, ONE), settings(1))
    # virtual channels break the cycle: the dateline hop moves to VC 1
    vcs = np.array([0, 0, 1, 0, 1, 1, 1, 1, 1])
    t = simulate(requests(routes, [3 * P] * 3), np.full(3, ONE), settings(1), vcs=vcs)
    assert np.isfinite(t.end).all()


def test_a_request_beyond_exact_packet_counts_is_refused() -> None:
    # 1e300 bytes is ~2.4e296 packets: past int64 and float exactness, refused in one line
    # instead of overflowing into a false "deadlock"
    with pytest.raises(ValueError, match=r"a request of 1e\+300 bytes is 2\.44e\+296 packets"):
        simulate(requests([[0]], [1e300]), np.full(1, ONE), PacketSettings())


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"packet_bytes": 0}, "packet_bytes must be positive"),
        ({"buffer_bytes": -1}, "buffer_bytes must be positive"),
        ({"router_delay": -1e-9}, "router_delay must be 0..86400 seconds"),
        ({"nic_delay": "soon"}, "nic_delay must be a number"),
        ({"nic_delay": True}, "nic_delay must be a number"),
        ({"packet_bytes": "4096"}, "packet_bytes must be a number, got '4096'"),
        ({"packet_bytes": float("inf")}, "packet_bytes must be a number"),
        ({"packet_bytes": 8192, "buffer_bytes": 4096}, "larger than buffer_bytes"),
        ({"bufer_bytes": 1}, r"unknown settings 'bufer_bytes'"),
        ({"tie_seed": -1}, "tie_seed must be an integer >= 0, got -1"),
        ({"tie_seed": True}, "tie_seed must be an integer >= 0, got True"),
        ({"tie_seed": "7"}, "tie_seed must be an integer >= 0, got '7'"),
        ({"tie_seed": 1.5}, "tie_seed must be an integer >= 0, got 1.5"),
        ({"tie_seed": 2**63}, "tie_seed must be an integer >= 0"),
        ({"tie_seed": None}, "tie_seed must be an integer >= 0, got None"),
        ({"arbitration": "lottery"}, r"arbitration must be one of \['fcfs', 'round-robin'\]"),
        ({"arbitration": 1}, "arbitration must be one of"),
    ],
)
def test_bad_settings_are_refused_naming_the_key(given, message) -> None:
    with pytest.raises(ValueError, match=message):
        PacketSettings.from_mapping(given, "scenario.yaml: packet")


def test_simultaneous_events_are_ordered_by_a_seeded_tie_breaker() -> None:
    # two one-packet messages cross links 0 and 1 over [0,1] and reach link 2 at the same
    # instant: the first served crosses link 2 over [1,2], the other over [2,3]. Which one
    # is first follows the seeded tie-breaker (as ROSS's), not the resource numbering:
    # the same seed gives the same order; over seeds, both orders occur.
    r = requests([[0, 2], [1, 2]], [P, P])
    capacity = np.full(3, ONE)
    orders = set()
    for seed in range(16):
        ends = [simulate(r, capacity, PacketSettings(P, P, 0.0, 0.0, seed)).end for _ in "ab"]
        np.testing.assert_array_equal(*ends)
        assert sorted(ends[0]) == [2.0, 3.0]
        orders.add(tuple(ends[0]))
    assert orders == {(2.0, 3.0), (3.0, 2.0)}
    assert PacketSettings.from_mapping({"tie_seed": 7}).tie_seed == 7


def test_bad_routes_and_channels_are_refused() -> None:
    with pytest.raises(ValueError, match="outside the topology"):
        simulate(requests([[0, 3]], [P]), [ONE, ONE], settings())
    with pytest.raises(ValueError, match="one virtual channel"):
        simulate(requests([[0]], [P]), [ONE], settings(), vcs=np.array([0, 1]))
    with pytest.raises(ValueError, match="one flag per resource"):
        simulate(requests([[0]], [P]), [ONE], settings(), switch_port=np.array([True, False]))


def test_the_event_heap_orders_by_time_then_event() -> None:
    # the compiled loop's 4-ary heap against a sorted list: many tied times (resolved by the
    # event's value), events pushed while another is handled taking the root's place
    from burstlake.replay.packet import ROOT, _push, _settle, _table

    rng = np.random.default_rng(7)
    heap, counters = _table(ROOT + 2000, 4)[0].reshape(-1), np.zeros(5, np.int64)
    expected, popped, values = [], [], iter(rng.permutation(10_000).astype(float))
    for _ in range(400):
        event = (float(rng.integers(0, 20)), next(values))
        _push(heap, counters, *event)
        expected.append(event)
    while counters[0] > 0:
        root = (heap[2 * ROOT], heap[2 * ROOT + 1])
        popped.append(root)
        expected.remove(root)
        assert root < min(expected, default=(np.inf, 0.0))
        counters[4] = 1  # handling the root: the first push replaces it
        for _ in range(rng.integers(0, 3) if len(popped) < 300 else 0):
            event = (root[0] + float(rng.integers(0, 5)), next(values))
            _push(heap, counters, *event)
            expected.append(event)
        _settle(heap, counters)
    assert not expected and len(popped) >= 400
