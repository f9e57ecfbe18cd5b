"""Open WebUI chat exports: `chat-export-<time>.json` (Settings > Chats > Export, or one chat's
Download > Export chat), a JSON array of chat rows; also the bare `chat` objects its importer takes.

A row is `{id, user_id, title, chat, updated_at, created_at, share_id, archived, pinned, meta,
folder_id}`; its `chat` is `{id, title, models, params, history: {messages: {<id>: message},
currentId}, messages: [...], tags, timestamp, files}`. `history.messages` is the whole tree
(`parentId` / `childrenIds`; regenerations and the answers of several models are siblings) and
`currentId` the leaf the user last saw; `chat.messages` repeats the active branch and is read only
when a chat has no history. `params.system` (or an old chat's `system`) is the chat's system
prompt: a HIDDEN system message above the first turn.

An assistant message's `content` is what the UI renders, with the model's work folded into
`<details>` blocks that are no visible text: `type="reasoning"` (its `> `-quoted, HTML-escaped
body) becomes Message.reasoning, `type="tool_calls"` (attributes `id`, `name`, `arguments`,
`result`, JSON-encoded and HTML-escaped) a ToolCall and its ToolResult, `type="code_interpreter"`
(the fenced code, attribute `output`) a `code_interpreter` call and result; a raw `<think>` block
(older versions) is reasoning too. `sources` (older: `citations`) are the retrieved documents:
`{source: {id, name, url}, document: [text], metadata: [{source, name, title, url}]}`, one
Citation per cited source. `files` are the uploads (and generated images): Attachments, with
data: URLs kept out of the pointer (an inline image's id is its bytes' digest,
chatetl.readers.data_url). Unknown fields are drift, kept in meta / extra.

Layout researched from open-webui/open-webui (backend/open_webui/utils/middleware.py
`serialize_content_blocks`, models/chats.py, the Citations component), the export examples of
yetanotherchris/openwebui-importer (examples/webui-json.json) and the chat types of
eltanno/slc-ai-tutor-app-modernized and warshanks/open-webui-developer-toolkit (docs/citations.md).
"""

from __future__ import annotations

import html
import re
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

import orjson

from chatetl.model import (
    Attachment,
    Citation,
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolCall,
    ToolResult,
)
from chatetl.readers.convert import json_text, raw_bytes
from chatetl.readers.data_url import described, markdown_images
from chatetl.readers.fields import expect_object, keep_unknown, known_role, list_or_empty, object_or_empty, text_or_none
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time
from chatetl.readers.tree import reply_kind

PLATFORM = "open-webui"

KNOWN_ROW_FIELDS = frozenset(
    {"id", "user_id", "title", "chat", "updated_at", "created_at", "share_id", "archived", "pinned", "meta", "folder_id"}
)
KNOWN_CHAT_FIELDS = frozenset(
    {"id", "title", "models", "params", "history", "messages", "tags", "timestamp", "files", "system", "userId"}
)
KNOWN_HISTORY_FIELDS = frozenset({"messages", "currentId"})
KNOWN_MESSAGE_FIELDS = frozenset(
    {
        "id", "parentId", "childrenIds", "role", "content", "timestamp", "models", "model", "modelName", "modelIdx",
        "userContext", "done", "error", "statusHistory", "sources", "citations", "files", "usage", "info",
        "lastSentence", "annotation", "followUps", "code_executions", "merged", "selectedModelId", "arena", "embeds",
        "favorite", "feedbackId", "originalContent", "output",
    }
)
# message fields kept in Message.extra as they are (known, not mapped onto the model)
_EXTRA_FIELDS = ("modelName", "error", "usage", "info", "statusHistory", "annotation", "followUps", "code_executions", "merged")
ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}

# <details type="reasoning|tool_calls|code_interpreter" ...>...</details>: the model's work, not visible text
# (found with str.find, not one regex over the whole answer: a lazy `.*?` walks every character of it)
_DETAILS_TYPE = re.compile(r'\btype="(reasoning|tool_calls|code_interpreter)"')
_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_OPEN, _CLOSE = "<details", "</details>"
_THINK = re.compile(r"^\s*<(think|thinking|reason)>(.*?)</\1>\s*", re.DOTALL)
_FENCE = re.compile(r"^\s*```[^\n]*\n(.*?)\n?```\s*$", re.DOTALL)


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one record of file `name` (a chat row, or a bare chat object) becomes a Conversation."""
    return lambda record, where: conversation_from_open_webui(expect_object(record, "a chat object"), report, file=name, where=where)


def conversation_from_open_webui(record: dict[str, Any], report: ReadReport, file: str = "", where: str = "") -> Conversation:
    """One Open WebUI chat row (or bare chat) as a Conversation (parent pointers set, branches not yet resolved)."""
    meta: dict[str, Any] = {}
    chat, row = _chat_and_row(record, meta, report)
    history, raw_messages = _history(chat, meta, report)
    conv_id = text_or_none(row.get("id")) or text_or_none(chat.get("id"))
    place = f"{where} (conversation {conv_id})" if where and conv_id else (where or f"conversation {conv_id}")
    items, flat = _items(chat, raw_messages)
    if conv_id is None:
        conv_id = _derived_id(items)

    messages: list[Message] = []
    for index, (key, raw) in enumerate(items):
        label = f"message {key}" if key is not None else f"message {index}"
        if not isinstance(raw, dict):
            report.error(file, f"{place} {label}", f"message is not an object (got {type(raw).__name__})", raw=raw_bytes(raw))
            continue
        messages.append(message_from_open_webui(raw, report, fallback_id=key if key is not None else f"{conv_id}:{index}"))
    _link_parents(messages, items, flat)
    _add_system(chat, conv_id, messages)
    models = _keep_row_and_chat_fields(row, chat, meta)

    current = text_or_none(history.get("currentId"))
    return Conversation.fast(
        source=Source.OPEN_WEBUI,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=text_or_none(row.get("title")) or text_or_none(chat.get("title")),
        created_at=parse_time(row.get("created_at")) or parse_time(chat.get("timestamp")),
        updated_at=parse_time(row.get("updated_at")),
        model=models[0] if models else None,
        url=None,  # a self-hosted server: no address the export names
        current_node=current,
        messages=messages,
        meta=meta,
    )


def _chat_and_row(record: dict[str, Any], meta: dict[str, Any], report: ReadReport) -> tuple[dict[str, Any], dict[str, Any]]:
    """(chat, row) of a chat row (`{"chat": {...}, ...}`), or of a bare chat (no row); the fields
    of each this reader does not know into `meta` (counted)."""
    if "chat" in record:
        chat = record["chat"]
        if not isinstance(chat, dict):
            raise ValueError(f"`chat` is not an object (got {type(chat).__name__})")
        row = record
        keep_unknown(row, KNOWN_ROW_FIELDS, meta, report, "open-webui.row_field")
    else:
        chat, row = record, {}
    chat_meta: dict[str, Any] = {}
    keep_unknown(chat, KNOWN_CHAT_FIELDS, chat_meta, report, "open-webui.chat_field")
    if chat_meta:
        meta["chat"] = chat_meta
    return chat, row


def _history(chat: dict[str, Any], meta: dict[str, Any], report: ReadReport) -> tuple[dict[str, Any], dict[str, Any]]:
    """(history, its messages by id) of a chat (both empty where it has none); the history's fields
    this reader does not know into `meta["history"]` (counted)."""
    history = chat.get("history")
    if history is not None and not isinstance(history, dict):
        raise ValueError(f"`history` is not an object (got {type(history).__name__})")
    history = history or {}
    raw_messages = history.get("messages")
    if raw_messages is None:
        raw_messages = {}
    if not isinstance(raw_messages, dict):
        raise ValueError(f"`history.messages` is not an object (got {type(raw_messages).__name__})")  # noqa: TRY004 (convert_records reports ValueErrors)
    history_meta: dict[str, Any] = {}
    keep_unknown(history, KNOWN_HISTORY_FIELDS, history_meta, report, "open-webui.history_field")
    if history_meta:
        meta["history"] = history_meta
    return history, raw_messages


def _items(chat: dict[str, Any], raw_messages: dict[str, Any]) -> tuple[list[tuple[Any, Any]], bool]:
    """The chat's (id, message) pairs from its history; where it has none (an old chat), its flat
    list is the conversation, in its order (ids None; the flag says so)."""
    if raw_messages:
        return list(raw_messages.items()), False
    flat_messages = chat.get("messages")
    if flat_messages is not None and not isinstance(flat_messages, list):
        raise ValueError(f"`messages` is not a list (got {type(flat_messages).__name__})")
    return [(None, m) for m in flat_messages or []], True


def _add_system(chat: dict[str, Any], conv_id: str, messages: list[Message]) -> None:
    """The chat's system prompt (`params.system`, else `system`) as a hidden root above every other root."""
    system = text_or_none(object_or_empty(chat, "params").get("system"))
    system = system or text_or_none(chat.get("system"))
    if system is not None:
        system_id = f"{conv_id}:system"
        for m in messages:
            if m.parent_id is None:
                m.parent_id = system_id
        messages.insert(0, Message.fast(message_id=system_id, role=Role.SYSTEM, kind=MessageKind.HIDDEN, text=system, content_type="system"))


def _keep_row_and_chat_fields(row: dict[str, Any], chat: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    """The row's and the chat's fields kept as meta (owner, sharing, folder, flags, tags, the row's
    meta, the run's params, the models beyond the first, files); the chat's models."""
    for key, name in (("user_id", "user_id"), ("share_id", "share_id"), ("folder_id", "folder_id")):
        if text_or_none(row.get(key)):
            meta[name] = row[key]
    for key in ("archived", "pinned"):
        if row.get(key) is True:
            meta[key] = True
    tags = _tags(chat.get("tags"), row.get("meta"))
    if tags:
        meta["tags"] = tags
    row_meta = row.get("meta")
    if isinstance(row_meta, dict) and any(k != "tags" and v not in (None, "", [], {}) for k, v in row_meta.items()):
        meta["row_meta"] = {k: v for k, v in row_meta.items() if k != "tags"}
    params = chat.get("params")
    if isinstance(params, dict):
        kept = {k: v for k, v in params.items() if k != "system" and v not in (None, "", {}, [])}
        if kept:
            meta["params"] = kept
    models = [m for m in chat.get("models") or [] if isinstance(m, str) and m]
    if len(models) > 1:
        meta["models"] = models
    if chat.get("files"):
        meta["files"] = chat["files"]
    return models


def _derived_id(items: list[tuple[Any, Any]]) -> str:
    """A bare chat's `id` is often "": a stable id from its first message's id (a UUID of its own)."""
    for key, raw in items:
        first = key if isinstance(key, str) and key else (raw.get("id") if isinstance(raw, dict) else None)
        if isinstance(first, str) and first:
            return str(uuid.uuid5(uuid.NAMESPACE_URL, f"open-webui:{first}"))
    raise ValueError("chat has no id and no messages to derive one from")


def _link_parents(messages: list[Message], items: list[tuple[Any, Any]], flat: bool) -> None:
    """`parentId` where a message has one; else the parent whose `childrenIds` names it; a flat
    list without pointers is chained in its order."""
    ids = {m.message_id for m in messages}
    parent_of: dict[str, str] = {}
    for _key, raw in items:
        if isinstance(raw, dict) and isinstance(raw.get("id"), str):
            for child in raw.get("childrenIds") or ():
                if isinstance(child, str):
                    parent_of.setdefault(child, raw["id"])
    has_pointers = any(isinstance(raw, dict) and "parentId" in raw for _k, raw in items)
    previous: str | None = None
    for m in messages:
        if m.parent_id is None and m.message_id in parent_of and parent_of[m.message_id] in ids:
            m.parent_id = parent_of[m.message_id]
        if flat and not has_pointers and m.parent_id is None and previous is not None:
            m.parent_id = previous
        previous = m.message_id


def _tags(chat_tags: Any, row_meta: Any) -> list[str]:
    out: list[str] = []
    sources = [chat_tags, row_meta.get("tags") if isinstance(row_meta, dict) else None]
    for tags in sources:
        for tag in tags if isinstance(tags, list) else []:
            name = tag.get("name") if isinstance(tag, dict) else tag
            if isinstance(name, str) and name and name not in out:
                out.append(name)
    return out


def message_from_open_webui(raw: dict[str, Any], report: ReadReport, fallback_id: str) -> Message:
    """One `history.messages` value as a canonical Message."""
    mid = text_or_none(raw.get("id")) or fallback_id
    extra: dict[str, Any] = {}
    role = known_role(ROLES, raw.get("role"), report, drift="open-webui.role", extra=extra, keep_as="raw_role", default=Role.ASSISTANT)
    for key in _EXTRA_FIELDS:
        if raw.get(key) not in (None, "", [], {}, False):
            extra[key] = raw[key]
    keep_unknown(raw, KNOWN_MESSAGE_FIELDS, extra, report, "open-webui.message_field")

    content = raw.get("content")
    text = content if isinstance(content, str) else json_text(content)
    reasoning: list[str] = []
    tool_calls: list[ToolCall] = []
    tool_results: list[ToolResult] = []
    content_types: list[str] = []
    if role is Role.ASSISTANT and ("<details" in text or "<think" in text or "<reason" in text):
        # (folded into lists of their own when `output` says the same)
        folded: tuple[list[str], list[ToolCall], list[ToolResult]] = ([], [], []) if _has_output(raw) else (reasoning, tool_calls, tool_results)
        text = _fold_details(text, *folded, content_types)
    if role is Role.ASSISTANT and _has_output(raw):
        shown = _read_output(raw["output"], reasoning, tool_calls, tool_results, extra, report)
        text = text if shown is None else shown
        content_types.append("output")
    text, pictured = markdown_images(text)
    visible = text.strip()

    joined_reasoning = "\n\n".join(reasoning) or None
    attachments = _attachments(raw.get("files")) + pictured
    kind, visible = reply_kind(role, visible, attachments, tool_calls, joined_reasoning, extra)

    return Message.fast(
        message_id=mid,
        parent_id=text_or_none(raw.get("parentId")),
        role=role,
        kind=kind,
        text=visible,
        created_at=parse_time(raw.get("timestamp")),
        model=text_or_none(raw.get("model")) if role is Role.ASSISTANT else None,
        content_type=",".join(["text", *content_types]),
        reasoning=joined_reasoning,
        tool_calls=tool_calls,
        tool_results=tool_results,
        citations=_citations(raw.get("sources") if raw.get("sources") is not None else raw.get("citations")),
        attachments=attachments,
        extra=extra,
    )


def _has_output(raw: dict[str, Any]) -> bool:
    return isinstance(raw.get("output"), list) and bool(raw["output"])


def _read_output(items: list[Any], reasoning: list[str], calls: list[ToolCall], results: list[ToolResult], extra: dict[str, Any],
                 report: ReadReport) -> str | None:
    """A newer message's `output` items (what `content` renders as text and `<details>` blocks),
    read as they are: `message` items are the visible text (None when there is none), `reasoning`
    items the reasoning (their full `content`, else their `summary`), `function_call` /
    `function_call_output` the tool calls and their results paired by `call_id`, Open WebUI's code
    interpreter a call and its output. Other `open_webui:*` items are its own UI state (skipped);
    unknown items are drift, kept in `extra["output_items"]`."""
    texts: list[str] = []
    names: dict[str, str | None] = {}
    for item in items:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            texts += _item_texts(item.get("content"))
        elif kind == "reasoning":
            thought = "\n\n".join(_item_texts(item.get("content")) or _item_texts(item.get("summary")))
            if thought.strip():
                reasoning.append(thought.strip())
        elif kind == "function_call":
            call_id, name = text_or_none(item.get("call_id")) or text_or_none(item.get("id")), text_or_none(item.get("name"))
            arguments = item.get("arguments")
            calls.append(ToolCall.fast(id=call_id, name=name, input=arguments if isinstance(arguments, str) else json_text(arguments)))
            if call_id:
                names[call_id] = name
        elif kind == "function_call_output":
            call_id = text_or_none(item.get("call_id"))
            output = item.get("output")
            text = output if isinstance(output, str) else "\n".join(_item_texts(output)) if isinstance(output, list) else json_text(output)
            results.append(ToolResult.fast(tool_call_id=call_id, name=names.get(call_id) if call_id else None, output=text))
        elif kind == "open_webui:code_interpreter":
            call_id = f"code_interpreter:{len(calls)}"
            code = item.get("code")
            calls.append(ToolCall.fast(id=call_id, name="code_interpreter", input=code if isinstance(code, str) else json_text(code)))
            if item.get("output") is not None:
                results.append(ToolResult.fast(tool_call_id=call_id, name="code_interpreter", output=json_text(item["output"])))
        elif not (isinstance(kind, str) and kind.startswith("open_webui:")):
            report.unknown(f"open-webui.output:{kind if isinstance(kind, str) else type(item).__name__}")
            extra.setdefault("output_items", []).append(item)
    return "\n\n".join(t for t in texts if t.strip()) if texts else None


def _item_texts(parts: Any) -> list[str]:
    """The texts of an output item's parts (`output_text`, `reasoning_text`, `summary_text`, `input_text` ...)."""
    if isinstance(parts, str):
        return [parts]
    return [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)] if isinstance(parts, list) else []


def _fold_details(text: str, reasoning: list[str], calls: list[ToolCall], results: list[ToolResult], types: list[str]) -> str:
    """Take the `<details>` blocks (and a leading `<think>`) out of an answer's content, into
    reasoning, tool calls and results; what remains is the visible text."""
    think = _THINK.match(text)
    if think:
        reasoning.append(think.group(2).strip())
        types.append("reasoning")
        text = text[think.end():]
    if _OPEN not in text:
        return text
    kept: list[str] = []
    pos = 0
    # Each scan's finding is remembered, so no later opening re-scans the same stretch (openings come in
    # order): the next ">" and "</details>" after a place stay the next ones for any later place before
    # them, and within one tag a type not found is not found again.
    gt = close = untyped_to = -1
    while (start := text.find(_OPEN, pos)) >= 0:
        if gt < start:
            gt = text.find(">", start)
            if gt < 0:
                break
        tag_end = gt
        if close < tag_end:
            close = text.find(_CLOSE, tag_end)
            if close < 0:
                break
        kind = None
        if close >= 0 and text[start + len(_OPEN)] in " \t\n" and tag_end != untyped_to:
            kind = _DETAILS_TYPE.search(text, start, tag_end)
            if kind is None:
                untyped_to = tag_end
        if kind is None:  # no block of the model's work (or one never closed): it stays text
            kept.append(text[pos:start + len(_OPEN)])
            pos = start + len(_OPEN)
            continue
        kept.append(text[pos:start])
        attrs = {k: html.unescape(v) for k, v in _ATTRIBUTE.findall(text, start, tag_end)}
        _fold_block(kind.group(1), attrs, text[tag_end + 1:close], reasoning, calls, results, types)
        pos = close + len(_CLOSE)
        while pos < len(text) and text[pos] in " \t":
            pos += 1
        if pos < len(text) and text[pos] == "\n":
            pos += 1
    kept.append(text[pos:])
    return "".join(kept)


def _fold_block(kind: str, attrs: dict[str, str], body: str, reasoning: list[str], calls: list[ToolCall], results: list[ToolResult],
                types: list[str]) -> None:
    summary = body.find("<summary>")
    if summary >= 0 and (summary_end := body.find("</summary>", summary)) >= 0:
        body = body[:summary] + body[summary_end + len("</summary>"):]
    body = body.strip("\n")
    if kind not in types:
        types.append(kind)
    if kind == "reasoning":
        lines = html.unescape(body).splitlines()
        thought = "\n".join(line[2:] if line.startswith("> ") else line.removeprefix(">") for line in lines).strip()
        if thought:
            reasoning.append(thought)
    elif kind == "tool_calls":
        call_id = text_or_none(attrs.get("id"))
        name = text_or_none(attrs.get("name"))
        calls.append(ToolCall.fast(id=call_id, name=name, input=json_text(_decoded(attrs.get("arguments")))))
        if "result" in attrs:
            results.append(ToolResult.fast(tool_call_id=call_id, name=name, output=json_text(_decoded(attrs["result"]))))
    else:  # code_interpreter: the code as a fenced block, its output an attribute
        code = html.unescape(body)
        fence = _FENCE.match(code)
        call_id = f"code_interpreter:{len(calls)}"
        calls.append(ToolCall.fast(id=call_id, name="code_interpreter", input=fence.group(1) if fence else code.strip()))
        if "output" in attrs:
            results.append(ToolResult.fast(tool_call_id=call_id, name="code_interpreter", output=json_text(_decoded(attrs["output"]))))


def _decoded(value: str | None) -> Any:
    """An attribute Open WebUI wrote as `html.escape(json.dumps(x))` (already unescaped): x. Read
    by orjson: what it refuses (an escaped lone surrogate, which no table can write; NaN) is kept
    as the text it was written as."""
    if value is None or value == "":
        return ""
    try:
        return orjson.loads(value)
    except (orjson.JSONDecodeError, RecursionError):
        return value


def _domain(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return urlparse(url).hostname or None
    except ValueError:
        return None


def _is_url(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(("http://", "https://"))


def _citations(raw: Any) -> list[Citation]:
    """`sources`: one Citation per cited source (documents of one source id are one source, as
    the UI groups them), the first document's text as the snippet."""
    out: list[Citation] = []
    seen: set[str] = set()
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        source = object_or_empty(item, "source")
        documents = list_or_empty(item, "document")
        metadata = list_or_empty(item, "metadata")
        for index, document in enumerate(documents or [None]):
            meta = metadata[index] if index < len(metadata) and isinstance(metadata[index], dict) else {}
            ident = meta.get("source") or source.get("id") or source.get("url") or source.get("name")
            key = str(ident) if ident is not None else f"{id(item)}:{index}"
            if key in seen:
                continue
            seen.add(key)
            url = next((u for u in (meta.get("url"), source.get("url"), meta.get("source"), source.get("name")) if _is_url(u)), None)
            title = text_or_none(meta.get("title")) or text_or_none(meta.get("name")) or text_or_none(source.get("name"))
            snippet = document if isinstance(document, str) and document else None
            if url or title or snippet:
                out.append(Citation.fast(title=title, url=url, snippet=snippet, source=_domain(url) or text_or_none(source.get("type"))))
    return out


def _attachments(raw: Any) -> list[Attachment]:
    out: list[Attachment] = []
    for f in raw if isinstance(raw, list) else []:
        if not isinstance(f, dict):
            continue
        inner = object_or_empty(f, "file")
        fmeta = object_or_empty(inner, "meta")
        url = text_or_none(f.get("url"))
        mime = text_or_none(fmeta.get("content_type")) or text_or_none(f.get("content_type"))
        size = f.get("size") if isinstance(f.get("size"), int) else fmeta.get("size")
        inline = None
        if url is not None and url.startswith("data:"):
            # its id: the bytes' digest, by which the attachment stage stores them
            inline, decoded_size, stated = described(url)
            mime = mime or stated
            size = decoded_size if inline is not None or size is None else size
            url = None  # the bytes themselves are no pointer (and would bloat every table row)
        data = object_or_empty(inner, "data")
        kind = "image" if f.get("type") == "image" or (mime or "").startswith("image/") else "file"
        out.append(
            Attachment.fast(
                kind=kind,
                id=text_or_none(f.get("id")) or text_or_none(inner.get("id")) or inline,
                name=text_or_none(f.get("name")) or text_or_none(fmeta.get("name")) or text_or_none(inner.get("filename")),
                mime_type=mime,
                size=size if isinstance(size, int) and not isinstance(size, bool) else None,
                pointer=url,
                text=text_or_none(data.get("content")),
            )
        )
    return out
