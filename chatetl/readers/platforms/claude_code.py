"""Claude Code session logs: `~/.claude/projects/<slug>/<sessionId>.jsonl`, one conversation per file.

Every line is one event. `user`, `assistant`, `system` and `summary` lines become
messages (each line its own Message, also when one API response is split over
several `assistant` lines sharing `message.id`); other lines (`progress`,
`file-history-snapshot`, `queue-operation` ...) are skipped and counted, but the
parent chain runs through them: a message whose `parentUuid` names a skipped
line is re-attached to that line's nearest kept ancestor. Across a compaction the
`compact_boundary` line continues from its `logicalParentUuid`. Sidechain
(subagent) lines are kept, marked, and never on the active branch.

Parallel tool calls: one API response calling several tools is written as one `assistant` line
per `tool_use` (sharing `message.id`), and each `tool_result` line names the line of its own call
as its parent (`sourceToolAssistantUUID`), so the log forks and a walk back from the latest leaf
would keep one call's result only. The lines of one response and the results hanging from them
are chained in file order (a line's own `parentUuid` kept as `extra["line_parent_uuid"]` where it
changes) and what followed them continues from the last one: every call and result of the
response is on the active branch. (Claude Code itself re-attaches them the same way when it
resumes a session: `recoverOrphanedParallelToolResults`, as a public port describes it.)

A `summary` line titles the session only when its `leafUuid` is a line of this session (a resumed
session's file opens with the summaries of other sessions); else the title is the first prompt.
`created_at` is the first visible turn's time (not a hook, command or summary line written
before it); `updated_at` the latest line's. Empty user and assistant lines follow the one rule of
`chatetl.readers.tree` (hidden, `extra["empty"]`); an image pasted without text is a turn.

A malformed line is reported with its line number; the rest of the session still comes out. The
last line of a log still being written is often cut mid-JSON (no line break after it): that is a
warning, not damage: counted (`claude-code.cut last line`), kept for quarantine with its bytes
(`ReadReport.warn`: a warning, never an error), and the session is read without it.

Researched: the shared real session log (from claude-code-log), public notes on the transcript
format (DRMacIver/claude-reliability notes/transcript-format.md; session viewers' notes on the
`parentUuid` DAG and `sourceToolAssistantUUID`) and a public port of Claude Code's resume logic.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import pairwise
from pathlib import PurePosixPath
from typing import Any

from chatetl.model import (
    Attachment,
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolCall,
    ToolResult,
)
from chatetl.readers.convert import convert_records, json_text, raw_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.fields import object_or_empty, text_or_none
from chatetl.readers.jsonscan.records import (
    Shape,
    decoded_line,
    jsonl_lines,
    report_repairs,
)
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time
from chatetl.readers.tree import turn_kind

PLATFORM = "claude-code"
MESSAGE_LINES = frozenset({"user", "assistant", "system", "summary"})
# lines that carry no message; skipped and counted (others are counted as drift too)
KNOWN_SKIPPED_LINES = frozenset(
    {"progress", "file-history-snapshot", "queue-operation", "custom-title", "agent-name", "pr-link", "last-prompt", "tag"}
)
# structural / per-line noise fields: consumed, not copied into Message.extra
_CONSUMED_FIELDS = frozenset(
    {
        "type", "uuid", "parentUuid", "logicalParentUuid", "sessionId", "timestamp", "message", "isSidechain",
        "isMeta", "isCompactSummary", "cwd", "gitBranch", "version", "userType", "slug", "thinkingMetadata",
        "todos", "permissionMode", "toolUseResult", "imagePasteIds", "summary", "leafUuid",
    }
)
# fields seen in real logs; anything else is counted as drift (and kept in Message.extra)
KNOWN_FIELDS = _CONSUMED_FIELDS | frozenset(
    {
        "requestId", "sourceToolAssistantUUID", "sourceToolUseID", "agentId", "isApiErrorMessage", "error",
        "isVisibleInTranscriptOnly", "subtype", "content", "level", "compactMetadata", "microcompactMetadata",
        "hookCount", "hookInfos", "hookErrors", "preventedContinuation", "stopReason", "hasOutput", "toolUseID",
        "parentToolUseID", "durationMs", "retryInMs", "retryAttempt", "maxRetries", "cause", "teamName",
        "planContent", "isSnapshotUpdate", "snapshot", "messageId", "data", "operation", "customTitle",
    }
)
# injected user-side text a person did not type as a prompt (commands, their output, reminders, hooks)
_INJECTED = re.compile(
    r"^\s*(?:<(?:command-name|command-message|command-args|local-command-stdout|local-command-stderr|"
    r"local-command-caveat|system-reminder|user-prompt-submit-hook|bash-input|bash-stdout|bash-stderr|"
    r"task-notification)>|\[Request interrupted by user)"
)
# context an IDE extension puts around a prompt (the open file, the selection, its diagnostics): whole blocks at
# the text's start or end, with exactly these names; one never closed runs to the end of the text
_IDE_OPEN = re.compile(r"\s*<(ide_opened_file|ide_selection|ide_diagnostics|ide_closed_file)>")
_IDE_LAST = re.compile(r"</(ide_opened_file|ide_selection|ide_diagnostics|ide_closed_file)>\s*$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


CUT_LAST_LINE = "claude-code.cut last line"


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    # A session log is always JSON Lines (a first line longer than the detection head looks like an object).
    def convert(_record: Any, _where: str) -> Conversation | None:
        return conversation_from_session(entry, session_lines(entry, report), report)

    yield from convert_records(entry, iter([("", entry.name)]), report, convert)


def session_lines(entry: Entry, report: ReadReport, cut_label: str = CUT_LAST_LINE) -> Iterator[tuple[str, Any]]:
    """(`line N`, record) for each line of a session log, as `iter_records` reads JSON
    Lines (a string past the value cap makes its line bad, unread and unkept; NaN, 1e999 and lone
    surrogates are read as null / U+FFFD, the line reported with its bytes and counted as drift),
    but a last line cut mid-JSON (no line break after it: still being written) is a warning (see
    the module docstring), not damage, counted under `cut_label` (other agents' logs are read the same way)."""
    pending: tuple[int, bytes, str] | None = None  # a bad line, reported once we know whether it was the last
    for lineno, raw, line, too_long in jsonl_lines(entry, report):
        if pending is not None:
            report.error(entry.name, f"line {pending[0]}", pending[2], raw=pending[1])
            pending = None
        try:
            decoded = decoded_line(report, entry.name, lineno, raw, line, too_long)
        except ValueError as exc:
            pending = (lineno, raw, f"invalid JSON: {str(exc)[:200]}")
            continue
        if decoded is None:
            continue
        record, repairs = decoded
        if repairs:  # (a line's uuid is a message's, not the conversation's: the line alone names the place)
            report_repairs(report, entry.name, f"line {lineno}", None, repairs, raw)
        yield f"line {lineno}", record
    if pending is not None:
        n, raw, reason = pending
        if raw.endswith(b"\n"):
            report.error(entry.name, f"line {n}", reason, raw=raw)  # a whole line written wrong: damage
        else:
            report.skip(cut_label)
            report.warn(
                entry.name, f"line {n}",
                f"the last line is cut mid-JSON (the session was still being written); read without it ({reason})",
                raw=raw,
            )


def _path_parts(name: str) -> tuple[str, str | None, str | None]:
    """(file stem, project slug, parent session id for subagent files) from an entry name."""
    inner = name.rsplit("!", 1)[-1].replace("\\", "/")
    parts = PurePosixPath(inner).parts
    stem = PurePosixPath(parts[-1]).stem if parts else inner
    slug_dir, parent_session = None, None
    if len(parts) >= 4 and parts[-2] == "subagents":  # <slug>/<sessionId>/subagents/agent-<id>.jsonl
        slug_dir, parent_session = parts[-4], parts[-3]
    elif len(parts) >= 2:
        slug_dir = parts[-2]
    slug = slug_dir if slug_dir and (slug_dir.startswith("-") or re.match(r"^[A-Za-z]--", slug_dir)) else None
    return stem, slug, parent_session


class _Session:
    """What the lines of one session file add up to."""

    def __init__(self) -> None:
        self.messages: list[Message] = []  # filled from by_id once every line is read
        self.by_id: dict[str, Message] = {}  # file order of first appearance; a repeated id: the later line wins
        self.line_of: dict[str, int] = {}  # message id -> line number (for ids made up later)
        self.skipped_parent: dict[str, str | None] = {}  # uuid of a skipped line -> its parentUuid
        self.session_ids: list[str] = []
        self.meta: dict[str, Any] = {}
        self.summaries: list[tuple[str, str | None]] = []  # (summary, leafUuid)
        self.custom_title: str | None = None
        self.tool_names: dict[str, str] = {}  # tool_use id -> tool name


def conversation_from_session(entry: Entry, lines: Iterator[tuple[str, Any]], report: ReadReport) -> Conversation | None:
    s = _Session()
    for where, rec in lines:
        lineno = int(where.split()[-1]) if where.startswith("line ") else 0
        if not isinstance(rec, dict):
            report.error(entry.name, where, f"line is not a JSON object (got {type(rec).__name__})", raw=raw_bytes(rec))
            continue
        _add_line(s, rec, lineno, report)
    s.messages = list(s.by_id.values())

    stem, slug, parent_session = _path_parts(entry.name)
    if not s.messages:
        if s.session_ids or s.skipped_parent or s.summaries:
            report.skip("claude-code session without messages")
        return None

    # conversation id: the session id (the file's own when the file holds copied lines of others)
    conv_id = stem if stem in s.session_ids else (s.session_ids[-1] if s.session_ids else stem)
    all_sidechain = all(m.extra.get("is_sidechain") for m in s.messages)
    if all_sidechain and stem != conv_id:  # a subagent's own file shares its parent's sessionId
        s.meta["parent_session_id"] = parent_session or conv_id
        conv_id = f"{conv_id}/{stem}"
    for m in s.messages:
        if m.message_id.startswith("\x00line:"):
            m.message_id = f"{conv_id}:{s.line_of[m.message_id]}"

    _link_parents(s)
    _chain_parallel_calls(s)
    for m in s.messages:
        if m.kind is MessageKind.TOOL_RESULT:
            for r in m.tool_results:
                if r.name is None and r.tool_call_id in s.tool_names:
                    r.name = s.tool_names[r.tool_call_id]
            names = {r.name for r in m.tool_results if r.name}
            if len(names) == 1:
                m.author_name = names.pop()

    meta = s.meta
    if slug:
        meta["project"] = slug
    meta["session_id"] = conv_id.split("/")[0]
    if len(set(s.session_ids)) > 1:
        meta["session_ids"] = list(dict.fromkeys(s.session_ids))

    dated = [(m, m.created_at) for m in s.messages if m.created_at is not None]
    times = [t for _, t in dated]
    turns = [(m, t) for m, t in dated if m.kind is MessageKind.TURN]
    # the first visible turn (of the main chain where there is one), not a hook or command line before it
    started = [t for m, t in turns if not m.extra.get("is_sidechain")] or [t for _, t in turns] or times
    models = Counter(m.model for m in s.messages if m.model)
    conv = Conversation(
        source=Source.CLAUDE_CODE,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=_title(s),
        created_at=min(started) if started else None,
        updated_at=max(times) if times else None,
        model=models.most_common(1)[0][0] if models else None,
        current_node=_main_leaf(s.messages) if not all_sidechain else None,
        messages=s.messages,
        meta=meta,
    )
    return conv


def _add_line(s: _Session, rec: dict[str, Any], lineno: int, report: ReadReport) -> None:
    ltype = rec.get("type")
    uuid = text_or_none(rec.get("uuid"))
    _note_session(s, rec)
    if ltype not in MESSAGE_LINES:
        _skip_line(s, rec, ltype, uuid, report)
        return

    if ltype == "summary":
        msg = _summary_message(s, rec, uuid)
    elif ltype == "system":
        msg = _system_message(rec)
    else:
        msg = _chat_message(rec, ltype, s, report)

    for key in sorted(rec.keys() - KNOWN_FIELDS):
        report.unknown(f"claude-code.field:{key}")
    for key in rec.keys() - _CONSUMED_FIELDS - {"content"}:  # a system line's content is its text
        msg.extra.setdefault(key, rec[key])
    if rec.get("isSidechain") is True:
        msg.extra["is_sidechain"] = True
    if rec.get("isMeta") is True:
        msg.extra["is_meta"] = True
    parent = rec.get("parentUuid")
    if text_or_none(parent) is None and rec.get("subtype") == "compact_boundary":
        parent = rec.get("logicalParentUuid")  # the branch continues across the compaction
    msg.parent_id = text_or_none(parent)
    msg.created_at = parse_time(rec.get("timestamp"))

    if not msg.message_id:
        msg.message_id = f"\x00line:{lineno}"  # no uuid: named after the conversation and line later
        s.line_of[msg.message_id] = lineno
    if msg.message_id in s.by_id:  # the same line written twice: the later one wins
        report.skip("claude-code.duplicate line")
    s.by_id[msg.message_id] = msg


def _note_session(s: _Session, rec: dict[str, Any]) -> None:
    """The session ids a file's lines carry, in order, and the first working directory, branch and version."""
    sid = rec.get("sessionId")
    if isinstance(sid, str) and sid and (not s.session_ids or s.session_ids[-1] != sid):
        s.session_ids.append(sid)
    for key in ("cwd", "gitBranch", "version"):
        if key not in s.meta and isinstance(rec.get(key), str) and rec[key]:
            s.meta[key] = rec[key]


def _skip_line(s: _Session, rec: dict[str, Any], ltype: Any, uuid: str | None, report: ReadReport) -> None:
    """A line that is no message: counted (as drift too when its type is unknown), a custom title
    kept, and its parent kept so the chain runs through it."""
    name = ltype if isinstance(ltype, str) else "untyped"
    report.skip(f"claude-code.line:{name}")
    if name not in KNOWN_SKIPPED_LINES:
        report.unknown(f"claude-code.line:{name}")
    custom_title = rec.get("customTitle")
    if ltype == "custom-title" and isinstance(custom_title, str) and custom_title.strip():
        s.custom_title = custom_title.strip()
    if uuid is not None:  # keep the chain running through it
        parent = rec.get("parentUuid")
        s.skipped_parent[uuid] = text_or_none(parent)


def _summary_message(s: _Session, rec: dict[str, Any], uuid: str | None) -> Message:
    """A summary line as a SUMMARY message; a summary with text also titles the session."""
    summary, leaf_uuid = rec.get("summary"), rec.get("leafUuid")
    text = summary if isinstance(summary, str) else ""
    leaf = leaf_uuid if isinstance(leaf_uuid, str) else None
    if text.strip():
        s.summaries.append((text.strip(), leaf))
    return Message(
        message_id=uuid or "",
        role=Role.SYSTEM,
        kind=MessageKind.SUMMARY,
        text=text,
        content_type="summary",
        extra={"leaf_uuid": leaf} if leaf else {},
    )


def _system_message(rec: dict[str, Any]) -> Message:
    content = rec.get("content")
    subtype = rec.get("subtype") if isinstance(rec.get("subtype"), str) else None
    return Message(
        message_id=rec.get("uuid") if isinstance(rec.get("uuid"), str) else "",
        role=Role.SYSTEM,
        kind=MessageKind.HIDDEN,  # compaction boundaries, stop-hook summaries, local command notes ...
        text=content if isinstance(content, str) else "",
        content_type=f"system:{subtype}" if subtype else "system",
    )


def _chat_message(rec: dict[str, Any], ltype: str, s: _Session, report: ReadReport) -> Message:
    raw = object_or_empty(rec, "message")
    content = raw.get("content")
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else (content if isinstance(content, list) else [])
    extra: dict[str, Any] = {}
    read = _Blocks(ltype)
    for block in blocks:
        read.block(block, s, report)
    if read.unknown:
        extra["unknown_blocks"] = read.unknown
    if read.injected and (read.texts or read.tool_results):
        extra["injected"] = read.injected

    visible = "\n\n".join(t.strip("\r\n") for t in read.texts if t.strip())
    joined_reasoning = "\n\n".join(read.reasoning) or None
    kind, text, role = _kind_text_role(rec, ltype, read, visible, joined_reasoning, extra)
    model = _model_and_api_fields(raw, ltype, extra)
    return Message(
        message_id=rec.get("uuid") if isinstance(rec.get("uuid"), str) else "",
        role=role,
        kind=kind,
        text=text,
        model=model,
        content_type=",".join(read.types) or None,
        reasoning=joined_reasoning,
        tool_calls=read.tool_calls,
        tool_results=read.tool_results,
        attachments=read.attachments,
        extra=extra,
    )


class _Blocks:
    """What a user or assistant line's content blocks hold, read one block at a time."""

    def __init__(self, ltype: str) -> None:
        self.ltype = ltype
        self.texts: list[str] = []
        self.injected: list[str] = []  # what Claude Code put into the user's line (reminders, command output ...)
        self.reasoning: list[str] = []
        self.redacted = False
        self.tool_calls: list[ToolCall] = []
        self.tool_results: list[ToolResult] = []
        self.attachments: list[Attachment] = []
        self.unknown: list[Any] = []
        self.types: list[str] = []  # the block types, in the order they first appear

    def block(self, block: Any, s: _Session, report: ReadReport) -> None:
        btype = block.get("type") if isinstance(block, dict) else None
        if isinstance(btype, str) and btype not in self.types:
            self.types.append(btype)
        if btype == "text":
            self._text(block)
        elif btype == "thinking":
            thinking = block.get("thinking")
            if isinstance(thinking, str) and thinking:
                self.reasoning.append(thinking)
            else:
                self.redacted = True
        elif btype == "redacted_thinking":
            self.redacted = True
        elif btype in ("tool_use", "server_tool_use"):
            self._tool_call(block, s)
        elif btype == "tool_result" or (isinstance(btype, str) and btype.endswith("_tool_result")):
            output, images = _result_output(block.get("content"))
            self.attachments.extend(images)
            self.tool_results.append(
                ToolResult(tool_call_id=text_or_none(block.get("tool_use_id")), output=output, is_error=block.get("is_error") is True)
            )
        elif btype in ("image", "document"):
            source = object_or_empty(block, "source")
            media = source.get("media_type") if isinstance(source.get("media_type"), str) else None
            self.attachments.append(Attachment(kind="image" if btype == "image" else "file", mime_type=media))
        else:
            report.unknown(f"claude-code.block:{btype if isinstance(btype, str) else type(block).__name__}")
            self.unknown.append(block)

    def _text(self, block: dict[str, Any]) -> None:
        raw_text = block.get("text")
        text = raw_text if isinstance(raw_text, str) else ""
        if self.ltype == "user" and _INJECTED.match(text):
            self.injected.append(text)
            return
        if self.ltype == "user" and "<ide_" in text:
            text = _without_ide_context(text, self.injected)
        if text or not self.injected:
            self.texts.append(text)

    def _tool_call(self, block: dict[str, Any], s: _Session) -> None:
        call_id = block.get("id") if isinstance(block.get("id"), str) else None
        name = block.get("name") if isinstance(block.get("name"), str) else None
        if call_id and name:
            s.tool_names[call_id] = name
        self.tool_calls.append(ToolCall(id=call_id, name=name, input=json_text(block.get("input"))))


def _kind_text_role(rec: dict[str, Any], ltype: str, read: _Blocks, visible: str, reasoning: str | None,
                    extra: dict[str, Any]) -> tuple[MessageKind, str, Role]:
    """(kind, text, role): a compaction summary; a user line's tool results (sent by the tool), its
    prompt, else hidden (meta lines, commands, reminders); an assistant's text, else its tool calls,
    tool results, reasoning (redacted or not); else hidden and empty."""
    role = Role.ASSISTANT if ltype == "assistant" else Role.USER
    tool_results, injected, attachments = read.tool_results, read.injected, read.attachments
    results_text = "\n\n".join(r.output for r in tool_results if r.output)
    if rec.get("isCompactSummary") is True:
        return MessageKind.SUMMARY, visible or "\n\n".join(injected), role
    if ltype == "user":
        if tool_results:
            if visible:
                extra["text"] = visible
            return MessageKind.TOOL_RESULT, results_text, Role.TOOL
        if rec.get("isMeta") is not True and (visible.strip() or attachments or not injected):
            return turn_kind(visible, attachments, extra), visible, role  # a prompt, an image alone; else empty
        return MessageKind.HIDDEN, visible or "\n\n".join(injected), role  # meta lines, commands, reminders
    if visible.strip():
        return MessageKind.TURN, visible, role
    if read.tool_calls:
        return MessageKind.TOOL_CALL, "\n".join(c.input for c in read.tool_calls), role
    if tool_results:
        return MessageKind.TOOL_RESULT, results_text, Role.TOOL
    if reasoning or read.redacted:
        if read.redacted and not reasoning:
            extra["redacted"] = True
        return MessageKind.REASONING, reasoning or "", role
    extra["empty"] = True
    return MessageKind.HIDDEN, "", role  # e.g. the "\n\n" text chunk that opens a split response


def _model_and_api_fields(raw: dict[str, Any], ltype: str, extra: dict[str, Any]) -> str | None:
    """The message's model (none where Claude Code wrote it itself: `extra["synthetic"]`); an
    assistant message's API id, stop reason and usage into `extra`."""
    model = text_or_none(raw.get("model"))
    if model == "<synthetic>":  # written by Claude Code itself, not by a model
        extra["synthetic"] = True
        model = None
    for key, name in (("id", "api_message_id"), ("stop_reason", "stop_reason"), ("usage", "usage")):
        if raw.get(key) is not None and ltype == "assistant":
            extra[name] = raw[key]
    return model


def _result_output(content: Any) -> tuple[str, list[Attachment]]:
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        return json_text(content), []
    parts: list[str] = []
    images: list[Attachment] = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif isinstance(item, dict) and isinstance(item.get("url"), str):  # search results
            parts.append("\n".join(v for v in (item.get("title"), item["url"]) if isinstance(v, str) and v))
        elif isinstance(item, dict) and item.get("type") == "image":
            source = object_or_empty(item, "source")
            media = source.get("media_type") if isinstance(source.get("media_type"), str) else None
            images.append(Attachment(kind="image", mime_type=media))
        elif item is not None:
            parts.append(json_text(item))
    return "\n\n".join(p for p in parts if p), images


def _link_parents(s: _Session) -> None:
    """Parents through skipped lines to the nearest kept ancestor; parents in no line of this file become roots."""
    for m in s.messages:
        pid = m.parent_id
        seen: set[str] = set()
        while pid is not None and pid not in s.by_id and pid in s.skipped_parent and pid not in seen:
            seen.add(pid)
            pid = s.skipped_parent[pid]
        if pid is not None and pid not in s.by_id:
            # another session's message (a resumed or forked session) or a line lost to damage
            m.extra["external_parent_uuid"] = pid
            pid = None
        m.parent_id = pid


def _chain_parallel_calls(s: _Session) -> None:
    """The lines of one API response (assistant lines sharing `message.id`) and the tool results
    hanging from them, chained in file order; what hung from them continues from the last one."""
    order = {m.message_id: i for i, m in enumerate(s.messages)}
    responses: dict[tuple[str, Any], list[Message]] = {}
    children: dict[str, list[Message]] = {}
    for m in s.messages:
        api_id = m.extra.get("api_message_id")
        if isinstance(api_id, str) and m.role is Role.ASSISTANT:  # (a subagent's lines apart from the main chain's)
            responses.setdefault((api_id, m.extra.get("agentId") or m.extra.get("is_sidechain")), []).append(m)
        if m.parent_id is not None:
            children.setdefault(m.parent_id, []).append(m)
    for lines in responses.values():
        ids = {m.message_id for m in lines}
        results = [c for m in lines for c in children.get(m.message_id, ()) if c.kind is MessageKind.TOOL_RESULT and c.message_id not in ids]
        if len(lines) + len(results) < 3:
            continue  # a line and its result, or two lines: nothing can fork
        block = sorted(lines + results, key=lambda m: order[m.message_id])
        if all(b.parent_id == a.message_id for a, b in pairwise(block)):
            continue  # already one chain (a response split over lines, no parallel calls)
        inside = ids | {r.message_id for r in results}
        if any(m.parent_id not in inside for m in block[1:]):
            continue  # not the lines of one response (each follows another of them): an id used twice
        for a, b in pairwise(block):
            if b.parent_id != a.message_id:
                b.extra.setdefault("line_parent_uuid", b.parent_id)
                b.parent_id = a.message_id
        last = block[-1]
        for m in block[:-1]:
            for c in children.get(m.message_id, ()):
                if c.message_id not in inside and not c.extra.get("is_sidechain"):  # a subagent keeps its own start
                    c.extra.setdefault("line_parent_uuid", c.parent_id)
                    c.parent_id = last.message_id


def _main_leaf(messages: list[Message]) -> str | None:
    """The latest leaf of the main chain (sidechain messages never end the active branch)."""
    if not any(m.extra.get("is_sidechain") for m in messages):
        return None  # the resolver's own default does the same
    main = [m for m in messages if not m.extra.get("is_sidechain")]
    has_children = {m.parent_id for m in main if m.parent_id is not None}
    leaves = [(i, m) for i, m in enumerate(main) if m.message_id not in has_children] or list(enumerate(main))
    if not leaves:
        return None
    _, leaf = max(leaves, key=lambda im: (im[1].created_at or _EPOCH, im[0]))
    return leaf.message_id


def _without_ide_context(text: str, injected: list[str]) -> str:
    """`text` without the IDE's context blocks at its start and end (each appended to `injected`)."""
    while opening := _IDE_OPEN.match(text):
        closing = f"</{opening.group(1)}>"
        end = text.find(closing, opening.end())
        end = len(text) if end < 0 else end + len(closing)
        injected.append(text[:end].strip())
        text = text[end:].lstrip()
    closing_tag = _IDE_LAST.search(text) if text.endswith(">") or text[-1:].isspace() else None
    if closing_tag and (start := text.rfind(f"<{closing_tag.group(1)}>", 0, closing_tag.start())) >= 0:
        injected.append(text[start:].strip())
        text = text[:start].rstrip()
    return text


def _title(s: _Session) -> str | None:
    if s.custom_title:
        return s.custom_title
    # a summary of this session: its leaf is one of this file's lines (others summarize other sessions)
    in_file = [text for text, leaf in s.summaries if leaf is not None and (leaf in s.by_id or leaf in s.skipped_parent)]
    if in_file:
        return in_file[-1]
    for m in s.messages:
        if m.role is Role.USER and m.kind is MessageKind.TURN and not m.extra.get("is_sidechain") and m.text.strip():
            return " ".join(m.text.split())[:80]
    return None
