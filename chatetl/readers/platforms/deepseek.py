"""DeepSeek account exports: conversations.json (an array; in the export zip beside user.json).

Layout (researched from public parsers of the official export: DavidShiang/DeepSeek2md main.py,
andrmkrff/deepseek-chat-export, the `parse_DeepSeek_conversations` and `parse_deepseek_conversations`
converters found by code search, and ceyaima/deepseek-exporter's raw samples of the web API, whose
`fragments` the export carries as they are):

    [{"id", "title", "inserted_at", "updated_at",
      "mapping": {"root": {"id": "root", "parent": null, "children": ["1"], "message": null},
                  "1": {"id": "1", "parent": "root", "children": ["2", "4"],
                        "message": {"inserted_at", "model", "files": [...], "fragments": [...]}}}}]

Every node with a message becomes one Message under its nearest ancestor that has one (the
`root` node has none). A message is made of typed `fragments`: REQUEST (what the user wrote: a
user turn), RESPONSE (the visible answer: an assistant turn, its `[citation:N]` markers left out
of the text and kept in extra as `raw_text`; its `references` are citations),
THINK (reasoning, kept on the message), SEARCH (`results[{url, title, snippet, cite_index,
site_name, published_at}]`: citations), TOOL_SEARCH / TOOL_OPEN / TOOL_* (the agent's tool
steps: a ToolCall and, with `results`/`content`, its ToolResult, whose pages are citations too),
FILE (an attachment, as the message's `files` are). The public parsers show REQUEST, RESPONSE
and THINK; the other types are read field by field (`content`, `results`, `queries`, `url`, file
names and sizes where present), so a shape that differs loses nothing: an unknown fragment type
or field is drift, counted and kept raw in Message.extra, never shown as text.

The export has no `current_node`: the shared resolver takes the latest leaf by time (ties: the
later in the file, deterministically) and walks it back. `source`/`platform` are `deepseek`;
the url is https://chat.deepseek.com/a/chat/s/<id>. Some exporters wrap the same mapping in
ChatGPT's keys (`create_time`, `update_time`, `current_node`): read here, `current_node` the leaf.

The web API's answer as userscripts save it (`api_converter`: `{code, msg, data: {biz_data:
{chat_session, chat_messages}}}`) is one conversation: messages under `parent_id` (integer ids as
text), the leaf `current_message_id`; older messages' `content` / `thinking_content` /
`search_results` are read as the fragments newer ones carry.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

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
from chatetl.readers.convert import json_text
from chatetl.readers.fields import expect_object, keep_unknown, text_or_none
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_iso_time
from chatetl.readers.tree import reply_kind

PLATFORM = "deepseek"
ROOT = "root"
URL = "https://chat.deepseek.com/a/chat/s/{}"

KNOWN_CONVERSATION_FIELDS = frozenset(
    {"id", "title", "inserted_at", "updated_at", "mapping",
     # the ChatGPT-shaped wrapper some exporters write around the same mapping
     "create_time", "update_time", "current_node"}
)
KNOWN_SESSION_FIELDS = frozenset(
    {"id", "title", "inserted_at", "updated_at", "current_message_id", "seq_id", "agent", "title_type", "version", "pinned",
     "character", "is_empty"}
)
KNOWN_NODE_FIELDS = frozenset({"id", "parent", "children", "message"})
KNOWN_MESSAGE_FIELDS = frozenset(
    {
        "fragments", "inserted_at", "model", "files",
        # the web API's message fields, which an export may carry too (kept in extra when set)
        "message_id", "parent_id", "role", "status", "thinking_enabled", "search_enabled", "accumulated_token_usage",
        "feedback", "ban_edit", "ban_regenerate", "has_pending_fragment", "auto_continue", "conversation_mode",
        # the web API's older messages (until mid-2025): text and thinking without fragments
        "content", "thinking_content", "thinking_elapsed_secs", "search_status", "search_results", "tips",
    }
)
_EXTRA_MESSAGE_FIELDS = frozenset(
    {"status", "thinking_enabled", "search_enabled", "accumulated_token_usage", "feedback", "conversation_mode", "search_status", "tips"}
)
KNOWN_FRAGMENT_FIELDS = frozenset(
    {
        "id", "type", "content", "references", "stage_id", "elapsed_secs", "results", "queries", "status",
        # tool steps and file fragments
        "name", "url", "query", "args", "arguments", "input", "output", "error", "file_id", "file_name", "file_size",
        "file_type", "mime_type", "size", "token_usage",
    }
)
# inline search citation markers the page shows as numbered links, not as text: [citation:3]
_CITATION_MARKER = re.compile(r"\[citation:\s*\d+\]")
_ROLES = {"USER": Role.USER, "ASSISTANT": Role.ASSISTANT}  # the web API's `role`, where a message has one
_NOT_TOOL_INPUT = frozenset({"id", "type", "results", "content", "output", "status", "stage_id", "elapsed_secs", "error", "references"})


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one record of file `name` becomes a Conversation."""
    return lambda record, where: conversation_from_deepseek(expect_object(record, "a conversation object"), report, file=name, where=where)


def conversation_from_deepseek(record: dict[str, Any], report: ReadReport, file: str = "", where: str = "") -> Conversation:
    """One DeepSeek conversation object as a Conversation (parent pointers set, branches not yet resolved)."""
    conv_id = record.get("id")
    if not isinstance(conv_id, str) or not conv_id:
        raise ValueError("conversation has no id")
    mapping = record.get("mapping")
    if not isinstance(mapping, dict):
        raise TypeError(f"`mapping` is not an object (got {type(mapping).__name__})")
    meta: dict[str, Any] = {}
    keep_unknown(record, KNOWN_CONVERSATION_FIELDS, meta, report, "deepseek.conversation_field")
    place = f"{where} (conversation {conv_id})" if where else f"conversation {conv_id}"
    return Conversation.fast(
        source=Source.DEEPSEEK,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=text_or_none(record.get("title")),
        created_at=parse_iso_time(record.get("inserted_at", record.get("create_time"))),
        updated_at=parse_iso_time(record.get("updated_at", record.get("update_time"))),
        url=URL.format(conv_id),
        current_node=current if isinstance(current := record.get("current_node"), str) and current != ROOT else None,
        messages=_messages(mapping, report, file, place),
        meta=meta,
    )


def api_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one saved web-API answer (`history_messages`) in file `name` becomes a Conversation."""
    return lambda record, where: conversation_from_api(expect_object(record, "a history_messages object"), report)


def api_body(record: dict[str, Any]) -> dict[str, Any] | None:
    """The `{chat_session, chat_messages}` of a saved web-API answer: under `data.biz_data` (the whole
    response, as userscripts save it), under `biz_data`, or at the top."""
    for body in (record, record.get("biz_data"), (record.get("data") or {}).get("biz_data") if isinstance(record.get("data"), dict) else None):
        if isinstance(body, dict) and "chat_messages" in body and ("chat_session" in body or "id" in body):
            return body
    return None


def conversation_from_api(record: dict[str, Any], report: ReadReport) -> Conversation | None:
    """DeepSeek's web API answer (`GET /api/v0/chat/history_messages`) as a Conversation: the session
    is the conversation (`current_message_id` its active leaf), every message one Message under its
    `parent_id` (integers as text; null a root: an edited first prompt is a second root)."""
    body = api_body(record)
    if body is None:
        raise ValueError("no `chat_session` and `chat_messages` (under `data.biz_data`)")
    session = body.get("chat_session")
    if not isinstance(session, dict):
        session = {key: value for key, value in body.items() if key != "chat_messages"}  # (an unwrapped save)
    conv_id = _id_text(session.get("id"))
    if conv_id is None:
        raise ValueError("conversation has no id")
    meta: dict[str, Any] = {}
    keep_unknown({k: v for k, v in session.items() if v is not None}, KNOWN_SESSION_FIELDS, meta, report, "deepseek.session_field")
    for key in ("url", "code", "msg"):
        if record.get(key) not in (None, "", 0):
            meta[f"api_{key}"] = record[key]
    raw_messages = body.get("chat_messages")
    if not isinstance(raw_messages, list):
        raise TypeError(f"conversation {conv_id}: `chat_messages` is {type(raw_messages).__name__}, not a list")
    if not raw_messages:  # (an incremental answer, `cache_control: MERGE`, holds none: never an empty chat over a full one)
        report.skip("deepseek-api answer without messages")
        return None
    messages: list[Message] = []
    for index, raw in enumerate(raw_messages):
        if not isinstance(raw, dict):
            raise TypeError(f"conversation {conv_id}: message {index} is {type(raw).__name__}, not an object")
        mid = _id_text(raw.get("message_id")) or f"{conv_id}:{index}"
        messages.append(message_from_deepseek(_with_fragments(raw), report, mid, _id_text(raw.get("parent_id"))))
    return Conversation.fast(
        source=Source.DEEPSEEK,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=text_or_none(session.get("title")),
        created_at=parse_iso_time(session.get("inserted_at")),
        updated_at=parse_iso_time(session.get("updated_at")),
        url=URL.format(conv_id),
        current_node=_id_text(session.get("current_message_id")),
        messages=messages,
        meta=meta,
    )


def _id_text(value: Any) -> str | None:
    """An id as text: the web API's integers, or a string."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) and value else None


def _with_fragments(raw: dict[str, Any]) -> dict[str, Any]:
    """An older web-API message (`content`, `thinking_content`, `search_results`, no `fragments`) as the
    fragments newer ones carry, so one reading serves both; a message with fragments as it is."""
    if raw.get("fragments") is not None or not any(raw.get(k) for k in ("content", "thinking_content", "search_results")):
        return raw
    fragments: list[dict[str, Any]] = []
    if isinstance(raw.get("thinking_content"), str) and raw["thinking_content"]:
        fragments.append({"type": "THINK", "content": raw["thinking_content"], "elapsed_secs": raw.get("thinking_elapsed_secs")})
    if isinstance(raw.get("search_results"), list) and raw["search_results"]:
        fragments.append({"type": "SEARCH", "results": raw["search_results"]})
    if isinstance(raw.get("content"), str):
        fragments.append({"type": "REQUEST" if raw.get("role") == "USER" else "RESPONSE", "content": raw["content"]})
    return {**{k: v for k, v in raw.items() if k not in _OLDER_FIELDS}, "fragments": fragments}


_OLDER_FIELDS = frozenset({"content", "thinking_content", "thinking_elapsed_secs", "search_results"})


def _messages(mapping: dict[str, Any], report: ReadReport, file: str, place: str) -> list[Message]:
    nodes: list[tuple[str, dict[str, Any]]] = []
    parent_of: dict[str, Any] = {}
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            report.error(file, f"{place} node {node_id}", f"node is not an object (got {type(node).__name__})")
            continue
        nodes.append((node_id, node))
        parent_of[node_id] = node.get("parent")
    for node_id, node in nodes:  # a node may say its parent only through the parent's `children`
        children = node.get("children")
        for child in children if isinstance(children, list) else ():
            if isinstance(child, str) and child in parent_of and parent_of[child] is None and child != node_id:
                parent_of[child] = node_id
    has_message = {node_id for node_id, node in nodes if isinstance(node.get("message"), dict)}

    def message_parent(node_id: str) -> str | None:
        """The nearest ancestor holding a message (`root` and empty nodes are passed through)."""
        seen = {node_id}
        parent = parent_of.get(node_id)
        while isinstance(parent, str) and parent not in has_message and parent in parent_of and parent not in seen:
            seen.add(parent)
            parent = parent_of[parent]
        if not isinstance(parent, str) or parent == ROOT or parent in seen or (parent in parent_of and parent not in has_message):
            return None
        return parent  # a message node, or an id the mapping lacks (the resolver reports it dangling)

    messages: list[Message] = []
    for node_id, node in nodes:
        raw = node.get("message")
        if raw is None:
            continue
        if not isinstance(raw, dict):
            report.error(file, f"{place} node {node_id}", f"message is not an object (got {type(raw).__name__})")
            continue
        msg = message_from_deepseek(raw, report, node_id, message_parent(node_id))
        keep_unknown(node, KNOWN_NODE_FIELDS, msg.extra, report, "deepseek.node_field")
        messages.append(msg)
    return messages


def _fragment_id(frag: dict[str, Any], index: int) -> int | str:
    """A fragment's own id where it has one (a number or a non-empty text), else its place."""
    frag_id = frag.get("id")
    return frag_id if isinstance(frag_id, (int, str)) and frag_id != "" else index


def _read_tool_fragment(frag: dict[str, Any], ftype: str, call_id: str, tool_calls: list[ToolCall], tool_results: list[ToolResult],
                        citations: list[Citation]) -> None:
    """A `TOOL_*` fragment: its call, the citations among its results, and its result where it has one."""
    name = ftype[len("TOOL_"):].lower() or "tool"
    tool_calls.append(ToolCall.fast(id=call_id, name=name, input=_tool_input(frag)))
    found = _citations(frag.get("results"))
    citations.extend(found)
    if frag.get("results") is not None or frag.get("content") is not None or frag.get("output") is not None:
        tool_results.append(
            ToolResult.fast(tool_call_id=call_id, name=name, output=_tool_output(frag, found), is_error=frag.get("error") not in (None, "", False))
        )


def _without_citation_markers(visible: str, extra: dict[str, Any]) -> str:
    """The text without its `[citation:n]` markers (the text as written kept as `extra["raw_text"]`)."""
    if "[citation:" not in visible:
        return visible
    extra["raw_text"] = visible
    return _CITATION_MARKER.sub("", visible)


def message_from_deepseek(raw: dict[str, Any], report: ReadReport, message_id: str, parent_id: str | None) -> Message:
    """One node's `message` (its fragments) as a canonical Message."""
    extra: dict[str, Any] = {key: value for key, value in raw.items() if key in _EXTRA_MESSAGE_FIELDS and value is not None}
    keep_unknown(raw, KNOWN_MESSAGE_FIELDS, extra, report, "deepseek.message_field")

    requests: list[str] = []
    responses: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[ToolCall] = []
    tool_results: list[ToolResult] = []
    citations: list[Citation] = []
    attachments = _attachments(raw.get("files"))
    types: list[str] = []
    unknown: list[Any] = []
    fragments = raw.get("fragments")
    if fragments is not None and not isinstance(fragments, list):
        raise TypeError(f"message {message_id}: `fragments` is {type(fragments).__name__}, not a list")
    for index, frag in enumerate(fragments or ()):
        ftype = frag.get("type") if isinstance(frag, dict) else None
        if not isinstance(ftype, str):
            report.unknown(f"deepseek.fragment:{type(frag).__name__ if not isinstance(frag, dict) else None}")
            unknown.append(frag)
            continue
        if ftype not in types:
            types.append(ftype)
        if not frag.keys() <= KNOWN_FRAGMENT_FIELDS:
            fields: dict[str, Any] = {}
            keep_unknown(frag, KNOWN_FRAGMENT_FIELDS, fields, report, "deepseek.fragment_field")
            extra.setdefault("fragment_fields", []).append({"fragment": index, "type": ftype, **fields})
        content = frag.get("content")
        text = content if isinstance(content, str) else ""
        if ftype == "REQUEST":
            requests.append(text)
        elif ftype == "RESPONSE":
            responses.append(text)
            citations.extend(_citations(frag.get("references")))
        elif ftype == "THINK":
            if text.strip():
                reasoning.append(text)
        elif ftype == "SEARCH":
            citations.extend(_citations(frag.get("results")))
        elif ftype.startswith("TOOL_"):
            _read_tool_fragment(frag, ftype, f"{message_id}:{_fragment_id(frag, index)}", tool_calls, tool_results, citations)
        elif ftype == "FILE":
            attachments.extend(_attachments([frag]))
        else:
            report.unknown(f"deepseek.fragment:{ftype}")
            unknown.append(frag)
    if unknown:
        extra["unknown_fragments"] = unknown

    role_name = raw.get("role")
    named = _ROLES.get(role_name) if isinstance(role_name, str) else None
    role = named or (Role.USER if "REQUEST" in types or (types and set(types) <= {"FILE"}) else Role.ASSISTANT)
    visible = "\n\n".join(t for t in (requests if role is Role.USER else responses) if t.strip())
    joined_reasoning = "\n\n".join(reasoning) or None
    visible = _without_citation_markers(visible, extra)
    # (role is a user's or an assistant's: the shared rule, with an empty message's text empty)
    kind, text = reply_kind(role, visible, attachments, tool_calls, joined_reasoning, extra)
    if kind is MessageKind.HIDDEN:
        text = ""  # a message with nothing in it (a stopped answer, an empty prompt)

    model = raw.get("model")
    return Message.fast(
        message_id=message_id,
        parent_id=parent_id,
        role=role,
        kind=kind,
        text=text,
        created_at=parse_iso_time(raw.get("inserted_at")),
        model=model if isinstance(model, str) and model else None,
        content_type=",".join(types) or None,
        reasoning=joined_reasoning,
        tool_calls=tool_calls,
        tool_results=tool_results,
        citations=citations,
        attachments=attachments,
        extra=extra,
    )


_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#:\[\]]+)")


def _domain(url: str | None) -> str | None:
    m = _HOST.match(url) if url else None
    return m.group(1).lower() if m else None


def _citations(raw: Any) -> list[Citation]:
    """Search results and references: [{url, title, snippet, site_name, cite_index, ...}]."""
    out: list[Citation] = []
    for item in raw if isinstance(raw, list) else ():
        if not isinstance(item, dict):
            continue
        url = text_or_none(item.get("url"))
        title = text_or_none(item.get("title"))
        snippet = text_or_none(item.get("snippet")) or text_or_none(item.get("summary")) or text_or_none(item.get("content"))
        if url or title or snippet:
            out.append(Citation.fast(title=title, url=url, snippet=snippet, source=text_or_none(item.get("site_name")) or _domain(url)))
    return out


def _tool_input(frag: dict[str, Any]) -> str:
    """What a tool step was asked: its queries, url or arguments (JSON), as the fragment has them."""
    asked = {k: v for k, v in frag.items() if k not in _NOT_TOOL_INPUT and v is not None}
    if len(asked) == 1:
        (value,) = asked.values()
        if isinstance(value, str):
            return value
    return json_text(asked) if asked else ""


def _tool_output(frag: dict[str, Any], found: list[Citation]) -> str:
    parts: list[str] = []
    for key in ("content", "output", "error"):
        if isinstance(frag.get(key), str) and frag[key]:
            parts.append(frag[key])
        elif frag.get(key) not in (None, "", False):
            parts.append(json_text(frag[key]))
    parts.extend("\n".join(p for p in (c.title, c.url, c.snippet) if p) for c in found)
    return "\n\n".join(p for p in parts if p)


def _attachments(raw: Any) -> list[Attachment]:
    """The message's `files` (and FILE fragments): {id|file_id, file_name|name, file_size|size, ...}."""
    out: list[Attachment] = []
    for f in raw if isinstance(raw, list) else ():
        if not isinstance(f, dict):
            continue
        size = f.get("file_size", f.get("size"))
        mime = text_or_none(f.get("mime_type")) or text_or_none(f.get("file_type"))
        content = f.get("content")
        out.append(
            Attachment.fast(
                kind="image" if mime is not None and mime.startswith("image/") else "file",
                id=text_or_none(f.get("file_id")) or text_or_none(f.get("id")),
                name=text_or_none(f.get("file_name")) or text_or_none(f.get("name")),
                mime_type=mime,
                size=size if isinstance(size, int) and not isinstance(size, bool) else None,
                pointer=text_or_none(f.get("url")),
                text=content if isinstance(content, str) and content else None,
            )
        )
    return out
