"""Stream JSON records out of a file, whatever its shape, with errors that say where."""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Iterator
from enum import StrEnum
from typing import Any, NamedTuple

import orjson

from chatetl.readers import limits
from chatetl.readers.entry import Entry
from chatetl.readers.jsonscan.decode import (
    Repaired,
    decode,
    describe_repairs,
    loads,
    nests_too_deep,
    repeats_found,
    written_back,
)
from chatetl.readers.jsonscan.depthguard import (
    MAX_JSON_DEPTH,
)
from chatetl.readers.jsonscan.splitter import (
    ArraySplitter,
    BadRecord,
    Readable,
    SplitError,
)
from chatetl.readers.jsonscan.strings import ValueTooLong, first_long_string
from chatetl.readers.jsonscan.values import BOM, ValueSplitter, seek_member
from chatetl.readers.report import ReadReport


class Shape(StrEnum):
    """How the records lie in a file: what detection tells and the readers read by."""

    ARRAY = "array"  # top-level JSON array of records
    OBJECT = "object"  # one top-level JSON object
    JSONL = "jsonl"  # one JSON object per line
    TEXT = "text"  # not JSON: Markdown, YAML, HTML


# A JSON Lines line is one record held whole in memory: real ones reach tens of MB (one
# conversation per line); a longer line is reported and skipped unread, so a file without
# line breaks cannot take the memory.
MAX_LINE_BYTES = 256 * 1024 * 1024


def iter_records(entry: Entry, shape: Shape, report: ReadReport) -> Iterator[tuple[str, Any]]:
    """Yield (where, record) for each top-level record; report damage and keep going where possible."""
    if shape is Shape.JSONL:
        yield from _iter_jsonl(entry, report)
        return
    if shape is Shape.ARRAY:
        yield from _iter_array(entry, report)
        return
    yield from _iter_values(entry, report)


def _iter_array(entry: Entry, report: ReadReport) -> Iterator[tuple[str, Any]]:
    with entry.open() as f:
        yield from array_records(ArraySplitter(f), entry.name, report)


class Places(NamedTuple):
    """How a file's records are named in the report: `item.format(n)` the n-th (from 0), `before_first` a
    break before any."""

    item: str = "record {}"
    before_first: str = "before the first record"


RECORDS = Places()


def array_records(splitter: ArraySplitter, name: str, report: ReadReport, stop: int | None = None,
                  from_start: bool = True, places: Places = RECORDS) -> Generator[tuple[str, Any], None, bool]:
    """(where, record) for each record `splitter` hands out; a bad record reported in its place (with
    its bytes) and skipped, a damaged array reported where it broke. `stop`: the byte offset of a
    record not to hand out (where the next piece of the file starts, read elsewhere); returns whether
    a record started exactly there (when none does, it reads on to the end). `from_start` False: the
    splitter starts at a record inside the array, so a break before its first record is "after" one."""
    watching = stop is not None
    try:
        for item in splitter:
            if watching and splitter.offset >= stop:  # type: ignore[operator]
                if splitter.offset == stop:
                    return True
                watching = False  # no record starts at `stop`: read on to the end
            where = places.item.format(splitter.records - 1)
            if isinstance(item, BadRecord):
                report.error(name, where, item.reason, raw=item.raw)
                continue
            if isinstance(item, Repaired):
                report_repairs(report, name, where, item[1], item.found, bytes(item[0]))
            held = [item[1]]
            del item  # (neither its bytes nor its value held here while the caller reads it)
            yield where, held.pop()
    except SplitError as exc:
        done = splitter.records
        after = "after " + places.item.format(done - 1) if done or not from_start else places.before_first
        report.error(name, after, f"invalid or truncated JSON: {exc}")
    return False


def member_records(entry: Entry, key: str, report: ReadReport, places: Places) -> Iterator[tuple[str, Any]]:
    """(where, item) for each item of the array that is member `key` of the file's top-level object, one at a
    time: the members before it are scanned past unheld, the ones after it not read. No such member (or null):
    none, no error."""
    with entry.open() as f:
        try:
            found = seek_member(f, key)
        except SplitError as exc:
            report.error(entry.name, places.before_first, f"invalid or truncated JSON: {exc}")
            return
        if found is None or found.startswith(b"null"):
            return
        yield from array_records(ArraySplitter(_Prepended(found, f), in_object=True), entry.name, report, places=places)


class _Prepended:
    """Bytes already read, then the rest of a stream."""

    def __init__(self, first: bytes, rest: Readable) -> None:
        self._first = first
        self._rest = rest

    def read(self, n: int = -1, /) -> bytes:
        if self._first:
            if n < 0:
                data, self._first = self._first + self._rest.read(), b""
                return data
            data, self._first = self._first[:n], self._first[n:]
            return data
        return self._rest.read(n)


def _iter_values(entry: Entry, report: ReadReport) -> Iterator[tuple[str, Any]]:
    """One object (or values one after another, as JSONL whose first line is longer than the
    detection head): `""` for the first, `record N` after it; linear in the input (chatetl.readers.jsonscan.values)."""
    whole = _whole_value(entry)
    if whole is not None:
        value, repeats, raw = whole
        if repeats:
            report_repairs(report, entry.name, "", value, repeats, raw)
        held = [value]
        del value, whole, raw
        yield "", held.pop()
        return
    with entry.open() as f:
        values = ValueSplitter(f)
        try:
            for item in values:
                index = values.records - 1
                where = f"record {index}" if index else ""
                if isinstance(item, BadRecord):
                    report.error(entry.name, where, item.reason, raw=item.raw)
                    continue
                if isinstance(item, Repaired):
                    report_repairs(report, entry.name, where, item[1], item.found, bytes(item[0]))
                held = [item[1]]
                del item  # (as array_records)
                yield where, held.pop()
        except SplitError as exc:
            done = values.records
            after = f"after record {done - 1}" if done else "before the first record"
            report.error(entry.name, after, f"invalid or truncated JSON: {exc}")


def _whole_value(entry: Entry) -> tuple[Any, Counter[str] | None, bytes | None] | None:
    """The one value of a file known to be no longer than the value cap, read at once and decoded by orjson (the
    value splitter would read it in growing chunks first: what a zip of thousands of small one-object files pays
    for each); None where the splitter reads it: a larger or unsized file, one orjson refuses (several values,
    damage, NaN ...) or one that nests too deep (the splitter names the place). With it, what it repeated
    (`decode.repeats_found`) and then its bytes."""
    max_value = limits.current().max_value_bytes
    if entry.size is None or entry.size > max_value:
        return None
    with entry.open() as f:
        data = f.read(max_value + 1)
    if len(data) > max_value:
        return None
    try:
        value = loads(data[3:] if data.startswith(BOM) else data)
    except orjson.JSONDecodeError:
        return None
    written = written_back(value)
    if written is None and data.count(b"{") + data.count(b"[") >= MAX_JSON_DEPTH and nests_too_deep(value):
        return None
    repeats = repeats_found(data[3:] if data.startswith(BOM) else data, value, written=written)
    return value, repeats, data if repeats else None  # (the bytes kept for quarantine where a member was lost)


def jsonl_lines(entry: Entry, report: ReadReport) -> Iterator[tuple[int, bytes, bytes, ValueTooLong | None]]:
    """(line number, raw line, stripped line, past the cap) for each non-empty line of a JSON Lines
    file: a line over MAX_LINE_BYTES is skipped and reported here; a line holding a string past the
    value cap comes with its `ValueTooLong` and without its bytes (not kept for quarantine), for the
    reader to report in its place. The one line loop of every JSON Lines reader."""
    limit = MAX_LINE_BYTES
    max_value = limits.current().max_value_bytes
    with entry.open() as f:
        lineno = 0
        while raw := f.readline(limit + 1):
            lineno += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                raw = b""  # let the line go before skipping the rest of it
                while (rest := f.readline(1024 * 1024)) and not rest.endswith(b"\n"):
                    pass
                report.error(entry.name, f"line {lineno}", f"line longer than {limit} bytes: skipped")
                continue
            line = raw.strip()
            if not line:
                continue
            if len(line) > max_value and (at := first_long_string(line, max_value)) is not None:
                raw = line = b""  # (past the cap: not kept for quarantine)
                yield lineno, raw, line, ValueTooLong(max_value, at, "line")
                continue
            yield lineno, raw, line, None


def decoded_line(report: ReadReport, file: str, lineno: int, raw: bytes, line: bytes,
                 too_long: ValueTooLong | None) -> tuple[Any, Counter[str] | None] | None:
    """A line `jsonl_lines` gave, decoded: (record, repairs), or None when it is reported here (a string past the
    cap, nesting too deep). A line that is not JSON raises its ValueError: what it is depends on the reader
    (the Claude Code session log's last line may be one still being written)."""
    if too_long is not None:
        report.error(file, f"line {lineno}", str(too_long))
        return None
    try:
        return decode(line)
    except RecursionError:
        report.error(file, f"line {lineno}", "JSON nested too deeply", raw=raw)
        return None


def _iter_jsonl(entry: Entry, report: ReadReport) -> Iterator[tuple[str, Any]]:
    for lineno, raw, line, too_long in jsonl_lines(entry, report):
        try:
            decoded = decoded_line(report, entry.name, lineno, raw, line, too_long)
        except ValueError as exc:
            report.error(entry.name, f"line {lineno}", f"invalid JSON: {_short(exc)}", raw=raw)
            continue
        if decoded is None:
            continue
        record, repairs = decoded
        if repairs:
            report_repairs(report, entry.name, f"line {lineno}", record, repairs, raw)
        yield f"line {lineno}", record


def report_repairs(report: ReadReport, file: str, where: str, record: Any, found: Counter[str], raw: bytes | None) -> None:
    """A record read with values no JSON reader holds (or no table column holds) as null: reported
    in its place with its bytes (quarantine), each kind counted as drift; the record itself is read."""
    report.error(file, record_place(where, record), describe_repairs(found), raw=raw)
    for what, n in found.items():
        report.unknown(what, n)


def record_place(where: str, record: Any) -> str:
    """`where`, with the id of the conversation the record names (for a report's place)."""
    if isinstance(record, dict):
        ident = record.get("id") or record.get("uuid") or record.get("conversation_id") or record.get("identifier")
        if isinstance(ident, str) and ident:
            return f"{where} (conversation {ident})" if where else f"conversation {ident}"
    return where


def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."
