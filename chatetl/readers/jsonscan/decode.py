"""One record's bytes into Python values: orjson first, and what it refuses read with repairs.

A record with NaN, Infinity, -Infinity, a number past the double range or a lone surrogate is not
lost: `decode` reads it with those numbers as null (the surrogate as U+FFFD) and says what it
repaired (`found`), which the readers report in its place with its bytes (quarantine) and count as
drift. So one bad number costs its value, never the records after it. The heads detection reads
are made readable the same way (`without_constants`, `without_lone_surrogates`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any, Self

import orjson

from chatetl.gc_pause import gc_paused
from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH


class Repaired(tuple[Any, Any]):
    """A record read with values no JSON reader holds made readable: (raw bytes, value) like a good
    record, and `found`, what was done (drift name -> count) for the report."""

    found: Counter[str]

    def __new__(cls, raw: Any, value: Any, found: Counter[str]) -> Self:
        item = super().__new__(cls, (raw, value))
        item.found = found
        return item

    def describe(self) -> str:
        return describe_repairs(self.found)


NUMBER_AS_NULL = "json.number_as_null:"
REPEATED_MEMBER = "json.repeated_member"
LONE_SURROGATE = "json.lone_surrogate"
INT64 = (-(2**63), 2**63)  # what an int64 column holds (end excluded): a wider integer there is null (jsonstream)
_U64_MAX = 2**64 - 1
_INF = float("inf")
_SURROGATE = re.compile("[\ud800-\udfff]")


BIG_VALUE = 1024 * 1024  # a record at least this long is decoded and handed out with the garbage collector paused


def loads(raw: bytes | memoryview) -> Any:
    """`orjson.loads`; a record of BIG_VALUE bytes or more with the garbage collector paused (gc_paused)."""
    if len(raw) < BIG_VALUE:
        return orjson.loads(raw)
    with gc_paused():
        return orjson.loads(raw)


def decode(raw: bytes | memoryview) -> tuple[Any, Counter[str] | None]:
    """One record's bytes as Python values (as ijson gives them: ints and floats, str, list, dict),
    and what had to be repaired (None: nothing).

    orjson reads JSON; what it refuses goes to the standard parser, which reads what no JSON reader
    holds as null and counts it: NaN, Infinity, -Infinity and numbers past the double range (1e999);
    a lone surrogate in a string (which Arrow cannot write) becomes U+FFFD. Integers read as orjson
    reads them: exact up to 2^64 - 1, past that a float (an int64 column, an attachment's size, takes
    a wider one as null: chatetl.readers.jsonscan.records). Anything else that is not JSON raises ValueError."""
    try:
        value = loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        return value, repeats_found(raw, value)
    found: Counter[str] = Counter()

    def constant(name: str) -> None:
        found[NUMBER_AS_NULL + name] += 1

    def real(text: str) -> float | None:
        value = float(text)
        if value == _INF or value == -_INF:
            found[NUMBER_AS_NULL + "out_of_range"] += 1
            return None
        return value

    def integer(text: str) -> int | float | None:
        if len(text) <= 20:  # (int() refuses more than 4,300 digits)
            value = int(text)
            if INT64[0] <= value <= _U64_MAX:
                return value
        return real(text)  # as orjson reads it: a float, null past the double range

    def pairs(members: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(members)
        if len(obj) < len(members):
            found[REPEATED_MEMBER] += len(members) - len(obj)
        return obj

    data = bytes(raw)
    value = json.loads(data, parse_constant=constant, parse_float=real, parse_int=integer, object_pairs_hook=pairs)
    if b"\\u" in data:  # an escaped lone surrogate is the other thing orjson refuses
        value = _replace_surrogates(value, found)
    return value, found or None


def written_back(value: Any) -> bytes | None:
    """`value` as orjson writes it, None past the depth orjson writes (255 levels)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        return None


def repeats_found(raw: bytes | bytearray | memoryview, value: Any, colons: int | None = None,
                  written: bytes | None = None) -> Counter[str] | None:
    """`{REPEATED_MEMBER: n}` when `n` members of the objects in a record were replaced by a later member
    of the same name (JSON readers keep the last: a message map's repeated id loses a message), else None.
    Cheap where nothing repeats: the colons of the raw bytes (`colons`, when the caller counted them in
    its buffer) against those of the value written back (`written`, when the caller has it): each
    member has one, and a string holds the same ones both times; where the raw has more, the standard
    parser reads the record again and counts the repeats."""
    if not isinstance(value, dict | list) or not value:
        return None
    if written is None:
        written = written_back(value)
    if written is not None and (_colons(raw) if colons is None else colons) <= written.count(b":"):
        return None
    repeats = 0

    def pairs(members: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal repeats
        obj = dict(members)
        repeats += len(members) - len(obj)
        return obj

    try:
        json.loads(bytes(raw), object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None
    return Counter({REPEATED_MEMBER: repeats}) if repeats else None


_SLICE = 1 << 20


def _colons(data: bytes | bytearray | memoryview) -> int:
    """How many colons the bytes hold, a memoryview's counted a slice at a time (never copied whole)."""
    if not isinstance(data, memoryview):
        return data.count(b":")
    return sum(bytes(data[start:start + _SLICE]).count(b":") for start in range(0, len(data), _SLICE))


def _replace_surrogates(value: Any, found: Counter[str]) -> Any:
    """`value` with every lone surrogate in its strings (keys too) replaced by U+FFFD, counted."""

    def fix(text: str) -> str:
        if _SURROGATE.search(text) is None:
            return text
        fixed, n = _SURROGATE.subn("\ufffd", text)
        found[LONE_SURROGATE] += n
        return fixed

    if type(value) is str:
        return fix(value)
    stack = [value] if type(value) in (dict, list) else []
    while stack:
        v = stack.pop()
        if type(v) is list:
            for i, c in enumerate(v):
                if type(c) is str:
                    v[i] = fix(c)
                elif type(c) in (dict, list):
                    stack.append(c)
        else:
            for k, c in v.items():
                if type(c) is str:
                    v[k] = fix(c)  # (a value replaced: the keys and their order stay)
                elif type(c) in (dict, list):
                    stack.append(c)
            if any(_SURROGATE.search(k) for k in v):
                items = [(fix(k), c) for k, c in v.items()]
                v.clear()
                v.update(items)
    return value


def describe_repairs(found: Counter[str]) -> str:
    """The report's words for what `decode` (or the int64 check) repaired in one record."""
    nulls = [f"{name[len(NUMBER_AS_NULL):].replace('_', ' ')} ({n})" for name, n in sorted(found.items()) if name.startswith(NUMBER_AS_NULL)]
    parts = [f"values no JSON reader holds read as null: {', '.join(nulls)}"] if nulls else []
    if found.get(LONE_SURROGATE):
        parts.append(f"lone surrogates replaced by U+FFFD ({found[LONE_SURROGATE]})")
    if found.get(REPEATED_MEMBER):
        parts.append(f"a member name repeated in an object, the last value kept ({found[REPEATED_MEMBER]})")
    return "; ".join(parts)


# outside strings, the constants JSON does not have (ijson, which detection uses, stops at them)
_CONSTANT_OR_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN)', re.DOTALL)


def without_constants(data: bytes) -> bytes:
    """`data` with NaN, Infinity and -Infinity outside strings written as null: a head that a
    streaming parser reads past them (a string cut at the end of a head is left as it is)."""
    if b"NaN" not in data and b"Infinity" not in data:
        return data
    return _CONSTANT_OR_STRING.sub(lambda m: b"null" if m.group(1) else m.group(0), data)


# where an escaped surrogate may be (a backslash before it or not): the sub below changes nothing without one
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# inside strings, an escape: a surrogate pair, a lone surrogate (group 1) or any other one
_ESCAPE = re.compile(rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)", re.DOTALL)


def without_lone_surrogates(data: bytes) -> bytes:
    """`data` with every escaped lone surrogate (`\\udc00`, a high one without its low half) written
    as `\\ufffd`, as `decode` reads them: a head that a streaming parser reads past them (ijson's C
    backend raises UnicodeDecodeError at a lone low surrogate, an escaped backslash is left alone)."""
    if _SURROGATE_ESCAPE.search(data) is None:  # (no escape of a surrogate at all: most heads, at memchr speed)
        return data
    return _ESCAPE.sub(lambda m: b"\\ufffd" if m.group(1) else m.group(0), data)


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
