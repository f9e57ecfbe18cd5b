"""Top-level JSON values that are not an array's records, read in linear time by the splitter's buffer
and exact scanner: one object, values one after another, or one member of an object.

- `ValueSplitter`: the values of a stream one after another; the whole rest of the stream decoded by
  orjson when it is one value no longer than the cap, else cut by the exact scanner value by value, so
  a damaged value, one nested too deep or one with a string past the cap is a BadRecord in its place.
- `seek_member`: the bytes from where one member of a top-level object starts, the members before it
  scanned past without being held.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson

from chatetl.readers.jsonscan.decode import Repaired, decode, loads, nests_too_deep, repeats_found, written_back
from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH
from chatetl.readers.jsonscan.splitter import (
    WS,
    ArraySplitter,
    BadRecord,
    Readable,
    SplitError,
)

BOM = b"\xef\xbb\xbf"
_MEMBER_SCALAR = re.compile(rb"[^,}\]\s]+")  # a number, true, false or null: up to what ends a member


class ValueSplitter(ArraySplitter):
    """Iterate the top-level values of `stream`: (raw bytes, value), a Repaired value or a
    BadRecord, as ArraySplitter hands out an array's records; `records` counts them."""

    def __iter__(self) -> Iterator[tuple[memoryview, Any] | Repaired | BadRecord]:
        pos = self._skip_ws(0)
        if self._at(pos, 3) == BOM:
            pos = self._skip_ws(pos + 3)
        while self.start + pos < len(self.buf):
            self.start += pos
            end = yield from self._hand_out(*self._value())
            pos = self._skip_ws(end)

    def _value(self) -> tuple[int, Any, BadRecord | None, Counter[str] | None]:
        whole = self._whole()
        if whole is not None:
            return whole[0], whole[1], None, whole[2]
        if self._at(0) in (b",", b"]", b"}", b":"):
            raise SplitError(f"unexpected {self._at(0)!r} where a value starts")
        end, err = self._exact_end()
        if err is not None:
            return end, None, BadRecord(str(err), None), None
        raw = memoryview(self.buf)[self.start:self.start + end]  # (not a copy: a long record is held once)
        try:
            value, repairs = decode(raw)
        except (ValueError, RecursionError) as exc:
            return end, None, BadRecord(f"invalid JSON: {_short(exc)}", bytes(raw)), None
        return end, value, None, repairs

    def _whole(self) -> tuple[int, Any, Counter[str] | None] | None:
        """(end, value, the members it repeated) when the rest of the stream is one object or array no
        longer than the cap that orjson reads (and that nests no deeper than the limit); else None."""
        if self._at(0) not in (b"{", b"["):
            return None
        while not self.eof:
            if len(self.buf) - self.start > self.max_value:
                return None
            self._more()
        end = len(self.buf)
        while end > self.start and self.buf[end - 1] in WS:
            end -= 1
        try:
            value = loads(memoryview(self.buf)[self.start:end])
        except orjson.JSONDecodeError:
            return None
        a = self.start
        written = written_back(value)
        if written is None and self.buf.count(b"{", a, end) + self.buf.count(b"[", a, end) >= MAX_JSON_DEPTH and nests_too_deep(value):
            return None  # the exact scanner names the place
        return end - self.start, value, repeats_found(memoryview(self.buf)[a:end], value, self.buf.count(b":", a, end), written)


class _MemberSeeker(ArraySplitter):
    def seek(self, key: str) -> bytes | None:
        """The buffered bytes from the start of member `key`'s value (the stream reads on after
        them), or None when the object has no such member. Raises SplitError on damage."""
        pos = self._skip_ws(0)
        if self._at(pos, 3) == BOM:
            pos = self._skip_ws(pos + 3)
        if self._at(pos) != b"{":
            raise SplitError("the file is not a JSON object")
        pos = self._skip_ws(pos + 1)
        if self._at(pos) == b"}":
            return None
        while True:
            if self._at(pos) != b'"':
                raise SplitError("a member name was expected" if self._at(pos) else "file ends inside the object")
            self.start += pos
            end, closed = self._follow_string(0, "file ends inside a member name")
            if not closed:
                raise SplitError("a member name longer than the value cap")
            try:
                name = orjson.loads(self.buf[self.start:self.start + end])
            except orjson.JSONDecodeError as exc:
                raise SplitError(f"a member name that is not JSON: {exc}") from None
            pos = self._skip_ws(end)
            if self._at(pos) != b":":
                raise SplitError("a ':' was expected after a member name")
            pos = self._skip_ws(pos + 1)
            self.start += pos
            if name == key:
                while len(self.buf) - self.start < 8 and self._more():
                    pass  # (enough to tell `null` and `[` apart)
                return self.buf[self.start:]
            pos = self._skip_ws(self._past_value())
            sep = self._at(pos)
            if sep == b"}":
                return None
            if sep != b",":
                raise SplitError("file ends inside the object" if not sep else f"unexpected {sep!r} after a member")
            pos = self._skip_ws(pos + 1)

    def _past_value(self) -> int:
        """Past the value at self.start, scanned, not held (a section of any size costs a read's memory)."""
        first = self._at(0)
        if first in (b"{", b"["):
            return self._skip_rest(0, 0, False, None)[0]
        if first == b'"':
            return self._skip_rest(1, 0, True, None)[0]
        while True:
            m = _MEMBER_SCALAR.match(self.buf, self.start)
            if m is not None and (m.end() < len(self.buf) or self.eof):
                return m.end() - self.start
            if m is None or not self._more():
                raise SplitError("file ends inside the object" if m is not None else f"unexpected {first!r} where a value starts")


def seek_member(stream: Readable, key: str) -> bytes | None:
    """Read `stream`, a JSON object, up to the value of its member `key`: the bytes of that value
    already read (the stream reads on after them), or None when it has no such member. The
    members before it are scanned past in linear time without being held. Raises SplitError."""
    return _MemberSeeker(stream).seek(key)


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."
