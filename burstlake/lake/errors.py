"""The one-line error of a lake that cannot be written (full disk, read-only, permissions).

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from burstlake.lake.layout import lake_path


class LakeError(OSError):
    """The lake cannot be written (full disk, read-only, permissions): a one-line reason."""

    def __str__(self) -> str:
        return self.strerror or super().__str__()  # the reason, without '[Errno 28]'


def as_lake_error(err: BaseException, lake: Path) -> LakeError | None:
    """``err`` as a one-line LakeError if it is a full disk, a read-only lake or a permission
    refused, else None. It says what went wrong, not what was committed: the command that
    knows (ingest) says that."""
    if isinstance(err, LakeError):
        return err
    text = str(err)
    codes = {errno.ENOSPC: "no space left on device", errno.EROFS: "read-only file system"}
    code = getattr(err, "errno", None)
    for number, words in codes.items():
        if code == number or words in text.lower():
            return LakeError(number, f"lake {lake}: {words}")
    if code in (errno.EACCES, errno.EPERM) or "permission denied" in text.lower():
        return LakeError(errno.EACCES, f"lake {lake}: permission denied")
    return None


def check_writable(lake: str | os.PathLike | None, what: str) -> None:
    """Raise a one-line LakeError now, before ``what`` runs, when the lake (or, for a new lake,
    the folder it would be made in) cannot be written."""
    root = lake_path(lake)
    folder = next((p for p in (root, *root.parents) if p.exists()), root)
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".burstlake-writable-"):
            pass
    except OSError as err:
        found = as_lake_error(err, root) or LakeError(errno.EACCES, f"lake {root}: {err.strerror}")
        raise LakeError(found.errno, f"{found}: {what} would have nowhere to land") from None
