"""ShareGPT: the extension's per-chat `sharegpt/1` JSON and a JSONL training file across conversations.

Turns map to ShareGPT's `from`: user -> `human`, assistant -> `gpt`. Opted-in parts use the
dataset conventions: tool calls -> `function_call` (`{"name", "arguments"}`), tool results ->
`observation`, hidden context -> `system` (in the JSONL, the context before the first turn
goes to the record's `system` field), reasoning -> a `<think>...</think>` block at the start
of the assistant turn it led to.
"""

from __future__ import annotations

import json
from typing import Any

from chatetl.exports.jsontext import pretty_json, pretty_json_bytes
from chatetl.exports.meta import ExportView
from chatetl.model import MessageKind, Role
from chatetl.selection import OutputTurn

SCHEMA = "sharegpt/1"
_FROM = {Role.USER: "human", Role.ASSISTANT: "gpt", Role.SYSTEM: "system", Role.TOOL: "observation"}
# the members, bound once (an enum class's attribute lookup costs more than a turn's dict)
_TURN, _REASONING, _TOOL_CALL, _TOOL_RESULT = MessageKind.TURN, MessageKind.REASONING, MessageKind.TOOL_CALL, MessageKind.TOOL_RESULT
_ASSISTANT = Role.ASSISTANT


def _call_value(turn: OutputTurn) -> str:
    try:
        arguments: Any = json.loads(turn.text) if turn.text.strip() else {}
    except (ValueError, RecursionError):
        arguments = turn.text
    return json.dumps({"name": turn.name, "arguments": arguments}, ensure_ascii=False)


def sharegpt_messages(turns: list[OutputTurn]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    thinking: list[str] = []

    def flush_thinking() -> None:
        if thinking:
            out.append({"from": "gpt", "value": "<think>\n" + "\n\n".join(thinking) + "\n</think>"})
            thinking.clear()

    for t in turns:
        kind = t.kind
        if kind is _TURN and not thinking:  # (most turns)
            out.append({"from": _FROM[t.role], "value": t.text})
            continue
        if kind is _REASONING:
            thinking.append(t.text)
            continue
        if kind is _TURN and t.role is _ASSISTANT and thinking:
            value = "<think>\n" + "\n\n".join(thinking) + "\n</think>\n\n" + t.text
            thinking.clear()
            out.append({"from": "gpt", "value": value})
            continue
        flush_thinking()
        if kind is _TOOL_CALL:
            out.append({"from": "function_call", "value": _call_value(t)})
        elif kind is _TOOL_RESULT:
            out.append({"from": "observation", "value": t.text})
        elif kind is _TURN:
            out.append({"from": _FROM[t.role], "value": t.text})
        else:  # hidden context, summaries
            out.append({"from": "system", "value": t.text})
    flush_thinking()
    return out


def sharegpt1_record(view: ExportView) -> dict[str, Any]:
    meta = view.meta()
    record: dict[str, Any] = {"schema": SCHEMA, **meta}
    record["conversations"] = sharegpt_messages(view.turns)
    return record


def to_sharegpt1_json(view: ExportView) -> str:
    return pretty_json(sharegpt1_record(view)) + "\n"


def sharegpt1_json_bytes(view: ExportView) -> bytes:
    """The file's bytes: `to_sharegpt1_json(view)` as UTF-8 (a lone surrogate as `?`)."""
    return pretty_json_bytes(sharegpt1_record(view))


def training_record(view: ExportView) -> dict[str, Any] | None:
    """One JSONL line of a ShareGPT dataset (what the ShareGPT reader reads back), or None when empty."""
    messages = sharegpt_messages(view.turns)
    system: list[str] = []
    while messages and messages[0]["from"] == "system":
        system.append(messages.pop(0)["value"])
    if not any(m["from"] in ("human", "gpt") for m in messages):
        return None
    record: dict[str, Any] = {"id": view.chat_id, "platform": view.conv.platform}
    if view.title:
        record["title"] = view.title
    if view.conv.model:
        record["model"] = view.conv.model
    if view.conv.url:
        record["url"] = view.conv.url
    if system:
        record["system"] = "\n\n".join(system)
    record["conversations"] = messages
    return record


def training_line(view: ExportView) -> bytes | None:
    record = training_record(view)
    if record is None:
        return None
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "replace")
