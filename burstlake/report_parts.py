"""The HTML report's building blocks, shared by its sections (:mod:`burstlake.report`) and
the papers' sections (:mod:`burstlake.report_papers`): a section, a figure as PNG bytes, a
table row."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import matplotlib.pyplot as plt

# Heatmaps are binned to at most this many time columns and cabinet, node or rank rows, so that
# the report stays a few hundred kilobytes whatever the length of the trace.
MAX_TIME_BINS = 240
MAX_ROWS = 120


@dataclass(frozen=True)
class Section:
    """One figure (or table) of the report with its caption."""

    key: str
    title: str
    caption: str
    png: bytes | None = None  # the figure, if there is data to draw
    table_html: str = ""  # an HTML table shown under the figure
    empty: str = ""  # why there is nothing to show, and what fills it


def pyplot():
    """matplotlib's pyplot drawing off-screen, imported when a figure is drawn (not by every
    command that imports the report's constants: it costs ~0.4 CPU-s)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot

    return matplotlib.pyplot


def figure_png(fig: plt.Figure) -> bytes:
    """The figure as PNG bytes (96 dpi, tight), closed afterwards."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=96, bbox_inches="tight")
    pyplot().close(fig)
    return buffer.getvalue()


def table_row(*cells: object) -> str:
    """One HTML table row of ``cells`` (already escaped where they need it)."""
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
