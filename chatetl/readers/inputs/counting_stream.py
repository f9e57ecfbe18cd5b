"""A binary stream that tells someone how far its reader got: what the inflate cap and the progress bar count.

Reads go straight to the inner stream; after each one the stream's position (the bytes read from it
so far) is given to `advanced`. `check`, when given, runs before each read and may raise to stop
reading (the inflate cap, once an upload has gone past it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import BinaryIO

from chatetl.readers.inputs.wrapped_stream import WrappedStream


class CountingStream(WrappedStream):
    """`inner`'s bytes, each read's new position told to `advanced(position)`, `check()` run before each read."""

    def __init__(self, inner: BinaryIO, advanced: Callable[[int], None], check: Callable[[], None] | None = None) -> None:
        super().__init__(inner)
        self._advanced = advanced
        self._check = check
        self._pos = 0

    def _took(self, data: bytes) -> bytes:
        if data:
            self._pos += len(data)
            self._advanced(self._pos)
        return data

    def read(self, size: int | None = -1) -> bytes:
        if self._check is not None:
            self._check()
        return self._took(self._inner.read(-1 if size is None else size))

    def readline(self, size: int | None = -1) -> bytes:
        if self._check is not None:
            self._check()
        return self._took(self._inner.readline(-1 if size is None else size))


__all__ = ["CountingStream"]
