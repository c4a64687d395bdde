"""The command line's rendering of :mod:`burstlake.progress` steps: one tqdm bar per task."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from burstlake.progress import Report, Step, silent


@contextmanager
def rendered(show: bool | None = None) -> Iterator[Report]:
    """A report drawing each task's steps as a bar on stderr; ``show`` None: when it is a
    terminal. The bars close when the block ends."""
    if not (sys.stderr.isatty() if show is None else show):
        yield silent
        return
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def report(step: Step) -> None:
        bar = bars.get(step.what)
        if bar is None:
            bar = bars[step.what] = tqdm(
                desc=step.what, total=step.total, unit=step.unit or "it", unit_scale=True
            )
        if step.total is not None and bar.total != step.total:
            bar.total = step.total
        if step.note:
            bar.set_postfix_str(step.note, refresh=False)
        bar.update(step.advance)
        if step.done:
            bars.pop(step.what).close()

    try:
        yield report
    finally:
        for bar in bars.values():
            bar.close()
