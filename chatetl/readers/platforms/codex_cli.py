"""Codex CLI session logs: `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`, one conversation a file.

Current logs wrap every item as `{"timestamp", "type", "payload"}` (`session_meta`, `response_item`,
`event_msg`, `turn_context`, `compacted`); the older Rust logs open with a bare meta line and hold bare
response items (`{"record_type": "state"}` lines skipped); the first, TypeScript CLI wrote one object
`{"session": {id, timestamp, instructions}, "items": [...]}`, read as such a log. The response items are the conversation:
messages, reasoning, tool calls and their outputs (paired by `call_id`), in file order, each parent the
one before. The `event_msg` lines repeat them for the terminal and are skipped and counted (a thread
name they give titles the session). Context Codex injects as a user message (`<environment_context>`,
AGENTS.md instructions ...) and developer/system messages are hidden; reasoning is never a turn (only
an encrypted blob: `extra["redacted"]`). The model is the latest `turn_context`'s; the working
directory and git branch come from the first `session_meta`. A sub-agent's own file names its parent
thread (`meta["parent_session_id"]`).

Message ids are `<session id>:<line number>`, so a log that grew keeps the ids of its older lines.
A last line cut mid-JSON (still being written) is a warning, as for Claude Code.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from chatetl.model import Attachment, Conversation, Message, MessageKind, Role, Source, ToolCall, ToolResult
from chatetl.readers.convert import convert_records, json_text, raw_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.fields import list_or_empty, object_or_empty, text_or_none
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.platforms.claude_code import session_lines
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time
from chatetl.readers.tree import turn_kind

PLATFORM = "codex-cli"
CUT_LAST_LINE = "codex-cli.cut last line"
ENVELOPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call", "tool_search_call",
                        "image_generation_call"})
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output", "tool_search_output"})
RESPONSE_ITEMS = CALL_ITEMS | OUTPUT_ITEMS | {"message", "reasoning", "ghost_snapshot", "compaction", "compaction_summary"}
_HIDDEN_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary"})  # harness state, no text a person saw
# user messages Codex writes itself: the environment, instructions files, shell commands run by "!", aborts
_INJECTED = re.compile(
    r"^\s*(?:<(?:environment_context|user_instructions|permissions instructions|user_shell_command|turn_aborted|"
    r"developer_instructions|collaboration_mode|subagent_notification)>|# AGENTS\.md instructions)"
)
_FILE_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.IGNORECASE)


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    if shape is Shape.OBJECT:  # the TypeScript CLI's one object {"session": {...}, "items": [...]}, rewritten whole
        def convert_whole(record: Any, where: str) -> Conversation | None:
            if not isinstance(record, dict) or not isinstance(record.get("session"), dict):
                raise TypeError("a Codex session object has `session` and `items`")
            items = list_or_empty(record, "items")
            lines = [("line 1", record["session"])] + [(f"line {n}", item) for n, item in enumerate(items, start=2)]
            return conversation_from_rollout(entry, iter(lines), report)

        yield from convert_records(entry, iter_records(entry, shape, report), report, convert_whole)
        return

    def convert(_record: Any, _where: str) -> Conversation | None:
        return conversation_from_rollout(entry, session_lines(entry, report, CUT_LAST_LINE), report)

    yield from convert_records(entry, iter([("", entry.name)]), report, convert)


@dataclass
class _Rollout:
    """What the lines of one rollout add up to."""

    lines: list[tuple[int, Message]] = field(default_factory=list)  # (line number, message) in file order
    meta: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    created: Any = None
    last_time: Any = None
    model: str | None = None  # the latest turn_context's, given to the assistant items after it
    thread_name: str | None = None
    tool_names: dict[str, str] = field(default_factory=dict)  # call_id -> tool name
    cwds: list[str] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)  # the items read, to drop an item a resume copied again


def conversation_from_rollout(entry: Entry, lines: Iterator[tuple[str, Any]], report: ReadReport) -> Conversation | None:
    r = _Rollout()
    for where, rec in lines:
        lineno = int(where.split()[-1]) if where.startswith("line ") else 0
        if not isinstance(rec, dict):
            report.error(entry.name, where, f"line is not a JSON object (got {type(rec).__name__})", raw=raw_bytes(rec))
            continue
        _add_line(r, rec, lineno, report)
    if not r.lines:
        if r.session_id:
            report.skip("codex-cli session without messages")
        return None

    conv_id = r.session_id or _id_from_name(entry.name)
    messages: list[Message] = []
    for lineno, msg in r.lines:
        msg.message_id = f"{conv_id}:{lineno}"
        msg.parent_id = messages[-1].message_id if messages else None
        for result in msg.tool_results:
            if result.name is None and result.tool_call_id in r.tool_names:
                result.name = r.tool_names[result.tool_call_id]
                msg.author_name = result.name
        messages.append(msg)

    meta = r.meta
    meta["session_id"] = conv_id
    if len(r.cwds) > 1:
        meta["cwds"] = r.cwds
    times = [m.created_at for m in messages if m.created_at is not None]
    turns = [m.created_at for m in messages if m.kind is MessageKind.TURN and m.created_at is not None]
    created = parse_time(r.created) or (min(turns) if turns else (min(times) if times else None))
    updated = parse_time(r.last_time) or (max(times) if times else None)
    models = Counter(m.model for m in messages if m.model)
    return Conversation(
        source=Source.CODEX_CLI,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=r.thread_name or _first_prompt(messages),
        created_at=created,
        updated_at=max(updated, created) if updated and created else updated or created,
        model=models.most_common(1)[0][0] if models else None,
        messages=messages,
        meta=meta,
    )


def _id_from_name(name: str) -> str:
    stem = PurePosixPath(name.rsplit("!", 1)[-1].replace("\\", "/")).stem
    found = _FILE_ID.search(stem)
    return found.group(1) if found else stem


def _first_prompt(messages: list[Message]) -> str | None:
    for m in messages:
        if m.role is Role.USER and m.kind is MessageKind.TURN and m.text.strip():
            return " ".join(m.text.split())[:80]
    return None


def _add_line(r: _Rollout, rec: dict[str, Any], lineno: int, report: ReadReport) -> None:
    ltype, payload = rec.get("type"), rec.get("payload")
    if isinstance(rec.get("timestamp"), str):
        r.last_time = rec["timestamp"]
    if ltype in ENVELOPES and isinstance(payload, dict):
        if ltype == "session_meta":
            _session_meta(r, payload, report)
        elif ltype == "turn_context":
            _turn_context(r, payload)
        elif ltype == "event_msg":
            _event(r, payload, report)
        elif ltype == "compacted":
            text = payload.get("message") if isinstance(payload.get("message"), str) else ""
            r.lines.append((lineno, Message(message_id="", role=Role.SYSTEM, kind=MessageKind.SUMMARY, text=text,
                                            content_type="compacted", created_at=parse_time(rec.get("timestamp")))))
        else:
            _response_item(r, payload, lineno, rec.get("timestamp"), report)
        return
    if rec.get("record_type") == "state":  # an older log's (empty) state snapshot
        report.skip("codex-cli.line:state")
        return
    if "type" not in rec and "payload" not in rec and isinstance(rec.get("id"), str) and "timestamp" in rec:
        _session_meta(r, rec, report)  # an older log's bare meta line (or the TypeScript CLI's `session`)
        return
    if isinstance(ltype, str) and ltype in RESPONSE_ITEMS:
        _response_item(r, rec, lineno, None, report)  # an older log's bare response item
        return
    name = ltype if isinstance(ltype, str) else "untyped"
    report.skip(f"codex-cli.line:{name}")
    report.unknown(f"codex-cli.line:{name}")


def _session_meta(r: _Rollout, payload: dict[str, Any], report: ReadReport) -> None:
    if r.session_id is not None:  # Codex itself takes the first meta line as the thread's
        report.skip("codex-cli.line:session_meta")
        return
    r.session_id = text_or_none(payload.get("id"))
    r.created = payload.get("timestamp")
    for key in ("cwd", "originator", "cli_version", "model_provider", "agent_nickname", "agent_role", "agent_path",
                "forked_from_id"):
        if isinstance(payload.get(key), str) and payload[key]:
            r.meta[key] = payload[key]
    if "cwd" in r.meta:
        r.cwds.append(r.meta["cwd"])
    source = payload.get("source")
    if source is not None:
        r.meta["source"] = source
    parent = payload.get("parent_thread_id")
    if isinstance(source, dict) and isinstance(source.get("subagent"), dict):
        spawn = source["subagent"].get("thread_spawn")
        if isinstance(spawn, dict):
            parent = parent or spawn.get("parent_thread_id")
            for key in ("agent_nickname", "agent_role", "agent_path"):
                if isinstance(spawn.get(key), str):
                    r.meta.setdefault(key, spawn[key])
    if isinstance(parent, str) and parent:
        r.meta["parent_session_id"] = parent
    git = payload.get("git")
    if isinstance(git, dict):
        for key, name in (("branch", "gitBranch"), ("commit_hash", "gitCommit"), ("repository_url", "gitRepository")):
            if isinstance(git.get(key), str) and git[key]:
                r.meta[name] = git[key]


def _turn_context(r: _Rollout, payload: dict[str, Any]) -> None:
    model = text_or_none(payload.get("model"))
    if model:
        r.model = model
    cwd = payload.get("cwd")
    if isinstance(cwd, str) and cwd and cwd not in r.cwds:
        r.cwds.append(cwd)
        r.meta.setdefault("cwd", cwd)


def _event(r: _Rollout, payload: dict[str, Any], report: ReadReport) -> None:
    etype = payload.get("type") if isinstance(payload.get("type"), str) else "untyped"
    if etype == "thread_name_updated" and isinstance(payload.get("thread_name"), str) and payload["thread_name"].strip():
        r.thread_name = payload["thread_name"].strip()
    report.skip(f"codex-cli.event:{etype}")  # the terminal's copy of what the response items hold


def _response_item(r: _Rollout, item: dict[str, Any], lineno: int, timestamp: Any, report: ReadReport) -> None:
    itype = item.get("type") if isinstance(item.get("type"), str) else "untyped"
    if itype in _HIDDEN_ITEMS:
        report.skip(f"codex-cli.item:{itype}")
        return
    key = json.dumps(item, sort_keys=True, default=str)
    if itype != "message" and key in r.seen:  # a resumed session that wrote its history again
        report.skip("codex-cli.repeated item")
        return
    r.seen.add(key)
    if itype == "message":
        msg = _message(item, r)
    elif itype == "reasoning":
        msg = _reasoning(item)
    elif itype in CALL_ITEMS:
        msg = _call(item, itype, r)
    elif itype in OUTPUT_ITEMS:
        msg = _output(item)
    else:
        report.skip(f"codex-cli.item:{itype}")
        report.unknown(f"codex-cli.item:{itype}")
        return
    msg.created_at = parse_time(timestamp)
    msg.content_type = msg.content_type or itype
    r.lines.append((lineno, msg))


def _content(content: Any) -> tuple[list[str], list[Attachment], list[str]]:
    """(texts, images, block types) of a message's content blocks."""
    if isinstance(content, str):
        return [content], [], ["text"]
    texts: list[str] = []
    images: list[Attachment] = []
    types: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        raw_type, text = block.get("type"), block.get("text")
        btype = raw_type if isinstance(raw_type, str) else "untyped"
        if btype not in types:
            types.append(btype)
        if isinstance(text, str):
            texts.append(text)
        elif btype in ("input_image", "image"):
            url = block.get("image_url")
            pointer = url if isinstance(url, str) and not url.startswith("data:") else None
            images.append(Attachment(kind="image", pointer=pointer))
    return texts, images, types


def _message(item: dict[str, Any], r: _Rollout) -> Message:
    role_name = item.get("role")
    texts, images, types = _content(item.get("content"))
    extra: dict[str, Any] = {}
    if isinstance(item.get("phase"), str):
        extra["phase"] = item["phase"]
    text = "\n\n".join(t.strip("\r\n") for t in texts if t.strip())
    if role_name == "assistant":
        kind = turn_kind(text, images, extra)
        return Message(message_id="", role=Role.ASSISTANT, kind=kind, text=text, model=r.model, attachments=images,
                       content_type=",".join(types) or None, extra=extra)
    if role_name == "user" and not (texts and all(_INJECTED.match(t) for t in texts)):
        kind = turn_kind(text, images, extra)
        return Message(message_id="", role=Role.USER, kind=kind, text=text, attachments=images,
                       content_type=",".join(types) or None, extra=extra)
    if role_name not in ("user", "developer", "system"):
        extra["role"] = role_name
    role = Role.USER if role_name == "user" else Role.SYSTEM
    return Message(message_id="", role=role, kind=MessageKind.HIDDEN, text=text, attachments=images,
                   content_type=",".join(types) or None, extra=extra)


def _reasoning(item: dict[str, Any]) -> Message:
    parts: list[str] = []
    for key in ("summary", "content"):
        for block in list_or_empty(item, key):
            if isinstance(block, dict) and isinstance(block.get("text"), str) and block["text"].strip():
                parts.append(block["text"])
    text = "\n\n".join(parts)
    extra: dict[str, Any] = {}
    if not text and item.get("encrypted_content"):
        extra["redacted"] = True
    return Message(message_id="", role=Role.ASSISTANT, kind=MessageKind.REASONING, text=text, reasoning=text or None,
                   extra=extra)


def _call(item: dict[str, Any], itype: str, r: _Rollout) -> Message:
    call_id = text_or_none(item.get("call_id")) or text_or_none(item.get("id"))
    if itype == "local_shell_call":
        name: str | None = "local_shell"
        given: Any = item.get("action")
    elif itype == "web_search_call":
        name, given = "web_search", item.get("action")
    else:
        name = text_or_none(item.get("name")) or itype
        given = item.get("arguments") if "arguments" in item else item.get("input")
        if isinstance(item.get("namespace"), str):
            name = f"{item['namespace']}.{name}"
    if call_id and name:
        r.tool_names[call_id] = name
    call = ToolCall(id=call_id, name=name, input=json_text(given))
    extra = {"status": item["status"]} if isinstance(item.get("status"), str) else {}
    return Message(message_id="", role=Role.ASSISTANT, kind=MessageKind.TOOL_CALL, text=call.input, model=r.model,
                   author_name=name, tool_calls=[call], extra=extra)


def _output(item: dict[str, Any]) -> Message:
    output = item.get("output")
    extra: dict[str, Any] = {}
    is_error = False
    images: list[Attachment] = []
    if isinstance(output, str) and output.startswith("{"):
        try:
            parsed = json.loads(output)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and "output" in parsed:  # {"output": ..., "metadata": {"exit_code", ...}}
            metadata = object_or_empty(parsed, "metadata")
            extra.update({k: metadata[k] for k in ("exit_code", "duration_seconds") if k in metadata})
            output = parsed["output"]
            is_error = isinstance(metadata.get("exit_code"), int) and metadata["exit_code"] != 0
    if isinstance(output, list):
        texts, images, _types = _content(output)
        output = "\n\n".join(texts)
    elif isinstance(output, dict):  # {"content", "success"} / {"content", "isError"}
        is_error = output.get("success") is False or output.get("isError") is True
        output = output.get("content")
        if isinstance(output, list):
            texts, images, _types = _content(output)
            output = "\n\n".join(texts)
    text = json_text(output)
    result = ToolResult(tool_call_id=text_or_none(item.get("call_id")), name=text_or_none(item.get("name")), output=text,
                        is_error=is_error)
    return Message(message_id="", role=Role.TOOL, kind=MessageKind.TOOL_RESULT, text=text, author_name=result.name,
                   tool_results=[result], attachments=images, extra=extra)
