"""ChatGPT account exports: conversations.json (legacy), sharded conversations-NNN.json, single objects.

Each conversation's `mapping` is a tree; every node with a message becomes a
Message (hidden and tool ones too, marked by kind). The active branch is
`current_node` walked back to the root, resolved by the shared tree resolver.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Callable, Iterator

from chatetl.model import Attachment, Citation, Conversation, Message, MessageKind, Role, Source, ToolCall, ToolResult
from chatetl.readers.detect import Layout
from chatetl.readers.entry import Entry
from chatetl.readers.fields import expect_object, keep_unknown, known_role, text_or_none
from chatetl.readers.jsonstream import convert_records, iter_records
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time

KNOWN_MESSAGE_FIELDS = frozenset(
    {"id", "author", "create_time", "update_time", "content", "status", "end_turn", "weight", "metadata", "recipient", "channel"}
)
KNOWN_CONVERSATION_FIELDS = frozenset(
    {
        "id", "conversation_id", "title", "create_time", "update_time", "mapping", "current_node",
        "default_model_slug", "gizmo_id", "gizmo_type", "is_archived", "is_starred", "memory_scope",
        "conversation_template_id", "plugin_ids", "moderation_results", "safe_urls", "blocked_urls",
        "conversation_origin", "voice", "async_status", "disabled_tool_ids", "is_do_not_remember",
        "sugar_item_id", "sugar_item_visible", "is_study_mode", "owner", "context_scopes", "pinned_time",
        "is_read_only",
    }
)
HIDDEN_CONTENT_TYPES = frozenset({"user_editable_context", "model_editable_context"})
REASONING_CONTENT_TYPES = frozenset({"thoughts", "reasoning_recap"})
KNOWN_CONTENT_TYPES = frozenset(
    {
        "text", "multimodal_text", "code", "execution_output", "thoughts", "reasoning_recap", "tether_quote",
        "tether_browsing_display", "sonic_webpage", "system_error", "computer_output", "citable_code_output",
        "user_editable_context", "model_editable_context",
    }
)
ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM, "tool": Role.TOOL}
_SYSTEM, _ASSISTANT, _TOOL = Role.SYSTEM, Role.ASSISTANT, Role.TOOL
_TURN, _HIDDEN, _REASONING = MessageKind.TURN, MessageKind.HIDDEN, MessageKind.REASONING
_TOOL_CALL, _TOOL_RESULT = MessageKind.TOOL_CALL, MessageKind.TOOL_RESULT
_from_epoch, _UTC = datetime.fromtimestamp, timezone.utc
_message_of_fields = Message.of_fields
# the fields a message from this reader has set (all but `reasoning`; the branch fields are set by the resolver)
_MESSAGE_GIVEN = (
    "message_id", "parent_id", "role", "kind", "text", "created_at", "model", "author_name", "recipient", "content_type",
    "tool_calls", "tool_results", "citations", "attachments", "extra",
)
# Inline citation markers a person never sees as text: \ue200cite\ue202turn0search3\ue201 and 【1†source】
_CITE_MARKER = re.compile("\ue200[^\ue200\ue201]*\ue201|【[^】\n]{0,200}†[^】\n]{0,200}】")


def read(entry: Entry, layout: Layout | None, report: ReadReport) -> Iterator[Conversation]:
    yield from convert_records(entry, iter_records(entry, layout or Layout.ARRAY, report), report, record_converter(entry.name, report))


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one record of file `name` becomes a Conversation (also what the two-core path calls)."""
    return lambda record, where: conversation_from_chatgpt(expect_object(record, "a conversation object"), report)


def conversation_from_chatgpt(record: dict, report: ReadReport) -> Conversation:
    mapping = record.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("conversation has no `mapping` object")
    conv_id = record.get("conversation_id") or record.get("id")
    if not isinstance(conv_id, str) or not conv_id:
        raise ValueError("conversation has no id")
    meta = {k: record[k] for k in ("gizmo_id", "gizmo_type", "is_archived", "is_starred", "memory_scope", "conversation_template_id") if record.get(k) is not None}
    keep_unknown(record, KNOWN_CONVERSATION_FIELDS, meta, report, "chatgpt.conversation_field")

    messages = _messages_from_mapping(mapping, report)
    default_model = record.get("default_model_slug")
    title = record.get("title")
    current_node = record.get("current_node")
    return Conversation.fast(
        source=Source.CHATGPT,
        platform="chatgpt",
        conversation_id=conv_id,
        title=title if isinstance(title, str) else None,
        created_at=parse_time(record.get("create_time")),
        updated_at=parse_time(record.get("update_time")),
        model=default_model if isinstance(default_model, str) else None,
        url=f"https://chatgpt.com/c/{conv_id}",
        current_node=current_node if isinstance(current_node, str) else None,
        messages=messages,
        meta=meta,
    )


def _messages_from_mapping(mapping: dict, report: ReadReport) -> list[Message]:
    # Parents: the node's own `parent`, else derived from some node's `children` (some files omit one side).
    parent_of: dict[str, str | None] = {}
    nodes: list[tuple[str, dict]] = []  # the nodes that are objects, in file order
    has_message: set[str] = set()
    for node_id, node in mapping.items():
        if isinstance(node, dict):
            nodes.append((node_id, node))
            if "parent" in node:
                parent_of[node_id] = node["parent"]
            if isinstance(node.get("message"), dict):
                has_message.add(node_id)
    for node_id, node in nodes:
        for child in node.get("children") or ():
            if isinstance(child, str) and parent_of.get(child) is None and child in mapping:
                parent_of[child] = node_id

    def message_parent(node_id: str) -> str | None:
        """Nearest ancestor that holds a message (the root node and empty nodes are skipped)."""
        seen = {node_id}
        parent = parent_of.get(node_id)
        while parent is not None and parent not in has_message:
            if parent in seen or parent not in mapping:
                return parent if parent not in mapping else None
            seen.add(parent)
            parent = parent_of.get(parent)
        return parent

    messages: list[Message] = []
    for node_id, node in nodes:
        if node_id not in has_message:
            continue
        parent = parent_of.get(node_id)
        try:
            if parent is not None and parent not in has_message:
                parent = message_parent(node_id)
        except TypeError:  # an unhashable parent: the message's own damage, if any, is reported first (as it was)
            message_from_chatgpt(node["message"], report, message_id=node_id)
            raise
        msg = message_from_chatgpt(node["message"], report, node_id, parent)
        if msg is not None:
            messages.append(msg)
    pair_tool_results(messages)
    return messages


def pair_tool_results(messages: list[Message]) -> None:
    """A ChatGPT tool answer belongs to the call it follows: the nearest tool-call ancestor.

    Several results can follow one call (a browser `mclick` quoting three pages), each
    the child of the one before, so walk up through results until the call.
    """
    by_id = {m.message_id: m for m in messages}
    for m in messages:
        if m.kind is not _TOOL_RESULT or not m.tool_results:
            continue
        seen: set[str] = set()
        parent = by_id.get(m.parent_id) if m.parent_id else None
        while parent is not None and parent.kind is _TOOL_RESULT and parent.message_id not in seen:
            seen.add(parent.message_id)
            parent = by_id.get(parent.parent_id) if parent.parent_id else None
        if parent is not None and parent.kind is _TOOL_CALL and parent.tool_calls:
            m.tool_results[0].tool_call_id = parent.tool_calls[0].id


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def message_from_chatgpt(raw: dict, report: ReadReport, message_id: str | None = None, parent_id: str | None = None) -> Message | None:
    """One ChatGPT message object (a mapping node's `message`) as a canonical Message under `parent_id`."""
    if not isinstance(raw, dict):
        return None
    get = raw.get
    mid = message_id or get("id")
    if not isinstance(mid, str) or not mid:
        raise ValueError("message without id")
    author = get("author")
    if not isinstance(author, dict):
        author = {}
    role_name = author.get("role")
    extra: dict[str, Any] = {}
    role = ROLES.get(role_name) if isinstance(role_name, str) else None
    if role is None:
        role = known_role(ROLES, role_name, report, drift="chatgpt.role", extra=extra, keep_as="raw_role", default=Role.TOOL)
    keep_unknown(raw, KNOWN_MESSAGE_FIELDS, extra, report, "chatgpt.message_field")
    content = get("content")
    if not isinstance(content, dict):
        content = {}
    ctype = content.get("content_type")
    metadata = get("metadata")
    if not isinstance(metadata, dict):
        metadata = {}
    recipient = get("recipient")
    author_name = author.get("name")
    if not isinstance(author_name, str):
        author_name = None

    text, attachments, citations = _content_text(content, ctype, report, extra)
    if metadata:
        if "citations" in metadata or "content_references" in metadata or "search_result_groups" in metadata:
            citations += _citations_from_metadata(metadata)
        if "attachments" in metadata:
            attachments += _attachments_from_metadata(metadata)
    visible_text = _CITE_MARKER.sub("", text) if ("\ue200" in text or "【" in text) else text
    if visible_text != text:
        extra["raw_text"] = text

    hidden = (
        role is _SYSTEM
        or bool(metadata.get("is_visually_hidden_from_conversation"))
        or ctype in HIDDEN_CONTENT_TYPES
    )
    tool_calls: list[ToolCall] = []
    tool_results: list[ToolResult] = []
    if hidden:
        kind = _HIDDEN
    elif ctype in REASONING_CONTENT_TYPES:
        kind = _REASONING
    elif role is _ASSISTANT and isinstance(recipient, str) and recipient != "all":
        kind = _TOOL_CALL
        tool_calls.append(ToolCall.fast(id=mid, name=recipient, input=text))
    elif role is _TOOL:
        kind = _TOOL_RESULT
        # paired with its call after the tree is known (pair_tool_results)
        tool_results.append(ToolResult.fast(tool_call_id=None, name=author_name, output=text, is_error=ctype == "system_error"))
    elif get("weight") == 0:
        kind = _HIDDEN  # weight 0: kept out of the conversation shown to the user
    elif not visible_text.strip() and not attachments:
        kind = _HIDDEN  # an empty placeholder nobody saw
        extra["empty"] = True
    else:
        kind = _TURN

    model = metadata.get("model_slug") or metadata.get("resolved_model_slug")
    when = get("create_time")  # mostly epoch seconds: read here as parse_time reads them
    # every field of Message in its order (Message.of_fields): values of their kinds, as checked above
    return _message_of_fields(
        {
            "message_id": mid,
            "parent_id": parent_id,
            "role": role,
            "kind": kind,
            "text": visible_text if kind is _TURN else text,
            "created_at": _from_epoch(when, _UTC) if type(when) is float and 0.0 <= when <= 1e11 else parse_time(when),
            "model": model if isinstance(model, str) else None,
            "author_name": author_name,
            "recipient": recipient if isinstance(recipient, str) else None,
            "content_type": ctype if isinstance(ctype, str) else None,
            "reasoning": None,
            "tool_calls": tool_calls,
            "tool_results": tool_results,
            "citations": citations,
            "attachments": attachments,
            "on_active_branch": False,
            "seq": None,
            "branch_index": None,
            "extra": extra,
        },
        _MESSAGE_GIVEN,
    )


def _content_text(content: dict, ctype: Any, report: ReadReport, extra: dict) -> tuple[str, list[Attachment], list[Citation]]:
    attachments: list[Attachment] = []
    citations: list[Citation] = []
    if ctype in ("text", "multimodal_text"):
        texts: list[str] = []
        for part in content.get("parts") or []:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                ptype = part.get("content_type")
                if ptype == "audio_transcription":
                    texts.append(_text_of(part.get("text")))
                elif ptype in ("image_asset_pointer", "audio_asset_pointer", "real_time_user_audio_video_asset_pointer", "video_container_asset_pointer"):
                    kind = {"image_asset_pointer": "image", "audio_asset_pointer": "audio"}.get(ptype, "video")
                    pmeta = part.get("metadata") if isinstance(part.get("metadata"), dict) else {}
                    dalle = pmeta.get("dalle") if isinstance(pmeta.get("dalle"), dict) else {}
                    pointer = part.get("asset_pointer")
                    if not pointer and isinstance(part.get("audio_asset_pointer"), dict):
                        pointer = part["audio_asset_pointer"].get("asset_pointer")
                    size = part.get("size_bytes")
                    attachments.append(
                        Attachment.fast(
                            kind=kind,
                            pointer=pointer if isinstance(pointer, str) else None,
                            size=int(size) if isinstance(size, int) else None,  # (a bool as pydantic reads it: 0 or 1)
                            text=text_or_none(dalle.get("prompt")),
                        )
                    )
                else:
                    report.unknown(f"chatgpt.part_type:{ptype}")
                    extra.setdefault("unknown_parts", []).append(part)
            elif part is not None:
                texts.append(str(part))
        return "\n".join(t for t in texts if t), attachments, citations
    if ctype in ("code", "execution_output", "system_error", "computer_output"):
        if ctype == "code" and content.get("language"):
            extra["language"] = content.get("language")
        text = _text_of(content.get("text"))
        if ctype == "system_error" and content.get("name"):
            text = f"{content.get('name')}: {text}" if text else _text_of(content.get("name"))
        return text, attachments, citations
    if ctype == "thoughts":
        pieces = []
        for thought in content.get("thoughts") or []:
            if isinstance(thought, dict):
                summary, body = _text_of(thought.get("summary")), _text_of(thought.get("content"))
                pieces.append(f"{summary}\n{body}".strip() if summary else body)
        return "\n\n".join(p for p in pieces if p), attachments, citations
    if ctype == "reasoning_recap":
        return _text_of(content.get("content")), attachments, citations
    if ctype in ("tether_quote", "sonic_webpage"):
        citations.append(
            Citation.fast(
                title=text_or_none(content.get("title")),
                url=text_or_none(content.get("url")),
                snippet=text_or_none(content.get("snippet")),
                source=text_or_none(content.get("domain")),
            )
        )
        return _text_of(content.get("text")), attachments, citations
    if ctype == "tether_browsing_display":
        result, summary = _text_of(content.get("result")), _text_of(content.get("summary"))
        return "\n\n".join(p for p in (summary, result) if p), attachments, citations
    if ctype == "citable_code_output":
        return _text_of(content.get("output_str")), attachments, citations
    if ctype == "user_editable_context":
        return "\n\n".join(p for p in (_text_of(content.get("user_profile")), _text_of(content.get("user_instructions"))) if p), attachments, citations
    if ctype == "model_editable_context":
        return _text_of(content.get("model_set_context")), attachments, citations
    # a content type this reader does not know: counted, kept raw, best-effort text
    report.unknown(f"chatgpt.content_type:{ctype}")
    extra["raw_content"] = content
    if isinstance(content.get("text"), str):
        return content["text"], attachments, citations
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(p for p in parts if isinstance(p, str)), attachments, citations
    return "", attachments, citations


def _citations_from_metadata(metadata: dict) -> list[Citation]:
    out: list[Citation] = []
    seen: set[tuple[str | None, str | None]] = set()

    def add(title: Any, url: Any, snippet: Any = None, source: Any = None) -> None:
        c = Citation.fast(title=text_or_none(title), url=text_or_none(url), snippet=text_or_none(snippet), source=text_or_none(source))
        if (c.url or c.title) and (c.url, c.title) not in seen:
            seen.add((c.url, c.title))
            out.append(c)

    for cit in metadata.get("citations") or []:
        if isinstance(cit, dict):
            m = cit.get("metadata") if isinstance(cit.get("metadata"), dict) else cit
            add(m.get("title"), m.get("url"), m.get("text"), m.get("type"))
    for ref in metadata.get("content_references") or []:
        if isinstance(ref, dict):
            for item in ref.get("items") or []:
                if isinstance(item, dict):
                    add(item.get("title"), item.get("url"), item.get("snippet"), item.get("attribution"))
    for group in metadata.get("search_result_groups") or []:
        if isinstance(group, dict):
            for e in group.get("entries") or []:
                if isinstance(e, dict):
                    add(e.get("title"), e.get("url"), e.get("snippet"), group.get("domain") or e.get("attribution"))
    return out


def _attachments_from_metadata(metadata: dict) -> list[Attachment]:
    out = []
    for att in metadata.get("attachments") or []:
        if not isinstance(att, dict):
            continue
        size = att.get("size", att.get("fileSizeBytes"))
        out.append(
            Attachment.fast(
                kind="image" if str(att.get("mime_type") or att.get("mimeType") or "").startswith("image/") else "file",
                id=text_or_none(att.get("id")),
                name=text_or_none(att.get("name")),
                mime_type=text_or_none(att.get("mime_type") or att.get("mimeType")),
                size=int(size) if isinstance(size, int) else None,  # (a bool as pydantic reads it: 0 or 1)
            )
        )
    return out
