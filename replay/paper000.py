"""Paper 000's MPI + I/O setting (§3.1-§3.3, §5), written once for its benchmarks
(``bench/packet_vs_codes.py``, ``bench/placement.py``, ...) and for ``burstlake synth --preset
paper000``, which writes the same two jobs as a lake (:mod:`burstlake.paper000_lake`).

The ``cab1296`` fat-tree (1,296 nodes, 36-port switches, 12.5 GB/s links) with its 72 I/O
servers on leaves 34, 35, 70, 71 (isolated-target, as the CODES driver of
``../shared/peers/codes`` places them), an MPI job of 612 clients each sending to a random
partner 500 µs after its previous message completed, and an I/O job of 612 clients writing
4 MiB requests round robin over the servers; seed 12345 (CODES' default).

Paper 000 §5 measures its two jobs in two configurations (its first paragraph): MPI
performance with 4 KB messages beside checkpoint-style I/O (:data:`MPI_STUDY`, requests back to
back), and I/O performance with requests 128 ms apart beside 4 MB MPI messages
(:data:`IO_STUDY`). §5.1's "I/O request time increases by 11.8 %" is of the second.
"""

from __future__ import annotations

from dataclasses import dataclass

SERVER_LEAVES = [34, 35, 70, 71]
TOPOLOGY = {"name": "cab1296", "server_leaves": SERVER_LEAVES}
CLIENTS = 612  # per job
MPI_INTERVAL_S = 5e-4
MIB = 2**20
SEED = 12345
PLACEMENTS = ("random-node", "random-switch")  # 000 §3.1 and §5.1's remedy
SYNTH_PRESET = "paper000"  # burstlake synth --preset paper000 writes the two jobs as a lake
IO_REQUEST_S = 2.7e-3  # one 4 MiB request per client with all 612 writing (000 §3.3: 2.7 s/1000)


@dataclass(frozen=True)
class Study:
    """One of paper 000 §5's configurations: message and request sizes (bytes) and intervals
    (seconds from a completion to the next send)."""

    name: str
    mpi_bytes: int
    mpi_interval_s: float
    io_bytes: int
    io_interval_s: float


MPI_STUDY = Study("mpi", 4096, MPI_INTERVAL_S, 4 * MIB, 0.0)  # 000 §5: MPI performance
IO_STUDY = Study("io", 4 * MIB, MPI_INTERVAL_S, 4 * MIB, 0.128)  # 000 §5: I/O performance


def workload(
    placement: str,
    messages: int,
    requests: int,
    mpi_warmup: int = 0,
    io_warmup: int = 0,
    seed: int = SEED,
    study: Study = MPI_STUDY,
) -> dict:
    """The ``jobs`` workload of ``study``: ``messages`` per MPI client and ``requests`` per I/O
    client, the first ``mpi_warmup`` and ``io_warmup`` of them not scored."""
    return {
        "seed": seed,
        "placement": placement,
        "jobs": [
            {
                "name": "mpi",
                "kind": "mpi",
                "nodes": CLIENTS,
                "message_bytes": study.mpi_bytes,
                "interval_s": study.mpi_interval_s,
                "messages": messages,
                "warmup": mpi_warmup,
            },
            {
                "name": "io",
                "kind": "io",
                "nodes": CLIENTS,
                "request_bytes": study.io_bytes,
                "interval_s": study.io_interval_s,
                "requests": requests,
                "warmup": io_warmup,
            },
        ],
    }


def messages_while_writing(requests: int) -> int:
    """MPI messages per client that keep the MPI job talking while each I/O client writes
    ``requests`` requests."""
    return round(requests * IO_REQUEST_S / MPI_INTERVAL_S)
