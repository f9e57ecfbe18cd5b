"""`chat-export/1` JSON, the Chat Export extension's format: pretty-printed, trailing newline, missing optional fields omitted."""

from __future__ import annotations

from typing import Any

from chatetl.exports.jsontext import pretty_json
from chatetl.exports.meta import ExportView, source_list

SCHEMA = "chat-export/1"


def message_record(turn) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    record: dict[str, Any] = {"role": turn.role.value, "role_tag": turn.tag, "text": turn.text}
    if turn.name and not turn.visible:
        record["name"] = turn.name
    sources = source_list(turn.citations)
    if sources:
        record["sources"] = sources
    return record


def chat_export_record(view: ExportView) -> dict[str, Any]:
    record: dict[str, Any] = {"schema": SCHEMA, **view.meta()}
    record["messages"] = [message_record(t) for t in view.turns]
    return record


def to_chat_export_json(view: ExportView) -> str:
    return pretty_json(chat_export_record(view)) + "\n"
