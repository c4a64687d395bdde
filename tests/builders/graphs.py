"""Checks on graphs shared by the replay's tests."""

from __future__ import annotations


def cyclic(edges: dict) -> bool:
    """Whether the directed graph ``{node: {successors}}`` has a cycle (Kahn's algorithm)."""
    nodes = set(edges) | {m for succ in edges.values() for m in succ}
    indegree = dict.fromkeys(nodes, 0)
    for succ in edges.values():
        for m in succ:
            indegree[m] += 1
    ready = [n for n in nodes if indegree[n] == 0]
    seen = 0
    while ready:
        n = ready.pop()
        seen += 1
        for m in edges.get(n, ()):
            indegree[m] -= 1
            if indegree[m] == 0:
                ready.append(m)
    return seen < len(nodes)
