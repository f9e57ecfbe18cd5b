"""Gemini CLI sessions: `~/.gemini/tmp/<project>/chats/session-<time>-<id>.jsonl` (or the older `.json`).

The older file is one object `{sessionId, projectHash, startTime, lastUpdated, summary?, messages}`,
rewritten whole; the newer one is JSON Lines, appended: a header (`sessionId`, `projectHash`, `kind`),
messages (`id`, `timestamp`, `type`, `content`), `{"$set": {...}}` patches of the header and
`{"$rewindTo": id}`. A message id written again is the same message updated (tokens, tool results): the
later line wins, in the place of the first. A rewind drops that message and those after it in Gemini
CLI; here they stay as an abandoned branch (off the active one), and what follows continues from the
message before it. A `gemini` message becomes its reasoning (`thoughts`, never a turn), its answer,
then each tool call and its result; `info`/`warning`/`error` messages are hidden system lines. The
title is the session's summary, else the first prompt. A sub-agent's session lies in
`chats/<parent session id>/`: its id is `<parent>/<own>`, `meta["parent_session_id"]` the parent.

`logs.json` beside the chats is the prompt log (prompts, no answers): a sidecar, read as no conversation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from chatetl.model import Attachment, Conversation, Message, MessageKind, Role, Source, ToolCall, ToolResult
from chatetl.readers.convert import convert_records, json_text, raw_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.fields import list_or_empty, text_or_none
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.platforms.claude_code import session_lines
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time
from chatetl.readers.tree import turn_kind

PLATFORM = "gemini-cli"
CUT_LAST_LINE = "gemini-cli.cut last line"
MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
HEADER_KEYS = ("sessionId", "projectHash", "startTime", "lastUpdated", "summary", "kind", "directories")


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    if shape is Shape.JSONL:
        def convert(_record: Any, _where: str) -> Conversation | None:
            return conversation_from_records(entry, session_lines(entry, report, CUT_LAST_LINE), report)

        yield from convert_records(entry, iter([("", entry.name)]), report, convert)
        return

    def convert_whole(record: Any, where: str) -> Conversation | None:  # the older one-object file
        if not isinstance(record, dict):
            report.error(entry.name, where, f"a session is a JSON object (got {type(record).__name__})", raw=raw_bytes(record))
            return None
        messages = list_or_empty(record, "messages")
        header = {k: v for k, v in record.items() if k != "messages"}
        records = [("header", header)] + [(f"messages[{i}]", m) for i, m in enumerate(messages)]
        return conversation_from_records(entry, iter(records), report)

    yield from convert_records(entry, iter_records(entry, shape or Shape.OBJECT, report), report, convert_whole)


@dataclass
class _Record:
    record: dict[str, Any]
    parent: str | None  # the id of the message before it when it was first written
    rewound: bool = False


@dataclass
class _Session:
    meta: dict[str, Any] = field(default_factory=dict)
    by_id: dict[str, _Record] = field(default_factory=dict)  # order of first appearance
    active: list[str] = field(default_factory=list)  # the ids on the active branch, in order


def conversation_from_records(entry: Entry, records: Iterator[tuple[str, Any]], report: ReadReport) -> Conversation | None:
    s = _Session()
    for where, rec in records:
        if not isinstance(rec, dict):
            report.error(entry.name, where, f"record is not a JSON object (got {type(rec).__name__})", raw=raw_bytes(rec))
            continue
        _add_record(s, rec, report)
    if not s.by_id:
        if s.meta:
            report.skip("gemini-cli session without messages")
        return None

    own_id, project, parent = _path_parts(entry.name)
    session_id = text_or_none(s.meta.get("sessionId")) or own_id
    meta: dict[str, Any] = {"session_id": session_id}
    for key in ("projectHash", "kind", "directories"):
        if s.meta.get(key) not in (None, "", []):
            meta[key] = s.meta[key]
    if project:
        meta["project"] = project
    conv_id = session_id
    if parent and (s.meta.get("kind") == "subagent" or parent != session_id):
        meta["parent_session_id"] = parent
        conv_id = f"{parent}/{session_id}"

    messages: list[Message] = []
    last_of: dict[str, str] = {}  # a record id -> the id of the last message made of it
    for rid, e in s.by_id.items():
        made = _messages(rid, e.record, report)
        previous = last_of.get(e.parent) if e.parent else None
        for m in made:
            m.parent_id = previous
            previous = m.message_id
            if e.rewound:
                m.extra["rewound"] = True
        if made:
            last_of[rid] = made[-1].message_id
        messages.extend(made)
    if not messages:
        return None
    current = next((last_of[r] for r in reversed(s.active) if r in last_of), None)
    times = [m.created_at for m in messages if m.created_at is not None]
    last = parse_time(s.meta.get("lastUpdated"))
    updated = max([*times, last] if last else times) if times or last else None
    models = Counter(m.model for m in messages if m.model)
    summary = s.meta.get("summary")
    return Conversation(
        source=Source.GEMINI_CLI,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=summary.strip() if isinstance(summary, str) and summary.strip() else _first_prompt(messages),
        created_at=parse_time(s.meta.get("startTime")) or (min(times) if times else None),
        updated_at=updated,
        model=models.most_common(1)[0][0] if models else None,
        current_node=current,
        messages=messages,
        meta=meta,
    )


def _path_parts(name: str) -> tuple[str, str | None, str | None]:
    """(file stem, project folder, parent session id of a sub-agent's file) from an entry name."""
    parts = PurePosixPath(name.rsplit("!", 1)[-1].replace("\\", "/")).parts
    stem = PurePosixPath(parts[-1]).stem if parts else name
    project, parent = None, None
    if "chats" in parts:
        at = len(parts) - 1 - parts[::-1].index("chats")
        project = parts[at - 1] if at >= 1 else None
        if len(parts) - at == 3:  # chats/<parent session>/<own>.jsonl
            parent = parts[at + 1]
    return stem, project, parent


def _first_prompt(messages: list[Message]) -> str | None:
    for m in messages:
        if m.role is Role.USER and m.kind is MessageKind.TURN and not m.extra.get("rewound") and m.text.strip():
            return " ".join(m.text.split())[:80]
    return None


def _add_record(s: _Session, rec: dict[str, Any], report: ReadReport) -> None:
    if "$set" in rec:
        patch = rec["$set"] if isinstance(rec["$set"], dict) else {}
        if isinstance(patch.get("messages"), list):  # the whole history written again: it replaces the branch
            _rewind(s, 0)
            for m in patch["messages"]:
                known = s.by_id.get(m["id"]) if isinstance(m, dict) and isinstance(m.get("id"), str) else None
                if known is not None:  # still there: back on the branch, as now written
                    known.record, known.rewound = m, False
                    s.active.append(m["id"])
                elif isinstance(m, dict) and isinstance(m.get("id"), str):
                    _add_message(s, m, report)
        s.meta.update({k: v for k, v in patch.items() if k != "messages"})
        report.skip("gemini-cli.line:$set")
        return
    if "$rewindTo" in rec:
        target = rec["$rewindTo"]
        _rewind(s, s.active.index(target) if target in s.active else 0)
        report.skip("gemini-cli.line:$rewindTo")
        return
    if "sessionId" in rec and "type" not in rec:  # the header (a migrated file may repeat it)
        s.meta.update({k: rec[k] for k in HEADER_KEYS if k in rec})
        for key in sorted(rec.keys() - set(HEADER_KEYS) - {"messages"}):
            report.unknown(f"gemini-cli.field:{key}")
        return
    if isinstance(rec.get("id"), str) and rec.get("type") in MESSAGE_TYPES:
        _add_message(s, rec, report)
        return
    report.skip("gemini-cli.line:unknown")
    report.unknown("gemini-cli.line:unknown")


def _rewind(s: _Session, at: int) -> None:
    for rid in s.active[at:]:
        s.by_id[rid].rewound = True
    del s.active[at:]


def _add_message(s: _Session, rec: dict[str, Any], report: ReadReport) -> None:
    rid = rec["id"]
    known = s.by_id.get(rid)
    if known is not None and not known.rewound:  # the same message updated: the later line wins
        known.record = rec
        report.skip("gemini-cli.message updated")
        return
    if known is not None:  # a rewound id written again: a new message on the new branch
        report.skip("gemini-cli.message rewritten after rewind")
        rid = f"{rid}@{len(s.by_id)}"
    s.by_id[rid] = _Record(rec, s.active[-1] if s.active else None)
    s.active.append(rid)


def _parts_text(content: Any) -> tuple[str, list[Attachment]]:
    """The text of a Gemini `PartListUnion` (a string, a part, a list of parts) and its files."""
    if isinstance(content, str):
        return content, []
    parts = [content] if isinstance(content, dict) else content if isinstance(content, list) else []
    texts: list[str] = []
    files: list[Attachment] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str) and part.get("thought") is not True:
            texts.append(part["text"])
        elif isinstance(part, dict) and isinstance(part.get("inlineData"), dict):
            files.append(Attachment(kind="file", mime_type=text_or_none(part["inlineData"].get("mimeType"))))
        elif isinstance(part, dict) and isinstance(part.get("fileData"), dict):
            data = part["fileData"]
            files.append(Attachment(kind="file", mime_type=text_or_none(data.get("mimeType")), pointer=text_or_none(data.get("fileUri"))))
    for f in files:
        if f.mime_type and f.mime_type.startswith("image/"):
            f.kind = "image"
    return "\n\n".join(t for t in texts if t.strip()), files


def _messages(rid: str, rec: dict[str, Any], report: ReadReport) -> list[Message]:
    mtype = rec.get("type")
    created = parse_time(rec.get("timestamp"))
    extra: dict[str, Any] = {}
    if mtype == "user":
        shown, files = _parts_text(rec["displayContent"]) if "displayContent" in rec else _parts_text(rec.get("content"))
        sent, sent_files = _parts_text(rec.get("content"))
        if sent != shown:
            extra["content"] = sent
        files = files or sent_files
        return [Message(message_id=rid, role=Role.USER, kind=turn_kind(shown, files, extra), text=shown, created_at=created,
                        attachments=files, content_type="user", extra=extra)]
    if mtype != "gemini":
        text, _files = _parts_text(rec.get("content"))
        return [Message(message_id=rid, role=Role.SYSTEM, kind=MessageKind.HIDDEN, text=text, created_at=created,
                        content_type=f"system:{mtype}")]
    model = text_or_none(rec.get("model"))
    out: list[Message] = []
    thoughts = [t for t in rec.get("thoughts") or [] if isinstance(t, dict)] if isinstance(rec.get("thoughts"), list) else []
    if thoughts:
        text = "\n\n".join(
            ": ".join(v for v in (t.get("subject"), t.get("description")) if isinstance(v, str) and v) for t in thoughts
        )
        out.append(Message(message_id=f"{rid}:thoughts", role=Role.ASSISTANT, kind=MessageKind.REASONING, text=text,
                           reasoning=text, model=model, created_at=parse_time(thoughts[0].get("timestamp")) or created,
                           content_type="thoughts"))
    text, files = _parts_text(rec.get("content"))
    if rec.get("tokens") is not None:
        extra["tokens"] = rec["tokens"]
    calls = [c for c in rec.get("toolCalls") or [] if isinstance(c, dict)] if isinstance(rec.get("toolCalls"), list) else []
    if text.strip() or files or not calls:
        out.append(Message(message_id=rid, role=Role.ASSISTANT, kind=turn_kind(text, files, extra), text=text, model=model,
                           created_at=created, attachments=files, content_type="gemini", extra=extra))
    elif extra:
        out.append(Message(message_id=rid, role=Role.ASSISTANT, kind=MessageKind.HIDDEN, text="", model=model,
                           created_at=created, content_type="gemini", extra={**extra, "empty": True}))
    for n, call in enumerate(calls):
        out.extend(_tool_messages(rid, n, call, model, created))
    for key in sorted(rec.keys() - _MESSAGE_FIELDS):
        report.unknown(f"gemini-cli.field:{key}")
    return out


_MESSAGE_FIELDS = frozenset({"id", "timestamp", "type", "content", "displayContent", "thoughts", "tokens", "toolCalls", "model"})


def _tool_messages(rid: str, n: int, call: dict[str, Any], model: str | None, created: Any) -> list[Message]:
    call_id = text_or_none(call.get("id")) or f"{rid}:{n}"
    name = text_or_none(call.get("name"))
    status = call.get("status") if isinstance(call.get("status"), str) else None
    when = parse_time(call.get("timestamp")) or created
    tool_call = ToolCall(id=call_id, name=name, input=json_text(call.get("args")))
    call_extra: dict[str, Any] = {k: call[k] for k in ("displayName", "description", "agentId") if isinstance(call.get(k), str)}
    if status:
        call_extra["status"] = status
    out = [Message(message_id=f"{rid}:call:{n}", role=Role.ASSISTANT, kind=MessageKind.TOOL_CALL, text=tool_call.input,
                   model=model, author_name=name, created_at=when, tool_calls=[tool_call], content_type="toolCall",
                   extra=call_extra)]
    result = call.get("result")
    if result is None and not isinstance(call.get("resultDisplay"), str):
        return out
    output, is_error = _result_text(result)
    if not output and isinstance(call.get("resultDisplay"), str):
        output = call["resultDisplay"]
    is_error = is_error or status == "error"
    out.append(Message(message_id=f"{rid}:result:{n}", role=Role.TOOL, kind=MessageKind.TOOL_RESULT, text=output,
                       author_name=name, created_at=when, content_type="functionResponse",
                       tool_results=[ToolResult(tool_call_id=call_id, name=name, output=output, is_error=is_error)],
                       extra={"status": status} if status else {}))
    return out


def _result_text(result: Any) -> tuple[str, bool]:
    """A tool result's text (its `functionResponse.response.output` or `.error`, beside text parts) and whether it failed."""
    parts = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
    texts: list[str] = []
    failed = False
    for part in parts:
        if not isinstance(part, dict):
            continue
        response = part.get("functionResponse")
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict) and "error" in body:
                failed = True
                texts.append(json_text(body["error"]))
            elif isinstance(body, dict) and "output" in body:
                texts.append(json_text(body["output"]))
            elif body is not None:
                texts.append(json_text(body))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n\n".join(t for t in texts if t), failed
