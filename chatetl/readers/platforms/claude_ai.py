"""Claude.ai account exports: conversations.json (array), conversations.jsonl, or one conversation object.

Every conversation holds a flat `chat_messages` list whose `parent_message_uuid`
pointers make a tree (retries are siblings under one parent). Every message
becomes a Message; the shared resolver picks the active branch (the latest leaf
walked back, or `current_leaf_message_uuid` where an API-shaped file has it).

Older exports (2023-24) carry no parent pointers at all, and their array is not always in time
order: the messages are ordered by `created_at` (stable: ties, and undated messages after the one
before them, keep their array order) and chained. Their messages have only `text`, no `content[]`,
and an assistant's text keeps the model's inline markup, which the app never showed as chat text:
`<antThinking>…</antThinking>` is reasoning, and `<antArtifact identifier=… type=… title=…
language=…>…</antArtifact>` an artifact (shown in its own panel), kept as a tool call named
`artifacts` whose input is the newer exports' artifact input (`{"id", "type", "title",
"language", "content"}`), so both look the same downstream. The same markup found in a newer
export's text blocks is read the same way.

Content blocks: `text` (visible text + citations), `thinking` (reasoning),
`tool_use` (tool calls, artifacts included), `tool_result` (tool output, with
`knowledge` items as citations). Unknown blocks are kept raw in Message.extra,
counted as drift and never shown as text.

Researched: the official export (conversations.json) as read by Sinity/polylogue
(docs/providers/claude-ai.md) and vana-com/data-connectors (connectors/anthropic/
claude-export-ingest.cjs: "Export messages carry no `index`; order by created_at, stable on
ties"); the inline artifact markup as public artifact extractors match it (`<antArtifact ...
title="..." language="...">...</antArtifact>`, attributes in any order).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

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
from chatetl.readers.fields import expect_object, keep_unknown, known_role, object_or_empty, text_or_none
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_iso_time
from chatetl.readers.tree import turn_kind

PLATFORM = "claude-ai"
ROOT_PARENT = "00000000-0000-4000-8000-000000000000"

KNOWN_CONVERSATION_FIELDS = frozenset(
    {
        "uuid", "name", "summary", "created_at", "updated_at", "account", "chat_messages",
        # the claude.ai API shape (browser-extension exports of one conversation)
        "model", "current_leaf_message_uuid", "settings", "is_starred", "project_uuid", "project",
        "is_temporary", "platform",
    }
)
# conversation fields copied into Conversation.meta as they are
_META_FIELDS = ("settings", "is_starred", "is_temporary", "project")
KNOWN_MESSAGE_FIELDS = frozenset(
    {
        "uuid", "text", "content", "sender", "created_at", "updated_at", "attachments", "files",
        "parent_message_uuid", "index", "files_v2", "sync_sources", "stop_reason", "truncated", "input_mode",
    }
)
# message fields kept in Message.extra as they are (known, not mapped onto the model)
_EXTRA_FIELDS = ("index", "stop_reason", "truncated", "input_mode", "sync_sources", "updated_at")
SENDERS = {"human": Role.USER, "user": Role.USER, "assistant": Role.ASSISTANT}
ARTIFACT_TOOL = "artifacts"  # the newer exports' tool_use name for artifacts; older inline ones get it too
# an element of the older inline markup, up to its end tag (or the end of a text cut short)
_ANT_OPEN = re.compile(r"<(antThinking|antArtifact)\b([^>]*)>")
_ANT_CLOSE = {tag: re.compile(rf"</{tag}\s*>") for tag in ("antThinking", "antArtifact")}
_ATTRIBUTE = re.compile(r"""([A-Za-z_][\w:.-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')""")
# the newer exports' artifact input names the identifier `id`
_ARTIFACT_FIELDS = {"identifier": "id"}
_BLANK_LINES = re.compile(r"\n[ \t]*\n(?:[ \t]*\n)+")
_MIN_TIME = datetime.min.replace(tzinfo=UTC)


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one record of file `name` becomes a Conversation."""
    return lambda record, where: conversation_from_claude_ai(expect_object(record, "a conversation object"), report, file=name, where=where)


def conversation_from_claude_ai(record: dict[str, Any], report: ReadReport, file: str = "", where: str = "") -> Conversation:
    """One Claude.ai conversation object as a Conversation (parent pointers set, branches not yet resolved)."""
    conv_id = record.get("uuid")
    if not isinstance(conv_id, str) or not conv_id:
        raise ValueError("conversation has no uuid")
    raw_messages = record.get("chat_messages")
    if raw_messages is None and "chat_messages" in record:
        raw_messages = []
    if not isinstance(raw_messages, list):
        raise ValueError(f"`chat_messages` is not a list (got {type(raw_messages).__name__})")  # noqa: TRY004 - readers' convention (fields.py)

    meta: dict[str, Any] = {}
    if isinstance(record.get("summary"), str) and record["summary"]:
        meta["summary"] = record["summary"]
    account = record.get("account")
    if isinstance(account, dict) and isinstance(account.get("uuid"), str):
        meta["account_uuid"] = account["uuid"]
    project = record.get("project")
    project_uuid = record.get("project_uuid") or (project.get("uuid") if isinstance(project, dict) else None)
    if isinstance(project_uuid, str) and project_uuid:
        meta["project_uuid"] = project_uuid
    for key in _META_FIELDS:
        if record.get(key) is not None:
            meta[key] = record[key]
    keep_unknown(record, KNOWN_CONVERSATION_FIELDS, meta, report, "claude-ai.conversation_field")

    messages: list[Message] = []
    place = f"{where} (conversation {conv_id})" if where else f"conversation {conv_id}"
    for index, raw in enumerate(raw_messages):
        if raw is None:  # a hole the export left in the list: nothing lost beside it
            report.warn(file, f"{place} message {index}", "message is null: skipped")
            continue
        if not isinstance(raw, dict):
            report.error(file, f"{place} message {index}", f"message is not an object (got {type(raw).__name__})", raw=raw_bytes(raw))
            continue
        messages.append(message_from_claude_ai(raw, report, fallback_id=f"{conv_id}:{index}"))

    # Older exports carry no parent pointers at all: the conversation is the messages in time order.
    if not any("parent_message_uuid" in raw for raw in raw_messages if isinstance(raw, dict)):
        messages = _in_time_order(messages)
        for prev, msg in itertools.pairwise(messages):
            msg.parent_id = prev.message_id

    leaf = text_or_none(record.get("current_leaf_message_uuid"))
    # (fast: every value below is checked to be of its field's kind, as pydantic would take it)
    return Conversation.fast(
        source=Source.CLAUDE_AI,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=text_or_none(record.get("name")),
        created_at=parse_iso_time(record.get("created_at")),
        updated_at=parse_iso_time(record.get("updated_at")),
        model=text_or_none(record.get("model")),  # the official export has none
        url=f"https://claude.ai/chat/{conv_id}",
        current_node=leaf if leaf != ROOT_PARENT else None,
        messages=messages,
        meta=meta,
    )


def message_from_claude_ai(raw: dict[str, Any], report: ReadReport, fallback_id: str) -> Message:
    """One `chat_messages[]` item as a canonical Message."""
    mid = raw.get("uuid")
    if not isinstance(mid, str) or not mid:
        mid = fallback_id
    extra: dict[str, Any] = {}
    role = known_role(SENDERS, raw.get("sender"), report, drift="claude-ai.sender", extra=extra, keep_as="raw_sender", default=Role.ASSISTANT)
    for key in _EXTRA_FIELDS:
        if raw.get(key) is not None:
            extra[key] = raw[key]
    keep_unknown(raw, KNOWN_MESSAGE_FIELDS, extra, report, "claude-ai.message_field")

    parent = text_or_none(raw.get("parent_message_uuid"))
    parent_id = parent if parent != ROOT_PARENT else None

    blocks = _Blocks(raw.get("content"), report)
    reasoning, summaries, tool_calls, tool_results = blocks.reasoning, blocks.summaries, blocks.tool_calls, blocks.tool_results
    block_types, unknown_blocks = blocks.types, blocks.unknown

    visible = "\n\n".join(t.strip("\r\n") for t in blocks.texts if t.strip())
    fallback = raw.get("text")
    if not visible.strip() and not blocks.other and isinstance(fallback, str):
        visible = fallback  # older exports: only `text`; newer: `text` repeats the text blocks
        if not block_types:
            block_types.append("text")
    if role is Role.ASSISTANT and "<ant" in visible:  # older exports' inline reasoning and artifacts
        visible = _take_inline_markup(visible, reasoning, tool_calls, block_types)

    if unknown_blocks:
        extra["unknown_blocks"] = unknown_blocks
    if summaries:
        extra["thinking_summaries"] = summaries

    joined_reasoning = "\n\n".join(reasoning) or None
    attachments = _attachments(raw)
    kind, text, role = _kind_text_role(role, visible, attachments, tool_calls, tool_results, joined_reasoning, extra)

    return Message.fast(
        message_id=mid,
        parent_id=parent_id,
        role=role,
        kind=kind,
        text=text,
        created_at=parse_iso_time(raw.get("created_at")),
        author_name=tool_results[0].name if kind is MessageKind.TOOL_RESULT else None,
        content_type=",".join(block_types) or None,
        reasoning=joined_reasoning,
        tool_calls=tool_calls,
        tool_results=tool_results,
        citations=blocks.citations,
        attachments=attachments,
        extra=extra,
    )


class _Blocks:
    """What a message's `content` blocks hold (read in one pass, into local lists: the hot path)."""

    __slots__ = ("citations", "other", "reasoning", "summaries", "texts", "tool_calls", "tool_results", "types", "unknown")

    def __init__(self, content: Any, report: ReadReport) -> None:
        texts: list[str] = []
        reasoning: list[str] = []
        summaries: list[str] = []
        tool_calls: list[ToolCall] = []
        tool_results: list[ToolResult] = []
        citations: list[Citation] = []
        unknown: list[Any] = []
        types: list[str] = []  # the block types, in the order they first appear
        other = False  # thinking / tool blocks seen (the `text` field is then no fallback)
        for block in content if isinstance(content, list) else []:
            btype = block.get("type") if isinstance(block, dict) else None
            if isinstance(btype, str) and btype not in types:
                types.append(btype)
            if btype == "text":
                if isinstance(block.get("text"), str):
                    texts.append(block["text"])
                citations.extend(_text_citations(block.get("citations")))
            elif btype == "thinking":
                other = True
                if isinstance(block.get("thinking"), str) and block["thinking"]:
                    reasoning.append(block["thinking"])
                summaries.extend(_summaries(block))
            elif btype == "tool_use":
                other = True
                tool_calls.append(_tool_call(block))
            elif btype == "tool_result":
                other = True
                result, knowledge = _tool_result(block)
                tool_results.append(result)
                citations.extend(knowledge)
            else:
                report.unknown(f"claude-ai.block:{btype if isinstance(btype, str) else type(block).__name__}")
                unknown.append(block)
        self.texts, self.reasoning, self.summaries, self.types, self.unknown = texts, reasoning, summaries, types, unknown
        self.tool_calls, self.tool_results, self.citations, self.other = tool_calls, tool_results, citations, other


def _summaries(block: dict[str, Any]) -> list[str]:
    """A thinking block's summaries."""
    return [s["summary"] for s in block.get("summaries") or [] if isinstance(s, dict) and isinstance(s.get("summary"), str)]


def _kind_text_role(role: Role, visible: str, attachments: list[Attachment], tool_calls: list[ToolCall], tool_results: list[ToolResult],
                    reasoning: str | None, extra: dict[str, Any]) -> tuple[MessageKind, str, Role]:
    """(kind, text, role) of a message: a turn with visible text; a user's message without text
    by the empty-message rule; else its tool calls, its tool results (sent by the tool), its
    reasoning; else hidden and empty."""
    if visible.strip():
        return MessageKind.TURN, visible, role
    if role is Role.USER and not tool_results:  # no text: a turn only with an attachment (the empty-message rule)
        return turn_kind(visible, attachments, extra), visible, role
    if tool_calls:
        return MessageKind.TOOL_CALL, "\n".join(c.input for c in tool_calls), role
    if tool_results:
        return MessageKind.TOOL_RESULT, "\n\n".join(r.output for r in tool_results if r.output), Role.TOOL
    if reasoning:
        return MessageKind.REASONING, reasoning, role
    extra["empty"] = True
    return MessageKind.HIDDEN, "", role  # an empty assistant message: nothing anyone saw


def _in_time_order(messages: list[Message]) -> list[Message]:
    """Messages by `created_at`, stable: ties keep their array order, and an undated message stays
    right after the message before it (the time it sorts by is that one's)."""
    keys: list[datetime] = []
    last = _MIN_TIME
    for m in messages:
        last = m.created_at or last
        keys.append(last)
    if all(a <= b for a, b in itertools.pairwise(keys)):
        return messages
    order = sorted(range(len(messages)), key=keys.__getitem__)
    return [messages[i] for i in order]


def _take_inline_markup(text: str, reasoning: list[str], tool_calls: list[ToolCall], block_types: list[str]) -> str:
    """`text` without its `<antThinking>` and `<antArtifact>` elements: their bodies go to
    `reasoning` and (as `artifacts` tool calls) to `tool_calls`, their tag names to `block_types`."""

    def take(tag: str, attributes: str, body: str) -> str:
        if tag not in block_types:
            block_types.append(tag)
        if tag == "antThinking":
            if body.strip():
                reasoning.append(body.strip())
            return "\n\n"
        artifact: dict[str, str] = {}
        for attr in _ATTRIBUTE.finditer(attributes):
            value = attr.group(2) if attr.group(2) is not None else attr.group(3)
            artifact[_ARTIFACT_FIELDS.get(attr.group(1), attr.group(1))] = value
        artifact["content"] = body.strip("\r\n")
        tool_calls.append(ToolCall.fast(id=None, name=ARTIFACT_TOOL, input=json_text(artifact)))
        return "\n\n"

    # An element runs from its opening tag to its closing one, or (never closed) to the end. Openings are
    # looked for only up to the last ">" (past it none can end), so no "<antThinking" re-scans the text.
    kept: list[str] = []
    pos, last = 0, text.rfind(">") + 1
    while opening := _ANT_OPEN.search(text, pos, last):
        closing = _ANT_CLOSE[opening.group(1)].search(text, opening.end())
        body_end, end = (closing.start(), closing.end()) if closing else (len(text), len(text))
        kept += [text[pos:opening.start()], take(opening.group(1), opening.group(2), text[opening.end():body_end])]
        pos = end
    if not kept:
        return text
    kept.append(text[pos:])
    return _BLANK_LINES.sub("\n\n", "".join(kept)).strip()


def _tool_call(block: dict[str, Any]) -> ToolCall:
    return ToolCall.fast(
        id=text_or_none(block.get("id")),
        name=text_or_none(block.get("name")),
        input=json_text(block.get("input")),  # artifacts keep input.title / input.content here
    )


def _domain(url: Any) -> str | None:
    if not isinstance(url, str) or not url:
        return None
    try:
        return urlparse(url).hostname or None
    except ValueError:
        return None


def _tool_result(block: dict[str, Any]) -> tuple[ToolResult, list[Citation]]:
    content = block.get("content")
    citations: list[Citation] = []
    if isinstance(content, list):
        parts: list[str] = []
        for item in content:
            if not isinstance(item, dict):
                if isinstance(item, str):
                    parts.append(item)
                continue
            if item.get("type") == "knowledge":
                metadata = object_or_empty(item, "metadata")
                title, url, text = text_or_none(item.get("title")), text_or_none(item.get("url")), text_or_none(item.get("text"))
                citations.append(
                    Citation.fast(title=title, url=url, snippet=text, source=text_or_none(metadata.get("site_domain")) or _domain(url))
                )
                parts.append("\n".join(p for p in (title, url, text) if p))
            elif isinstance(item.get("text"), str):
                parts.append(item["text"])
            else:
                parts.append(json_text(item))
        output = "\n\n".join(p for p in parts if p)
    else:
        output = json_text(content)
    result = ToolResult.fast(
        tool_call_id=text_or_none(block.get("tool_use_id")),
        name=text_or_none(block.get("name")),
        output=output,
        is_error=block.get("is_error") is True,
    )
    return result, citations


def _text_citations(raw: Any) -> list[Citation]:
    """Citations on a text block; their shape varies: {url, title} or {details: {url, ...}}."""
    out: list[Citation] = []
    for c in raw if isinstance(raw, list) else []:
        if not isinstance(c, dict):
            continue
        details = object_or_empty(c, "details")
        url = text_or_none(c.get("url")) or text_or_none(details.get("url"))
        title = text_or_none(c.get("title")) or text_or_none(details.get("title"))
        snippet = text_or_none(c.get("cited_text")) or text_or_none(c.get("text")) or text_or_none(details.get("cited_text"))
        metadata = object_or_empty(c, "metadata")
        if url or title or snippet:
            out.append(Citation.fast(title=title, url=url, snippet=snippet, source=text_or_none(metadata.get("site_domain")) or _domain(url)))
    return out


def _attachments(raw: dict[str, Any]) -> list[Attachment]:
    out: list[Attachment] = []
    for a in raw.get("attachments") or []:
        if not isinstance(a, dict):
            continue
        size = a.get("file_size")
        out.append(
            Attachment.fast(
                kind="file",
                id=text_or_none(a.get("id")),
                name=text_or_none(a.get("file_name")),
                mime_type=text_or_none(a.get("file_type")),
                size=size if isinstance(size, int) and not isinstance(size, bool) else None,
                text=a.get("extracted_content") if isinstance(a.get("extracted_content"), str) else None,
            )
        )
    pasted = {a.name: a for a in out if a.name}  # (an attachment and the file of the same name are one file)
    seen: set[str] = set()
    for key in ("files", "files_v2"):
        for f in raw.get(key) or []:
            if not isinstance(f, dict):
                continue
            file_uuid = text_or_none(f.get("file_uuid")) or text_or_none(f.get("uuid"))
            if file_uuid is not None:
                if file_uuid in seen:
                    continue
                seen.add(file_uuid)
            kind = f.get("file_kind")
            asset = f.get("image_asset") or f.get("document_asset") or f.get("preview_asset")
            pointer = text_or_none(asset.get("url")) if isinstance(asset, dict) else None
            name = text_or_none(f.get("file_name"))
            same = pasted.pop(name, None) if name else None
            if same is not None:
                same.__dict__.update(id=same.id or file_uuid, pointer=same.pointer or pointer or text_or_none(f.get("path")),
                                     kind="image" if kind == "image" else same.kind)
                continue
            out.append(
                Attachment.fast(
                    kind="image" if kind == "image" else "file",
                    id=file_uuid,
                    name=name,
                    pointer=pointer or text_or_none(f.get("path")),
                )
            )
    return out
