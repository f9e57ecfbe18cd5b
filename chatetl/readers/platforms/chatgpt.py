"""ChatGPT account exports: conversations.json (legacy), sharded conversations-NNN.json, single objects.

Each conversation's `mapping` is a tree; every node with a message becomes a
Message (hidden and tool ones too, marked by kind). The active branch is
`current_node` walked back to the root, resolved by the shared tree resolver.

Citation markers. The inline markers a person never sees as text (`\ue200cite\ue202turn0search3\ue201`
and its kin, `【6†source】`) are taken out of a turn's visible text (the text as written stays in
`extra["raw_text"]`). Where the export ties a citation to its marker, the citation keeps the
marker's place as `Citation.offset`: the str index in `Message.text` (the visible text) where the
marker stood, so `text[:offset]` is what was written before it. The ties: `metadata.citations[]`
`start_ix` (the older `【n†source】` markers) and `metadata.content_references[]` `start_idx` or
`matched_text` (the `\ue200cite…\ue201` ones); a source cited at two places is two citations. A
citation the export does not place (search results, quotes) has offset None. We chose an offset
over an inline `[n]` so the visible text stays exactly what the person saw.

Image generation (`dalle.text2im`, `image_gen`, and the research names like `t2uay3k.sj1i4kz`): the
assistant calls the tool (a TOOL_CALL, its JSON holds the prompt), the tool answers with
`image_asset_pointer` parts (`metadata.dalle` or `metadata.generation`, the message's
`metadata.image_gen_title`), then the assistant usually answers (often with no text). The images
are part of that visible reply: they stay on the tool row (a TOOL_RESULT) and are copied onto the
assistant turn that answers it, the first assistant message with `recipient` "all" after it on
the same path (before the next user turn), never onto a `channel` "commentary" row; an answer
with no text but the images becomes a visible turn. When no assistant message answers, the tool
row itself is the visible reply (role assistant, `extra["shown_as_reply"]`). Each image's prompt
(`dalle.prompt`, else the call's `prompt`) is its `text`, the title its `name`. A tool row that
names no tool and whose parts carry no generator metadata is a generator's when the call it
answers went to an image tool; a row the export hides (`is_visually_hidden_from_conversation`)
counts when no other row shows its images (`extra["hidden_in_source"]`).

Thinking preambles (`metadata.is_thinking_preamble_message`: a thinking model's narration while it
works, gone once the answer is shown) are REASONING, never a turn.

Layouts researched in mohamed-chs/convoviz (docs/dev/chatgpt-spec.md: tether citations, DALL-E
asset pointers), public parsers of the ChatGPT stream and share pages (content_references with
`matched_text`, the image tool's messages and `image_gen_async` placeholders) and the LibreChat
sample export in the shared samples.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime
from typing import Any

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
from chatetl.readers.fields import expect_object, keep_unknown, known_role, text_or_none
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time
from chatetl.readers.tree import turn_kind

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
_from_epoch, _UTC = datetime.fromtimestamp, UTC
_message_of_fields = Message.of_fields
# the fields a message from this reader has set (all but `reasoning`; the branch fields are set by the resolver)
_MESSAGE_GIVEN = (
    "message_id", "parent_id", "role", "kind", "text", "created_at", "model", "author_name", "recipient", "content_type",
    "tool_calls", "tool_results", "citations", "attachments", "extra",
)
# Inline citation markers a person never sees as text: \ue200cite\ue202turn0search3\ue201 and 【1†source】
_CITE_MARKER = re.compile("\ue200[^\ue200\ue201]*\ue201|【[^】\n]{0,200}†[^】\n]{0,200}】")
# The tools that draw images, by author name (DALL-E, the image_gen tool, its research names).
_IMAGE_TOOL = re.compile(r"dalle|image_gen|text2im|imagegen|^t2uay3k\.", re.IGNORECASE)


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one record of file `name` becomes a Conversation."""
    return lambda record, where: conversation_from_chatgpt(expect_object(record, "a conversation object"), report)


def conversation_from_chatgpt(record: dict[str, Any], report: ReadReport) -> Conversation:
    mapping = record.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("conversation has no `mapping` object")  # noqa: TRY004 (convert_records reports ValueErrors)
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


class _Nodes:
    """The mapping's nodes that are objects (in file order), each one's parent, and the ones that
    hold a message. Parents: the node's own `parent`, else derived from some node's `children`
    (some files omit one side)."""

    def __init__(self, mapping: dict[str, Any]) -> None:
        self.mapping = mapping
        self.parent_of: dict[str, str | None] = {}
        self.nodes: list[tuple[str, dict[str, Any]]] = []
        self.has_message: set[str] = set()
        parent_of, nodes, has_message = self.parent_of, self.nodes, self.has_message
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

    def message_parent(self, node_id: str) -> str | None:
        """Nearest ancestor that holds a message (the root node and empty nodes are skipped)."""
        parent_of, has_message, mapping = self.parent_of, self.has_message, self.mapping
        seen = {node_id}
        parent = parent_of.get(node_id)
        while parent is not None and parent not in has_message:
            if parent in seen or parent not in mapping:
                return parent if parent not in mapping else None
            seen.add(parent)
            parent = parent_of.get(parent)
        return parent


def _messages_from_mapping(mapping: dict[str, Any], report: ReadReport) -> list[Message]:
    tree = _Nodes(mapping)
    parent_of, has_message, message_parent = tree.parent_of, tree.has_message, tree.message_parent
    messages: list[Message] = []
    drawn: list[tuple[Message, dict[str, Any]]] = []  # tool rows holding images (a tool drew them, or a chart)
    commentary: set[str] = set()  # assistant rows of the commentary channel
    for node_id, node in tree.nodes:
        if node_id not in has_message:
            continue
        parent = parent_of.get(node_id)
        try:
            if parent is not None and parent not in has_message:
                parent = message_parent(node_id)
        except TypeError:  # an unhashable parent: the message's own damage, if any, is reported first (as it was)
            message_from_chatgpt(node["message"], report, message_id=node_id)
            raise
        raw = node["message"]
        msg = message_from_chatgpt(raw, report, node_id, parent)
        if msg is not None:
            messages.append(msg)
            if msg.role is _TOOL and msg.kind in (_TOOL_RESULT, _HIDDEN) and any(a.kind == "image" for a in msg.attachments):
                drawn.append((msg, raw))
            elif raw.get("channel") == "commentary":
                commentary.add(node_id)
    pair_tool_results(messages)
    generated = _generated_images(messages, drawn) if drawn else []
    if generated:
        attach_generated_images(messages, generated, commentary)
    return messages


def _generated_images(messages: list[Message], drawn: list[tuple[Message, dict[str, Any]]]) -> list[Message]:
    """The tool rows whose images an image tool drew (see `_draws_images`): by the row itself, or by the
    call it answers (an image tool's recipient, where the row names no tool). A row the export hides
    counts when no other row shows its images (the reply a person saw), and becomes a tool result."""
    by_id = {m.message_id: m for m in messages}
    shown: set[str] | None = None
    out: list[Message] = []
    for row, raw in drawn:
        call = _call_of(row, by_id)
        if not (_draws_images(raw) or (call is not None and call.recipient is not None and _IMAGE_TOOL.search(call.recipient))):
            continue
        if row.kind is _HIDDEN:
            if shown is None:
                shown = {a.pointer for m in messages if m.kind is not _HIDDEN for a in m.attachments if a.pointer}
            if all(a.pointer in shown for a in row.attachments if a.kind == "image"):
                continue  # a hidden copy of images a visible row shows
            row.kind = _TOOL_RESULT
            row.extra["hidden_in_source"] = True
            call_id = call.tool_calls[0].id if call is not None and call.tool_calls else None
            row.tool_results = [ToolResult.fast(tool_call_id=call_id, name=row.author_name, output=row.text)]
        _title_images(row, raw.get("metadata"))
        out.append(row)
    return out


def _call_of(row: Message, by_id: dict[str, Message]) -> Message | None:
    """The tool call a tool row answers: the one it was paired with, else the nearest call above it
    (through other tool rows, never past a user turn)."""
    paired = row.tool_results[0].tool_call_id if row.tool_results else None
    if paired is not None and paired in by_id:
        return by_id[paired]
    seen = {row.message_id}
    node = by_id.get(row.parent_id) if row.parent_id else None
    while node is not None and node.message_id not in seen and node.role is not Role.USER:
        if node.kind is _TOOL_CALL:
            return node
        seen.add(node.message_id)
        node = by_id.get(node.parent_id) if node.parent_id else None
    return None


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


def _draws_images(raw: dict[str, Any]) -> bool:
    """Whether a tool message holding images is an image generator's answer (not, say, a chart
    from python): its author is an image tool, or its image parts carry the generator's metadata."""
    author = raw.get("author")
    name = author.get("name") if isinstance(author, dict) else None
    if isinstance(name, str) and _IMAGE_TOOL.search(name):
        return True
    metadata = raw.get("metadata")
    if isinstance(metadata, dict) and (metadata.get("image_gen_title") or metadata.get("image_gen_async")):
        return True
    content = raw.get("content")
    for part in (content.get("parts") or ()) if isinstance(content, dict) else ():
        meta = part.get("metadata") if isinstance(part, dict) else None
        if isinstance(meta, dict) and (isinstance(meta.get("dalle"), dict) or isinstance(meta.get("generation"), dict)):
            return True
    return False


def attach_generated_images(messages: list[Message], generated: list[Message], commentary: AbstractSet[str] = frozenset()) -> None:
    """Generated images into the visible reply they belong to (see the module docstring).

    Each assistant message with `recipient` "all" that is not commentary (a turn, or an empty one)
    takes the images drawn since the turn before it on its own path: walking up, it collects
    generator rows until a user turn or another such answer. The images drawn that no answer
    takes make their own row the visible reply."""
    by_id = {m.message_id: m for m in messages}
    drawn = {m.message_id for m in generated}
    for row in generated:
        _name_and_prompt(row, by_id)

    def answers(m: Message) -> bool:
        return (
            m.role is _ASSISTANT
            and (m.kind is _TURN or (m.kind is _HIDDEN and m.extra.get("empty") is True))
            and m.recipient in (None, "all")
            and m.message_id not in commentary
        )

    taken: set[str] = set()
    for m in messages:
        if not answers(m):
            continue
        rows: list[Message] = []
        seen = {m.message_id}
        node = by_id.get(m.parent_id) if m.parent_id else None
        while node is not None and node.message_id not in seen:
            seen.add(node.message_id)
            if (node.role is Role.USER and node.kind is _TURN) or answers(node):
                break
            if node.message_id in drawn:
                rows.append(node)
            node = by_id.get(node.parent_id) if node.parent_id else None
        if not rows:
            continue
        have: set[str | None] = {a.pointer for a in m.attachments if a.pointer}
        for row in reversed(rows):  # in the order they were drawn
            taken.add(row.message_id)
            for a in row.attachments:
                if a.kind == "image" and (a.pointer is None or a.pointer not in have):
                    have.add(a.pointer)
                    m.attachments.append(Attachment.fast(**a.__dict__))
        if m.kind is _HIDDEN:  # an answer with nothing but the images: what the person saw
            m.extra.pop("empty", None)
            m.kind = _TURN
    for row in generated:
        if row.message_id not in taken:
            row.kind, row.role = _TURN, _ASSISTANT
            row.text = _CITE_MARKER.sub("", row.text)
            row.extra["shown_as_reply"] = True


def _title_images(row: Message, metadata: Any) -> None:
    """The title the generator gave its images (`metadata.image_gen_title`) as their name."""
    title = metadata.get("image_gen_title") if isinstance(metadata, dict) else None
    if isinstance(title, str) and title:
        for a in row.attachments:
            if a.kind == "image" and a.name is None:
                a.name = title


def _name_and_prompt(row: Message, by_id: dict[str, Message]) -> None:
    """A generated image's prompt, from the call that asked for it where the part has none."""
    call_id = row.tool_results[0].tool_call_id if row.tool_results else None
    call = by_id.get(call_id) if call_id else None
    prompt = _json_field(call.tool_calls[0].input, "prompt") if call is not None and call.tool_calls else None
    if prompt:
        for a in row.attachments:
            if a.kind == "image" and a.text is None:
                a.text = prompt


def _json_field(text: str, key: str) -> str | None:
    if not text.lstrip().startswith("{"):
        return None
    try:
        value = orjson.loads(text)
    except (orjson.JSONDecodeError, RecursionError):
        return None
    return text_or_none(value.get(key)) if isinstance(value, dict) else None


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else ""


def message_from_chatgpt(raw: Any, report: ReadReport, message_id: str | None = None, parent_id: str | None = None) -> Message | None:
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
    marks: list[tuple[int, int, str]] = []
    visible_text = text
    if "\ue200" in text or "【" in text:
        visible_text, marks = _without_markers(text)
    if metadata:
        if "citations" in metadata or "content_references" in metadata or "search_result_groups" in metadata:
            citations += _citations_from_metadata(metadata, marks)
        if "attachments" in metadata:
            attachments = merged_attachments(attachments, _attachments_from_metadata(metadata))
    if visible_text != text:
        extra["raw_text"] = text

    tool_calls: list[ToolCall] = []
    tool_results: list[ToolResult] = []
    kind = _message_kind(raw, role, ctype, metadata, visible_text, attachments, extra)
    if kind is _TOOL_CALL:
        tool_calls.append(ToolCall.fast(id=mid, name=recipient, input=text))
    elif kind is _TOOL_RESULT:
        # paired with its call after the tree is known (pair_tool_results)
        tool_results.append(ToolResult.fast(tool_call_id=None, name=author_name, output=text, is_error=ctype == "system_error"))

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


def _message_kind(raw: dict[str, Any], role: Role, ctype: Any, metadata: dict[str, Any], visible_text: str, attachments: list[Attachment],
                  extra: dict[str, Any]) -> MessageKind:
    """What a message is: hidden (a system message, one the export hides, an editable context),
    reasoning, a tool call (an assistant message to a recipient), a tool result, hidden again
    (weight 0), else a turn by the empty-message rule."""
    if role is _SYSTEM or metadata.get("is_visually_hidden_from_conversation") or ctype in HIDDEN_CONTENT_TYPES:
        return _HIDDEN
    if ctype in REASONING_CONTENT_TYPES or (role is _ASSISTANT and metadata.get("is_thinking_preamble_message") is True):
        return _REASONING  # (a thinking model's narration while it works: shown while the answer is made, then gone)
    recipient = raw.get("recipient")
    if role is _ASSISTANT and isinstance(recipient, str) and recipient != "all":
        return _TOOL_CALL
    if role is _TOOL:
        return _TOOL_RESULT
    if raw.get("weight") == 0:
        return _HIDDEN  # weight 0: kept out of the conversation shown to the user
    return turn_kind(visible_text, attachments, extra)  # an empty placeholder nobody saw is hidden


def _content_text(content: dict[str, Any], ctype: Any, report: ReadReport, extra: dict[str, Any]) -> tuple[str, list[Attachment], list[Citation]]:
    attachments: list[Attachment] = []
    citations: list[Citation] = []
    if ctype in ("text", "multimodal_text"):
        return _parts_text(content, attachments, report, extra), attachments, citations
    if ctype in ("code", "execution_output", "system_error", "computer_output"):
        return _output_text(content, ctype, extra), attachments, citations
    if ctype == "thoughts":
        return _thoughts_text(content), attachments, citations
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


_ASSET_POINTERS = frozenset(
    {"image_asset_pointer", "audio_asset_pointer", "real_time_user_audio_video_asset_pointer", "video_container_asset_pointer"}
)


def _parts_text(content: dict[str, Any], attachments: list[Attachment], report: ReadReport, extra: dict[str, Any]) -> str:
    """A text or multimodal message's parts: its text (the text parts, audio transcriptions), its
    assets into `attachments`; a part of a type this reader does not know counted and kept raw."""
    texts: list[str] = []
    for part in content.get("parts") or []:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            ptype = part.get("content_type")
            if ptype == "audio_transcription":
                texts.append(_text_of(part.get("text")))
            elif ptype in _ASSET_POINTERS:
                attachments.append(_asset_attachment(part, ptype))
            else:
                report.unknown(f"chatgpt.part_type:{ptype}")
                extra.setdefault("unknown_parts", []).append(part)
        elif part is not None:
            texts.append(str(part))
    return "\n".join(t for t in texts if t)


def _asset_attachment(part: dict[str, Any], ptype: str) -> Attachment:
    """An asset pointer part (an image, audio, a video) as an Attachment; a generated image's
    prompt (`metadata.dalle.prompt`) is its text."""
    kind = {"image_asset_pointer": "image", "audio_asset_pointer": "audio"}.get(ptype, "video")
    pmeta = part.get("metadata")
    if not isinstance(pmeta, dict):
        pmeta = {}
    dalle = pmeta.get("dalle")
    if not isinstance(dalle, dict):
        dalle = {}
    pointer = part.get("asset_pointer")
    if not pointer and isinstance(part.get("audio_asset_pointer"), dict):
        pointer = part["audio_asset_pointer"].get("asset_pointer")
    size = part.get("size_bytes")
    pointer = pointer if isinstance(pointer, str) else None
    return Attachment.fast(
        kind=kind,
        id=asset_id(pointer),
        pointer=pointer,
        size=int(size) if isinstance(size, int) else None,  # (a bool as pydantic reads it: 0 or 1)
        text=text_or_none(dalle.get("prompt")),
    )


def _output_text(content: dict[str, Any], ctype: str, extra: dict[str, Any]) -> str:
    """Code, its output, a system error (`name: text`) or a computer's output; code's language into `extra`."""
    if ctype == "code" and content.get("language"):
        extra["language"] = content.get("language")
    text = _text_of(content.get("text"))
    if ctype == "system_error" and content.get("name"):
        text = f"{content.get('name')}: {text}" if text else _text_of(content.get("name"))
    return text


def _thoughts_text(content: dict[str, Any]) -> str:
    """A reasoning model's thoughts: each one's summary over its content, a blank line between them."""
    pieces = []
    for thought in content.get("thoughts") or []:
        if isinstance(thought, dict):
            summary, body = _text_of(thought.get("summary")), _text_of(thought.get("content"))
            pieces.append(f"{summary}\n{body}".strip() if summary else body)
    return "\n\n".join(p for p in pieces if p)


def _without_markers(text: str) -> tuple[str, list[tuple[int, int, str]]]:
    """The text without its citation markers, and each marker as (its index in `text`, its index in
    the text without them, the marker itself)."""
    pieces: list[str] = []
    marks: list[tuple[int, int, str]] = []
    last = size = 0
    for match in _CITE_MARKER.finditer(text):
        piece = text[last:match.start()]
        pieces.append(piece)
        size += len(piece)
        marks.append((match.start(), size, match.group()))
        last = match.end()
    pieces.append(text[last:])
    return "".join(pieces), marks


class _Citations:
    """A message's citations as they are added: each source once where the export does not place
    it, once per place where it does (`offset`, see `_without_markers`)."""

    def __init__(self, marks: list[tuple[int, int, str]]) -> None:
        self.out: list[Citation] = []
        self.seen: set[tuple[str | None, str | None]] = set()
        self.placed: set[tuple[str | None, str | None, int]] = set()
        self.at_start = {start: (offset, marker) for start, offset, marker in marks}
        self.by_marker: dict[str, list[int]] = {}  # the places of each marker not yet taken by a citation
        for _, offset, marker in marks:
            self.by_marker.setdefault(marker, []).append(offset)

    def place(self, start: Any, marker: Any) -> int | None:
        """The offset of the marker at `start` in the text as written, else the next place of `marker`."""
        if type(start) is int and start in self.at_start:
            offset, found = self.at_start[start]
            if offset in self.by_marker[found]:
                self.by_marker[found].remove(offset)
            return offset
        offsets = self.by_marker.get(marker) if isinstance(marker, str) else None
        return offsets.pop(0) if offsets else None  # the next place this marker stands

    def add(self, title: Any, url: Any, snippet: Any = None, source: Any = None, offset: int | None = None) -> None:
        url_text, title_text = text_or_none(url), text_or_none(title)
        if not (url_text or title_text):
            return
        key = (url_text, title_text)
        if offset is None:
            if key in self.seen:
                return
        elif (*key, offset) in self.placed:
            return
        else:
            self.placed.add((*key, offset))
        self.seen.add(key)
        self.out.append(Citation.fast(title=title_text, url=url_text, snippet=text_or_none(snippet), source=text_or_none(source),
                                      **({} if offset is None else {"offset": offset})))


def _citations_from_metadata(metadata: dict[str, Any], marks: list[tuple[int, int, str]] | None = None) -> list[Citation]:
    """The message's citations; the ones the export ties to a marker (`marks`, see `_without_markers`)
    carry the marker's place in the visible text as `offset`."""
    cites = _Citations(marks or [])
    place, add = cites.place, cites.add
    for cit in metadata.get("citations") or []:
        if isinstance(cit, dict):
            m = cit.get("metadata")
            if not isinstance(m, dict):
                m = cit
            add(m.get("title"), m.get("url"), m.get("text"), m.get("type"), place(cit.get("start_ix"), None) if marks else None)
    for ref in metadata.get("content_references") or []:
        if isinstance(ref, dict):
            offset = place(ref.get("start_idx"), ref.get("matched_text")) if marks else None
            items = [item for item in ref.get("items") or () if isinstance(item, dict)]
            for item in items or ([ref] if ref.get("url") else ()):
                add(item.get("title"), item.get("url"), item.get("snippet"), item.get("attribution"), offset)
    for group in metadata.get("search_result_groups") or []:
        if isinstance(group, dict):
            for e in group.get("entries") or []:
                if isinstance(e, dict):
                    add(e.get("title"), e.get("url"), e.get("snippet"), group.get("domain") or e.get("attribution"))
    return cites.out


def asset_id(pointer: str | None) -> str | None:
    """The file id an asset pointer names: `file-service://file-X` and `sediment://file_X` name `file-X` and
    `file_X` (the id `metadata.attachments` and the export's file names use)."""
    if pointer is None or "://" not in pointer:
        return None
    scheme, _, rest = pointer.partition("://")
    return rest or None if scheme in ("file-service", "sediment") else None


def merged_attachments(parts: list[Attachment], described: list[Attachment]) -> list[Attachment]:
    """One attachment per file: a content part's pointer and the `metadata.attachments` entry of the same
    id are one upload (its name, type and size from the entry; the part's kind and pointer kept)."""
    by_id = {a.id: a for a in parts if a.id}
    out = list(parts)
    for d in described:
        part = by_id.get(d.id) if d.id else None
        if part is None:
            out.append(d)
            continue
        fields = part.__dict__
        fields["name"] = d.name or part.name
        fields["mime_type"] = d.mime_type or part.mime_type
        fields["size"] = part.size if part.size is not None else d.size
    return out


def _attachments_from_metadata(metadata: dict[str, Any]) -> list[Attachment]:
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
