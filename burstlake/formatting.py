"""Plain-text rendering of query results, shared by the command line and the demo."""

from __future__ import annotations

from collections.abc import Sequence


def format_table(columns: Sequence[str], rows: Sequence[Sequence], total: int) -> str:
    """A plain aligned text table, with a footer when rows were cut (``total`` > rows shown)."""
    cells = [[("NULL" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True))

    out = [line(columns), line(["-" * w for w in widths]), *map(line, cells)]
    if total > len(rows):
        out.append(f"({total} rows, {len(rows)} shown)")
    return "\n".join(out)
