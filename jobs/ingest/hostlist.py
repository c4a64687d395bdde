"""Slurm hostlist expressions: expand ``nid0[5301-5428]`` to node names and compress them back.

Grammar (Slurm's): top-level commas separate terms; a term is literal text with any number of
``[...]`` groups, each a comma list of ``N`` or ``N-M`` ranges. A range keeps the zero padding
of its lower bound (``[001-004]`` → 001..004); several groups multiply out
(``rack[1-2]-node[01-02]`` → 4 names). ``None assigned`` and empty mean no nodes. Paper 004
§3.3 orders a job's nodes by name: :func:`natural_key` is that order (prefix, then number).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable

NO_NODES = frozenset({"", "none assigned", "none", "(null)"})
MAX_HOSTS = 1_000_000  # a larger expansion is a typo, not a machine
_NAME_CHARS = re.compile(r"[A-Za-z0-9._-]*")
_RANGE = re.compile(r"(\d+)(?:-(\d+))?")
_GROUP = re.compile(r"\[([^\[\]]*)\]")
_TRAILING_NUMBER = re.compile(r"(.*?)(\d+)")
_DIGITS = re.compile(r"(\d+)")


Ranges = list[tuple[int, int, int]]  # (low, high, zero-padded width) of one [...] group
Piece = str | Ranges  # literal text or a bracket group


@functools.lru_cache(maxsize=1 << 20)  # a machine's node names recur in every job
def natural_key(name: str) -> tuple:
    """Sort key ordering ``cn2`` before ``cn10``: text parts as text, digit runs as numbers."""
    parts: list = _DIGITS.split(name)
    parts[1::2] = map(int, parts[1::2])
    parts.append(name)
    return tuple(parts)


def _terms(expr: str) -> list[str]:
    """Split at the commas outside brackets; reject nested or unbalanced brackets."""
    terms, start, depth = [], 0, 0
    for i, char in enumerate(expr):
        if char == "[":
            if depth:
                raise ValueError(f"hostlist {expr!r}: nested '[' at character {i + 1}")
            depth = 1
        elif char == "]":
            if not depth:
                raise ValueError(f"hostlist {expr!r}: ']' at character {i + 1} closes nothing")
            depth = 0
        elif char == "," and not depth:
            terms.append(expr[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"hostlist {expr!r}: '[' is never closed")
    return [*terms, expr[start:]]


def _group(expr: str, body: str) -> Ranges:
    ranges: Ranges = []
    for item in body.split(","):
        match = _RANGE.fullmatch(item.strip())
        if not match:
            raise ValueError(f"hostlist {expr!r}: {item!r} in [{body}] is not N or N-M")
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low):
            raise ValueError(f"hostlist {expr!r}: range {item!r} runs backwards")
        ranges.append((int(low), int(high), len(low)))
    return ranges


def _check_literal(expr: str, text: str) -> str:
    if not _NAME_CHARS.fullmatch(text):
        bad = next(c for c in text if not _NAME_CHARS.fullmatch(c))
        raise ValueError(f"hostlist {expr!r}: {bad!r} cannot be part of a host name")
    return text


def _pieces(expr: str, term: str) -> list[Piece]:
    if not term:
        raise ValueError(f"hostlist {expr!r}: empty host name between commas")
    pieces: list[Piece] = []
    position = 0
    for match in _GROUP.finditer(term):
        pieces.append(_check_literal(expr, term[position : match.start()]))
        pieces.append(_group(expr, match.group(1)))
        position = match.end()
    pieces.append(_check_literal(expr, term[position:]))
    return pieces


def _size(pieces: list[Piece]) -> int:
    size = 1
    for piece in pieces:
        if not isinstance(piece, str):
            size *= sum(high - low + 1 for low, high, _ in piece)
    return size


def _names(pieces: list[Piece]) -> list[str]:
    choices = [
        [piece]
        if isinstance(piece, str)
        else [str(n).zfill(width) for low, high, width in piece for n in range(low, high + 1)]
        for piece in pieces
    ]
    return ["".join(parts) for parts in itertools.product(*choices)]


def _parse(expr: str | None) -> list[list[Piece]]:
    """The terms of a hostlist as pieces, checked, without expanding them."""
    if expr is None or expr.strip().lower() in NO_NODES:
        return []
    expr = expr.strip()
    terms = [_pieces(expr, term.strip()) for term in _terms(expr)]
    if sum(map(_size, terms)) > MAX_HOSTS:
        raise ValueError(f"hostlist {expr!r} expands to over {MAX_HOSTS} hosts")
    return terms


def expand(expr: str | None) -> list[str]:
    """The host names of a hostlist expression, in the order written.

    ``None``, empty and ``None assigned`` give no hosts. Raises ValueError naming the fault
    for anything else that is not a hostlist.
    """
    return [name for pieces in _parse(expr) for name in _names(pieces)]


def count(expr: str | None) -> int:
    """How many hosts ``expr`` names (checked like :func:`expand`, without listing them)."""
    return sum(map(_size, _parse(expr)))


def _ranges(numbers: list[int], width: int) -> str:
    spans: list[str] = []
    for _, run in itertools.groupby(enumerate(numbers), lambda p: p[1] - p[0]):
        values = [n for _, n in run]
        low, high = str(values[0]).zfill(width), str(values[-1]).zfill(width)
        spans.append(low if low == high else f"{low}-{high}")
    return ",".join(spans)


def compress(hosts: Iterable[str]) -> str:
    """The shortest-form hostlist of ``hosts`` (deduplicated, natural order).

    Names ending in digits group by prefix and digit count (which keeps zero padding):
    ``cn001..cn004, cn010`` → ``cn[001-004,010]``. ``expand(compress(h))`` is ``h`` sorted.
    """
    groups: dict[tuple[str, int], list[int]] = {}
    for host in sorted(set(hosts), key=natural_key):
        match = _TRAILING_NUMBER.fullmatch(host)
        if match:
            groups.setdefault((match.group(1), len(match.group(2))), []).append(int(match.group(2)))
        else:
            groups.setdefault((host, -1), [])
    terms = []
    for (prefix, width), numbers in groups.items():
        if width < 0:
            terms.append(prefix)
        elif len(numbers) == 1:
            terms.append(f"{prefix}{str(numbers[0]).zfill(width)}")
        else:
            terms.append(f"{prefix}[{_ranges(numbers, width)}]")
    return ",".join(terms)
