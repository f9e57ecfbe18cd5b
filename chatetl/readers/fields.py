"""A record's fields as every reader reads them: defensively, and counting what it did not know.

Exports drift: a new field, a role nobody named before. That is never an error (the rest of
the record still reads) and never dropped in silence: it is counted in the ReadReport as
drift (`<reader>.<what>:<name>`) and kept raw in the Conversation.meta or Message.extra it
came with, so nothing a file held is lost and a later reader can map it. What a record cannot
be read without (it is not an object, its message list is not a list) raises ValueError,
which `convert.convert_records` reports with the record's place before going on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from chatetl.model import Role
from chatetl.readers.report import ReadReport


def expect_object(record: Any, what: str) -> dict[str, Any]:
    """The record itself when it is a JSON object; else ValueError `expected {what}, got list`."""
    if not isinstance(record, dict):
        raise ValueError(f"expected {what}, got {type(record).__name__}")  # noqa: TRY004 (convert_records reports ValueErrors)
    return record


def list_field(record: dict[str, Any], key: str, items: str) -> list[Any]:
    """`record[key]` as a list: missing or null is no items, anything else but a list a ValueError."""
    value = record.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"`{key}` is {type(value).__name__}, not a list of {items}")  # noqa: TRY004 (convert_records reports ValueErrors)
    return value


def object_or_empty(record: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`record[key]` when it is a JSON object; else (missing, null, another kind) a new empty one."""
    value = record.get(key)
    return value if isinstance(value, dict) else {}


def list_or_empty(record: Mapping[str, Any], key: str) -> list[Any]:
    """`record[key]` when it is a JSON array; else (missing, null, another kind) a new empty one."""
    value = record.get(key)
    return value if isinstance(value, list) else []


def text_or_none(value: Any) -> str | None:
    """A non-empty string as it is; anything else (None, "", a number, an object) None."""
    return value if isinstance(value, str) and value else None


def known_role(
    roles: Mapping[str, Role], name: Any, report: ReadReport, *, drift: str, extra: dict[str, Any], keep_as: str, default: Role
) -> Role:
    """A role name through a reader's table of the names its format uses.

    A name the table does not have is drift: counted as `{drift}:{name}`, kept as it was in
    `extra[keep_as]`, and read as `default` (what that format's unnamed senders mostly are).
    """
    role = roles.get(name) if isinstance(name, str) else None
    if role is None:
        report.unknown(f"{drift}:{name}")
        extra[keep_as] = name
        role = default
    return role


def keep_unknown(
    record: Mapping[str, Any],
    known: AbstractSet[str],
    into: dict[str, Any],
    report: ReadReport,
    drift: str,
    keep: Callable[[Any], Any] | None = None,
) -> None:
    """Every field of `record` not in `known`, in name order: counted as `{drift}:{field}` and kept
    in `into` under its own name (as it is, or as `keep` makes it)."""
    if record.keys() <= known:  # the common case, without building the difference
        return
    for key in sorted(record.keys() - known):
        report.unknown(f"{drift}:{key}")
        into[key] = record[key] if keep is None else keep(record[key])
