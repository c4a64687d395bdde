"""Reading an input file, plain or gzip-compressed: the one helper every text parser uses.

Compression is recognised by the gzip magic bytes, not the file name. A multi-member gzip
(``cat a.gz b.gz``) reads as one stream. A corrupt or truncated gzip yields every byte
recovered before the fault, then raises :class:`BrokenStream` with the compressed offset, so a
parser can land what came before and say where the rest was lost (nothing is lost silently:
docs/design.md, "Sources").
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from burstlake.jobs.ingest.source import UnusableInput

READ_BYTES = 1 << 20
GZIP_MAGIC = b"\x1f\x8b"


class BrokenStream(Exception):
    """The compressed stream ends early or is corrupt; what came before it was read."""

    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset


def is_gzip(path: Path) -> bool:
    with path.open("rb") as raw:
        return raw.read(2) == GZIP_MAGIC


def _gunzip(raw: IO[bytes]) -> Iterator[bytes]:
    """Decompress (possibly multi-member) gzip, yielding every byte recovered before a fault."""
    inflate, fed = zlib.decompressobj(wbits=31), False
    for data in iter(lambda: raw.read(READ_BYTES), b""):
        while data:
            try:
                yield inflate.decompress(data)
            except zlib.error as err:
                raise BrokenStream(raw.tell(), f"corrupt gzip data ({err})") from None
            fed = True
            if not inflate.eof:
                break
            data, inflate, fed = inflate.unused_data, zlib.decompressobj(wbits=31), False
    if fed and not inflate.eof:
        raise BrokenStream(raw.tell(), "gzip stream ends early (truncated file)")


def chunks(path: Path, progress: Callable[[int], None] = lambda n: None) -> Iterator[bytes]:
    """The file's (decompressed) bytes in chunks, reporting file bytes read to ``progress``."""
    gzipped = is_gzip(path)
    with path.open("rb") as raw:
        parts = _gunzip(raw) if gzipped else iter(lambda: raw.read(READ_BYTES), b"")
        done = 0
        for chunk in parts:
            yield chunk
            progress(raw.tell() - done)
            done = raw.tell()


def read_all(path: Path) -> bytes:
    """The whole (decompressed) content of a small file; BrokenStream if it is damaged."""
    return b"".join(chunks(path))


# ---------------------------------------------------------------- text: the rules every text
# source shares (docs/design.md, "Sources"): a UTF-8 BOM is dropped; a file that starts as
# UTF-16/UTF-32 or binary is refused as a whole with a reason saying what it is; a line that is
# not UTF-8 is refused alone; a line longer than MAX_LINE_BYTES is refused alone without ever
# being held whole in memory.

UTF8_BOM = b"\xef\xbb\xbf"
SNIFF_BYTES = 4096  # what is looked at to tell text from binary
MAX_LINE_BYTES = 1 << 20  # one record of text input: real sacct, CSV and Zabbix lines are < 4 kB
PREVIEW_BYTES = 200  # what the quarantine keeps of a refused overlong line
NOT_UTF8 = "not valid UTF-8 text (Latin-1 or binary bytes)"
LINE_TOO_LONG = f"a line beyond the limit of {MAX_LINE_BYTES} bytes"
_WIDE = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def check_text(head: bytes) -> None:
    """UnusableInput when the first bytes of a file show it is not UTF-8 text."""
    for bom, name in _WIDE:
        if head.startswith(bom):
            raise UnusableInput(
                f"{name}-encoded, not text in UTF-8: convert it first (iconv -f {name} -t UTF-8)"
            )
    if b"\0" in head[:SNIFF_BYTES]:
        raise UnusableInput(f"binary file (NUL bytes in its first {SNIFF_BYTES} bytes), not text")


def text_chunks(path: Path, progress: Callable[[int], None] = lambda n: None) -> Iterator[bytes]:
    """:func:`chunks` of a text file, without a leading UTF-8 BOM; :class:`UnusableInput` before any
    byte when the file is not UTF-8 text (:func:`check_text`)."""
    parts = chunks(path, progress)
    head = b""
    try:
        for part in parts:
            head += part
            if len(head) >= SNIFF_BYTES:
                break
    except BrokenStream:
        check_text(head)
        if head.removeprefix(UTF8_BOM):
            yield head.removeprefix(UTF8_BOM)
        raise
    check_text(head)
    if head.removeprefix(UTF8_BOM):
        yield head.removeprefix(UTF8_BOM)
    yield from parts


@dataclass(frozen=True)
class Overlong:
    """A line longer than :data:`MAX_LINE_BYTES`: its size and first bytes, not its text."""

    size: int
    head: bytes

    @property
    def reason(self) -> str:
        return f"{LINE_TOO_LONG} ({self.size} bytes)"

    @property
    def preview(self) -> str:
        return self.head.decode("utf-8", "replace") + "..."


def lines(parts: Iterable[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes | Overlong]:
    """The lines of a byte stream, each with its line end (the last may have none). A line
    longer than ``limit`` comes as one :class:`Overlong`; memory holds at most ``limit`` bytes
    of it plus one chunk. A BrokenStream is raised after the lines read before it."""
    pending, skipped, head = b"", 0, b""  # skipped: bytes of an overlong line dropped so far
    for chunk in parts:
        pieces = (pending + chunk).split(b"\n")
        pending = pieces.pop()
        for piece in pieces:
            if skipped:
                yield Overlong(skipped + len(piece) + 1, head)
                skipped = 0
            elif len(piece) > limit:
                yield Overlong(len(piece) + 1, piece[:PREVIEW_BYTES])
            else:
                yield piece + b"\n"
        if len(pending) > limit:
            head = head if skipped else pending[:PREVIEW_BYTES]
            skipped, pending = skipped + len(pending), b""
    if skipped:
        yield Overlong(skipped + len(pending), head)
    elif pending:
        yield pending


def cap_lines(parts: Iterable[bytes], limit: int = MAX_LINE_BYTES) -> Iterator[bytes]:
    """The byte stream with every line longer than ``limit`` cut to ``limit + 1`` bytes, for
    readers that take blocks of lines: they tell such a line by its length, and memory never
    holds more of it than that (and one chunk)."""
    run = 0  # bytes of the current line so far
    for chunk in parts:
        first, last = chunk.find(b"\n"), chunk.rfind(b"\n")
        if first < 0:
            keep = chunk[: max(0, limit + 1 - run)]
            run += len(chunk)
            if keep:
                yield keep
            continue
        head = chunk[: max(0, min(first, limit + 1 - run))]
        middle, tail = chunk[first : last + 1], chunk[last + 1 :]
        if len(middle) > limit + 2:  # (a big decompressed chunk) it may hold a long line
            middle = b"\n".join(line[: limit + 1] for line in middle.split(b"\n"))
        yield head + middle + tail[: limit + 1]
        run = len(tail)


def decode_line(raw: bytes) -> str:
    """A line as text; ValueError naming the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"{NOT_UTF8} at byte {err.start} of the line") from None
