"""`chat-export/1` JSON, the Chat Export extension's format: pretty-printed, trailing newline, missing optional fields omitted.

The record is made of plain dicts and strings (a role's value, never the enum) and written by orjson
straight to the file's bytes (`jsontext.pretty_json_bytes`): no text is decoded to be encoded again.
"""

from __future__ import annotations

from typing import Any

from chatetl.exports.jsontext import pretty_json, pretty_json_bytes
from chatetl.exports.meta import ExportView, source_list
from chatetl.model import Role
from chatetl.selection import OutputTurn

SCHEMA = "chat-export/1"
_ROLE = {r: r.value for r in Role}


def message_record(turn: OutputTurn) -> dict[str, Any]:
    record: dict[str, Any] = {"role": _ROLE[turn.role], "role_tag": turn.tag, "text": turn.text}
    if turn.name and not turn.visible:
        record["name"] = turn.name
    if turn.citations:
        sources = source_list(turn.citations)
        if sources:
            record["sources"] = sources
    return record


def chat_export_record(view: ExportView) -> dict[str, Any]:
    record: dict[str, Any] = {"schema": SCHEMA, **view.meta()}
    role = _ROLE
    record["messages"] = [  # (a turn without a name or citations inline: what message_record makes of it)
        message_record(t) if t.name or t.citations else {"role": role[t.role], "role_tag": t.tag, "text": t.text} for t in view.turns
    ]
    return record


def to_chat_export_json(view: ExportView) -> str:
    return pretty_json(chat_export_record(view)) + "\n"


def chat_export_json_bytes(view: ExportView) -> bytes:
    """The file's bytes: `to_chat_export_json(view)` as UTF-8 (a lone surrogate as `?`, as every export writes it)."""
    return pretty_json_bytes(chat_export_record(view))
