"""What the head of a file shows of its first record: its keys, a few scalar values, and the keys
below them, three levels deep; what detection decides a JSON file's format by."""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any

import ijson
import orjson

from chatetl.readers.jsonscan.decode import without_constants, without_lone_surrogates
from chatetl.readers.jsonscan.depthguard import (
    MAX_JSON_DEPTH,
    DepthGuard,
    NestingTooDeep,
)


@dataclass
class Head:
    """What the head of a file shows of its first record: its top-level keys, a few of their scalar
    values, and the keys found under them (`inner["chat.history"]`, `inner["conversations.item"]`,
    `inner["mapping"]` the node ids, `inner["mapping.*"]` the keys of the nodes), three levels deep."""

    keys: set[str] = field(default_factory=set)
    scalars: dict[str, Any] = field(default_factory=dict)
    inner: dict[str, set[str]] = field(default_factory=dict)

    def under(self, path: str) -> set[str]:
        return self.inner.get(path, set())

    @classmethod
    def of(cls, record: dict[str, Any]) -> Head:
        """The head of a record already decoded (a JSON Lines line)."""
        head = cls(keys=set(record), scalars={k: record[k] for k in _SCALAR_KEYS if isinstance(record.get(k), (str, int, float))})
        _inner_of(record, "", head.inner, 0)
        _wildcard_mapping(head)
        return head


_SCALAR_KEYS = ("schema", "name", "type", "header", "title")
INNER_DEPTH = 3  # levels below the record's own keys that detection looks at
_INNER_KEYS_CAP = 64  # keys kept per path (a mapping of thousands of nodes needs only a few)


def _inner_of(value: Any, path: str, inner: dict[str, set[str]], depth: int) -> None:
    if depth >= INNER_DEPTH:
        return
    if isinstance(value, dict):
        if path:
            inner.setdefault(path, set()).update(list(value)[:_INNER_KEYS_CAP])
        for key, child in list(value.items())[:_INNER_KEYS_CAP]:
            _inner_of(child, f"{path}.{key}" if path else key, inner, depth + (1 if path else 0))
    elif isinstance(value, list) and path:
        for item in value[:3]:
            _inner_of(item, f"{path}.item", inner, depth + 1)


def first_record_head(head: bytes, array: bool) -> Head:
    """What the head of a file shows of its first record (keys, scalars, keys below them).

    A head that orjson decodes whole (a small file, most often: its whole record is in it) is walked from its
    decoded value (`_decoded_head`, the same Head as the streaming walk below, several times faster, which a zip of
    thousands of small files pays for each of them); where an object repeats a key, the value read is the last,
    as every reader reads it (the streaming walk saw each). Else ijson walks its events: NaN, Infinity and
    -Infinity are read as null first, and an escaped lone surrogate as U+FFFD: ijson stops at the one and raises
    at the other, and a first record holding either (the readers read it, repaired) would leave the file
    unrecognized, or stop the upload."""
    shallow = head.count(b"{") + head.count(b"[") < MAX_JSON_DEPTH  # (fewer brackets cannot nest that deep)
    if shallow:
        try:
            value = orjson.loads(head)
        except orjson.JSONDecodeError:
            pass
        else:
            decoded = _decoded_head(value, array)
            if decoded is not None:
                return decoded
    out = Head()
    depth_target = 2 if array else 1
    record_prefix = "item" if array else ""
    depth = 0
    last_key = None
    try:
        source = io.BytesIO(_readable(head))  # (the rewrites add no bracket)
        for prefix, event, value in ijson.parse(source if shallow else DepthGuard(source), buf_size=4096):
            if event in ("start_map", "start_array"):
                depth += 1
            elif event in ("end_map", "end_array"):
                depth -= 1
                if depth < depth_target:
                    break
            elif event == "map_key" and depth == depth_target:
                out.keys.add(value)
                last_key = value
                continue
            elif event == "map_key" and depth_target < depth <= depth_target + INNER_DEPTH:
                path = prefix[len(record_prefix) + 1 :] if record_prefix else prefix
                keys = out.inner.setdefault(path, set())
                if len(keys) < _INNER_KEYS_CAP:
                    keys.add(value)
            elif depth == depth_target and last_key in _SCALAR_KEYS and event in ("string", "number"):
                out.scalars[last_key] = value
            last_key = None if event != "map_key" else last_key
    except (ijson.common.IncompleteJSONError, ijson.common.JSONError, NestingTooDeep, UnicodeDecodeError):
        pass  # the head is cut mid-document (or absurdly nested, or not text): what was seen so far decides
    _wildcard_mapping(out)
    return out


def _decoded_head(value: Any, array: bool) -> Head | None:
    """The Head of a decoded head, as `first_record_head`'s walk of its events makes it (None: a shape it walks
    otherwise, an array whose first container is itself an array). The record is the object, or the array's
    first item that is an object or an array (scalars before it show nothing); below its keys, the keys of the
    objects INNER_DEPTH levels down (an array a level, its items at `<path>.item`), each path's first
    _INNER_KEYS_CAP in document order."""
    if array:
        if type(value) is not list:
            return None
        record = next((item for item in value if type(item) is dict or type(item) is list), None)
        if record is None:
            return Head()
    else:
        record = value
    if type(record) is not dict:
        return None
    out = Head(keys=set(record))
    for key, child in record.items():
        if key in _SCALAR_KEYS and (type(child) is str or type(child) is int):
            out.scalars[key] = child
        elif key in _SCALAR_KEYS and type(child) is float:
            return None  # (ijson reads it as a Decimal, and orjson an integer past 64 bits as a float: the events decide)
        _decoded_inner(child, key, 0, out.inner)
    _wildcard_mapping(out)
    return out


def _decoded_inner(value: Any, path: str, level: int, inner: dict[str, set[str]]) -> None:
    """The keys under a record's value at `path`, `level` containers below the record (ijson's prefixes)."""
    if type(value) is dict:
        level += 1
        if level > INNER_DEPTH or not value:
            return
        keys = inner.setdefault(path, set())
        for key, child in value.items():
            if len(keys) < _INNER_KEYS_CAP:
                keys.add(key)
            _decoded_inner(child, f"{path}.{key}", level, inner)
    elif type(value) is list:
        level += 1
        if level >= INNER_DEPTH:  # (its objects would be past INNER_DEPTH)
            return
        for item in value:
            _decoded_inner(item, f"{path}.item", level, inner)


def _readable(head: bytes) -> bytes:
    """The head as ijson reads it through: the values no JSON reader holds, as the readers repair them."""
    return without_lone_surrogates(without_constants(head))


def _wildcard_mapping(head: Head) -> None:
    """`inner["<key>.*"]`: the keys of a dict-of-objects' values (a `mapping` of nodes by id)."""
    for path, keys in list(head.inner.items()):
        if "." in path:
            continue
        merged: set[str] = set()
        for key in keys:
            merged |= head.inner.get(f"{path}.{key}", set())
        if merged:
            head.inner.setdefault(f"{path}.*", set()).update(merged)
