"""Synthetic traffic generators (docs/design.md, "Placement"): the MPI and I/O jobs of paper 000
§3.2, the nearest-neighbour and all-to-all exchanges of paper 002 and its applications (compute
phases between halo or all-to-all exchanges and small collectives, 002 Table 1), as request
streams for the event-driven replay (:func:`burstlake.replay.events.simulate`).

A generator describes one job's traffic by *rank* — the position of a node in the job — so a
placement moves the job without touching its traffic; :func:`requests` routes several jobs on
their nodes. Intervals run from one request's completion to the next send (000 §3.2) and vary
uniformly by ±``JITTER`` (000 §3.3); the first ``warmup`` requests of every stream are replayed
but left out of the scores.

A *throttle window* (000 §5.3: the minimum time between the starts of a client's consecutive
requests) is the engine's ``Requests.window``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from burstlake.replay.graph import Topology
from burstlake.replay.requests import Requests
from burstlake.replay.solver import Paths

JITTER = 0.05  # intervals vary uniformly within ±5 % of their mean (000 §3.3)
MAPPINGS = ("block", "cyclic")  # task → node mappings (002 §2.3)


@dataclass(frozen=True)
class Traffic:
    """One job's requests by rank, in stream order: request k of stream ``stream[k]`` sends
    ``size[k]`` bytes from rank ``src[k]`` to rank ``dst[k]`` (or to I/O server ``dst[k]``
    when ``to_servers``), ``gap[k]`` seconds after the previous one of its stream completes."""

    kind: str
    stream: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    gap: np.ndarray
    warmup: np.ndarray  # bool: a warm-up request, left out of the scores
    to_servers: bool = False

    def __len__(self) -> int:
        return len(self.stream)


def _streams(
    kind: str,
    src: np.ndarray,
    dst: np.ndarray,
    sizes: np.ndarray,
    count: int,
    warmup: int,
    interval_s: float,
    rng: np.random.Generator,
    to_servers: bool = False,
) -> Traffic:
    """``warmup + count`` requests per stream (stream i from ``src[i]``); ``dst`` is one
    destination per stream or a (streams, requests) array."""
    streams, per = len(src), warmup + count
    dst = np.asarray(dst)
    dst = np.repeat(dst, per) if dst.ndim == 1 else dst.reshape(-1)
    return Traffic(
        kind=kind,
        stream=np.repeat(np.arange(streams, dtype=np.int64), per),
        src=np.repeat(np.asarray(src, dtype=np.int64), per),
        dst=dst.astype(np.int64),
        size=np.repeat(np.asarray(sizes, dtype=np.float64), per),
        gap=jittered(interval_s, streams * per, rng),
        warmup=np.tile(np.arange(per) < warmup, streams),
        to_servers=to_servers,
    )


def jittered(interval_s: float, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` intervals uniform in interval × [1 - JITTER, 1 + JITTER] (000 §3.3)."""
    return interval_s * rng.uniform(1 - JITTER, 1 + JITTER, count)


def random_pairs(count: int, rng: np.random.Generator) -> np.ndarray:
    """Each of ``count`` processes' partner, paired at random (000 §3.2); with an odd count the
    last one drawn sends to the first of another pair."""
    order = rng.permutation(count)
    partner = np.empty(count, dtype=np.int64)
    even = count - count % 2
    partner[order[0:even:2]] = order[1:even:2]
    partner[order[1:even:2]] = order[0:even:2]
    if count % 2:
        partner[order[-1]] = order[0]
    return partner


def mpi_pairs(
    nodes: int,
    message_bytes: float,
    interval_s: float,
    messages: int,
    warmup: int,
    rng: np.random.Generator,
) -> Traffic:
    """The MPI job of 000 §3.2: one process per node, processes paired at random, each sending
    ``message_bytes`` to its partner every interval. With an odd count the last process sends
    to a partner of another pair."""
    if nodes < 2:
        raise ValueError(f"an mpi job needs at least 2 nodes, got {nodes}")
    partner = random_pairs(nodes, rng)
    ranks = np.arange(nodes)
    sizes = np.full(nodes, float(message_bytes))
    return _streams("mpi", ranks, partner[ranks], sizes, messages, warmup, interval_s, rng)


def lustre_io(
    nodes: int,
    servers: int,
    request_bytes: float,
    interval_s: float,
    requests: int,
    warmup: int,
    rng: np.random.Generator,
) -> Traffic:
    """The I/O job of 000 §3.2 (Lustre forwarding pattern): each client sends its first request
    to a server drawn at random, the next ones round robin over all servers."""
    per = warmup + requests
    first = rng.integers(0, servers, nodes)
    dst = (first[:, None] + np.arange(per)[None, :]) % servers
    sizes = np.full(nodes, float(request_bytes))
    return _streams(
        "io", np.arange(nodes), dst, sizes, requests, warmup, interval_s, rng, to_servers=True
    )


def rank_nodes(nodes: int, ranks_per_node: int, mapping: str) -> np.ndarray:
    """The node (job rank) of each MPI task: ``block`` puts consecutive tasks on one node,
    ``cyclic`` deals them round robin over the nodes (002 §2.3)."""
    tasks = np.arange(nodes * ranks_per_node)
    if mapping == "block":
        return tasks // ranks_per_node
    if mapping == "cyclic":
        return tasks % nodes
    raise ValueError(f"task mapping must be one of {', '.join(MAPPINGS)}, got {mapping!r}")


@dataclass(frozen=True)
class Exchange:
    """An exchange job of paper 002: ``nodes`` × ``ranks_per_node`` tasks mapped to nodes by
    ``mapping``, ``message_bytes`` per message, ``warmup`` + ``rounds`` rounds, each one
    ``interval_s`` after the previous one completed."""

    nodes: int
    ranks_per_node: int = 1
    mapping: str = "block"
    message_bytes: float = 1.0
    interval_s: float = 0.0
    rounds: int = 1
    warmup: int = 0

    @property
    def tasks(self) -> int:
        return self.nodes * self.ranks_per_node

    def traffic(
        self, kind: str, task_src: np.ndarray, task_dst: np.ndarray, rng: np.random.Generator
    ) -> Traffic:
        """Task-to-task messages of one round, summed per pair of distinct nodes (messages
        within a node do not cross the network); a stream per node pair, a request per round."""
        where = rank_nodes(self.nodes, self.ranks_per_node, self.mapping)
        a, b = where[task_src], where[task_dst]
        off_node = a != b
        pairs, count = np.unique(a[off_node] * self.nodes + b[off_node], return_counts=True)
        if not len(pairs):
            raise ValueError(f"a {kind} exchange on {self.nodes} node(s) never leaves a node")
        return _streams(
            kind,
            pairs // self.nodes,
            pairs % self.nodes,
            count * float(self.message_bytes),
            self.rounds,
            self.warmup,
            self.interval_s,
            rng,
        )


def nearest_neighbour(exchange: Exchange, rng: np.random.Generator) -> Traffic:
    """Tasks on a ring each send a message to both neighbours every round (002's
    nearest-neighbour exchange); under ``cyclic`` mapping every neighbour is on another node."""
    tasks = np.arange(exchange.tasks)
    src = np.concatenate([tasks, tasks])
    dst = np.concatenate([(tasks + 1) % len(tasks), (tasks - 1) % len(tasks)])
    return exchange.traffic("nearest-neighbour", src, dst, rng)


def all_to_all(exchange: Exchange, rng: np.random.Generator) -> Traffic:
    """Every task sends a message to every other task each round (002's all-to-all); per node
    pair that is ranks_per_node² messages under either mapping."""
    src, dst = np.divmod(np.arange(exchange.tasks**2), exchange.tasks)
    keep = src != dst
    return exchange.traffic("all-to-all", src[keep], dst[keep], rng)


PATTERNS = ("halo", "all-to-all")  # an application's point-to-point exchange (002 Table 1)


def application(
    exchange: Exchange, pattern: str, collective_bytes: float, rng: np.random.Generator
) -> Traffic:
    """An application of 002 Table 1 (AMG, UMT, pF3D): every round a compute phase of
    ``exchange.interval_s`` (the gap after the previous round's messages completed, the same
    on every rank), then its
    point-to-point exchange among tasks, ``halo`` (both ring neighbours: AMG's and UMT's large
    point-to-point messages) or ``all-to-all`` (pF3D's transposes), plus, when
    ``collective_bytes`` > 0, a small collective: ``collective_bytes`` between every two of
    the job's nodes (their tasks combined on the node first)."""
    if pattern not in PATTERNS:
        raise ValueError(
            f"application pattern must be one of {', '.join(PATTERNS)}, got {pattern!r}"
        )
    main = (nearest_neighbour if pattern == "halo" else all_to_all)(exchange, rng)
    parts = [main]
    if collective_bytes > 0 and exchange.nodes > 1:
        leaders = replace(
            exchange, ranks_per_node=1, mapping="block", message_bytes=collective_bytes
        )
        collective = all_to_all(leaders, rng)
        parts.append(replace(collective, stream=collective.stream + int(main.stream.max()) + 1))
    joined = {
        name: np.concatenate([getattr(part, name) for part in parts])
        for name in ("stream", "src", "dst", "size", "warmup")
    }
    # bulk-synchronous: every rank computes the same phase, no jitter (000 §3.3's is for its
    # MPI benchmark), so a job's messages of one round go out together
    gap = np.full(len(joined["stream"]), float(exchange.interval_s))
    return Traffic(kind="application", gap=gap, **joined)


@dataclass(frozen=True)
class Routed:
    """Several jobs' traffic as one set of requests: ``job[k]`` is the job of request k (its
    position in the list given to :func:`requests`), ``warmup[k]`` its warm-up flag."""

    requests: Requests
    job: np.ndarray
    warmup: np.ndarray


def requests(topology: Topology, jobs: Sequence[tuple[Traffic, np.ndarray]]) -> Routed:
    """Route each job's traffic on its nodes (``nodes[rank]`` = node index in ``topology``):
    MPI routes between compute nodes, I/O routes through the server to its storage resource.
    Every request pays its route's latency (:meth:`Topology.route_latency`)."""
    parts, offset = [], 0
    for j, (traffic, nodes) in enumerate(jobs):
        nodes = np.asarray(nodes, dtype=np.int64)
        ranks = traffic.src if traffic.to_servers else np.r_[traffic.src, traffic.dst]
        if len(ranks) and int(ranks.max()) >= len(nodes):
            raise ValueError(f"job {j}: its traffic uses more ranks than its {len(nodes)} nodes")
        src = nodes[traffic.src]
        dst = traffic.dst if traffic.to_servers else nodes[traffic.dst]
        parts.append((traffic, j, offset + traffic.stream, src, dst))
        offset += int(traffic.stream.max()) + 1 if len(traffic) else 0
    cat = np.concatenate
    src, dst = cat([p[3] for p in parts]), cat([p[4] for p in parts])
    io = cat([np.full(len(p[0]), p[0].to_servers) for p in parts])
    width = max(len(topology.nodes), len(topology.ions))
    key = (src * width + dst) * 2 + io
    unique, inverse = np.unique(key, return_inverse=True)
    router = topology.router
    routes = [
        router.io_route(int(k // 2 // width), int(k // 2 % width))
        if k % 2
        else router.route(int(k // 2 // width), int(k // 2 % width))
        for k in unique
    ]
    paths: Paths = Paths.from_lists(routes).take(inverse)
    kinds = cat([np.full(len(p[0]), p[0].kind, dtype=object) for p in parts])
    return Routed(
        Requests(
            stream=cat([p[2] for p in parts]),
            size=cat([p[0].size for p in parts]),
            gap=cat([p[0].gap for p in parts]),
            paths=paths,
            kind=kinds,
            latency=topology.route_latency(paths),
        ),
        job=cat([np.full(len(p[0]), p[1], dtype=np.int64) for p in parts]),
        warmup=cat([p[0].warmup for p in parts]),
    )
