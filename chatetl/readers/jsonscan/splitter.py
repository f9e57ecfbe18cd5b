"""Cut a top-level JSON array into its records' bytes, in linear time, each decoded by orjson.

A record that is an object ends at a `}` followed by `,` and the next record's opening (learned from
the first record: its first key, and its second when the first value is a string such as an id), or
at the array's closing `]`. Such a candidate is proven by decoding: a JSON value has one end. One
that does not decode (a look-alike inside a string, a damaged record) sends the record, after a few
tries, to the exact scanner: strings skipped at memchr speed, brackets counted, nesting past
MAX_JSON_DEPTH refused. A read takes at least as much as the record holds so far, so a long record is
copied a bounded number of times; a record longer than the value cap is scanned exactly, and a
string past the cap makes it a BadRecord while its bytes are let go.

Errors: `record N` for a record that does not decode or nests too deep (its bytes kept for
quarantine, the records after it read); `after record N` / `before the first record` where the
array itself breaks. A decoded record with many brackets is checked to nest no deeper than
MAX_JSON_DEPTH, which the stages after this one rely on.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Generator, Iterator
from typing import Any, Protocol

import orjson

from chatetl.gc_pause import gc_paused
from chatetl.readers import limits
from chatetl.readers.jsonscan.decode import (
    BIG_VALUE,
    Repaired,
    decode,
    loads,
    nests_too_deep,
    repeats_found,
    written_back,
)
from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH, NestingTooDeep
from chatetl.readers.jsonscan.strings import STRING, ValueTooLong, string_end

CHUNK = 2 * 1024 * 1024
MAX_TRIES = 8  # candidates tried by decoding before a record goes to the exact scanner
CUT_SEARCH = 8 * 1024 * 1024  # bytes a cut without decoding looks through for the next record's opening
WS = b" \t\r\n"
_WS_RUN = re.compile(rb"[ \t\r\n]*")
# the exact scanner's tokens: a short string without escapes, a bracket, or a quote opening any other
# string, whose end string_end finds at memchr speed
_TOKEN = re.compile(rb'"[^"\\]{0,256}+"|[\[\]{}"]', re.DOTALL)


def _run_to_token(max_value: int) -> re.Pattern[bytes]:
    """The run with its short strings at most `max_value` bytes (_RUN: 256; a smaller cap: a string longer than
    the cap stops the run at its quote, to be followed and refused; re caches the pattern)."""
    return re.compile(rb'[^"\[\]{}]*+(?:"[^"\\]{0,%d}+"[^"\[\]{}]*+)*+' % max_value, re.DOTALL)


# the exact scanner's run up to its next bracket, or to a quote opening any other string: everything
# but brackets and quotes, and the short strings without escapes, in one C call (possessive: never
# given back; unrolled, `other (string other)*`). The brackets are what the scanner counts, one Python
# step each, where a loop over every token (_TOKEN) took a step per string as well. `{0,256}` as in
# _TOKEN, shorter under a smaller cap (_run_to_token).
_RUN = _run_to_token(256)
_SCALAR = re.compile(rb"[^,\]\s]+")


class Readable(Protocol):
    """What the splitters read: a binary stream's `read` (a file, a zip member, a response body)."""

    def read(self, n: int = -1, /) -> bytes: ...


class SplitError(ValueError):
    """The array itself is damaged (cut short, not an array, garbage between records): reading stops."""


class BadRecord:
    """A record whose bytes were isolated but that cannot be read: reported, and the rest goes on."""

    __slots__ = ("raw", "reason")

    def __init__(self, reason: str, raw: bytes | None) -> None:
        self.reason = reason
        self.raw = raw


class ArraySplitter:
    """Iterate the records of the top-level array in `stream`: (raw bytes, value), a Repaired
    record or a BadRecord; `records` counts those handed out, `offset` is where the last one starts.

    `prove=False` cuts without decoding (for the two-core path, whose workers decode and so prove
    the cuts, chatetl.normalize.pool): an object record ends at the first place that opens like
    the first record, its value None; a record while that opening is not known (the first, the
    first after a resume or after one that opened otherwise) is decoded and proven as always, and
    one with no such place in its first CUT_SEARCH bytes goes to the exact scanner.

    Positions inside a record are relative to the record's start (`self.start` in `self.buf`),
    so they stay valid when the buffer is compacted on a read.
    """

    def __init__(self, stream: Readable, chunk: int = CHUNK, prove: bool = True, max_value: int | None = None,
                 opening: re.Pattern[bytes] | None = None, in_object: bool = False) -> None:
        self.stream = stream
        self.in_object = in_object  # the array is a member of an object: what follows it is the object's rest, not read
        self.chunk = chunk
        self.prove = prove
        # a string longer than this makes its record bad, its bytes let go as they are scanned (limits)
        self.max_value = limits.current().max_value_bytes if max_value is None else max_value
        self.buf = b""
        self.start = 0  # where the current record starts in buf
        self.eof = False
        self.consumed = 0  # file offset of buf[0]
        self.records = 0  # records handed out so far (good or bad)
        self._cand: re.Pattern[bytes] | None = opening  # (given: learned from an earlier part of the same array)
        # a read that raised (a damaged zip member, a dropped connection), held while the records whole in
        # what was read before it are handed out (array records only: __iter__), then raised
        self.broken: Exception | None = None
        self._hold_break = False
        self._long_offset: int | None = None  # the offset of a long record handed out, no longer in the buffer

    @classmethod
    def from_record(cls, stream: Readable, index: int, offset: int, **options: Any) -> ArraySplitter:
        """A splitter reading on from record `index`, which starts at byte `offset` of `stream`
        (read past, not seeked: a zip member or an S3 body cannot seek): the rest of the array,
        its records numbered and placed as in the whole file."""
        splitter = cls(_ReadOn(stream, offset), **options)
        splitter.consumed, splitter.records = offset - 1, index  # (behind the `[` put before it)
        return splitter

    @property
    def opening(self) -> re.Pattern[bytes] | None:
        """How the records open, as learned from the first one (`}`, `,` and its first keys; see
        `_learn`); None before that, or when the records do not all open alike."""
        return self._cand

    @property
    def offset(self) -> int:
        """The file offset where the current record starts (the one just handed out)."""
        return self.consumed + self.start if self._long_offset is None else self._long_offset

    # ---- buffer ----

    def _more(self) -> bool:
        if self.eof:
            return False
        # at least as much as the record holds so far: a long record is copied a bounded number
        # of times (reading it in fixed chunks copied it once per chunk, quadratic in its length)
        try:
            data = self.stream.read(max(self.chunk, len(self.buf) - self.start))
        except Exception as exc:
            if not self._hold_break:
                raise
            self.broken, data = exc, b""
        if not data:
            self.eof = True
            return False
        self.consumed += self.start
        self.buf = self.buf[self.start:] + data
        self.start = 0
        return True

    def _handed_out(self, end: int, value: Any, bad: BadRecord | None, found: Counter[str] | None) -> tuple[memoryview, Any] | Repaired | BadRecord:
        """What the record at `self.start` (its `end`) is handed out as: its BadRecord, (raw bytes,
        value), or a Repaired value (read with values no reader holds, `found`)."""
        if bad is not None:
            return bad
        raw = memoryview(self.buf)[self.start:self.start + end]
        return (raw, value) if found is None else Repaired(raw, value, found)

    def _skip_ws(self, rel: int) -> int:
        while True:
            rel = _WS_RUN.match(self.buf, self.start + rel).end() - self.start  # type: ignore[union-attr]  # (matches the empty string)
            if self.start + rel < len(self.buf) or not self._more():
                return rel

    def _at(self, rel: int, n: int = 1) -> bytes:
        return self.buf[self.start + rel:self.start + rel + n]

    # ---- records ----

    def __iter__(self) -> Iterator[tuple[memoryview, Any] | Repaired | BadRecord]:
        """The records; when a read raises, the records whole in what was read before it, then its
        exception (where the stream broke off depends on how far it was read, not on the records:
        a record whose end was read is handed out whether or not the next one's start was)."""
        self._hold_break = True
        try:
            yield from self._records()
        except SplitError:
            if self.broken is not None:  # (the records ended where the stream broke off)
                raise self.broken from None
            raise
        if self.broken is not None:
            raise self.broken

    def _records(self) -> Iterator[tuple[memoryview, Any] | Repaired | BadRecord]:
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
            end = yield from self._hand_out(*self._record())
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

    def _hand_out(self, end: int, value: Any, bad: BadRecord | None, found: Counter[str] | None) -> Generator[Any, None, int]:
        """Count and hand out the record at self.start (`end` long); returns where to go on from (relative
        to self.start). One of BIG_VALUE bytes or more goes out with the garbage collector paused (see
        loads) and its bytes no longer held here (the buffer keeps what follows it), nor its value by
        any frame of the splitter (the caller's frames are given the record as an expression): the
        caller's rows of it are made beside one copy of it, the caller's."""
        self.records += 1
        if end < BIG_VALUE:
            yield self._handed_out(end, value, bad, found)
            return end
        held = [self._handed_out(end, value, bad, found)]
        value = None
        self._long_offset = self.consumed + self.start
        self.consumed += self.start + end
        self.buf, self.start = self.buf[self.start + end:], 0
        try:
            with gc_paused():
                yield held.pop()
        finally:
            self._long_offset = None
        return 0

    def _expect_end(self, rel: int) -> None:
        if self.in_object:
            return
        rel = self._skip_ws(rel)
        if self.start + rel < len(self.buf):
            raise SplitError("trailing data after the array")

    def _record(self) -> tuple[int, Any, BadRecord | None, Counter[str] | None]:
        """(end, value, None, repairs or None) of the record at self.start, or (end, None, BadRecord,
        None) when it cannot be read."""
        if self._at(0) == b"{":
            found = self._object_by_candidates() if self.prove or self._cand is None else self._object_by_cut()
            if found is not None:
                return found[0], found[1], None, found[2]
        self._cand = None  # the records do not all open like the first one: learn again from the next
        end, too_deep = self._exact_end()
        if too_deep is not None:
            return end, None, BadRecord(str(too_deep), None), None
        raw = memoryview(self.buf)[self.start:self.start + end]  # (not a copy: a long record is held once)
        try:
            value, repairs = decode(raw)
        except (ValueError, RecursionError) as exc:
            return end, None, BadRecord(f"invalid JSON: {_short(exc)}", bytes(raw)), None
        if isinstance(value, dict) and value:
            self._learn(value)
        return end, value, None, repairs

    def _object_by_candidates(self) -> tuple[int, Any, Counter[str] | None] | None:
        """An object record's (end, value, the members it repeated: decode.repeats_found), found by decoding
        at candidate ends (None: use the exact scanner)."""
        search = 1
        for _ in range(MAX_TRIES):
            cand = self._candidate(search)
            if cand is None:
                return None
            try:
                value = loads(memoryview(self.buf)[self.start:self.start + cand])
            except orjson.JSONDecodeError:
                search = cand
                continue
            a, b = self.start, self.start + cand
            written = written_back(value)  # (None: deeper than orjson writes)
            if written is None and self.buf.count(b"{", a, b) + self.buf.count(b"[", a, b) >= MAX_JSON_DEPTH and nests_too_deep(value):
                return None  # the exact scanner names the place
            if self._cand is None and isinstance(value, dict) and value:
                self._learn(value)
            return cand, value, repeats_found(memoryview(self.buf)[a:b], value, self.buf.count(b":", a, b), written)
        return None

    def _object_by_cut(self) -> tuple[int, None, None] | None:
        """An object record's (end, None) at the first place that opens like the first record, or
        the array's end (never "any object", which is most often a message inside the record); not
        decoded. None past CUT_SEARCH bytes: the exact scanner takes the record."""
        search = 1
        while True:
            m = self._cand.search(self.buf, self.start + search)  # type: ignore[union-attr]
            if m is not None:
                return m.start() + 1 - self.start, None, None
            if self.eof:
                end = self._last_end(search)
                return None if end is None else (end, None, None)
            if len(self.buf) - self.start > min(CUT_SEARCH, self.max_value):
                return None
            search = max(search, len(self.buf) - self.start - 256)  # a candidate may straddle the read
            self._more()

    def _last_end(self, search: int) -> int | None:
        """At the end of the file, the last record's end: the last `}` before the closing `]`."""
        tail = self.buf.rstrip(WS)
        if tail.endswith(b"]"):
            end = len(tail[:-1].rstrip(WS)) - self.start
            if self.buf[self.start + end - 1:self.start + end] == b"}" and end > search:
                return end
        return None

    def _candidate(self, search: int) -> int | None:
        """The next place (just past a `}`) where the record may end, reading more as needed."""
        while True:
            m = self._cand.search(self.buf, self.start + search) if self._cand is not None else None
            if m is None:  # no record like the first one follows in the buffer: any object may
                m = _ANY_NEXT_OBJECT.search(self.buf, self.start + search)
            if m is not None:
                cand = m.start() + 1 - self.start
                return cand if cand <= self.max_value else None
            if self.eof:
                end = self._last_end(search)
                return end if end is None or end <= self.max_value else None
            if len(self.buf) - self.start > self.max_value:
                return None  # a record longer than the cap may hold a string longer than it: scanned exactly
            search = max(search, len(self.buf) - self.start - 256)  # a candidate may straddle the read
            self._more()

    def _learn(self, first: dict[str, Any]) -> None:
        """Candidates from now on: `}` then `,` then an object opening with the first record's first key.

        The quantifiers are possessive: a whitespace run or a string matches one way only, so a place that opens
        like a record's nested object but not like a record (each Claude.ai message's `}, {"uuid": "...", "text"`)
        fails without backtracking into the string."""
        keys = iter(first.items())
        key, value = next(keys)
        opening = rb"\}[ \t\r\n]*+,[ \t\r\n]*+\{[ \t\r\n]*+" + re.escape(orjson.dumps(key)) + rb"[ \t\r\n]*+:"
        second = next(keys, None)
        if isinstance(value, str) and second is not None:
            # an id first (Claude.ai: "uuid", as its messages open too): the second key tells them apart
            opening += rb"[ \t\r\n]*+" + STRING.pattern + rb"[ \t\r\n]*+,[ \t\r\n]*+" + re.escape(orjson.dumps(second[0])) + rb"[ \t\r\n]*+:"
        self._cand = re.compile(opening, re.DOTALL)

    def _exact_end(self) -> tuple[int, NestingTooDeep | ValueTooLong | None]:
        """Follow the record at self.start token by token (strings at regex speed): its end, and
        whether it nests too deep or holds a string longer than the cap. Linear in the record's
        length; its bytes are held, not its values (past a string longer than the cap, not even its bytes)."""
        first = self._at(0)
        if first == b'"':
            end, closed = self._follow_string(0, "file ends inside a string")
            if closed:
                return end, None
            return self._skip_rest(end, 0, True, ValueTooLong(self.max_value, self.offset))
        if first not in (b"{", b"["):
            return self._scalar_end(first), None
        depth = 0
        too_deep: NestingTooDeep | None = None
        run = _RUN if self.max_value >= 256 else _run_to_token(self.max_value)
        rel = 0
        while True:
            buf = self.buf
            at = run.match(buf, self.start + rel).end()  # type: ignore[union-attr]  # (matches the empty string)
            if at == len(buf):  # the run goes on past what is read (a string not closed in it stops it at its quote)
                rel = at - self.start
                if not self._more():
                    raise SplitError("file ends inside a record")
                continue
            c = buf[at]
            if c == 34:  # a long string or one with escapes: followed (across reads if need be)
                quote = at - self.start
                rel, closed = self._follow_string(quote, "file ends inside a record")
                if not closed:
                    return self._skip_rest(rel, depth, True, ValueTooLong(self.max_value, self.offset + quote))
                continue
            rel = at + 1 - self.start
            if c == 91 or c == 123:
                depth += 1
                if depth >= MAX_JSON_DEPTH and too_deep is None:  # the array is one level more
                    too_deep = NestingTooDeep(MAX_JSON_DEPTH, self.consumed + at)
            else:
                depth -= 1
                if depth == 0:
                    return rel, too_deep

    def _scalar_end(self, first: bytes) -> int:
        """The end of the record at self.start that is a number, `true`, `false` or `null` (read on
        until the scalar is known whole)."""
        while True:
            m = _SCALAR.match(self.buf, self.start)
            if m is not None and (m.end() < len(self.buf) or (self.eof and self.broken is None)):
                return m.end() - self.start
            if m is None and first in (b",", b"]"):
                raise SplitError(f"unexpected {first!r} where a record starts")
            if not self._more():
                raise SplitError("file ends inside the array")

    def _follow_string(self, quote: int, cut_short: str) -> tuple[int, bool]:
        """The string whose opening quote is at `quote` (relative), read on until it closes: (just
        past its closing quote, True); or, once it is longer than the cap, (where to go on from
        inside it, False). Each byte is scanned once, however many reads the string spans."""
        pos = quote + 1
        while True:
            end, closed = string_end(self.buf, self.start + pos)
            pos = end - self.start
            if pos - quote - 1 > self.max_value:
                return pos, False
            if closed:
                return pos + 1, True
            if not self._more():
                raise SplitError(cut_short)

    def _skip_rest(self, rel: int, depth: int, in_string: bool, err: ValueTooLong | None) -> tuple[int, ValueTooLong | None]:
        """The end of a record that holds a string longer than the cap, found from `rel` (inside a
        string or not, `depth` brackets open) while the bytes scanned are let go: memory stays at a
        read's worth, whatever the string's length. The record's start is no longer held after this."""
        pos = self.start + rel
        while True:
            if in_string:
                pos, closed = string_end(self.buf, pos)
                if closed:
                    pos, in_string = pos + 1, False
                    if depth == 0:  # the record was the string
                        return pos - self.start, err
                    continue
            else:
                for m in _TOKEN.finditer(self.buf, pos):
                    c = self.buf[m.start()]
                    if c == 34:
                        if m.end() - m.start() == 1:
                            pos, in_string = m.end(), True
                            break
                    elif c in (91, 123):
                        depth += 1
                    else:
                        depth -= 1
                        if depth == 0:
                            return m.end() - self.start, err
                else:
                    pos = len(self.buf)
                if in_string:
                    continue
            self.start = pos  # what is scanned goes with the next read
            if not self._more():
                raise SplitError("file ends inside a record")
            pos = self.start


class _ReadOn:
    """A stream read on from a record's start, behind a `[`: the splitter reads it as the array's rest."""

    def __init__(self, stream: Readable, offset: int) -> None:
        self.stream = stream
        self.head = b"["
        while offset > 0:
            skipped = stream.read(min(offset, 1024 * 1024))
            if not skipped:
                break
            offset -= len(skipped)

    def read(self, n: int = -1) -> bytes:
        head, self.head = self.head, b""
        return head + self.stream.read(n - len(head) if n > 0 else n)


# before the first record is decoded: `}` then `,` then any object
_ANY_NEXT_OBJECT = re.compile(rb"\}[ \t\r\n]*+,[ \t\r\n]*+\{")


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."
