"""The test hook that pauses a process at a named phase, so a fault test can SIGKILL it there.

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def checkpoint(phase: str) -> None:
    """If ``$BURSTLAKE_PAUSE_AT`` is ``<phase>:<marker>``, write the marker, wait while it exists.

    The fault tests use it to stop a real process at a known point of an ingest or a metrics
    run (parsing, staging, between commits) and SIGKILL it there, or to let it go on by
    deleting the marker; it costs one environment lookup otherwise.
    """
    want = os.environ.get("BURSTLAKE_PAUSE_AT", "")
    name, _, marker = want.partition(":")
    if name != phase or not marker:
        return
    Path(marker).write_text(str(os.getpid()))
    while Path(marker).exists():
        time.sleep(0.05)
    os.environ.pop("BURSTLAKE_PAUSE_AT", None)  # pause once per process
