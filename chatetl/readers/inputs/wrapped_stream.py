"""A read-only binary stream over another one (the base of the readers' stream wrappers).

A subclass gives `read` (and `readline`, when it reads lines itself); `read1` and `readinto` read
through it, and closing closes the inner stream.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO


class WrappedStream(io.RawIOBase):
    def __init__(self, inner: BinaryIO) -> None:
        super().__init__()
        self._inner = inner

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        return self.read(size)

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
            finally:
                super().close()


__all__ = ["WrappedStream"]
