"""ShareGPT datasets: `[{"id", "conversations": [{"from", "value"}], "system"?, "tools"?}]`, array or JSONL.

Flat conversations: each message's parent is the one before it, so the shared resolver
makes one linear branch. `from` values: human/user, gpt/assistant/chatgpt/bard/model,
system, observation (a tool's output), function_call (the model calling a tool). Any
other `from` is format drift: counted and kept as a hidden message.
"""

from __future__ import annotations

import json
from typing import Any, Iterator

from chatetl.model import Conversation, Message, MessageKind, Role, Source, ToolCall, ToolResult
from chatetl.readers.detect import Layout
from chatetl.readers.entry import Entry
from chatetl.readers.fields import expect_object, keep_unknown, list_field
from chatetl.readers.jsonstream import convert_records, iter_records
from chatetl.readers.platforms import derived_id, normalize_platform
from chatetl.readers.report import ReadReport

USER_FROM = frozenset({"human", "user"})
ASSISTANT_FROM = frozenset({"gpt", "assistant", "chatgpt", "bard", "model"})
SYSTEM_FROM = frozenset({"system"})
TOOL_RESULT_FROM = frozenset({"observation"})
TOOL_CALL_FROM = frozenset({"function_call"})

KNOWN_RECORD_FIELDS = frozenset({"id", "conversations", "system", "tools", "model", "platform", "title", "url"})
KNOWN_TURN_FIELDS = frozenset({"from", "value"})
_OPENAI_TURN_FIELDS = KNOWN_TURN_FIELDS | {"role", "content"}  # a turn without `from` may be OpenAI-style

# a dataset that names its model says which service it came from
_MODEL_PLATFORMS = (
    ("gpt-", "chatgpt"),
    ("chatgpt", "chatgpt"),
    ("o1", "chatgpt"),
    ("o3", "chatgpt"),
    ("o4", "chatgpt"),
    ("claude", "claude-ai"),
    ("gemini", "gemini"),
    ("bard", "gemini"),
    ("grok", "grok"),
    ("deepseek", "deepseek"),
)


def read(entry: Entry, layout: Layout | None, report: ReadReport) -> Iterator[Conversation]:
    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_sharegpt(record, report, file=entry.name, where=where)

    yield from convert_records(entry, iter_records(entry, layout or Layout.ARRAY, report), report, convert)


def _platform(record: dict) -> str:
    if isinstance(record.get("platform"), str) and record["platform"].strip():
        return normalize_platform(record["platform"])
    model = record.get("model")
    if isinstance(model, str):
        name = model.strip().lower()
        for prefix, platform in _MODEL_PLATFORMS:
            if name.startswith(prefix):
                return platform
    return "unknown"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _guess_role(name: str) -> Role:
    low = name.lower()
    if any(w in low for w in ("human", "user", "prompter", "customer")):
        return Role.USER
    if "system" in low:
        return Role.SYSTEM
    if any(w in low for w in ("tool", "observation", "function", "ipython", "result")):
        return Role.TOOL
    return Role.ASSISTANT


def conversation_from_sharegpt(record: Any, report: ReadReport, *, file: str = "", where: str = "") -> Conversation:
    record = expect_object(record, "a ShareGPT record object")
    turns = list_field(record, "conversations", "turns")

    raw_id = record.get("id")
    if isinstance(raw_id, (int, float)) and not isinstance(raw_id, bool):
        raw_id = str(raw_id)
    platform = _platform(record)
    system = record.get("system")
    content = json.dumps({"system": system, "conversations": turns}, ensure_ascii=False, sort_keys=True, default=str)
    meta: dict[str, Any] = {}
    platform_said = isinstance(record.get("platform"), str) and bool(record["platform"].strip())
    if isinstance(raw_id, str) and raw_id.strip() and platform_said:
        conv_id = raw_id.strip()  # a record that names its platform carries that platform's id
    elif isinstance(raw_id, str) and raw_id.strip():
        # a dataset's ids ("identity_0") are its own, not a platform's: two datasets reuse them, so
        # the id keeps a digest of the content and one chat never swallows another in the graph
        suffix = "~" + derived_id(platform, content)[:8]
        ident = raw_id.strip().removesuffix(suffix)  # chatetl's own training files carry it already
        conv_id = ident + suffix
        meta["dataset_id"] = ident
    else:
        conv_id = derived_id(platform, content)

    if record.get("tools") is not None:
        meta["tools"] = record["tools"]
    keep_unknown(record, KNOWN_RECORD_FIELDS, meta, report, "sharegpt.field")

    messages: list[Message] = []
    parent: str | None = None

    def add(**kw: Any) -> None:
        nonlocal parent
        mid = f"{conv_id}:{len(messages)}"
        messages.append(Message(message_id=mid, parent_id=parent, **kw))
        parent = mid

    if isinstance(system, str) and system.strip() or isinstance(system, (dict, list)) and system:
        add(role=Role.SYSTEM, kind=MessageKind.HIDDEN, text=_text(system), content_type="system")

    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            report.error(file, f"{where} turn {i}".strip(), f"turn is {type(turn).__name__}, not an object: left out", raw=repr(turn).encode()[:4096])
            continue
        # {"from", "value"}; the OpenAI-style {"role", "content"} some datasets mix in reads the same way
        who_raw = turn.get("from", turn.get("role"))
        who = who_raw.strip().lower() if isinstance(who_raw, str) else ""
        text = _text(turn.get("value", turn.get("content")))
        extra: dict[str, Any] = {}
        keep_unknown(turn, KNOWN_TURN_FIELDS if "from" in turn else _OPENAI_TURN_FIELDS, extra, report, "sharegpt.turn_field")
        if who in USER_FROM:
            add(role=Role.USER, kind=MessageKind.TURN, text=text, extra=extra)
        elif who in ASSISTANT_FROM:
            add(role=Role.ASSISTANT, kind=MessageKind.TURN, text=text, extra=extra)
        elif who in SYSTEM_FROM:
            add(role=Role.SYSTEM, kind=MessageKind.HIDDEN, text=text, extra=extra)
        elif who in TOOL_CALL_FROM:
            name = _json_name(text)
            add(
                role=Role.ASSISTANT,
                kind=MessageKind.TOOL_CALL,
                text=text,
                content_type="function_call",
                tool_calls=[ToolCall(id=None, name=name, input=text)],
                extra=extra,
            )
        elif who in TOOL_RESULT_FROM:
            add(
                role=Role.TOOL,
                kind=MessageKind.TOOL_RESULT,
                text=text,
                content_type="observation",
                author_name=_json_name(text),
                # ShareGPT carries no call ids: results are never paired by position
                tool_results=[ToolResult(tool_call_id=None, name=_json_name(text), output=text)],
                extra=extra,
            )
        else:
            label = who_raw if isinstance(who_raw, str) else repr(who_raw)
            report.unknown(f"sharegpt.from:{label}")
            extra["from"] = who_raw
            add(role=_guess_role(who), kind=MessageKind.HIDDEN, text=text, author_name=who_raw if isinstance(who_raw, str) else None, extra=extra)

    title = record.get("title")
    model = record.get("model")
    url = record.get("url")
    return Conversation(
        source=Source.SHAREGPT,
        platform=platform,
        conversation_id=conv_id,
        title=title if isinstance(title, str) else None,
        model=model if isinstance(model, str) else None,
        url=url if isinstance(url, str) else None,
        messages=messages,
        meta=meta,
    )


def _json_name(text: str) -> str | None:
    """The `name` of a JSON function call / observation value, when the value is JSON."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, dict) and isinstance(value.get("name"), str):
        return value["name"]
    return None
