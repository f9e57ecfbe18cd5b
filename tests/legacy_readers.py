"""The ChatGPT conversion and the branch resolver as they were before the second step of issue 11
(pydantic-validated construction, attribute assignment), frozen here as the reference the fast
construction is compared with (tests/readers/test_fast_path.py). Copied from commit afdc011:
chatetl/readers/chatgpt.py (less `read`), fields.keep_unknown, tree.resolve_branches and the two
conversions of chatetl/readers/claude_ai.py (its helpers, unchanged, are imported)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import AbstractSet, Any, Callable, Mapping

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
from chatetl.readers.convert import raw_bytes
from chatetl.readers.fields import known_role, text_or_none
from chatetl.readers.platforms.claude_ai import (
    _EXTRA_FIELDS,
    _META_FIELDS,
    PLATFORM,
    ROOT_PARENT,
    SENDERS,
    _attachments,
    _in_time_order,
    _text_citations,
    _tool_call,
    _tool_result,
)
from chatetl.readers.platforms.claude_ai import (
    KNOWN_CONVERSATION_FIELDS as CLAUDE_CONVERSATION_FIELDS,
)
from chatetl.readers.platforms.claude_ai import (
    KNOWN_MESSAGE_FIELDS as CLAUDE_MESSAGE_FIELDS,
)
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time
from chatetl.readers.tree import TreeProblems

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
# Inline citation markers a person never sees as text: \ue200cite\ue202turn0search3\ue201 and 【1†source】
_CITE_MARKER = re.compile("\ue200[^\ue200\ue201]*\ue201|【[^】\n]{0,200}†[^】\n]{0,200}】")


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
    return Conversation(
        source=Source.CHATGPT,
        platform="chatgpt",
        conversation_id=conv_id,
        title=title if isinstance(title, str) else None,
        created_at=parse_time(record.get("create_time")),
        updated_at=parse_time(record.get("update_time")),
        model=default_model if isinstance(default_model, str) else None,
        url=f"https://chatgpt.com/c/{conv_id}",
        current_node=record.get("current_node") if isinstance(record.get("current_node"), str) else None,
        messages=messages,
        meta=meta,
    )


def _messages_from_mapping(mapping: dict, report: ReadReport) -> list[Message]:
    # Parents: the node's own `parent`, else derived from some node's `children` (some files omit one side).
    parent_of: dict[str, str | None] = {}
    for node_id, node in mapping.items():
        if isinstance(node, dict) and "parent" in node:
            parent_of[node_id] = node.get("parent")
    for node_id, node in mapping.items():
        if isinstance(node, dict):
            for child in node.get("children") or []:
                if isinstance(child, str) and parent_of.get(child) is None and child in mapping:
                    parent_of.setdefault(child, node_id)
                    if parent_of[child] is None:
                        parent_of[child] = node_id

    has_message = {nid for nid, node in mapping.items() if isinstance(node, dict) and isinstance(node.get("message"), dict)}

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
    for node_id, node in mapping.items():
        if node_id not in has_message:
            continue
        msg = message_from_chatgpt(node["message"], report, message_id=node_id)
        if msg is None:
            continue
        msg.parent_id = message_parent(node_id)
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
        if m.kind is not MessageKind.TOOL_RESULT or not m.tool_results:
            continue
        seen: set[str] = set()
        parent = by_id.get(m.parent_id) if m.parent_id else None
        while parent is not None and parent.kind is MessageKind.TOOL_RESULT and parent.message_id not in seen:
            seen.add(parent.message_id)
            parent = by_id.get(parent.parent_id) if parent.parent_id else None
        if parent is not None and parent.kind is MessageKind.TOOL_CALL and parent.tool_calls:
            m.tool_results[0].tool_call_id = parent.tool_calls[0].id


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def message_from_chatgpt(raw: dict, report: ReadReport, message_id: str | None = None) -> Message | None:
    """One ChatGPT message object (a mapping node's `message`) as a canonical Message."""
    if not isinstance(raw, dict):
        return None
    mid = message_id or raw.get("id")
    if not isinstance(mid, str) or not mid:
        raise ValueError("message without id")
    author = raw.get("author") if isinstance(raw.get("author"), dict) else {}
    role_name = author.get("role")
    extra: dict[str, Any] = {}
    role = known_role(ROLES, role_name, report, drift="chatgpt.role", extra=extra, keep_as="raw_role", default=Role.TOOL)
    keep_unknown(raw, KNOWN_MESSAGE_FIELDS, extra, report, "chatgpt.message_field")
    content = raw.get("content") if isinstance(raw.get("content"), dict) else {}
    ctype = content.get("content_type")
    metadata = raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {}
    recipient = raw.get("recipient")
    author_name = author.get("name") if isinstance(author.get("name"), str) else None

    text, attachments, citations = _content_text(content, ctype, report, extra)
    citations += _citations_from_metadata(metadata)
    attachments += _attachments_from_metadata(metadata)
    visible_text = _CITE_MARKER.sub("", text) if ("\ue200" in text or "【" in text) else text
    if visible_text != text:
        extra["raw_text"] = text

    hidden = (
        role is Role.SYSTEM
        or bool(metadata.get("is_visually_hidden_from_conversation"))
        or ctype in HIDDEN_CONTENT_TYPES
    )
    tool_calls: list[ToolCall] = []
    tool_results: list[ToolResult] = []
    if hidden:
        kind = MessageKind.HIDDEN
    elif ctype in REASONING_CONTENT_TYPES:
        kind = MessageKind.REASONING
    elif role is Role.ASSISTANT and isinstance(recipient, str) and recipient != "all":
        kind = MessageKind.TOOL_CALL
        tool_calls.append(ToolCall(id=mid, name=recipient, input=text))
    elif role is Role.TOOL:
        kind = MessageKind.TOOL_RESULT
        # paired with its call after the tree is known (pair_tool_results)
        tool_results.append(ToolResult(tool_call_id=None, name=author_name, output=text, is_error=ctype == "system_error"))
    elif raw.get("weight") == 0:
        kind = MessageKind.HIDDEN  # weight 0: kept out of the conversation shown to the user
    elif not visible_text.strip() and not attachments:
        kind = MessageKind.HIDDEN  # an empty placeholder nobody saw
        extra["empty"] = True
    else:
        kind = MessageKind.TURN

    model = metadata.get("model_slug") or metadata.get("resolved_model_slug")
    return Message(
        message_id=mid,
        role=role,
        kind=kind,
        text=visible_text if kind is MessageKind.TURN else text,
        created_at=parse_time(raw.get("create_time")),
        model=model if isinstance(model, str) else None,
        author_name=author_name,
        recipient=recipient if isinstance(recipient, str) else None,
        content_type=ctype if isinstance(ctype, str) else None,
        tool_calls=tool_calls,
        tool_results=tool_results,
        citations=citations,
        attachments=attachments,
        extra=extra,
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
                    attachments.append(
                        Attachment(
                            kind=kind,
                            pointer=pointer if isinstance(pointer, str) else None,
                            size=part.get("size_bytes") if isinstance(part.get("size_bytes"), int) else None,
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
            Citation(
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
        c = Citation(title=text_or_none(title), url=text_or_none(url), snippet=text_or_none(snippet), source=text_or_none(source))
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
            Attachment(
                kind="image" if str(att.get("mime_type") or att.get("mimeType") or "").startswith("image/") else "file",
                id=text_or_none(att.get("id")),
                name=text_or_none(att.get("name")),
                mime_type=text_or_none(att.get("mime_type") or att.get("mimeType")),
                size=size if isinstance(size, int) else None,
            )
        )
    return out


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
    for key in sorted(record.keys() - known):
        report.unknown(f"{drift}:{key}")
        into[key] = record[key] if keep is None else keep(record[key])


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def resolve_branches(conv: Conversation, visible_kinds: frozenset[MessageKind] = frozenset({MessageKind.TURN})) -> TreeProblems:
    """Mark `on_active_branch`, `branch_index` and `seq` on conv.messages in place.

    Messages are deduplicated by id (the last occurrence wins, keeping file order of
    first appearance). Dangling parents become roots (parent_id set to None).
    """
    problems = TreeProblems()
    by_id: dict[str, Message] = {}
    order: dict[str, int] = {}
    for m in conv.messages:
        if m.message_id in by_id:
            problems.duplicates.append(m.message_id)
        else:
            order[m.message_id] = len(order)
        by_id[m.message_id] = m
    messages = sorted(by_id.values(), key=lambda m: order[m.message_id])

    has_children: set[str] = set()
    for m in messages:
        m.on_active_branch = False
        m.seq = None
        m.branch_index = None
        if m.parent_id is not None and m.parent_id not in by_id:
            problems.dangling.append(m.message_id)
            m.extra.setdefault("dangling_parent_id", m.parent_id)
            m.parent_id = None
        if m.parent_id is not None:
            has_children.add(m.parent_id)

    conv.messages = messages
    if not messages:
        return problems

    leaf: Message | None = None
    if conv.current_node:
        leaf = by_id.get(conv.current_node)
        if leaf is None:
            problems.missing_current_node = conv.current_node
    if leaf is None:
        leaves = [m for m in messages if m.message_id not in has_children] or messages
        # latest by time; ties and missing times broken by file order (later wins)
        leaf = max(leaves, key=lambda m: (m.created_at or _EPOCH, order[m.message_id]))

    path: list[Message] = []
    seen: set[str] = set()
    node: Message | None = leaf
    while node is not None:
        if node.message_id in seen:
            problems.cycles.append(node.message_id)
            break
        seen.add(node.message_id)
        path.append(node)
        node = by_id.get(node.parent_id) if node.parent_id is not None else None
    if problems.cycles:
        # break the cycle where the walk met itself: the oldest node on the path becomes a root
        path[-1].extra.setdefault("cycle_parent_id", path[-1].parent_id)
        path[-1].parent_id = None
    path.reverse()

    seq = 0
    for i, m in enumerate(path):
        m.on_active_branch = True
        m.branch_index = i
        if m.kind in visible_kinds:
            m.seq = seq
            seq += 1
    if conv.current_node is None or problems.missing_current_node:
        conv.current_node = leaf.message_id
    return problems


# ---- claude_ai.py as it was ----


def conversation_from_claude_ai(record: dict, report: ReadReport, file: str = "", where: str = "") -> Conversation:
    """One Claude.ai conversation object as a Conversation (parent pointers set, branches not yet resolved)."""
    conv_id = record.get("uuid")
    if not isinstance(conv_id, str) or not conv_id:
        raise ValueError("conversation has no uuid")
    raw_messages = record.get("chat_messages")
    if raw_messages is None and "chat_messages" in record:
        raw_messages = []
    if not isinstance(raw_messages, list):
        raise ValueError(f"`chat_messages` is not a list (got {type(raw_messages).__name__})")

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
    keep_unknown(record, CLAUDE_CONVERSATION_FIELDS, meta, report, "claude-ai.conversation_field")

    messages: list[Message] = []
    place = f"{where} (conversation {conv_id})" if where else f"conversation {conv_id}"
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            report.error(file, f"{place} message {index}", f"message is not an object (got {type(raw).__name__})", raw=raw_bytes(raw))
            continue
        messages.append(message_from_claude_ai(raw, report, fallback_id=f"{conv_id}:{index}"))

    # Older exports carry no parent pointers at all: the messages in time order are the conversation
    # (the order of issue 12, imported: this reference is about construction, not about ordering)
    if not any("parent_message_uuid" in raw for raw in raw_messages if isinstance(raw, dict)):
        messages = _in_time_order(messages)
        for prev, msg in zip(messages, messages[1:]):
            msg.parent_id = prev.message_id

    leaf = text_or_none(record.get("current_leaf_message_uuid"))
    return Conversation(
        source=Source.CLAUDE_AI,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=text_or_none(record.get("name")),
        created_at=parse_time(record.get("created_at")),
        updated_at=parse_time(record.get("updated_at")),
        model=text_or_none(record.get("model")),  # the official export has none
        url=f"https://claude.ai/chat/{conv_id}",
        current_node=leaf if leaf != ROOT_PARENT else None,
        messages=messages,
        meta=meta,
    )


def message_from_claude_ai(raw: dict, report: ReadReport, fallback_id: str) -> Message:
    """One `chat_messages[]` item as a canonical Message."""
    mid = raw.get("uuid")
    if not isinstance(mid, str) or not mid:
        mid = fallback_id
    extra: dict[str, Any] = {}
    role = known_role(SENDERS, raw.get("sender"), report, drift="claude-ai.sender", extra=extra, keep_as="raw_sender", default=Role.ASSISTANT)
    for key in _EXTRA_FIELDS:
        if raw.get(key) is not None:
            extra[key] = raw[key]
    keep_unknown(raw, CLAUDE_MESSAGE_FIELDS, extra, report, "claude-ai.message_field")

    parent = text_or_none(raw.get("parent_message_uuid"))
    parent_id = parent if parent != ROOT_PARENT else None

    texts: list[str] = []
    reasoning: list[str] = []
    summaries: list[str] = []
    tool_calls: list[ToolCall] = []
    tool_results: list[ToolResult] = []
    citations: list[Citation] = []
    unknown_blocks: list[Any] = []
    block_types: list[str] = []
    other_blocks = False  # thinking / tool blocks seen (the `text` field is then no fallback)

    content = raw.get("content")
    for block in content if isinstance(content, list) else []:
        btype = block.get("type") if isinstance(block, dict) else None
        if isinstance(btype, str) and btype not in block_types:
            block_types.append(btype)
        if btype == "text":
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            citations.extend(_text_citations(block.get("citations")))
        elif btype == "thinking":
            other_blocks = True
            if isinstance(block.get("thinking"), str) and block["thinking"]:
                reasoning.append(block["thinking"])
            for s in block.get("summaries") or []:
                if isinstance(s, dict) and isinstance(s.get("summary"), str):
                    summaries.append(s["summary"])
        elif btype == "tool_use":
            other_blocks = True
            tool_calls.append(_tool_call(block))
        elif btype == "tool_result":
            other_blocks = True
            result, knowledge = _tool_result(block)
            tool_results.append(result)
            citations.extend(knowledge)
        else:
            report.unknown(f"claude-ai.block:{btype if isinstance(btype, str) else type(block).__name__}")
            unknown_blocks.append(block)

    visible = "\n\n".join(t.strip("\r\n") for t in texts if t.strip())
    fallback = raw.get("text")
    if not visible.strip() and not other_blocks and isinstance(fallback, str):
        visible = fallback  # older exports: only `text`; newer: `text` repeats the text blocks
        if not block_types:
            block_types.append("text")

    if unknown_blocks:
        extra["unknown_blocks"] = unknown_blocks
    if summaries:
        extra["thinking_summaries"] = summaries

    joined_reasoning = "\n\n".join(reasoning) or None
    if visible.strip() or (role is Role.USER and not tool_results):
        kind, text = MessageKind.TURN, visible
    elif tool_calls:
        kind, text = MessageKind.TOOL_CALL, "\n".join(c.input for c in tool_calls)
    elif tool_results:
        kind, text, role = MessageKind.TOOL_RESULT, "\n\n".join(r.output for r in tool_results if r.output), Role.TOOL
    elif joined_reasoning:
        kind, text = MessageKind.REASONING, joined_reasoning
    else:
        kind, text = MessageKind.HIDDEN, ""  # an empty assistant message: nothing anyone saw
        extra["empty"] = True

    return Message(
        message_id=mid,
        parent_id=parent_id,
        role=role,
        kind=kind,
        text=text,
        created_at=parse_time(raw.get("created_at")),
        author_name=tool_results[0].name if kind is MessageKind.TOOL_RESULT else None,
        content_type=",".join(block_types) or None,
        reasoning=joined_reasoning,
        tool_calls=tool_calls,
        tool_results=tool_results,
        citations=citations,
        attachments=_attachments(raw),
        extra=extra,
    )
