"""Where a JSON string ends, found in linear time, and strings longer than the value cap.

Why not a regex alone: the usual string pattern (`"[^"\\]*(?:\\.[^"\\]*)*"`) backtracks over
the whole string when its closing quote is not yet in the buffer, and a reader that tries it
again after each read of more bytes is quadratic in the string's length. `string_end` jumps from quote to quote with `bytes.find` (memchr, GB/s) and counts the
backslashes before each; where escaped quotes are dense it finishes with a possessive pattern,
which never backtracks. It returns where to go on from when the string is not closed yet, so a
string read across many chunks is scanned once.
"""

from __future__ import annotations

import re

from chatetl.readers.limits import size_text

# a string's body: runs of plain bytes and escapes, never given back (possessive: no backtracking)
_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.DOTALL)
# a whole string, possessive (a failed match costs its length once, never its square)
STRING = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"', re.DOTALL)
_FIND_TRIES = 32  # escaped quotes jumped over one by one before the rest goes to _BODY


class ValueTooLong(ValueError):
    """A JSON string longer than the cap (CHATETL_MAX_VALUE_BYTES): its record is not read."""

    def __init__(self, limit: int, offset: int, what: str = "record") -> None:
        super().__init__(
            f"a string longer than {size_text(limit)}, the cap on one value (CHATETL_MAX_VALUE_BYTES), "
            f"at byte {offset}{' of the line' if what == 'line' else ''}: the {what} is not read"
        )
        self.limit = limit
        self.offset = offset


def string_end(buf: bytes, pos: int) -> tuple[int, bool]:
    """From `pos`, inside a string's body (just past its opening quote, or past a complete
    escape): (index of the closing quote, True), or (where to go on from once more bytes are
    read, False) when the string does not close in `buf` (short of an unpaired trailing backslash)."""
    for _ in range(_FIND_TRIES):
        quote = buf.find(b'"', pos)
        if quote < 0:
            return _trailing_escape(buf, pos), False
        slash = quote
        while slash > pos and buf[slash - 1] == 92:  # backslash
            slash -= 1
        if (quote - slash) % 2 == 0:
            return quote, True
        pos = quote + 1
    end = _BODY.match(buf, pos).end()  # type: ignore[union-attr]  # (always matches, maybe empty)
    if end < len(buf) and buf[end] == 34:
        return end, True
    return end, False


def _trailing_escape(buf: bytes, pos: int) -> int:
    """The end of `buf`, or the index of its last byte when that is a backslash escaping what comes next."""
    end = len(buf)
    slash = end
    while slash > pos and buf[slash - 1] == 92:
        slash -= 1
    return end - 1 if (end - slash) % 2 else end


def first_long_string(data: bytes, limit: int) -> int | None:
    """The offset of the first string in the JSON text `data` longer than `limit` bytes (its
    quotes left out; one not closed counts to the end), or None. Linear, a step per string: only
    worth calling when `data` itself is longer than `limit`."""
    if len(data) <= limit:
        return None
    pos = data.find(b'"')
    while pos >= 0:
        end, closed = string_end(data, pos + 1)
        if end - pos - 1 > limit or (not closed and len(data) - pos - 1 > limit):
            return pos
        if not closed:
            return None
        pos = data.find(b'"', end + 1)
    return None
