"""Files a command reads or writes are regular files (issue 25, class 6): ``--out /dev/full`` must
not replace the device with a file, and ``/dev/zero`` as an input is neither read forever nor
called missing. One rule for every command (docs/design.md, "Command line")."""

from __future__ import annotations

import os
import stat
from pathlib import Path


def kind(path: Path) -> str:
    """What ``path`` is, in a user's words: 'no such file', 'a directory', 'a character
    device', ..., or 'a regular file'."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "a broken symbolic link" if path.is_symlink() else "no such file"
    except OSError as err:
        return f"not readable ({err.strerror})"
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def input_file(path: str | os.PathLike, what: str = "input") -> Path:
    """``path`` if it is a regular file; else a ValueError naming it and what it is."""
    path = Path(path)
    found = kind(path)
    if found != "a regular file":
        raise ValueError(f"{what} {path}: {found}, not a regular file")
    return path


def output_file(path: str | os.PathLike, what: str = "--out") -> Path:
    """``path`` if it is a regular file or a new path (its folder is made when written);
    else a ValueError: a device, folder, pipe or socket is never replaced."""
    path = Path(path)
    found = kind(path)
    if found not in ("a regular file", "no such file"):
        raise ValueError(f"{what} {path}: {found}; give a regular file or a new path")
    return path


def write_text(path: str | os.PathLike, text: str, what: str = "--out") -> Path:
    """Write ``text`` to ``path`` (see :func:`output_file`) through a scratch file beside it
    and a rename, so a reader never sees half of it."""
    target = output_file(path, what)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    try:
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target
