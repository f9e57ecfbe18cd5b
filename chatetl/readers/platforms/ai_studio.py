"""Google AI Studio prompt files: what AI Studio saves in Drive's "Google AI Studio" folder (and a
Drive Takeout carries), one chat per file, often with no file extension; the file name is its title.

A file is `{runSettings: {model, temperature, ...}, systemInstruction: {text} | {parts: [{text}]},
chunkedPrompt: {chunks: [...], pendingInputs: [...]}}`. The chunks are the chat in order, each
`{role: "user" | "model", text, parts: [{text, thought}], tokenCount, isThought, thoughtSignatures,
finishReason, createTime, grounding, driveDocument, driveImage, driveVideo, driveAudio, inlineFile,
inlineImage, youtubeVideo, executableCode, codeExecutionResult, errorMessage, branchParent,
branchChildren, ...}`; a file holds no tree (a rerun replaces its chunk, "Branch from here" saves a
new file whose chunk names its `branchParent`), so its messages are a chain.

What becomes what. An `isThought` chunk (or one whose parts are all `thought: true`) is the model's
thinking, shown folded above its reply: a REASONING message. Consecutive content chunks of one role
are one turn, as AI Studio shows them and as they were sent: an upload is a chunk of its own before
the text that asks about it, and a reply can come in several chunks; their texts are joined, their
uploads become the turn's Attachments (Drive files by their Drive URL; inline bytes by type and size
only). `thought` parts inside a reply are Message.reasoning. `executableCode` / `codeExecutionResult`
(code execution) and `functionCall` / `functionResponse` chunks are TOOL_CALL / TOOL_RESULT messages,
paired in order. `grounding` sources (Search) are Citations. `errorMessage` (a failed run) is kept as
a HIDDEN message. `systemInstruction` is a HIDDEN system message before the first chunk;
`pendingInputs` (typed but never sent) are no turns: kept in Conversation.meta; so are `runSettings`.
`thoughtSignatures`, `safetyRatings` and `tokenCount` are the API's bookkeeping (token counts are
summed into extra). Unknown fields are drift, kept.

A prompt has no id in the file: `conversation_id` is derived from the file name and a hash of the
opening of the chat (the system instruction and first chunk). The whole content is not hashed on
purpose: AI Studio saves the same file again as the chat grows, and each later copy must replace
the earlier (the state rules, by `createTime`), not stand beside it as another chat; two prompts
that share a name still differ by their openings.

Layout researched from the AI Studio examples and schema of yetanotherchris/openwebui-importer
(examples/aistudio_example.json, schemas/aistudio-schema.json, convert_aistudio.py), Sinity/polylogue
(sources/providers/gemini_message.py: the full chunk field list, parts restating `text`), and the
AI Studio converters found by `chunkedPrompt` (chat2html.py: createTime, finishReason, runSettings).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypedDict
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
from chatetl.readers.fields import (
    expect_object,
    keep_unknown,
    known_role,
    list_field,
    list_or_empty,
    object_or_empty,
    text_or_none,
)
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_iso_time
from chatetl.readers.tree import turn_kind

PLATFORM = "ai-studio"

KNOWN_PROMPT_FIELDS = frozenset({"runSettings", "systemInstruction", "chunkedPrompt", "pendingInputs"})
KNOWN_CHUNKED_FIELDS = frozenset({"chunks", "pendingInputs"})
KNOWN_CHUNK_FIELDS = frozenset(
    {
        "text", "role", "tokenCount", "isThought", "thinkingBudget", "thoughtSignatures", "parts", "finishReason",
        "createTime", "timestamp", "grounding", "branchParent", "branchChildren", "safetyRatings", "executableCode",
        "codeExecutionResult", "functionCall", "functionResponse", "driveDocument", "driveImage", "driveAudio",
        "driveVideo", "inlineFile", "inlineImage", "youtubeVideo", "errorMessage", "isEdited",
    }
)
KNOWN_PART_FIELDS = frozenset(
    {"text", "thought", "thoughtSignature", "inlineData", "fileData", "executableCode", "codeExecutionResult", "functionCall", "functionResponse"}
)
ROLES = {"user": Role.USER, "model": Role.ASSISTANT, "assistant": Role.ASSISTANT, "system": Role.SYSTEM}
# chunk field -> attachment kind (Drive files by id; inline ones carry their bytes)
_DRIVE = (("driveDocument", "file"), ("driveImage", "image"), ("driveVideo", "video"), ("driveAudio", "audio"))
_INLINE = (("inlineImage", "image"), ("inlineFile", "file"))
_TOOL_KEYS = ("executableCode", "codeExecutionResult", "functionCall", "functionResponse")
# what a chunk says of its whole answer: kept on the last of its parts read as chunks of their own
_CHUNK_ENDING = frozenset({"tokenCount", "finishReason", "grounding", "errorMessage", "isEdited", "branchChildren", "branchParent",
                           "safetyRatings"})
_UPLOAD_KEYS = frozenset({*(key for key, _ in _DRIVE), *(key for key, _ in _INLINE), "youtubeVideo"})


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one prompt object of file `name` becomes a Conversation (the file name is its title)."""
    title = title_of(name)
    return lambda record, where: conversation_from_ai_studio(expect_object(record, "a prompt object"), report, title, file=name, where=where)


def title_of(name: str) -> str:
    """A prompt's title: its file name (the archive member's own name), without a `.json`."""
    base = name.rsplit("!", 1)[-1].replace("\\", "/").rsplit("/", 1)[-1]
    return base[:-5] if base.lower().endswith(".json") and len(base) > 5 else base


def conversation_from_ai_studio(record: dict[str, Any], report: ReadReport, title: str, file: str = "", where: str = "") -> Conversation:
    """One AI Studio prompt object as a Conversation (a chain of messages)."""
    chunked = record.get("chunkedPrompt")
    if not isinstance(chunked, dict):
        raise ValueError(f"`chunkedPrompt` is not an object (got {type(chunked).__name__})")  # noqa: TRY004 (convert_records reports ValueErrors)
    chunks = list_field(chunked, "chunks", "chunks")
    meta: dict[str, Any] = {}
    keep_unknown(record, KNOWN_PROMPT_FIELDS, meta, report, "ai-studio.prompt_field")
    keep_unknown(chunked, KNOWN_CHUNKED_FIELDS, meta, report, "ai-studio.chunked_prompt_field")
    settings = object_or_empty(record, "runSettings")
    if settings:
        meta["run_settings"] = settings
    pending = [p for where in (chunked, record) if isinstance(where.get("pendingInputs"), list) for p in where["pendingInputs"] if _has_content(p)]
    if pending:
        meta["pending_inputs"] = pending  # typed into the box, never sent: no turn

    system = _instruction_text(record.get("systemInstruction"))
    conv_id = _prompt_id(title, system, chunks)
    builder = _Chain(conv_id, report, file, f"{where} (prompt {title})" if where else f"prompt {title}")
    if system:
        builder.add(Message.fast(message_id=f"{conv_id}:system", role=Role.SYSTEM, kind=MessageKind.HIDDEN, text=system, content_type="systemInstruction"))
    for index, chunk in enumerate(chunks):
        builder.chunk(index, chunk)
    builder.flush()

    for chunk in chunks:
        if isinstance(chunk, dict) and chunk.get("branchParent") is not None:
            meta["branch_parent"] = chunk["branchParent"]  # this prompt was branched off another one
            break
    times = [m.created_at for m in builder.messages if m.created_at is not None]
    model = text_or_none(settings.get("model"))
    return Conversation.fast(
        source=Source.AI_STUDIO,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=title or None,
        created_at=min(times) if times else None,
        updated_at=max(times) if times else None,
        model=model.removeprefix("models/") if model else None,
        current_node=builder.messages[-1].message_id if builder.messages else None,
        messages=builder.messages,
        meta=meta,
    )


def _has_content(pending: Any) -> bool:
    if not isinstance(pending, dict):
        return pending not in (None, "", [], {})
    return any(v not in (None, "", [], {}) for k, v in pending.items() if k != "role")


def _instruction_text(raw: Any) -> str | None:
    if isinstance(raw, str):
        return raw or None
    if not isinstance(raw, dict):
        return None
    text = text_or_none(raw.get("text"))
    if text:
        return text
    parts = [p["text"] for p in raw.get("parts") or [] if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"]]
    return "\n\n".join(parts) or None


def _prompt_id(title: str, system: str | None, chunks: list[Any]) -> str:
    """A stable id for a prompt file: its name and a hash of its opening (see the module docstring)."""
    first = next((c for c in chunks if isinstance(c, dict)), {})
    opening = {k: first.get(k) for k in ("role", "text", *(key for key, _ in _DRIVE), "youtubeVideo") if first.get(k) is not None}
    for key, _ in _INLINE:  # inline bytes by their hash: small to keep, still telling two uploads apart
        data = object_or_empty(first, key).get("data")
        if isinstance(data, str):
            opening[key] = hashlib.sha256(data.encode()).hexdigest()
    digest = hashlib.sha256(json.dumps([system, opening], sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ai-studio:{title}:{digest}"))


class _Turn(TypedDict):
    """The turn being gathered from consecutive content chunks of one role."""

    index: int | str  # the first chunk's
    role: Role
    texts: list[str]
    reasoning: list[str]
    attachments: list[Attachment]
    citations: list[Citation]
    created_at: datetime | None
    tokens: int
    types: list[str]
    extra: dict[str, Any]
    chunks: int


class _Thought(TypedDict):
    """The thinking being gathered from consecutive thought chunks."""

    index: int | str
    texts: list[str]
    created_at: datetime | None
    tokens: int
    extra: dict[str, Any]


def _tool_key(chunk: dict[str, Any], parts: list[dict[str, Any]]) -> str | None:
    """The tool field (a call, its code, a result) a chunk without text holds, itself or in a part."""
    tool = next((k for k in _TOOL_KEYS if chunk.get(k) is not None), None)
    if tool is None and parts:
        tool = next((k for p in parts for k in _TOOL_KEYS if p.get(k) is not None), None)
    return tool


def _keep_chunk_fields(chunk: dict[str, Any], extra: dict[str, Any]) -> None:
    """Why a chunk ended, how it branched and whether it was edited, into `extra`."""
    if chunk.get("finishReason") is not None:
        extra["finish_reason"] = chunk["finishReason"]
    if chunk.get("branchChildren"):
        extra["branch_children"] = chunk["branchChildren"]
    if chunk.get("branchParent") is not None:
        extra["branch_parent"] = chunk["branchParent"]
    if chunk.get("isEdited") is True:
        extra["edited"] = True


class _Chain:
    """The messages of one prompt as they are built, chunk by chunk: a chain, with consecutive
    content chunks of one role gathered into one turn."""

    def __init__(self, conv_id: str, report: ReadReport, file: str, place: str) -> None:
        self.conv_id, self.report, self.file, self.place = conv_id, report, file, place
        self.messages: list[Message] = []
        self.turn: _Turn | None = None
        self.thought: _Thought | None = None
        self.open_calls: list[str] = []  # tool calls not yet answered, oldest first

    def add(self, message: Message) -> None:
        if self.messages:  # (set as the resolver sets fields: the message is new, nothing validated it yet)
            message.__dict__["parent_id"] = self.messages[-1].message_id
            message.__pydantic_fields_set__.add("parent_id")
        self.messages.append(message)

    def chunk(self, index: int | str, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            self.report.error(self.file, f"{self.place} chunk {index}", f"chunk is not an object (got {type(chunk).__name__})", raw=raw_bytes(chunk))
            return
        get = chunk.get
        extra: dict[str, Any] = {}
        role = self._role(chunk, extra)
        keep_unknown(chunk, KNOWN_CHUNK_FIELDS, extra, self.report, "ai-studio.chunk_field")
        text = get("text")
        if not isinstance(text, str):
            text = ""
        parts: list[dict[str, Any]] = []
        part_texts: list[tuple[str, bool]] = []
        if get("parts"):
            parts = [p for p in list_or_empty(chunk, "parts") if isinstance(p, dict)]
            if (len(parts) > 1 or text.strip()) and any(p.get(k) is not None for p in parts for k in _TOOL_KEYS):
                self._in_part_order(index, chunk, role, text, parts)
                return
            part_texts = self._part_texts(parts, extra)
        when = parse_iso_time(get("createTime") or get("timestamp"))
        tokens = get("tokenCount")
        if not isinstance(tokens, int):
            tokens = 0

        if get("isThought") is True or (part_texts and all(t for _, t in part_texts)):
            self._add_thought(index, chunk, text or "\n\n".join(t for t, _ in part_texts), when, tokens, extra)
            return
        if self.thought is not None:
            self._end_thought()

        tool = None if text.strip() else _tool_key(chunk, parts)
        if tool is not None:
            self._end_turn()
            self._tool(index, chunk, parts, tool, role, when, tokens, extra)
            return
        error = text_or_none(get("errorMessage"))
        attachments = _attachments(chunk, parts) if parts or not _UPLOAD_KEYS.isdisjoint(chunk) else []
        visible = text or "".join(t for t, is_thought in part_texts if not is_thought)
        has_text = bool(visible.strip())
        if error and not has_text and not attachments:
            self._end_turn()
            extra["error"] = error
            self._emit(index, role, MessageKind.HIDDEN, error, when, "errorMessage", extra=extra, tokens=tokens)
            return
        if error:
            extra["error"] = error
        turn = self._turn_of(index, role, when)
        turn["chunks"] += 1
        turn["tokens"] += tokens
        self._gather(turn, visible if has_text else "", part_texts, attachments)
        if get("grounding") is not None:
            turn["citations"].extend(_citations(chunk["grounding"]))
        _keep_chunk_fields(chunk, extra)
        if extra:
            turn["extra"].update(extra)

    def _role(self, chunk: dict[str, Any], extra: dict[str, Any]) -> Role:
        name = chunk.get("role")
        role = ROLES.get(name) if isinstance(name, str) else None
        if role is None:
            role = known_role(ROLES, name, self.report, drift="ai-studio.role", extra=extra, keep_as="raw_role", default=Role.ASSISTANT)
        return role

    def _part_texts(self, parts: list[dict[str, Any]], extra: dict[str, Any]) -> list[tuple[str, bool]]:
        """(text, is a thought) of each part with text; the parts' unknown fields into `extra`."""
        part_texts: list[tuple[str, bool]] = []
        unknown: dict[str, Any] = {}
        for part in parts:
            keep_unknown(part, KNOWN_PART_FIELDS, unknown, self.report, "ai-studio.part_field")
            if isinstance(part.get("text"), str) and part["text"]:
                part_texts.append((part["text"], part.get("thought") is True))
        if unknown:
            extra["part_fields"] = unknown
        return part_texts

    def _add_thought(self, index: int | str, chunk: dict[str, Any], text: str, when: datetime | None, tokens: int,
                     extra: dict[str, Any]) -> None:
        """A thought chunk: ends the turn, joins the thinking being gathered (or starts it)."""
        self._end_turn()
        thought = self.thought
        if thought is None:
            thought = self.thought = {"index": index, "texts": [], "created_at": when, "tokens": 0, "extra": extra}
        thought["texts"].append(text)
        thought["tokens"] += tokens
        if chunk.get("thinkingBudget") is not None:
            thought["extra"]["thinking_budget"] = chunk["thinkingBudget"]

    def _turn_of(self, index: int | str, role: Role, when: datetime | None) -> _Turn:
        """The turn a content chunk of `role` joins: the one being gathered, else a new one (the other ended)."""
        turn = self.turn
        if turn is None or turn["role"] is not role:
            self._end_turn()
            turn = self.turn = {
                "index": index, "role": role, "texts": [], "reasoning": [], "attachments": [], "citations": [],
                "created_at": when, "tokens": 0, "types": [], "extra": {}, "chunks": 0,
            }
        return turn

    @staticmethod
    def _gather(turn: _Turn, visible: str, part_texts: list[tuple[str, bool]], attachments: list[Attachment]) -> None:
        """A chunk's visible text, its thought parts and its attachments into the turn."""
        types = turn["types"]
        if visible:
            turn["texts"].append(visible)
            if "text" not in types:
                types.append("text")
        if part_texts:
            reasoning = "\n\n".join(t for t, is_thought in part_texts if is_thought)
            if reasoning:
                turn["reasoning"].append(reasoning)
        if attachments:
            turn["attachments"].extend(attachments)
            types.extend(kind for kind in dict.fromkeys(a.kind for a in attachments) if kind not in types)

    def _in_part_order(self, index: int | str, chunk: dict[str, Any], role: Role, text: str, parts: list[dict[str, Any]]) -> None:
        """A chunk whose parts hold code or function calls beside text (or several of them): each
        part read in its order, as chunks of their own; text parts gather into the turn around
        them, each call and result is its message. The chunk's `text`, when set, is the whole of
        its text (its parts' text then restates it) and stands where the first text part does."""
        raw_role = chunk.get("role")
        segments: list[dict[str, Any]] = []
        for part in parts:
            key = next((k for k in _TOOL_KEYS if part.get(k) is not None), None)
            if key is not None:
                segments.append({"role": raw_role, key: part[key]})
            elif segments and "parts" in segments[-1]:
                segments[-1]["parts"].append(part)
            else:
                segments.append({"role": raw_role, "parts": [part]})
        if text.strip():
            contents = [seg for seg in segments if "parts" in seg]
            for seg in contents:
                seg["parts"] = [p for p in seg["parts"] if not isinstance(p.get("text"), str) or p.get("thought") is True]
            if contents:
                contents[0]["text"] = text
            else:
                segments.insert(0, {"role": raw_role, "text": text})
            segments = [seg for seg in segments if seg.get("parts") or "parts" not in seg or "text" in seg]
        when = {k: chunk[k] for k in ("createTime", "timestamp") if k in chunk}
        last = next((seg for seg in reversed(segments) if "parts" in seg or "text" in seg), segments[-1])
        last.update({k: v for k, v in chunk.items() if k in _CHUNK_ENDING})
        for k, seg in enumerate(segments):
            self.chunk(index if k == 0 else f"{index}.{k}", {**when, **seg})

    def _tool(self, index: int | str, chunk: dict[str, Any], parts: list[dict[str, Any]], key: str, role: Role, when: Any, tokens: int, extra: dict[str, Any]) -> None:
        value = chunk.get(key)
        if value is None:
            value = next(p[key] for p in parts if p.get(key) is not None)
        value = value if isinstance(value, dict) else {"value": value}
        name: str | None
        if key in ("executableCode", "functionCall"):
            call_id = text_or_none(value.get("id")) or f"{self.conv_id}:{index}"
            if key == "executableCode":
                name, body = "code_execution", json_text(value.get("code"))
                if value.get("language") is not None:
                    extra["language"] = value["language"]
            else:
                name, body = text_or_none(value.get("name")), json_text(value.get("args"))
            self.open_calls.append(call_id)
            call = ToolCall.fast(id=call_id, name=name, input=body)
            self._emit(index, Role.ASSISTANT, MessageKind.TOOL_CALL, body, when, key, extra=extra, tokens=tokens, tool_calls=[call])
            return
        result_of = text_or_none(value.get("id")) or (self.open_calls.pop(0) if self.open_calls else None)
        if key == "codeExecutionResult":
            name, output = "code_execution", json_text(value.get("output"))
            is_error = value.get("outcome") not in (None, "OUTCOME_OK")
            if value.get("outcome") is not None:
                extra["outcome"] = value["outcome"]
        else:
            name, output, is_error = text_or_none(value.get("name")), json_text(value.get("response")), False
        result = ToolResult.fast(tool_call_id=result_of, name=name, output=output, is_error=is_error)
        self._emit(index, Role.TOOL, MessageKind.TOOL_RESULT, output, when, key, extra=extra, tokens=tokens, tool_results=[result], author=name)

    def _emit(self, index: int | str, role: Role, kind: MessageKind, text: str, when: Any, content_type: str, *, extra: dict[str, Any],
              tokens: int = 0, reasoning: str | None = None, tool_calls: list[ToolCall] | None = None,
              tool_results: list[ToolResult] | None = None, attachments: list[Attachment] | None = None, citations: list[Citation] | None = None, author: str | None = None) -> None:
        if tokens:
            extra["token_count"] = tokens
        self.add(
            Message.fast(
                message_id=f"{self.conv_id}:{index}",
                role=role,
                kind=kind,
                text=text,
                created_at=when,
                author_name=author,
                content_type=content_type,
                reasoning=reasoning,
                tool_calls=tool_calls or [],
                tool_results=tool_results or [],
                citations=citations or [],
                attachments=attachments or [],
                extra=extra,
            )
        )

    def _end_thought(self) -> None:
        thought, self.thought = self.thought, None
        if thought is not None:
            text = "\n\n".join(t for t in thought["texts"] if t)
            self._emit(thought["index"], Role.ASSISTANT, MessageKind.REASONING, text, thought["created_at"], "thought",
                       extra=thought["extra"], tokens=thought["tokens"])

    def _end_turn(self) -> None:
        turn, self.turn = self.turn, None
        if turn is None:
            return
        extra = turn["extra"]
        if turn["chunks"] > 1:
            extra["chunks"] = turn["chunks"]
        role, text = turn["role"], "\n\n".join(turn["texts"])
        kind = MessageKind.HIDDEN if role is Role.SYSTEM else turn_kind(text, turn["attachments"], extra)
        self._emit(
            turn["index"], role, kind, text,
            turn["created_at"], ",".join(turn["types"]) or "text", extra=extra, tokens=turn["tokens"],
            reasoning="\n\n".join(turn["reasoning"]) or None, attachments=turn["attachments"], citations=turn["citations"],
        )

    def flush(self) -> None:
        self._end_thought()
        self._end_turn()


def _attachments(chunk: dict[str, Any], parts: list[dict[str, Any]]) -> list[Attachment]:
    out: list[Attachment] = []
    for key, kind in _DRIVE:
        value = chunk.get(key)
        drive_id = value if isinstance(value, str) else text_or_none(value.get("id")) if isinstance(value, dict) else None
        if drive_id is not None or isinstance(value, dict):
            info = value if isinstance(value, dict) else {}
            out.append(
                Attachment.fast(
                    kind=kind, id=drive_id, name=text_or_none(info.get("name")) or text_or_none(info.get("displayName")),
                    mime_type=text_or_none(info.get("mimeType")),
                    pointer=f"https://drive.google.com/file/d/{drive_id}/view" if drive_id else None,
                )
            )
    inline = [(chunk.get(key), kind) for key, kind in _INLINE] + [(p.get("inlineData"), "inline") for p in parts]
    for value, kind in inline:
        if isinstance(value, dict):
            mime = text_or_none(value.get("mimeType"))
            data = value.get("data")
            out.append(
                Attachment.fast(
                    kind=_kind_of(mime) if kind == "inline" else kind,
                    name=text_or_none(value.get("name")) or text_or_none(value.get("displayName")) or text_or_none(value.get("fileName")),
                    mime_type=mime,
                    size=len(data) * 3 // 4 if isinstance(data, str) else None,  # the decoded size of the base64 bytes
                )
            )
    for part in parts:
        file_data = part.get("fileData")
        if isinstance(file_data, dict):
            mime = text_or_none(file_data.get("mimeType"))
            out.append(Attachment.fast(kind=_kind_of(mime), mime_type=mime, pointer=text_or_none(file_data.get("fileUri"))))
    video = chunk.get("youtubeVideo")
    if isinstance(video, dict):
        video_id = text_or_none(video.get("id"))
        out.append(Attachment.fast(kind="video", id=video_id, pointer=f"https://www.youtube.com/watch?v={video_id}" if video_id else None))
    return out


def _kind_of(mime: str | None) -> str:
    for kind in ("image", "audio", "video"):
        if mime and mime.startswith(f"{kind}/"):
            return kind
    return "file"


def _citations(grounding: Any) -> list[Citation]:
    """Search grounding: `groundingChunks: [{web: {uri, title}}]` (or `groundingSources`)."""
    if not isinstance(grounding, dict):
        return []
    out: list[Citation] = []
    seen: set[tuple[str | None, str | None]] = set()
    for key in ("groundingChunks", "groundingSources", "sources"):
        for item in grounding.get(key) or []:
            if not isinstance(item, dict):
                continue
            web = item.get("web") or item.get("retrievedContext") or item
            if not isinstance(web, dict):
                continue
            url = text_or_none(web.get("uri")) or text_or_none(web.get("url"))
            title = text_or_none(web.get("title"))
            if (url, title) in seen or not (url or title):
                continue
            seen.add((url, title))
            domain = text_or_none(web.get("domain"))
            if domain is None and url:
                try:
                    domain = urlparse(url).hostname or None
                except ValueError:
                    domain = None
            out.append(Citation.fast(title=title, url=url, snippet=text_or_none(web.get("text")), source=domain))
    return out
