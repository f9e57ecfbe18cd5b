"""A zip member's bytes inflated in fixed blocks, so damage loses the same bytes however it is read.

zipfile raises on damage (a bad CRC-32, a corrupt deflate stream, a member cut short) inside the read
that meets it, and that read's bytes are lost with it. Here the member is inflated in blocks of BLOCK
bytes from its start whatever the reader asks for: every block before the one that meets the damage
is handed out, the damaged one never is, so every path (one process, pieces, a stream cut here) keeps
the same records. A deflated member is inflated by ISA-L (python-isal, zlib's interface; zipfile still
caps it at its declared size and checks its CRC-32), about twice zlib's rate (bench/normalize_throughput.py prints both).
"""

from __future__ import annotations

import zipfile
import zlib
from typing import Any, BinaryIO

from isal import isal_zlib

from chatetl.readers.inputs.wrapped_stream import WrappedStream
from chatetl.readers.jsonscan.splitter import CHUNK

BLOCK = CHUNK  # the splitter's read: a whole block is handed out without a copy


class _Blocks(WrappedStream):
    def __init__(self, inner: Any) -> None:
        super().__init__(inner)
        self._block = b""
        self._at = 0  # what of _block is handed out
        self._eof = False
        self._pos = 0  # bytes read from the inner stream
        self._error: Exception | None = None  # raised by the read after the bytes before it

    def _fill(self) -> bool:
        if self._error is not None:
            error, self._error = self._error, None
            self._eof = True
            raise error
        if self._eof:
            return False
        self._block, self._at = self._inner.read(BLOCK - self._pos % BLOCK), 0  # (up to the next block's start)
        self._pos += len(self._block)
        if not self._block:
            self._eof = True
        return bool(self._block)

    def _refill(self, taken: bool) -> bool:
        """The next block, within a read that has `taken` bytes already: False at the end, or when
        inflating it raised after bytes were taken (they are handed out first, the next read raises)."""
        try:
            return self._fill()
        except Exception as exc:  # (any error of the inner read)
            if not taken:
                raise
            self._error = exc
            return False

    def read(self, size: int | None = -1) -> bytes:
        want = -1 if size is None or size < 0 else size
        if want == 0:
            return b""
        if self._pos == 0 and 0 < want < BLOCK:  # a head read to detect the format: no more inflated than it asks
            self._block, self._at = self._inner.read(want), 0
            self._pos = len(self._block)
            if not self._block:
                self._eof = True
        if self._at == len(self._block) and not self._fill():
            return b""
        if self._at == 0 and want >= len(self._block) and (len(self._block) < BLOCK or want == len(self._block)):
            data, self._block = self._block, b""  # (a whole block, as the splitter asks: no copy)
            return data
        parts: list[bytes] = []
        while want != 0:
            if self._at == len(self._block) and not self._refill(bool(parts)):
                break
            take = len(self._block) - self._at if want < 0 else min(want, len(self._block) - self._at)
            parts.append(self._block[self._at:self._at + take])
            self._at += take
            if want > 0:
                want -= take
        return b"".join(parts)

    def readline(self, size: int | None = -1) -> bytes:
        limit = -1 if size is None else size
        parts: list[bytes] = []
        got = 0
        while limit < 0 or got < limit:
            if self._at == len(self._block) and not self._refill(bool(parts)):
                break
            end = self._block.find(b"\n", self._at)
            stop = len(self._block) if end < 0 else end + 1
            if limit >= 0:
                stop = min(stop, self._at + limit - got)
            parts.append(self._block[self._at:stop])
            got += stop - self._at
            self._at = stop
            if parts[-1].endswith(b"\n"):
                break
        return b"".join(parts)


# what inflating a corrupt deflate stream raises: zlib's error, and ISA-L's (not a subclass of it)
INFLATE_ERRORS: tuple[type[Exception], ...] = (zlib.error, isal_zlib.error)  # type: ignore[assignment]  # (isal has no types)


def open_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> BinaryIO:
    """`info`'s member of `zf` for reading, inflated in blocks (see above), by ISA-L when deflated."""
    member = zf.open(info)
    if info.compress_type == zipfile.ZIP_DEFLATED and hasattr(member, "_decompressor"):
        member._decompressor = isal_zlib.decompressobj(-zlib.MAX_WBITS)  # (nothing is read yet: see the module)
    return _Blocks(member)  # type: ignore[return-value]


__all__ = ["BLOCK", "INFLATE_ERRORS", "open_member"]
