"""Reading an input file, plain or gzip-compressed: the one helper every text parser uses.

Compression is recognised by the gzip magic bytes, not the file name. A multi-member gzip
(``cat a.gz b.gz``) reads as one stream. A corrupt or truncated gzip yields every byte
recovered before the fault, then raises :class:`BrokenStream` with the compressed offset, so a
parser can land what came before and say where the rest was lost (nothing is lost silently:
docs/design.md, "Sources").
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

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
