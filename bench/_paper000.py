"""Paper 000's MPI + I/O setting (§3.1-§3.3), written once for ``bench/packet_vs_codes.py``,
``bench/packet_paper_run.py`` and ``bench/placement.py``.

The ``cab1296`` fat-tree (1,296 nodes, 36-port switches, 12.5 GB/s links) with its 72 I/O
servers on leaves 34, 35, 70, 71 (isolated-target, as the CODES driver of
``../shared/peers/codes`` places them), an MPI job of 612 clients each sending 4 KiB to a
random partner 500 µs after its previous message completed, and a checkpoint I/O job of 612
clients writing 4 MiB requests back to back, round robin over the servers; seed 12345 (CODES'
default).
"""

from __future__ import annotations

SERVER_LEAVES = [34, 35, 70, 71]
TOPOLOGY = {"name": "cab1296", "server_leaves": SERVER_LEAVES}
CLIENTS = 612  # per job
MPI_BYTES = 4096
MPI_INTERVAL_S = 5e-4
IO_BYTES = 4 * 2**20
SEED = 12345
IO_REQUEST_S = 2.7e-3  # one 4 MiB request per client with all 612 writing (000 §3.3: 2.7 s/1000)


def workload(
    placement: str,
    messages: int,
    requests: int,
    mpi_warmup: int = 0,
    io_warmup: int = 0,
    seed: int = SEED,
) -> dict:
    """The ``jobs`` workload: ``messages`` per MPI client and ``requests`` per I/O client, the
    first ``mpi_warmup`` and ``io_warmup`` of them not scored."""
    return {
        "seed": seed,
        "placement": placement,
        "jobs": [
            {
                "name": "mpi",
                "kind": "mpi",
                "nodes": CLIENTS,
                "message_bytes": MPI_BYTES,
                "interval_s": MPI_INTERVAL_S,
                "messages": messages,
                "warmup": mpi_warmup,
            },
            {
                "name": "io",
                "kind": "io",
                "nodes": CLIENTS,
                "request_bytes": IO_BYTES,
                "interval_s": 0,
                "requests": requests,
                "warmup": io_warmup,
            },
        ],
    }


def messages_while_writing(requests: int) -> int:
    """MPI messages per client that keep the MPI job talking while each I/O client writes
    ``requests`` requests."""
    return round(requests * IO_REQUEST_S / MPI_INTERVAL_S)
