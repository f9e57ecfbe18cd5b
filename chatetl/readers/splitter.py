"""Cut a top-level JSON array into its records' bytes, in linear time, and decode each with orjson.

The fast path for array files (ChatGPT and Claude.ai `conversations.json`): the bytes are read
in big chunks, each record's end is found without a Python step per byte, and the record is
decoded by orjson (several times the rate of a streaming parser building the same objects).

How a record's end is found. A record that is an object ends at a `}` followed by `,` and the
next record's opening (`{"<first key>":`, learned from the first record, so the objects nested
inside a record are rarely candidates) or by the array's closing `]` at the end of the file.
(and, when the first value is a string such as an id, the second key), learned from the first
record. A candidate is proved by decoding: a JSON value has exactly one end, so when the bytes from the
record's start to the candidate decode as one value, that is the record. A candidate that does
not decode (a look-alike inside a string, or a damaged record) sends the record, after a few
tries, to the exact scanner: strings skipped by regex, brackets counted, nesting past
`MAX_JSON_DEPTH` refused, linear in the record's length.

Errors keep today's wording and place: `record N` for a record nested too deeply or that does
not decode (reported, its bytes kept for quarantine, the records after it still read), `after
record N` / `before the first record` for a file that is cut short or is no array. orjson
refuses nesting deeper than 1,024 levels itself; a decoded record with more than 512 brackets
in it is checked (re-encoded by orjson, at C speed) to hold today's limit of 512 levels, which the stages after
this one rely on (the standard json encoder of `extra` gives up near 1,000).
"""

from __future__ import annotations

import json
import re
from typing import Any, BinaryIO, Iterator

import orjson

from chatetl.readers.depthguard import MAX_JSON_DEPTH, NestingTooDeep

CHUNK = 2 * 1024 * 1024
MAX_TRIES = 8  # candidates tried by decoding before a record goes to the exact scanner
WS = b" \t\r\n"
_WS_RUN = re.compile(rb"[ \t\r\n]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# the exact scanner's tokens: a whole string, a bracket, or a quote whose string is not yet in the buffer
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}"]', re.DOTALL)
_SCALAR = re.compile(rb"[^,\]\s]+")


class SplitError(ValueError):
    """The array itself is damaged (cut short, not an array, garbage between records): reading stops."""


class BadRecord:
    """A record whose bytes were isolated but that cannot be read: reported, and the rest goes on."""

    __slots__ = ("reason", "raw")

    def __init__(self, reason: str, raw: bytes | None) -> None:
        self.reason = reason
        self.raw = raw


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode(raw: bytes) -> Any:
    """One record's bytes as Python values (as ijson gives them: ints and floats, str, list, dict)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson's own limits (integers past 64 bits, lone surrogates): the standard parser
        # reads what JSON allows, and refuses NaN/Infinity as JSON parsers do
        return json.loads(raw, parse_constant=_reject_constant)


class ArraySplitter:
    """Iterate the records of the top-level array in `stream`: (raw bytes, value) or a BadRecord.

    Positions inside a record are relative to the record's start (`self.start` in `self.buf`),
    so they stay valid when the buffer is compacted on a read.
    """

    def __init__(self, stream: BinaryIO, chunk: int = CHUNK) -> None:
        self.stream = stream
        self.chunk = chunk
        self.buf = b""
        self.start = 0  # where the current record starts in buf
        self.eof = False
        self.consumed = 0  # file offset of buf[0]
        self.records = 0  # records handed out so far (good or bad)
        self._cand: re.Pattern[bytes] | None = None

    # ---- buffer ----

    def _more(self) -> bool:
        if self.eof:
            return False
        data = self.stream.read(self.chunk)
        if not data:
            self.eof = True
            return False
        self.consumed += self.start
        self.buf = self.buf[self.start:] + data
        self.start = 0
        return True

    def _skip_ws(self, rel: int) -> int:
        while True:
            rel = _WS_RUN.match(self.buf, self.start + rel).end() - self.start
            if self.start + rel < len(self.buf) or not self._more():
                return rel

    def _at(self, rel: int, n: int = 1) -> bytes:
        return self.buf[self.start + rel:self.start + rel + n]

    # ---- records ----

    def __iter__(self) -> Iterator[tuple[memoryview, Any] | BadRecord]:
        pos = self._skip_ws(0)
        if self._at(pos, 3) == b"\xef\xbb\xbf":
            pos = self._skip_ws(pos + 3)
        if self._at(pos) != b"[":
            raise SplitError("the file is not a JSON array")
        pos = self._skip_ws(pos + 1)
        if self._at(pos) == b"]":
            self._expect_end(pos + 1)
            return
        while True:
            self.start += pos
            end, value, bad = self._record()
            self.records += 1
            yield bad if bad is not None else (memoryview(self.buf)[self.start:self.start + end], value)
            pos = self._skip_ws(end)
            sep = self._at(pos)
            if sep == b"]":
                self._expect_end(pos + 1)
                return
            if sep != b",":
                raise SplitError("file ends inside the array" if not sep else f"unexpected {sep!r} after a record")
            pos = self._skip_ws(pos + 1)
            if self.start + pos >= len(self.buf):
                raise SplitError("file ends inside the array")

    def _expect_end(self, rel: int) -> None:
        rel = self._skip_ws(rel)
        if self.start + rel < len(self.buf):
            raise SplitError("trailing data after the array")

    def _record(self) -> tuple[int, Any, BadRecord | None]:
        """(end, value, None) of the record at self.start, or (end, None, BadRecord) when it cannot be read."""
        if self._at(0) == b"{":
            found = self._object_by_candidates()
            if found is not None:
                return found[0], found[1], None
        self._cand = None  # the records do not all open like the first one: learn again from the next
        end, too_deep = self._exact_end()
        if too_deep is not None:
            return end, None, BadRecord(str(too_deep), None)
        raw = self.buf[self.start:self.start + end]
        try:
            value = decode(raw)
        except (ValueError, RecursionError) as exc:
            return end, None, BadRecord(f"invalid JSON: {_short(exc)}", raw)
        if isinstance(value, dict) and value:
            self._learn(value)
        return end, value, None

    def _object_by_candidates(self) -> tuple[int, Any] | None:
        """An object record's (end, value), found by decoding at candidate ends (None: use the exact scanner)."""
        search = 1
        for _ in range(MAX_TRIES):
            cand = self._candidate(search)
            if cand is None:
                return None
            try:
                value = orjson.loads(memoryview(self.buf)[self.start:self.start + cand])
            except orjson.JSONDecodeError:
                search = cand
                continue
            a, b = self.start, self.start + cand
            if self.buf.count(b"{", a, b) + self.buf.count(b"[", a, b) >= MAX_JSON_DEPTH and nests_too_deep(value):
                return None  # the exact scanner names the place
            if self._cand is None and isinstance(value, dict) and value:
                self._learn(value)
            return cand, value
        return None

    def _candidate(self, search: int) -> int | None:
        """The next place (just past a `}`) where the record may end, reading more as needed."""
        while True:
            m = self._cand.search(self.buf, self.start + search) if self._cand is not None else None
            if m is None:  # no record like the first one follows in the buffer: any object may
                m = _ANY_NEXT_OBJECT.search(self.buf, self.start + search)
            if m is not None:
                return m.start() + 1 - self.start
            if self.eof:
                # the last record: it ends at the last `}` before the closing `]`
                tail = self.buf.rstrip(WS)
                if tail.endswith(b"]"):
                    end = len(tail[:-1].rstrip(WS)) - self.start
                    if self.buf[self.start + end - 1:self.start + end] == b"}" and end > search:
                        return end
                return None
            search = max(search, len(self.buf) - self.start - 256)  # a candidate may straddle the read
            self._more()

    def _learn(self, first: dict) -> None:
        """Candidates from now on: `}` then `,` then an object opening with the first record's first key."""
        keys = iter(first.items())
        key, value = next(keys)
        opening = rb"\}[ \t\r\n]*,[ \t\r\n]*\{[ \t\r\n]*" + re.escape(orjson.dumps(key)) + rb"[ \t\r\n]*:"
        second = next(keys, None)
        if isinstance(value, str) and second is not None:
            # an id first (Claude.ai: "uuid", as its messages open too): the second key tells them apart
            opening += rb'[ \t\r\n]*"[^"\\]*(?:\\.[^"\\]*)*"[ \t\r\n]*,[ \t\r\n]*' + re.escape(orjson.dumps(second[0])) + rb"[ \t\r\n]*:"
        self._cand = re.compile(opening, re.DOTALL)

    def _exact_end(self) -> tuple[int, NestingTooDeep | None]:
        """Follow the record at self.start token by token (strings at regex speed): its end, and
        whether it nests too deep. Linear in the record's length; its bytes are held, not its values."""
        first = self._at(0)
        if first == b'"':
            while True:
                m = _STRING.match(self.buf, self.start)
                if m is not None:
                    return m.end() - self.start, None
                if not self._more():
                    raise SplitError("file ends inside a string")
        if first not in (b"{", b"["):
            while True:
                m = _SCALAR.match(self.buf, self.start)
                if m is not None and (m.end() < len(self.buf) or self.eof):
                    return m.end() - self.start, None
                if m is None and first in (b",", b"]"):
                    raise SplitError(f"unexpected {first!r} where a record starts")
                if not self._more():
                    raise SplitError("file ends inside the array")
        depth = 0
        too_deep: NestingTooDeep | None = None
        rel = 0
        while True:
            for m in _TOKEN.finditer(self.buf, self.start + rel):
                c = self.buf[m.start()]
                if c == 34:  # a string
                    if m.end() - m.start() == 1:  # its end is not in the buffer yet
                        rel = m.start() - self.start
                        break
                    continue
                if c in (91, 123):
                    depth += 1
                    if depth >= MAX_JSON_DEPTH and too_deep is None:  # the array is one level more
                        too_deep = NestingTooDeep(MAX_JSON_DEPTH, self.consumed + m.start())
                else:
                    depth -= 1
                    if depth == 0:
                        return m.end() - self.start, too_deep
            else:
                rel = len(self.buf) - self.start
            if not self._more():
                raise SplitError("file ends inside a record")


def nests_too_deep(value: Any, limit: int = MAX_JSON_DEPTH - 1) -> bool:
    """Whether a decoded record nests deeper than `limit` levels (itself the first; the array
    around it makes the file one level deeper). orjson's encoder, at C speed, refuses past 255
    levels: a record it encodes is shallow enough; else walked, iteratively, over containers."""
    try:
        orjson.dumps(value)
        return False
    except TypeError:
        pass
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        for c in v.values() if type(v) is dict else v if type(v) is list else ():
            if type(c) is dict or type(c) is list:
                stack.append((c, d + 1))
    return False


# before the first record is decoded: `}` then `,` then any object
_ANY_NEXT_OBJECT = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."
