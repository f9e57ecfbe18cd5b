"""opencode sessions, one bundle a session: `{"info": session, "messages": [{"info": message, "parts": [part ...]}]}`.

This is what `opencode export <session>` prints and what `chatetl collect` builds from opencode's
storage (its SQLite database, or the older JSON files, one a session, message and part). Each part
is its own message, in the order of the parts' ids: `text` a turn (a synthetic or ignored text is
hidden), `reasoning` reasoning (never a turn), `tool` a call and, once it finished, its result
(`state.output` or `state.error`); step, snapshot, patch and retry parts are skipped and counted. An
assistant message answers its `parentID` (the user message): the steps of one answer follow each
other. A compaction summary (`summary: true`) is a summary. Times are epoch milliseconds. The working
directory is the session's `directory`; opencode records no git branch. A child session (a `task`
tool's sub-agent) names its parent (`parentID` → `meta["parent_session_id"]`). The oldest (v1)
messages hold their parts inline with `tool-invocation` parts; they are read the same way.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from chatetl.model import Attachment, Conversation, Message, MessageKind, Role, Source, ToolCall, ToolResult
from chatetl.readers.convert import Convert, json_text
from chatetl.readers.fields import list_or_empty, object_or_empty, text_or_none
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time
from chatetl.readers.tree import turn_kind

PLATFORM = "opencode"
SKIPPED_PARTS = frozenset({"step-start", "step-finish", "snapshot", "patch", "retry", "agent", "subtask", "compaction",
                           "source-url"})
_DEFAULT_TITLE = ("New session - ", "Child session - ")


def record_converter(file: str, report: ReadReport) -> Convert:
    """How one bundle (the file's one object) becomes a Conversation."""
    return lambda record, where: conversation_from_bundle(record, report)


def conversation_from_bundle(record: Any, report: ReadReport) -> Conversation | None:
    if not isinstance(record, dict) or not isinstance(record.get("info"), dict):
        raise TypeError("an opencode session is an object with `info` and `messages`")
    info = record["info"]
    session_id = text_or_none(info.get("id"))
    if session_id is None:
        raise ValueError("the session has no id")
    items = [m for m in record.get("messages") or [] if isinstance(m, dict)] if isinstance(record.get("messages"), list) else []
    items.sort(key=lambda m: str(_info(m).get("id") or ""))
    messages: list[Message] = []
    last_of: dict[str, str] = {}  # an opencode message id -> the last Message made of it
    previous: str | None = None
    for item in items:
        minfo = _info(item)
        mid = text_or_none(minfo.get("id"))
        if mid is None:
            report.skip("opencode.message without id")
            continue
        made = _messages(mid, minfo, item, report)
        if not made:
            continue
        for m in made:
            m.parent_id = previous
            previous = m.message_id
        last_of[mid] = made[-1].message_id
        messages.extend(made)
    if not messages:
        report.skip("opencode session without messages")
        return None

    times = object_or_empty(info, "time")
    meta: dict[str, Any] = {"session_id": session_id}
    for key, name in (("directory", "cwd"), ("projectID", "projectID"), ("version", "version"), ("slug", "slug"),
                      ("parentID", "parent_session_id"), ("summary", "summary"), ("revert", "revert")):
        if info.get(key) not in (None, "", {}):
            meta[name] = info[key]
    if isinstance(record.get("project"), dict) and isinstance(record["project"].get("worktree"), str):
        meta["project"] = record["project"]["worktree"]
    share = info.get("share")
    if isinstance(share, dict) and isinstance(share.get("url"), str):
        meta["share_url"] = share["url"]
    cwd = next((m.extra["cwd"] for m in messages if isinstance(m.extra.get("cwd"), str)), None)
    if cwd and "cwd" not in meta:
        meta["cwd"] = cwd
    title = text_or_none(info.get("title"))
    if title is None or title.startswith(_DEFAULT_TITLE):
        title = next((" ".join(m.text.split())[:80] for m in messages
                      if m.role is Role.USER and m.kind is MessageKind.TURN and m.text.strip()), title)
    stamps = [m.created_at for m in messages if m.created_at is not None]
    models = Counter(m.model for m in messages if m.model and m.role is Role.ASSISTANT)
    return Conversation(
        source=Source.OPENCODE,
        platform=PLATFORM,
        conversation_id=session_id,
        title=title,
        created_at=parse_time(times.get("created")) or (min(stamps) if stamps else None),
        updated_at=parse_time(times.get("updated")) or (max(stamps) if stamps else None),
        model=models.most_common(1)[0][0] if models else None,
        messages=messages,
        meta=meta,
    )


def _info(item: dict[str, Any]) -> dict[str, Any]:
    """A message's info: `{"info": {...}, "parts": [...]}`, or a v1 message holding its parts itself."""
    return item["info"] if isinstance(item.get("info"), dict) else item


def _model(minfo: dict[str, Any]) -> str | None:
    given = minfo.get("model")
    if isinstance(given, dict):
        provider, model = given.get("providerID"), given.get("modelID")
    else:
        nested = minfo.get("metadata", {}).get("assistant", {}) if isinstance(minfo.get("metadata"), dict) else {}
        source = minfo if minfo.get("modelID") else nested if isinstance(nested, dict) else {}
        provider, model = source.get("providerID"), source.get("modelID")
    if not isinstance(model, str) or not model:
        return None
    return f"{provider}/{model}" if isinstance(provider, str) and provider else model


def _messages(mid: str, minfo: dict[str, Any], item: dict[str, Any], report: ReadReport) -> list[Message]:
    role = Role.ASSISTANT if minfo.get("role") == "assistant" else Role.USER
    times = object_or_empty(minfo, "time")
    if not times and isinstance(minfo.get("metadata"), dict) and isinstance(minfo["metadata"].get("time"), dict):
        times = minfo["metadata"]["time"]  # v1
    created = parse_time(times.get("created"))
    model = _model(minfo) if role is Role.ASSISTANT else None
    extra: dict[str, Any] = {k: minfo[k] for k in ("agent", "mode", "cost", "tokens", "finish", "error") if k in minfo}
    path = minfo.get("path")
    if isinstance(path, dict) and isinstance(path.get("cwd"), str):
        extra["cwd"] = path["cwd"]
    parts = list_or_empty(item, "parts")
    parts = sorted((p for p in parts if isinstance(p, dict)), key=lambda p: str(p.get("id") or ""))
    out: list[Message] = []
    for n, part in enumerate(parts):
        pid = f"{mid}:{text_or_none(part.get('id')) or n}"
        made = _part(pid, part, role, model, created, report)
        for m in made:
            if minfo.get("summary") is True and m.kind is MessageKind.TURN:
                m.kind = MessageKind.SUMMARY
        out.extend(made)
    if out:
        out[0].extra.update(extra)
    return out


def _part(pid: str, part: dict[str, Any], role: Role, model: str | None, created: Any, report: ReadReport) -> list[Message]:
    ptype = part.get("type") if isinstance(part.get("type"), str) else "untyped"
    ptimes = object_or_empty(part, "time")
    when = parse_time(ptimes.get("start")) or created
    raw_text = part.get("text")
    if ptype == "text":
        text = raw_text if isinstance(raw_text, str) else ""
        extra: dict[str, Any] = {}
        hidden = part.get("synthetic") is True or part.get("ignored") is True
        if hidden:
            extra.update({k: True for k in ("synthetic", "ignored") if part.get(k) is True})
        kind = MessageKind.HIDDEN if hidden else turn_kind(text, (), extra)
        return [Message(message_id=pid, role=role, kind=kind, text=text, model=model, created_at=when, content_type=ptype,
                        extra=extra)]
    if ptype == "reasoning":
        text = raw_text if isinstance(raw_text, str) else ""
        return [Message(message_id=pid, role=Role.ASSISTANT, kind=MessageKind.REASONING, text=text, reasoning=text or None,
                        model=model, created_at=when, content_type=ptype)]
    if ptype == "file":
        mime = text_or_none(part.get("mime")) or text_or_none(part.get("mediaType"))
        url = text_or_none(part.get("url"))
        attachment = Attachment(kind="image" if mime and mime.startswith("image/") else "file", name=text_or_none(part.get("filename")),
                                mime_type=mime, pointer=url if url and not url.startswith("data:") else None)
        return [Message(message_id=pid, role=role, kind=MessageKind.TURN, text="", model=model, created_at=when,
                        content_type=ptype, attachments=[attachment])]
    if ptype == "tool":
        return _tool(pid, part, model, when)
    if ptype == "tool-invocation" and isinstance(part.get("toolInvocation"), dict):  # v1
        inv = part["toolInvocation"]
        state = {"status": "completed" if inv.get("state") == "result" else "running", "input": inv.get("args"),
                 "output": inv.get("result")}
        return _tool(pid, {"callID": inv.get("toolCallId"), "tool": inv.get("toolName"), "state": state}, model, when)
    report.skip(f"opencode.part:{ptype}")
    if ptype not in SKIPPED_PARTS:
        report.unknown(f"opencode.part:{ptype}")
    return []


def _tool(pid: str, part: dict[str, Any], model: str | None, when: Any) -> list[Message]:
    state = object_or_empty(part, "state")
    name = text_or_none(part.get("tool"))
    call_id = text_or_none(part.get("callID")) or pid
    status = state.get("status") if isinstance(state.get("status"), str) else None
    call = ToolCall(id=call_id, name=name, input=json_text(state.get("input")))
    extra: dict[str, Any] = {"status": status} if status else {}
    metadata = object_or_empty(state, "metadata")
    if isinstance(metadata.get("sessionId"), str):  # a `task` tool's sub-agent session
        extra["child_session_id"] = metadata["sessionId"]
    out = [Message(message_id=pid, role=Role.ASSISTANT, kind=MessageKind.TOOL_CALL, text=call.input, model=model,
                   author_name=name, created_at=when, content_type="tool", tool_calls=[call], extra=extra)]
    if status in ("completed", "error"):
        failed = status == "error"
        output = json_text(state.get("error") if failed else state.get("output"))
        times = object_or_empty(state, "time")
        result_extra: dict[str, Any] = {"title": state["title"]} if isinstance(state.get("title"), str) else {}
        out.append(Message(message_id=f"{pid}:result", role=Role.TOOL, kind=MessageKind.TOOL_RESULT, text=output,
                           author_name=name, created_at=parse_time(times.get("end")) or when, content_type="tool",
                           tool_results=[ToolResult(tool_call_id=call_id, name=name, output=output, is_error=failed)],
                           extra=result_extra))
    return out
