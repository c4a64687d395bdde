"""The one-line error of a lake that cannot be written (full disk, read-only, permissions).

See docs/design.md, 'The lake'.
"""

from __future__ import annotations

import errno
from pathlib import Path


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
