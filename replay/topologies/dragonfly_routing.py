"""Routes of a dragonfly (Kim, Dally, Scott and Abts, "Technology-driven, highly-scalable
dragonfly topology", ISCA 2008, §4) in the words of CODES' ``dragonfly-dally`` model
(codes-org/codes, src/networks/model-net/dragonfly-dally.cxx), and the per-packet adaptive
choices the packet model makes between them (:class:`burstlake.replay.packet.Adaptive`).

- ``minimal`` (ISCA 2008 §4.1; CODES ``dfdally_minimal_routing``): at most one local hop in
  the source group to a router with a global link to the destination group (the source router
  itself when it has one), that global link, at most one local hop in the destination group.
  Where several routers or links lead to the destination group, one is drawn at random.
- ``valiant`` (CODES ``nonminimal``, ``dfdally_nonminimal_routing``: Valiant *group*
  routing): minimally to a random intermediate group (neither the source's nor the
  destination's), then minimally to the destination. Traffic within one group stays minimal
  (CODES routes it locally before any routing decision).
- ``ugal`` (UGAL-L, ISCA 2008 §4.2): decided once, at the source router: minimal unless the
  occupancy of the minimal route's output there exceeds ``factor`` (2) times the non-minimal
  one's plus ``bias`` bytes.
- ``par`` (CODES ``prog-adaptive``, ``dfdally_prog_adaptive_routing``, after Jiang, Kim and
  Dally, ISCA 2009): the same choice at the source router and again at the next router of the
  source group when the minimal route took a local hop there; from that router the
  non-minimal route leaves on its own global link to the intermediate group (another of its
  global links when it has none to it), as CODES' ``get_legal_nonminimal_stops`` does. Once a
  packet turned non-minimal it stays so.

CODES scores a port by its VC occupancy plus its queued packets (``dfdally_score_connection``,
"alpha"), doubling the non-minimal score ("delta", the default), and takes minimal when the
minimal score is at most ``adaptive_threshold`` or the doubled non-minimal one: with a
threshold of 0 (dfdally_3k) that is the UGAL-L rule with ``bias`` 0 used here.

**Virtual channels** (deadlock freedom, Dally & Seitz 1987; ISCA 2008 §4.3): a hop's VC is the
number of global links the packet crossed before it. Every route alternates at most one local
hop and one global hop per group, so channel dependencies only go from (local, v) to
(global, v) and from (global, v) to (local or terminal, v + 1): no cycle (tested over every
route of each routing). Valiant routes use three VCs, minimal routes two. CODES keys its four
VCs on the group the packet is in (source 0/1, intermediate 2, destination 3), an equivalent
acyclic order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numba import njit

ROUTINGS = ("minimal", "valiant", "par", "ugal")  # CODES: minimal, nonminimal, prog-adaptive
UGAL_FACTOR = 2.0  # UGAL-L: minimal unless q_min > 2 q_nonmin + bias (ISCA 2008 §4.2)


@dataclass(frozen=True)
class Wiring:
    """A dragonfly's links as resource ids: ``inj``/``ej`` per host (NIC to router, router to
    host), ``local[r, j]`` from router r to router j of its group (-1 for r itself), and the
    global links as arrays (``global_src``, ``global_dst`` routers, ``global_res``)."""

    groups: int
    routers: int  # per group
    hosts: int  # per router
    inj: np.ndarray
    ej: np.ndarray
    local: np.ndarray
    global_src: np.ndarray
    global_dst: np.ndarray
    global_res: np.ndarray
    _memo: dict = field(default_factory=dict, compare=False, repr=False)

    def group(self, router: int) -> int:
        return router // self.routers

    @cached_property
    def direct(self) -> dict[tuple[int, int], list[int]]:
        """(router, group) → indices of the router's global links into that group."""
        out: dict[tuple[int, int], list[int]] = {}
        for i, (s, d) in enumerate(
            zip(self.global_src.tolist(), self.global_dst.tolist(), strict=True)
        ):
            out.setdefault((s, d // self.routers), []).append(i)
        return out

    @cached_property
    def gateways(self) -> dict[tuple[int, int], list[int]]:
        """(group, group) → the routers of the first group with a global link to the second."""
        out: dict[tuple[int, int], list[int]] = {}
        for s, g in sorted(self.direct):
            out.setdefault((self.group(s), g), []).append(s)
        return out

    @cached_property
    def is_global(self) -> np.ndarray:
        """Resource id → whether it is a global link (sized to the largest link id)."""
        top = int(max(self.inj.max(), self.ej.max(), self.local.max(), self.global_res.max()))
        flags = np.zeros(top + 1, bool)
        flags[self.global_res] = True
        return flags

    @cached_property
    def host_of_inj(self) -> dict[int, int]:
        return {int(r): h for h, r in enumerate(self.inj.tolist())}

    @cached_property
    def host_of_ej(self) -> dict[int, int]:
        return {int(r): h for h, r in enumerate(self.ej.tolist())}

    def to_group(self, router: int, group: int, pick) -> tuple[list[int], int]:
        """Minimal hops from ``router`` into ``group`` (another group) and the router reached:
        its own global link there if it has one, else a local hop to a router that has.
        ``pick(n)`` draws an index below n."""
        own = self.direct.get((router, group))
        hops = []
        here = router
        if not own:
            choices = self.gateways.get((self.group(router), group))
            if not choices:
                raise ValueError(f"dragonfly: no global link from group {self.group(router)}")
            here = choices[pick(len(choices))]
            hops.append(int(self.local[router, here % self.routers]))
            own = self.direct[(here, group)]
        link = own[pick(len(own))]
        hops.append(int(self.global_res[link]))
        return hops, int(self.global_dst[link])

    def minimal(self, src: int, dst: int, pick) -> list[int]:
        """Router-to-router hops of a minimal route from router ``src`` to router ``dst``."""
        if src == dst:
            return []
        if self.group(src) == self.group(dst):
            return [int(self.local[src, dst % self.routers])]
        hops, here = self.to_group(src, self.group(dst), pick)
        if here != dst:
            hops.append(int(self.local[here, dst % self.routers]))
        return hops

    def valiant(self, src: int, dst: int, middle: int, pick) -> list[int]:
        """Hops through intermediate group ``middle``: minimally there, then to ``dst``."""
        hops, here = self.to_group(src, middle, pick)
        return hops + self.minimal(here, dst, pick)

    def middle(self, src: int, dst: int, pick) -> int | None:
        """A random intermediate group (neither ``src``'s nor ``dst``'s), None if none."""
        a, b = self.group(src), self.group(dst)
        others = [g for g in range(self.groups) if g not in (a, b)]
        return others[pick(len(others))] if others and a != b else None

    def vcs(self, route: list[int]) -> list[int]:
        """The VC of each hop: the global links crossed before it (module docstring)."""
        flags, out, crossed = self.is_global, [], 0
        for r in route:
            out.append(crossed)
            if r < len(flags) and flags[r]:
                crossed += 1
        return out


def hashed(src: int, dst: int, salt: int):
    """A deterministic ``pick(n)`` for the pair (src, dst): the flow model's routes stay the
    same from run to run and spread over the candidates pair by pair."""
    state = [(src * 2654435761 + dst * 40503 + salt * 97) & 0xFFFFFFFF]

    def pick(n: int) -> int:
        state[0] = (state[0] * 1103515245 + 12345) & 0x7FFFFFFF
        return (state[0] >> 8) % n

    return pick


def drawn(rng: np.random.Generator):
    """A random ``pick(n)`` (the packet model: a fresh draw per request, as CODES draws)."""

    def pick(n: int) -> int:
        return int(rng.integers(n))

    return pick


def flow_route(wiring: Wiring, src: int, dst: int, routing: str, share: float, salt: int) -> list:
    """Router hops between hosts ``src`` and ``dst`` for the flow model: minimal, Valiant for
    ``valiant``, and for ``par``/``ugal`` Valiant on a fixed ``share`` of the host pairs
    (hashed), minimal on the rest (docs/design.md, "Dragonfly")."""
    pick = hashed(src, dst, salt)
    s, d = src // wiring.hosts, dst // wiring.hosts
    nonminimal = routing == "valiant" or (
        routing in ("par", "ugal") and (pick(1_000_000) + 0.5) / 1_000_000 < share
    )
    middle = wiring.middle(s, d, pick) if nonminimal else None
    return wiring.minimal(s, d, pick) if middle is None else wiring.valiant(s, d, middle, pick)


def adaptive_rows(
    wiring: Wiring, route: list[int], routing: str, pick
) -> tuple[list[int], list[tuple[int, list[int]]]]:
    """The packet model's primary route for one request and its detours: (position, detour
    route) pairs, a detour sharing the primary's entries before ``position`` (module docstring).
    A route that does not run host to host (e.g. to the storage without a server) is kept."""
    if not route:
        return route, []
    src = wiring.host_of_inj.get(route[0])
    ends = [i for i, r in enumerate(route) if r in wiring.host_of_ej]
    if src is None or not ends:
        return route, []
    last = ends[-1]
    dst, tail = wiring.host_of_ej[route[last]], route[last + 1 :]
    s, d = src // wiring.hosts, dst // wiring.hosts
    head, foot = [route[0]], [route[last], *tail]
    middle = wiring.middle(s, d, pick) if routing != "minimal" else None
    if routing == "valiant" and middle is not None:
        return head + wiring.valiant(s, d, middle, pick) + foot, []
    primary = head + wiring.minimal(s, d, pick) + foot
    if middle is None or routing == "minimal":
        return primary, []
    detours = []
    first = head + wiring.valiant(s, d, middle, pick) + foot
    if first[1] != primary[1]:
        detours.append((1, first))
    if routing == "par" and not wiring.is_global[primary[1]] and primary[2] != first[2]:
        # the next router of the source group re-decides: its own global link out
        here = _router_after(wiring, s, primary[1])
        own = wiring.direct.get((here, middle))
        if not own:
            own = [
                i
                for (r, g), links in wiring.direct.items()
                if r == here and g not in (wiring.group(s), wiring.group(d))
                for i in links
            ]
        if own:
            link = own[pick(len(own))]
            arrival = int(wiring.global_dst[link])
            second = [*primary[:2], int(wiring.global_res[link])]
            second += wiring.minimal(arrival, d, pick) + foot
            if second[2] != primary[2]:
                detours.append((2, second))
    return primary, detours


def _router_after(wiring: Wiring, router: int, local_link: int) -> int:
    """The router a local link of ``router`` leads to."""
    row = wiring.local[router].tolist()
    return (router // wiring.routers) * wiring.routers + row.index(local_link)


# --- the same routes for many requests at once (numpy), for replays of millions of packets ---


@dataclass(frozen=True)
class Tables:
    """A :class:`Wiring` as padded arrays: ``direct_count[r, g]`` and ``direct[r, g, k]`` (the
    router's global links into group g), ``gateway_count[g, t]`` and ``gateway[g, t, k]`` (the
    routers of group g with a link to group t), ``links[r, k]`` (each router's global links)."""

    direct_count: np.ndarray
    direct: np.ndarray
    gateway_count: np.ndarray
    gateway: np.ndarray
    links: np.ndarray

    @classmethod
    def of(cls, w: Wiring) -> Tables:
        routers = w.groups * w.routers
        widest = max(len(v) for v in w.direct.values())
        count = np.zeros((routers, w.groups), np.int64)
        direct = np.zeros((routers, w.groups, widest), np.int64)
        for (r, g), links in w.direct.items():
            count[r, g] = len(links)
            direct[r, g, : len(links)] = links
        gates = max(len(v) for v in w.gateways.values())
        gcount = np.zeros((w.groups, w.groups), np.int64)
        gateway = np.zeros((w.groups, w.groups, gates), np.int64)
        for (g, t), rs in w.gateways.items():
            gcount[g, t] = len(rs)
            gateway[g, t, : len(rs)] = rs
        links = np.asarray(
            [[i for i, s in enumerate(w.global_src.tolist()) if s == r] for r in range(routers)],
            np.int64,
        )
        return cls(count, direct, gcount, gateway, links)


def _draw(rng: np.random.Generator, count: np.ndarray) -> np.ndarray:
    """An index below ``count`` for each entry (uniform)."""
    return np.minimum((rng.random(len(count)) * count).astype(np.int64), count - 1)


def _to_group(w: Wiring, t: Tables, router, group, rng):
    """:meth:`Wiring.to_group` for arrays: (local hop or -1, global hop, router reached). The
    gateways are drawn first, then the links (each one uniform below its count)."""
    gate_draw, link_draw = rng.random(len(router)), rng.random(len(router))
    return _to_groups(np.asarray(router, np.int64), np.asarray(group, np.int64), gate_draw,
                      link_draw, w.routers, w.local, t.direct_count, t.direct, t.gateway_count,
                      t.gateway, w.global_res, w.global_dst)  # fmt: skip


@njit(cache=True, inline="always")
def _below(u, count):  # pragma: no cover - compiled
    """:func:`_draw`'s index for one draw ``u`` (-1 wraps to the last, as numpy indexes)."""
    return min(np.int64(u * count), count - 1)


@njit(cache=True)
def _to_groups(router, group, gate_draw, link_draw, routers, local, direct_count, direct,
               gateway_count, gateway, global_res, global_dst):  # fmt: skip  # pragma: no cover
    """:func:`_to_group`'s hops, each from its two draws."""
    n = len(router)
    hop, link_res, here = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    for i in range(n):
        r, g = router[i], group[i]
        home = r // routers
        gate = gateway[home, g, _below(gate_draw[i], max(gateway_count[home, g], 1))]
        own = direct_count[r, g] > 0
        if own:
            gate = r
        hop[i] = -1 if own else local[r, gate % routers]
        pick = _below(link_draw[i], direct_count[gate, g])
        link = direct[gate, g, pick if pick >= 0 else direct.shape[2] + pick]
        link_res[i], here[i] = global_res[link], global_dst[link]
    return hop, link_res, here


def _minimal(w: Wiring, t: Tables, src, dst, rng) -> np.ndarray:
    """Minimal router hops (n, 3), -1 where there is none (:meth:`Wiring.minimal`)."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    away = src // w.routers != dst // w.routers
    out = np.full((len(src), 3), -1, np.int64)
    _inside(src, dst, w.routers, w.local, out)
    if away.any():
        hop, link, here = _to_group(w, t, src[away], dst[away] // w.routers, rng)
        out[away] = _last_hop(hop, link, here, dst[away], w.routers, w.local)
    return out


@njit(cache=True)
def _inside(src, dst, routers, local, out):  # pragma: no cover - compiled
    """The one local hop of each route inside one group (none from a router to itself)."""
    for i in range(len(src)):
        if src[i] // routers == dst[i] // routers and src[i] != dst[i]:
            out[i, 0] = local[src[i], dst[i] % routers]


@njit(cache=True)
def _last_hop(hop, link, here, dst, routers, local):  # pragma: no cover - compiled
    """(n, 3) hops: the way into the group, then a local hop to ``dst`` unless there."""
    out = np.empty((len(hop), 3), np.int64)
    for i in range(len(hop)):
        out[i, 0], out[i, 1] = hop[i], link[i]
        out[i, 2] = local[here[i], dst[i] % routers] if here[i] != dst[i] else -1
    return out


def _valiant(w: Wiring, t: Tables, src, dst, middle, rng) -> np.ndarray:
    """Valiant router hops (n, 5) through group ``middle`` (:meth:`Wiring.valiant`)."""
    hop, link, here = _to_group(w, t, src, middle, rng)
    return np.concatenate([np.stack([hop, link], axis=1), _minimal(w, t, here, dst, rng)], axis=1)


def _middle(w: Wiring, src, dst, rng) -> np.ndarray:
    """A random group other than both ends' (-1 when the ends share a group or none is left)."""
    a, b = src // w.routers, dst // w.routers
    low, high = np.minimum(a, b), np.maximum(a, b)
    pick = (rng.random(len(src)) * max(w.groups - 2, 1)).astype(np.int64)
    pick += pick >= low
    pick += pick >= high
    return np.where((a != b) & (w.groups > 2), pick, -1)


def _rows(parts: list[np.ndarray]):
    """CSR rows (indptr, indices) of the padded columns ``parts`` side by side (-1: none)."""
    # a column per 1-D part (also when no request takes the rows: reshape(0, -1) is ambiguous)
    table = np.concatenate([p if p.ndim == 2 else p[:, None] for p in parts], axis=1)
    return _pack(np.ascontiguousarray(table, np.int64))


@njit(cache=True)
def _pack(table):  # pragma: no cover - compiled
    """The rows of ``table`` without their -1 cells, as CSR (indptr, indices)."""
    indptr = np.zeros(len(table) + 1, np.int64)
    for row in range(len(table)):
        kept = 0
        for cell in table[row]:
            kept += cell >= 0
        indptr[row + 1] = indptr[row] + kept
    indices = np.empty(indptr[-1], np.int64)
    at = 0
    for row in range(len(table)):
        for cell in table[row]:
            if cell >= 0:
                indices[at] = cell
                at += 1
    return indptr, indices


def vcs_of(w: Wiring, indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """:meth:`Wiring.vcs` of every entry of CSR rows: the global links crossed before it."""
    return _crossed_before(np.asarray(indptr, np.int64), np.asarray(indices, np.int64),
                           w.is_global)  # fmt: skip


@njit(cache=True)
def _crossed_before(indptr, indices, is_global):  # pragma: no cover - compiled
    """Per entry of each CSR row: the global links among the row's entries before it."""
    out = np.zeros(len(indices), np.int64)
    for row in range(len(indptr) - 1):
        crossed = 0
        for e in range(indptr[row], indptr[row + 1]):
            out[e] = crossed
            r = indices[e]
            if r < len(is_global) and is_global[r]:
                crossed += 1
    return out


def route_arrays(w: Wiring, t: Tables, src, dst, routing: str, share: float, rng):
    """Router hops between hosts ``src`` and ``dst`` (arrays) as CSR rows with the NIC and
    ejection links: the flow model's routes (:func:`flow_route`, drawn from ``rng`` instead of
    hashed)."""
    s, d = src // w.hosts, dst // w.hosts
    middle = _middle(w, s, d, rng)
    valiant = (middle >= 0) & (
        (routing == "valiant") | ((routing in ("par", "ugal")) & (rng.random(len(s)) < share))
    )
    hops = np.full((len(s), 5), -1, np.int64)
    hops[:, :3] = _minimal(w, t, s, d, rng)
    if valiant.any():
        hops[valiant] = _valiant(w, t, s[valiant], d[valiant], middle[valiant], rng)
    return _rows([w.inj[src], hops, w.ej[dst]])


def adaptive_arrays(w: Wiring, t: Tables, src, dst, tail, routing: str, rng):
    """:func:`adaptive_rows` for arrays of requests (hosts ``src``, ``dst``; ``tail`` a last
    resource after the ejection link or -1): the primary rows, then the detour rows, and per
    request the row and position of its detour at positions 1 and 2 (-1: none)."""
    n = len(src)
    s, d = src // w.hosts, dst // w.hosts
    middle = _middle(w, s, d, rng) if routing != "minimal" else np.full(n, -1)
    minimal = _minimal(w, t, s, d, rng)
    primary = np.full((n, 5), -1, np.int64)
    primary[:, :3] = minimal
    nonmin = middle >= 0
    first = np.full((n, 5), -1, np.int64)
    if nonmin.any():
        first[nonmin] = _valiant(w, t, s[nonmin], d[nonmin], middle[nonmin], rng)
    if routing == "valiant":
        primary[nonmin] = first[nonmin]
    head = [w.inj[src]]
    foot = [w.ej[dst], tail]
    rows = [_rows([*head, primary, *foot])]
    at1 = at2 = np.full(n, -1)
    if routing in ("par", "ugal"):
        lead = lambda hops: np.where(hops[:, 0] >= 0, hops[:, 0], hops[:, 1])  # noqa: E731
        one = nonmin & (lead(first) != lead(primary))
        at1 = np.where(one, n + np.cumsum(one) - 1, -1)
        rows.append(_rows([head[0][one], first[one], foot[0][one], tail[one]]))
    if routing == "par":
        # the next router of the source group (after minimal's local hop) re-decides
        two = nonmin & (minimal[:, 0] >= 0)
        gate = np.full(n, -1)
        gate[two] = w.global_src[_link_of(w, minimal[two, 1])]
        own = np.zeros(n, bool)
        own[two] = t.direct_count[gate[two], middle[two]] > 0
        link = np.full(n, -1)
        k = own
        link[k] = t.direct[gate[k], middle[k], _draw(rng, t.direct_count[gate[k], middle[k]])]
        other = two & ~own
        if other.any():  # its own links to groups other than both ends'
            mine = t.links[gate[other]]
            dest = w.global_dst[mine] // w.routers
            ok = (dest != (s[other] // w.routers)[:, None]) & (
                dest != (d[other] // w.routers)[:, None]
            )
            count = ok.sum(axis=1)
            pick = _draw(rng, np.maximum(count, 1))
            order = np.cumsum(ok, axis=1) - 1
            chosen = np.argmax(ok & (order == pick[:, None]), axis=1)
            link[other] = np.where(count > 0, mine[np.arange(len(mine)), chosen], -1)
        two &= link >= 0
        second = np.full((n, 5), -1, np.int64)
        if two.any():
            second[two, 0] = minimal[two, 0]
            second[two, 1] = w.global_res[link[two]]
            second[two, 2:] = _minimal(w, t, w.global_dst[link[two]], d[two], rng)
        base = n + int((at1 >= 0).sum())
        at2 = np.where(two, base + np.cumsum(two) - 1, -1)
        rows.append(_rows([head[0][two], second[two], foot[0][two], tail[two]]))
    indptr = [rows[0][0]]
    for part in rows[1:]:
        indptr.append(part[0][1:] + indptr[-1][-1])
    return np.concatenate(indptr), np.concatenate([r[1] for r in rows]), at1, at2


def _link_of(w: Wiring, resources: np.ndarray) -> np.ndarray:
    """The global link index of global-link resources."""
    order = np.argsort(w.global_res)
    return order[np.searchsorted(w.global_res[order], resources)]
