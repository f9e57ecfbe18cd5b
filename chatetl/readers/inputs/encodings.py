"""Chat files in UTF-16 or UTF-32 (with or without a byte order mark) read as the UTF-8 the readers expect.

Windows tools (PowerShell's `Out-File`, Notepad's "Unicode") save JSON, Markdown and YAML as
UTF-16. The head of a file tells its encoding the way RFC 4627 (section 3) does for JSON: a byte
order mark, or the pattern of zero bytes around the first ASCII character (`[`, `{`, `#`, `-`
... ). Such a file is re-encoded to UTF-8 on the fly, a block at a time, so it streams like any
other (`utf8_entry`); a byte sequence that is not valid in its encoding (a lone surrogate, a cut
last character) reads as U+FFFD, as a lone surrogate escape in JSON does, and is counted: the
file's drift `encoding.invalid_sequence` (the upload's summary) says how many there were, once
however often the file is opened (its head is read again by detection).
"""

from __future__ import annotations

import codecs
import io
import threading
from collections.abc import Callable
from typing import BinaryIO

from chatetl.readers.entry import Entry

BLOCK = 256 * 1024
INVALID_SEQUENCE = "encoding.invalid_sequence"  # the drift name


class _Decoding(threading.local):
    stream: Utf8Stream | None = None


_DECODING = _Decoding()  # the stream whose block this thread decodes: the error handler counts for it


def _replace_and_count(exc: UnicodeError) -> tuple[str, int]:
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    if _DECODING.stream is not None:
        _DECODING.stream.invalid += 1
    return "\ufffd", exc.end


_ERRORS = "chatetl.replace_and_count"
codecs.register_error(_ERRORS, _replace_and_count)


class InvalidSequences:
    """What the reads of one file found, told once: `found(n)` is called with what a whole read found
    beyond what an earlier whole read did (a file is opened more than once: its head, then the read)."""

    def __init__(self, found: Callable[[int], None]) -> None:
        self._found = found
        self._told = 0

    def read_whole(self, invalid: int) -> None:
        if invalid > self._told:
            self._found(invalid - self._told)
            self._told = invalid


_BOMS = (  # longest first: a UTF-32-LE mark begins like a UTF-16-LE one
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def wide_encoding(head: bytes) -> str | None:
    """The UTF-16/32 encoding a file's head shows (the codec name), None for anything else (UTF-8,
    a zip, binary data without the pattern)."""
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    if len(head) < 4:
        return None
    a, b, c, d = (x == 0 for x in head[:4])
    if a and b and c and not d:
        return "utf-32-be"
    if not a and b and c and d:
        return "utf-32-le"
    if a and not b and c and not d:
        return "utf-16-be"
    if not a and b and not c and d:
        return "utf-16-le"
    return None


class Utf8Stream(io.RawIOBase):
    """A binary stream of `raw`'s text, decoded from `encoding`, as UTF-8 (`invalid`: the byte sequences
    not valid in it read so far, each as U+FFFD; told to `sequences` when the stream reaches its end)."""

    def __init__(self, raw: BinaryIO, encoding: str, sequences: InvalidSequences | None = None) -> None:
        self._raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)(errors=_ERRORS)
        self._pending = b""
        self._done = False
        self._sequences = sequences
        self.invalid = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._pending and not self._done:
            block = self._raw.read(BLOCK)
            _DECODING.stream = self
            try:
                text = self._decoder.decode(block, final=not block)
            finally:
                _DECODING.stream = None
            if not block:
                self._done = True
                if self._sequences is not None:
                    self._sequences.read_whole(self.invalid)
            self._pending = text.encode("utf-8")
        n = min(len(buffer), len(self._pending))
        buffer[:n] = self._pending[:n]
        self._pending = self._pending[n:]
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def utf8_entry(entry: Entry, encoding: str, invalid: Callable[[int], None] | None = None) -> Entry:
    """The entry read as UTF-8 (its size stays the stored one: what progress and the caps count); `invalid`
    is told how many byte sequences not valid in `encoding` the file holds, when a read reaches its end."""
    sequences = InvalidSequences(invalid) if invalid is not None else None
    return Entry(name=entry.name, opener=lambda: io.BufferedReader(Utf8Stream(entry.open(), encoding, sequences), BLOCK),
                 size=entry.size)


__all__ = ["INVALID_SEQUENCE", "InvalidSequences", "Utf8Stream", "utf8_entry", "wide_encoding"]
