"""JSON text as the JSON exports write it: pretty-printed with two spaces, non-ASCII kept as it is.

orjson writes byte for byte what `json.dumps(value, ensure_ascii=False, indent=2)` writes (the
equality test in tests/exports/test_jsontext.py checks it on random text), several times faster; a
text it refuses (a lone surrogate, which is no valid UTF-8) goes through the standard library."""

from __future__ import annotations

import json
from typing import Any

import orjson

_PRETTY = orjson.OPT_INDENT_2
_PRETTY_LINE = orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE


def pretty_json(value: Any) -> str:
    try:
        return orjson.dumps(value, option=_PRETTY).decode()
    except TypeError:  # lone surrogates, or a type orjson does not write
        return json.dumps(value, ensure_ascii=False, indent=2)


def pretty_json_bytes(value: Any) -> bytes:
    """`pretty_json(value) + "\\n"` as the UTF-8 a file holds (a lone surrogate becomes `?`), without
    decoding orjson's bytes to encode them again."""
    try:
        return orjson.dumps(value, option=_PRETTY_LINE)
    except TypeError:
        return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode("utf-8", "replace")
