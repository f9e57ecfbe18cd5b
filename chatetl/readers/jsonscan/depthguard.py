"""A guard against absurdly nested JSON, applied to the byte stream before the parser sees it.

Streaming parsers track the path to each value, which costs memory and time that grow
with the square of the nesting depth: a file of a few MB made of `[[[[...` can take a
machine down. Real exports nest a few dozen levels at most. The guard follows the
nesting at C speed (strings are skipped with a regex, only brackets are counted in
Python) and stops the read with a clear error past `limit` levels.
"""

from __future__ import annotations

import re
from typing import BinaryIO, Self

MAX_JSON_DEPTH = 512

# the "unrolled loop" form: runs of plain bytes matched at once, escapes one at a time; possessive,
# so a string that does not close in the chunk fails in linear time (backtracking over it is
# quadratic in a long string's length)
_STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_STRING_END = re.compile(rb'[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class NestingTooDeep(ValueError):
    def __init__(self, limit: int, offset: int) -> None:
        super().__init__(f"JSON nested more than {limit} levels deep (near byte {offset})")
        self.limit = limit
        self.offset = offset


class DepthGuard:
    """Wraps a binary stream; read() raises NestingTooDeep once the JSON nests past `limit`."""

    def __init__(self, stream: BinaryIO, limit: int = MAX_JSON_DEPTH) -> None:
        self._stream = stream
        self.limit = limit
        self.depth = 0
        self.offset = 0
        self._in_string = False
        self._escape_pending = False  # the previous chunk ended on a backslash inside a string
        self._pending: NestingTooDeep | None = None

    def read(self, n: int = -1) -> bytes:
        if self._pending is not None:
            raise self._pending
        chunk = self._stream.read(n)
        if chunk:
            start_depth, start_state = self.depth, (self._in_string, self._escape_pending)
            try:
                self._scan(chunk)
            except NestingTooDeep:
                # hand the parser everything before the offending byte (the records before it
                # still come out), and stop at the next read
                cut = _offending_index(chunk, start_depth, *start_state, self.limit)
                self._pending = NestingTooDeep(self.limit, self.offset + cut)
                chunk = chunk[:cut]
                if not chunk:
                    raise self._pending
            self.offset += len(chunk)
        return chunk

    def _scan(self, chunk: bytes) -> None:
        pos = 0
        if self._in_string:
            if self._escape_pending:
                pos, self._escape_pending = 1, False
            m = _STRING_END.match(chunk, pos)
            if m is None:
                self._escape_pending = _ends_in_escape(chunk, pos)
                return
            pos = m.end()
            self._in_string = False
        outside = _STRING.sub(b"", chunk[pos:])
        cut = outside.find(b'"')
        if cut >= 0:  # a string starts here and goes on into the next chunk
            self._in_string = True
            # nothing after that quote was removed (no string closes after it), so it lies
            # as far from the chunk's end as from the end of `outside`
            start = len(chunk) - (len(outside) - cut)
            self._escape_pending = _ends_in_escape(chunk, start + 1)
            outside = outside[:cut]
        depth = self.depth
        for b in outside.translate(None, _NOT_BRACKETS):
            if b in (91, 123):  # [ {
                depth += 1
                if depth > self.limit:
                    raise NestingTooDeep(self.limit, self.offset)
            else:
                depth -= 1
        self.depth = max(depth, 0)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _offending_index(chunk: bytes, depth: int, in_string: bool, escape: bool, limit: int) -> int:
    """Byte by byte (only on the error path): where the nesting first passes the limit."""
    for i, b in enumerate(chunk):
        if in_string:
            if escape:
                escape = False
            elif b == 92:  # backslash
                escape = True
            elif b == 34:  # quote
                in_string = False
        elif b == 34:
            in_string = True
        elif b in (91, 123):
            depth += 1
            if depth > limit:
                return i
        elif b in (93, 125):
            depth -= 1
    return len(chunk)


def _ends_in_escape(chunk: bytes, start: int) -> bool:
    """Inside a string from `start`: does the chunk end on an unpaired backslash?"""
    tail = chunk[start:]
    stripped = tail.rstrip(b"\\")
    return (len(tail) - len(stripped)) % 2 == 1
