"""Mistral Le Chat exports: a zip of `chat-<uuid>.json` files, each a JSON array of the messages of
ONE chat, with that chat's uploads in a folder beside it (`chat-<uuid>-files/<file name>`).

A message is `{id, version, chatId, content, contentChunks, role: "user" | "assistant", createdAt,
reaction, reactionDetail, reactionComment, preference, preferenceOver, context, canvas, quotes,
files: [{type, name}], references}`. The file has no chat-level record (no title: the first user
message stands in for one) and its messages are not in order: they are put in `createdAt` order
and chained. What the format says of branches is kept as branches: several versions of one message
id (the highest `version` is the one shown, the others siblings beside it), `preferenceOver` (the
answer the user preferred over another: the other one a sibling off the active branch), and
`parentId` pointers where a file has them (then the tree is theirs).

`contentChunks` (null for plain text) hold the reply piece by piece: `text` chunks are the visible
text (`content` repeats them joined, and is read when there are no chunks), `tool_call` chunks
(`name`, `publicArguments`, `publicResult`, `success`) a ToolCall with its ToolResult on the message,
`reference` chunks (`referenceIds`) point into the message's `references`, which become Citations,
`thinking` chunks are reasoning, `custom_element` chunks (widgets) are kept in extra. `files` become
Attachments whose pointer is the file's place in the export (`chat-<uuid>-files/<name>`, built only
from a plain file name). Unknown fields and chunk types are drift, kept.

One file is one conversation whose records are messages: the reader gathers one file's records
(bounded: one chat) before building it, unlike the readers whose records are conversations.

Layout researched from Superkikim/nexus-ai-chat-importer (src/providers/lechat: lechat-types.ts,
lechat-converter.ts, lechat-attachment-extractor.ts and their tests: the fields, the unordered
messages, `content` duplicating the text chunks, the `chat-<id>-files/` folder).
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlparse

from chatetl.model import (
    Attachment,
    Citation,
    Conversation,
    Message,
    Role,
    Source,
    ToolCall,
    ToolResult,
)
from chatetl.readers.convert import convert_records, json_text, raw_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.fields import keep_unknown, known_role, text_or_none
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_iso_time
from chatetl.readers.tree import reply_kind

PLATFORM = "mistral"
KNOWN_MESSAGE_FIELDS = frozenset(
    {
        "id", "version", "chatId", "content", "contentChunks", "role", "createdAt", "reaction", "reactionDetail",
        "reactionComment", "preference", "preferenceOver", "context", "canvas", "quotes", "files", "references", "parentId",
    }
)
KNOWN_CHUNK_TYPES = frozenset({"text", "tool_call", "reference", "custom_element", "thinking", "think"})
ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_CHAT_FILE = re.compile(r"chat-([0-9A-Za-z][0-9A-Za-z-]*)\.json$")
TITLE_CHARS = 80


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    """The one conversation of a `chat-<uuid>.json` file: its records gathered, then converted."""
    records = list(iter_records(entry, shape or Shape.ARRAY, report))
    if not records:
        return
    convert = chat_converter(entry.name, report)
    yield from convert_records(entry, iter([("", records)]), report, convert)


def chat_converter(name: str, report: ReadReport) -> Callable[[list[tuple[str, Any]], str], Conversation | None]:
    """How the (place, message) records of file `name` become its Conversation."""
    return lambda records, where: conversation_from_le_chat(records, report, file=name)


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one record that is a whole chat (the list of its messages) becomes a Conversation."""

    def convert(record: Any, where: str) -> Conversation | None:
        if not isinstance(record, list):
            raise ValueError(f"expected a list of Le Chat messages, got {type(record).__name__}")  # noqa: TRY004 (convert_records reports ValueErrors)
        prefix = f"{where} " if where else ""
        return conversation_from_le_chat([(f"{prefix}message {i}", m) for i, m in enumerate(record)], report, file=name)

    return convert


def conversation_from_le_chat(records: list[tuple[str, Any]], report: ReadReport, file: str = "") -> Conversation:
    """The messages of one chat as a Conversation (parent pointers set, branches not yet resolved)."""
    raws: list[tuple[str, dict[str, Any]]] = []
    for where, raw in records:
        if isinstance(raw, dict):
            raws.append((where, raw))
        else:
            report.error(file, where, f"message is not an object (got {type(raw).__name__})", raw=raw_bytes(raw))
    file_id = _CHAT_FILE.search(file.rsplit("!", 1)[-1].replace("\\", "/").rsplit("/", 1)[-1])
    chat_id = next((raw["chatId"] for _, raw in raws if text_or_none(raw.get("chatId"))), None) or (file_id.group(1) if file_id else None)
    if chat_id is None:
        raise ValueError("no message names its chatId, nor does the file name (chat-<uuid>.json)")
    mine: list[tuple[str, dict[str, Any]]] = []
    for where, raw in raws:
        other = text_or_none(raw.get("chatId"))
        if other is not None and other != chat_id:
            report.error(file, where, f"message of chat {other} in the file of chat {chat_id}: not read", raw=raw_bytes(raw))
            continue
        mine.append((where, raw))

    folder = _member_folder(file)
    built: list[tuple[int, dict[str, Any], Message]] = []  # (file index, raw, message)
    for index, (_where, raw) in enumerate(mine):
        built.append((index, raw, message_from_le_chat(raw, report, chat_id, index, folder)))
    messages, current = _arrange(built)

    title, meta = None, {}
    first_id = current_first_user(messages, current)
    first_user = next((m for m in messages if m.message_id == first_id), None)
    if first_user is not None and first_user.text.strip():
        line = first_user.text.strip().splitlines()[0].strip()
        title = line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1].rstrip() + "…"
        meta["title_from"] = "first user message"  # the export has no titles
    times = [m.created_at for m in messages if m.created_at is not None]
    return Conversation.fast(
        source=Source.LE_CHAT,
        platform=PLATFORM,
        conversation_id=chat_id,
        title=title,
        created_at=min(times) if times else None,
        updated_at=max(times) if times else None,
        url=f"https://chat.mistral.ai/chat/{chat_id}",
        current_node=current,
        messages=messages,
        meta=meta,
    )


def current_first_user(messages: list[Message], current: str | None) -> str | None:
    """The first user message of the active branch (walked back from `current`), else of the file."""
    by_id = {m.message_id: m for m in messages}
    node, first, seen = by_id.get(current) if current else None, None, set()
    while node is not None and node.message_id not in seen:
        seen.add(node.message_id)
        if node.role is Role.USER:
            first = node.message_id
        node = by_id.get(node.parent_id) if node.parent_id else None
    if first is None:
        first = next((m.message_id for m in messages if m.role is Role.USER), None)
    return first


def _arrange(built: list[tuple[int, dict[str, Any], Message]]) -> tuple[list[Message], str | None]:
    """Parents for the messages of one chat: theirs (`parentId`), else the `createdAt` chain with
    older versions and passed-over answers as siblings of the one shown. Returns (messages, leaf)."""
    # several versions of one id: the highest is shown, the others get ids of their own
    by_id: dict[str, list[tuple[int, dict[str, Any], Message]]] = {}
    for item in built:
        by_id.setdefault(item[2].message_id, []).append(item)
    shown: dict[str, tuple[int, dict[str, Any], Message]] = {}
    older: list[tuple[str, Message]] = []  # (id of the version shown, an older version)
    for mid, items in by_id.items():
        items.sort(key=lambda it: (_version(it[1]), it[0]))
        shown[mid] = items[-1]
        for _index, raw, msg in items[:-1]:
            msg.message_id = f"{mid}@v{_version(raw)}"
            msg.extra["version_of"] = mid
            older.append((mid, msg))

    if any("parentId" in raw for _i, raw, _m in built):  # the file's own tree
        for _index, raw, msg in built:
            msg.parent_id = text_or_none(raw.get("parentId"))
        for mid, msg in older:
            msg.parent_id = shown[mid][2].parent_id
        return [msg for _i, _r, msg in sorted(built, key=lambda it: it[0])], None

    passed_over: dict[str, str] = {}  # answer passed over -> the answer preferred to it
    for mid, (_index, raw, _msg) in shown.items():
        for other in _ids(raw.get("preferenceOver")):
            if other in shown and other != mid:
                passed_over.setdefault(other, mid)
    chain = sorted((item for mid, item in shown.items() if mid not in passed_over), key=lambda it: (it[2].created_at or _EPOCH, it[0]))
    previous: str | None = None
    for _index, _raw, msg in chain:
        msg.parent_id = previous
        previous = msg.message_id
    for other, preferred in passed_over.items():
        msg = shown[other][2]
        msg.parent_id = shown[preferred][2].parent_id
        msg.extra["passed_over_for"] = preferred
    for mid, msg in older:
        msg.parent_id = shown[mid][2].parent_id
    ordered = [msg for _i, _r, msg in chain]
    ordered += [shown[other][2] for other in passed_over]
    ordered += [msg for _mid, msg in older]
    return ordered, previous


def _version(raw: dict[str, Any]) -> int:
    version = raw.get("version")
    return version if isinstance(version, int) and not isinstance(version, bool) else 0


def _ids(value: Any) -> list[str]:
    if isinstance(value, str) and value:
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


def _member_folder(file: str) -> str:
    """The folder of the chat file inside its upload ("" at the top), where its files folder lies."""
    member = file.rsplit("!", 1)[-1] if "!" in file else file.replace("\\", "/").rsplit("/", 1)[-1]
    member = member.replace("\\", "/")
    return member.rsplit("/", 1)[0] + "/" if "/" in member else ""


def message_from_le_chat(raw: dict[str, Any], report: ReadReport, chat_id: str, index: int, folder: str = "") -> Message:
    """One Le Chat message object as a canonical Message (no parent yet)."""
    mid = text_or_none(raw.get("id")) or f"{chat_id}:{index}"
    extra: dict[str, Any] = {}
    role = known_role(ROLES, raw.get("role"), report, drift="le-chat.role", extra=extra, keep_as="raw_role", default=Role.ASSISTANT)
    keep_unknown(raw, KNOWN_MESSAGE_FIELDS, extra, report, "le-chat.message_field")
    _keep_feedback(raw, extra)

    texts: list[str] = []
    reasoning: list[str] = []
    tool_calls: list[ToolCall] = []
    tool_results: list[ToolResult] = []
    reference_ids: list[Any] = []
    types: list[str] = []
    chunks = raw.get("contentChunks")
    for chunk in chunks if isinstance(chunks, list) else []:
        ctype = chunk.get("type") if isinstance(chunk, dict) else None
        if isinstance(ctype, str) and ctype not in types:
            types.append(ctype)
        if ctype == "text":
            if isinstance(chunk.get("text"), str):
                texts.append(chunk["text"])
        elif ctype == "tool_call":
            call, result = _tool_call(chunk, f"{mid}:tool:{len(tool_calls)}")
            tool_calls.append(call)
            if result is not None:
                tool_results.append(result)
        elif ctype == "reference":
            reference_ids.extend(chunk.get("referenceIds") or [])
        elif ctype in ("thinking", "think"):
            thought = _thinking_text(chunk)
            if thought:
                reasoning.append(thought)
        elif ctype == "custom_element":
            extra.setdefault("custom_elements", []).append(chunk)
        else:
            report.unknown(f"le-chat.chunk:{ctype if isinstance(ctype, str) else type(chunk).__name__}")
            extra.setdefault("unknown_chunks", []).append(chunk)
    content = raw.get("content")
    visible = "".join(texts) if texts else (content if isinstance(content, str) else json_text(content))
    if reference_ids:
        extra["reference_ids"] = reference_ids

    joined_reasoning = "\n\n".join(reasoning) or None
    attachments = _attachments(raw.get("files"), chat_id, folder)
    kind, visible = reply_kind(role, visible, attachments, tool_calls, joined_reasoning, extra)

    return Message.fast(
        message_id=mid,
        role=role,
        kind=kind,
        text=visible,
        created_at=parse_iso_time(raw.get("createdAt")),
        content_type=",".join(types) or "text",
        reasoning=joined_reasoning,
        tool_calls=tool_calls,
        tool_results=tool_results,
        citations=_citations(raw.get("references")),
        attachments=attachments,
        extra=extra,
    )


def _keep_feedback(raw: dict[str, Any], extra: dict[str, Any]) -> None:
    """The message's version, the person's reaction and preference, and what it was written in
    (context, canvas, quotes) into `extra`, where the export gives them."""
    if _version(raw):
        extra["version"] = _version(raw)
    if raw.get("reaction") not in (None, "", "neutral"):
        extra["reaction"] = raw["reaction"]
    for key, name in (("reactionDetail", "reaction_detail"), ("reactionComment", "reaction_comment"), ("preference", "preference"),
                      ("preferenceOver", "preference_over"), ("context", "context"), ("canvas", "canvas"), ("quotes", "quotes")):
        if raw.get(key) not in (None, "", [], {}):
            extra[name] = raw[key]


def _tool_call(chunk: dict[str, Any], fallback_id: str) -> tuple[ToolCall, ToolResult | None]:
    call_id = text_or_none(chunk.get("id")) or fallback_id
    name = text_or_none(chunk.get("name"))
    arguments = chunk.get("publicArguments")
    if arguments is None:
        arguments = chunk.get("arguments")
    call = ToolCall.fast(id=call_id, name=name, input=json_text(arguments))
    if chunk.get("publicResult") is None and chunk.get("isDone") is not True:
        return call, None
    result = ToolResult.fast(tool_call_id=call_id, name=name, output=json_text(chunk.get("publicResult")), is_error=chunk.get("success") is False)
    return call, result


def _thinking_text(chunk: dict[str, Any]) -> str:
    """A thinking chunk as the API writes one (`thinking: [{type: "text", text}]`), or plain `text`."""
    thinking = chunk.get("thinking")
    if isinstance(thinking, str):
        return thinking
    if isinstance(thinking, list):
        return "".join(t.get("text", "") if isinstance(t, dict) and isinstance(t.get("text"), str) else t if isinstance(t, str) else "" for t in thinking)
    text = chunk.get("text")
    return text if isinstance(text, str) else ""


def _plain_name(name: str | None) -> bool:
    return name is not None and name != "" and "/" not in name and "\\" not in name and name not in (".", "..") and "\x00" not in name


def _attachments(raw: Any, chat_id: str, folder: str) -> list[Attachment]:
    out: list[Attachment] = []
    for f in raw if isinstance(raw, list) else []:
        if not isinstance(f, dict):
            continue
        name = text_or_none(f.get("name"))
        ftype = text_or_none(f.get("type"))
        mime = text_or_none(f.get("mimeType")) or text_or_none(f.get("mime_type")) or (mimetypes.guess_type(name)[0] if name else None)
        size = f.get("size")
        out.append(
            Attachment.fast(
                kind="image" if ftype == "image" or (mime or "").startswith("image/") else "file",
                id=text_or_none(f.get("id")),
                name=name,
                mime_type=mime,
                size=size if isinstance(size, int) and not isinstance(size, bool) else None,
                # where the export keeps it: a string for the reader of the zip, never a path opened here
                pointer=f"{folder}chat-{chat_id}-files/{name}" if _plain_name(name) else text_or_none(f.get("url")),
            )
        )
    return out


def _citations(raw: Any) -> list[Citation]:
    items = raw.values() if isinstance(raw, dict) else raw if isinstance(raw, list) else []
    out: list[Citation] = []
    for ref in items:
        if not isinstance(ref, dict):
            continue
        url = text_or_none(ref.get("url")) or text_or_none(ref.get("link"))
        title = text_or_none(ref.get("title")) or text_or_none(ref.get("name"))
        snippet = text_or_none(ref.get("snippet")) or text_or_none(ref.get("description")) or text_or_none(ref.get("summary"))
        source = text_or_none(ref.get("source"))
        if source is None and url:
            try:
                source = urlparse(url).hostname or None
            except ValueError:
                source = None
        if url or title or snippet:
            out.append(Citation.fast(title=title, url=url, snippet=snippet, source=source))
    return out
