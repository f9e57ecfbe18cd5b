"""The canonical model every reader produces and every later stage consumes.

One `Conversation` holds the whole message tree of one chat as it was in one
source file. Readers yield conversations one at a time; nothing here holds a
whole export.

The same chat can arrive many times (a newer export, a one-chat file of it, a replayed
old upload). The state rules at the end of this module decide which state is newest:
every stage (graph, Documents, exports) applies them, so an older state never replaces
a newer one, whatever order the uploads are processed in.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from enum import StrEnum
from operator import itemgetter
from typing import Any, Self

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator


class Source(StrEnum):
    """The format family a conversation was read from (how it arrived)."""

    CHATGPT = "chatgpt"
    CLAUDE_AI = "claude-ai"
    CHAT_EXPORT = "chat-export"
    SHAREGPT = "sharegpt"
    REX = "rex"
    CLAUDE_CODE = "claude-code"
    GEMINI = "gemini"  # Google Takeout (My Activity) and AI Studio prompt files say `platform` apart
    AI_STUDIO = "ai-studio"
    DEEPSEEK = "deepseek"
    GROK = "grok"
    OPEN_WEBUI = "open-webui"
    LE_CHAT = "le-chat"
    CODEX_CLI = "codex-cli"
    GEMINI_CLI = "gemini-cli"
    OPENCODE = "opencode"


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class MessageKind(StrEnum):
    """What kind of thing a message is, so outputs can leave out what a person never saw."""

    TURN = "turn"  # a visible turn: text a person saw in the chat
    REASONING = "reasoning"  # thoughts, reasoning recaps, thinking blocks
    TOOL_CALL = "tool_call"  # the model calling a tool (code, search, browser ...)
    TOOL_RESULT = "tool_result"  # what the tool returned
    HIDDEN = "hidden"  # system prompts, custom instructions, memory, injected context
    SUMMARY = "summary"  # compaction / session summaries


VISIBLE_KINDS = frozenset({MessageKind.TURN})
_TURN = MessageKind.TURN  # (a module name: the enum's attribute is looked up for each message otherwise)


def utc(value: datetime | None) -> datetime | None:
    """Normalize a datetime to aware UTC (naive values are taken as UTC)."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


# ---- the fast constructors: trusted values, as the readers' hot paths build them ----
#
# `cls.fast(**values)` makes what `cls(**values)` makes of values that are already of their fields'
# kinds (a reader checks each one itself), without pydantic's validation: defaults filled in (a new
# list or dict each), the models' own validators applied (times made aware UTC), the fields given
# marked as set. An unknown or missing required field is a TypeError. `cls.of_fields(d, given)`: the
# same from `d`, a new dict of every field in field order, `given` the names to mark as set. Each
# class writes its fields' defaults out (tests/test_model_fast.py holds them to the fields').

_MISSING: Any = object()
_UTC = UTC
_object_new = object.__new__
_object_setattr = object.__setattr__


def _refuse(cls: type[BaseModel], values: dict[str, Any]) -> None:
    unknown = sorted(values.keys() - cls.model_fields.keys())
    missing = [n for n, f in cls.model_fields.items() if f.is_required() and n not in values]
    raise TypeError(f"{cls.__name__}: unknown field(s) {unknown}, missing required field(s) {missing}")


def _utc_times(d: dict[str, Any]) -> None:
    """A conversation's times made aware UTC in its fields, as its validator makes them."""
    for name in ("created_at", "updated_at"):
        when = d[name]
        if when is not None and when.tzinfo is not _UTC:
            d[name] = utc(when)


class _Model(BaseModel):
    # defer_build: each model's validator is built the first time one is made, not at import. The normalize
    # fast path (tuples and columns) never makes one, and building them all was a part of its start-up.
    model_config = ConfigDict(extra="forbid", validate_assignment=False, defer_build=True)

    @classmethod
    def of_fields(cls, d: dict[str, Any], given: Iterable[str], /) -> Self:
        if len(d) != len(cls.__pydantic_fields__):
            _refuse(cls, d)
        return cls._made(d, given)

    @classmethod
    def _made(cls, d: dict[str, Any], given: Iterable[str], /) -> Self:
        """An instance holding `d` as its field dict (every field, in field order), `given` marked as set:
        what `model_construct` makes, without its work per field."""
        m = _object_new(cls)
        _object_setattr(m, "__dict__", d)
        _object_setattr(m, "__pydantic_fields_set__", set(given))
        _object_setattr(m, "__pydantic_extra__", None)
        _object_setattr(m, "__pydantic_private__", None)
        return m


class ToolCall(_Model):
    id: str | None = None  # the source's call id (toolu_..., call_...), used to pair results
    name: str | None = None  # tool name (python, web.run, browser, Bash, artifacts ...)
    input: str = ""  # the call's input as text (JSON-encoded when structured)

    @classmethod
    def fast(cls, /, **values: Any) -> Self:
        d = {"id": None, "name": None, "input": ""}
        d.update(values)
        if len(d) != 3:
            _refuse(cls, values)
        return cls._made(d, values)


class ToolResult(_Model):
    tool_call_id: str | None = None  # pairs with ToolCall.id
    name: str | None = None
    output: str = ""
    is_error: bool = False

    @classmethod
    def fast(cls, /, **values: Any) -> Self:
        d = {"tool_call_id": None, "name": None, "output": "", "is_error": False}
        d.update(values)
        if len(d) != 4:
            _refuse(cls, values)
        return cls._made(d, values)


class Citation(_Model):
    title: str | None = None
    url: str | None = None
    snippet: str | None = None
    source: str | None = None  # domain or citing system
    offset: int | None = None  # where its marker stood in Message.text (a str index), where the source says

    @classmethod
    def fast(cls, /, **values: Any) -> Self:
        d = {"title": None, "url": None, "snippet": None, "source": None, "offset": None}
        d.update(values)
        if len(d) != 5:
            _refuse(cls, values)
        return cls._made(d, values)


class Attachment(_Model):
    kind: str = "file"  # file | image | audio | video
    id: str | None = None
    name: str | None = None
    mime_type: str | None = None
    size: int | None = None
    pointer: str | None = None  # asset pointer (file-service://, sediment://, URL)
    text: str | None = None  # extracted text, where the source has it
    # sha256 of the bytes where the upload held them (stored once under chatetl.layout.attachment_key; mime_type
    # and size are then the bytes' own); None: the export did not contain the file
    content_hash: str | None = None

    @classmethod
    def fast(cls, /, **values: Any) -> Self:
        d = {"kind": "file", "id": None, "name": None, "mime_type": None, "size": None, "pointer": None, "text": None,
             "content_hash": None}
        d.update(values)
        if len(d) != 8:
            _refuse(cls, values)
        return cls._made(d, values)

    @classmethod
    def of_fields(cls, d: dict[str, Any], given: Iterable[str], /) -> Self:
        if len(d) == 7:  # (tables written before the bytes were kept: no content_hash)
            d["content_hash"] = None
        return super().of_fields(d, given)

    @property
    def in_export(self) -> bool:
        """Whether the upload held the file's bytes (stored once, by content_hash)."""
        return self.content_hash is not None


class Message(_Model):
    message_id: str
    parent_id: str | None = None
    role: Role
    kind: MessageKind = MessageKind.TURN
    text: str = ""  # what a person saw for turns; the content itself for other kinds
    created_at: datetime | None = None
    model: str | None = None
    author_name: str | None = None  # tool name for tool messages, display tag for chat-export
    recipient: str | None = None  # ChatGPT: "all" or the tool the message is addressed to
    content_type: str | None = None  # the source's own content/block type(s)
    reasoning: str | None = None  # reasoning carried inside this message (Claude thinking blocks)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    tool_results: list[ToolResult] = Field(default_factory=list)
    citations: list[Citation] = Field(default_factory=list)
    attachments: list[Attachment] = Field(default_factory=list)
    # Set by the branch resolver (chatetl.readers.tree), never by readers themselves.
    on_active_branch: bool = False
    seq: int | None = None  # 0-based position among visible turns of the active branch
    branch_index: int | None = None  # position along the active branch among all its messages
    extra: dict[str, Any] = Field(default_factory=dict)  # unknown source fields, kept raw

    @field_validator("created_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return utc(v)

    @classmethod
    def fast(cls, /, **values: Any) -> Self:
        d = {
            "message_id": _MISSING, "parent_id": None, "role": _MISSING, "kind": _TURN, "text": "", "created_at": None,
            "model": None, "author_name": None, "recipient": None, "content_type": None, "reasoning": None, "tool_calls": [],
            "tool_results": [], "citations": [], "attachments": [], "on_active_branch": False, "seq": None, "branch_index": None,
            "extra": {},
        }
        d.update(values)
        if len(d) != 19 or d["message_id"] is _MISSING or d["role"] is _MISSING:
            _refuse(cls, values)
        when = d["created_at"]
        if when is not None and when.tzinfo is not _UTC:
            d["created_at"] = utc(when)
        return cls._made(d, values)

    @classmethod
    def of_fields(cls, d: dict[str, Any], given: Iterable[str], /) -> Self:
        if len(d) != 19:
            _refuse(cls, d)
        when = d["created_at"]
        if when is not None and when.tzinfo is not _UTC:
            d["created_at"] = utc(when)
        return cls._made(d, given)

    @property
    def visible(self) -> bool:
        return self.kind in VISIBLE_KINDS


class Conversation(_Model):
    # The state hash the normalized tables hold for this state (chatetl.tables.iter_conversations sets it, through
    # `with_state_hash`): `state_hash` returns it instead of hashing again. Not a field (no dump, no equality), never
    # copied (`model_copy`, `copy.deepcopy` and pickling make a conversation without it: it hashes itself again),
    # and dropped when a field is assigned. A read-back conversation changed in place below its fields (a message
    # edited, a list appended to) must be copied (`model_copy`) or have a field assigned so its hash is computed anew.
    __slots__ = ("_stored_state_hash",)

    source: Source  # format family (how it arrived)
    platform: str  # the service the chat happened on: chatgpt, claude-ai, grok, gemini ...
    conversation_id: str  # the platform's own id where the file carries one, else a stable derived id
    title: str | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    model: str | None = None  # the conversation's default model
    url: str | None = None
    timezone: str | None = None  # the source's own time zone, where known (REX)
    source_file: str | None = None  # the file (and archive member) it was read from
    current_node: str | None = None  # the leaf the user last saw, where the source says
    messages: list[Message] = Field(default_factory=list)
    meta: dict[str, Any] = Field(default_factory=dict)  # source-specific extras (project, participant ...)

    @field_validator("created_at", "updated_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return utc(v)

    @classmethod
    def fast(cls, /, **values: Any) -> Self:
        d = {
            "source": _MISSING, "platform": _MISSING, "conversation_id": _MISSING, "title": None, "created_at": None,
            "updated_at": None, "model": None, "url": None, "timezone": None, "source_file": None, "current_node": None,
            "messages": [], "meta": {},
        }
        d.update(values)
        if len(d) != 13 or d["source"] is _MISSING or d["platform"] is _MISSING or d["conversation_id"] is _MISSING:
            _refuse(cls, values)
        _utc_times(d)
        return cls._made(d, values)

    @classmethod
    def of_fields(cls, d: dict[str, Any], given: Iterable[str], /) -> Self:
        if len(d) != 13:
            _refuse(cls, d)
        _utc_times(d)
        return cls._made(d, given)

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name != "source_file":  # (the one field the state hash leaves out)
            _object_setattr(self, "_stored_state_hash", None)

    @property
    def active_branch(self) -> list[Message]:
        branch = [m for m in self.messages if m.on_active_branch]
        branch.sort(key=lambda m: m.branch_index if m.branch_index is not None else -1)
        return branch

    @property
    def visible_turns(self) -> list[Message]:
        return [m for m in self.active_branch if m.seq is not None]

    @property
    def message_count(self) -> int:
        """Visible turns on the active branch: what a person would count."""
        return sum(1 for m in self.messages if m.seq is not None)

    @property
    def key(self) -> str:
        """Stable identity across sources: the platform and its own conversation id."""
        return f"{self.platform}:{self.conversation_id}"


# ---- the state rules: which of two states of one conversation is newest ----


def state_version(conv: Conversation) -> float:
    """How new a conversation's state is, by the source's own clock: its update time, else its newest message."""
    if conv.updated_at is not None:
        return conv.updated_at.timestamp()
    times = [m.created_at.timestamp() for m in conv.messages if m.created_at is not None]
    if times:
        return max(times)
    return conv.created_at.timestamp() if conv.created_at else 0.0


# How much of a conversation a format carries. Only used to break a tie between two states
# with the same update time from different formats: the richer one wins (account exports
# and session logs hold the whole tree with ids and tool calls; REX the upstream messages;
# chat-export files and ShareGPT datasets only the visible turns).
SOURCE_FIDELITY: dict[str, int] = {
    Source.CHATGPT.value: 3,
    Source.CLAUDE_AI.value: 3,
    Source.CLAUDE_CODE.value: 3,
    Source.GEMINI.value: 3,
    Source.AI_STUDIO.value: 3,
    Source.DEEPSEEK.value: 3,
    Source.GROK.value: 3,
    Source.OPEN_WEBUI.value: 3,
    Source.LE_CHAT.value: 3,
    Source.CODEX_CLI.value: 3,
    Source.GEMINI_CLI.value: 3,
    Source.OPENCODE.value: 3,
    Source.REX.value: 2,
    Source.CHAT_EXPORT.value: 1,
    Source.SHAREGPT.value: 1,
}


def state_hash(conv: Conversation) -> str:
    """A fingerprint of a conversation's state (everything but the file it was read from): the first 32 hex digits of
    the sha256 of its fields (`computed_state_hash`). A conversation read back from the normalized tables carries the
    one they hold (their `state_hash` column, computed once at normalize time, set by `with_state_hash`), taken as it is."""
    stored = getattr(conv, "_stored_state_hash", None)
    return stored if stored is not None else computed_state_hash(conv)


def source_fields_json(value: dict[str, Any]) -> str | None:
    """A dict of source fields as the tables hold it (`meta`, `extra`): JSON with sorted keys, what JSON cannot hold
    as its text (str()); None for an empty dict. Reading it back and writing it again gives the same text."""
    return _SOURCE_FIELDS_ENCODER.encode(value) if value else None


# json.dumps(value, sort_keys=True, ensure_ascii=False, default=str) builds this encoder on every call: one built once
# writes the same text (json.dumps is `JSONEncoder(...).encode(value)`) for less, once per message and conversation at
# normalize time
_SOURCE_FIELDS_ENCODER = json.JSONEncoder(sort_keys=True, ensure_ascii=False, default=str)


def computed_state_hash(conv: Conversation) -> str:
    """`state_hash` computed from the conversation itself (whatever hash it carries)."""
    extras = [source_fields_json(x) if x else None for x in map(_EXTRA_OF, map(vars, conv.__dict__["messages"]))]
    return hash_of_fields(conv, source_fields_json(conv.meta), extras)


# what the state hash covers: every field but source_file, the dicts of source fields as their `source_fields_json`
_ITEM_LISTS = ("tool_calls", "tool_results", "citations", "attachments")
_HASHED_CONVERSATION = itemgetter(*(n for n in Conversation.model_fields if n not in ("source_file", "messages", "meta")))
# a message's hashed fields, in their order (then its item lists, then its extra)
HASHED_MESSAGE_FIELDS = tuple(n for n in Message.model_fields if n not in ("extra", *_ITEM_LISTS))
_HASHED_MESSAGE = itemgetter(*HASHED_MESSAGE_FIELDS)
_ITEM_LISTS_OF = tuple(itemgetter(name) for name in _ITEM_LISTS)
_EXTRA_OF = itemgetter("extra")


def hash_of_fields(conv: Conversation, meta: str | None, extras: list[str | None]) -> str:
    """`computed_state_hash` of `conv` given its `meta` and its messages' `extra` as their `source_fields_json` (what the
    tables write, computed once). The dicts of source fields are hashed as that text, so a conversation read back
    from the tables hashes the same as the one written. ValueError where a value cannot be hashed (a lone
    surrogate: the readers replace them)."""
    return hash_of_message_rows(conv, meta, hashed_message_rows(conv, extras))


def hashed_message_rows(conv: Conversation, extras: list[str | None]) -> list[tuple[Any, ...]]:
    """What the state hash covers of each message of `conv` (`extras`: their `extra` as `source_fields_json`), as
    `hash_of_message_rows` takes it."""
    dicts = list(map(vars, conv.__dict__["messages"]))  # (built in C: no Python step per message; the items of
    # the lists stay models, dumped as their field dicts by _item_fields)
    return list(zip(map(_HASHED_MESSAGE, dicts), *[map(get, dicts) for get in _ITEM_LISTS_OF], extras))


def hash_of_message_rows(conv: Conversation, meta: str | None, messages: list[tuple[Any, ...]]) -> str:
    """`hash_of_fields` of `conv` given what it hashes of each message, already gathered (a hot path that holds
    them as columns zips them): (the values of HASHED_MESSAGE_FIELDS as a tuple, then its tool_calls,
    tool_results, citations and attachments each as a list of the items (their field dicts, or the models
    themselves: dumped as those dicts) or an empty list or tuple where it has none, then its extra as its
    `source_fields_json`)."""
    fields = (_HASHED_CONVERSATION(conv.__dict__), meta, messages)
    try:
        dump = orjson.dumps(fields, default=_item_fields)
    except orjson.JSONEncodeError:  # an int beyond 64 bits, or a str that is not UTF-8
        dump = json.dumps(fields, ensure_ascii=False, default=_json_default).encode()  # (UnicodeEncodeError: a ValueError)
    return hashlib.sha256(dump).hexdigest()[:32]


def _item_fields(value: Any) -> Any:
    """orjson's `default` for the state hash: an item of a message's lists (a model) as its field dict."""
    if isinstance(value, BaseModel):
        return value.__dict__
    raise TypeError(f"cannot hash a {type(value).__name__}")


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, BaseModel):
        return value.__dict__
    raise ValueError(f"cannot hash a {type(value).__name__}")


def with_state_hash(conv: Conversation, digest: str | None) -> Conversation:
    """`conv`, carrying `digest` as its state hash: what the tables hold for it, or the one computed once for the
    several outputs that order it (None: computed when asked)."""
    _object_setattr(conv, "_stored_state_hash", digest)
    return conv


StateOrder = tuple[float, int, str]


def state_order(conv: Conversation, digest: str | None = None) -> StateOrder:
    """The one order of a conversation's states (the larger wins): the source's own update time
    (`state_version`), then the richer format (`SOURCE_FIDELITY`), then the larger `state_hash`
    (`digest`, when already computed). Two different states never tie, so the winner never depends
    on the order they are read in: the graph (chatetl.graph.decide adds its own rules on top), the
    export files, the day's zip, training file and archive rows, `chatetl export` and one upload's
    tables all keep the same state."""
    return state_version(conv), SOURCE_FIDELITY.get(conv.source.value, 0), digest or state_hash(conv)


def order_of(version: float, source: str | None, digest: str | None) -> StateOrder:
    """`state_order` from stored fields (a node's properties, a manifest, an archive row). A record kept before it
    held the source and the hash (no `digest`) orders by its time alone, below every state of that time: any of
    them replaces it."""
    if not digest:
        return float(version), -1, ""
    return float(version), SOURCE_FIDELITY.get(source or "", 0), digest


def newest(states: list[Conversation]) -> Conversation | None:
    """The winning state among several (None for none)."""
    return max(states, key=state_order, default=None)


def state_batches(
    conversations: Iterable[Conversation], max_items: int, weight: Callable[[Conversation], int] = lambda conv: 1
) -> Iterator[list[Conversation]]:
    """Batches of conversations whose `weight`s add up to at most about `max_items` (one
    conversation is never split), in which two states of one conversation never meet: the
    second starts a new batch, so the first is decided (written, or refused by the rules)
    before the second is compared with it."""
    batch: list[Conversation] = []
    keys: set[str] = set()
    size = 0
    for conv in conversations:
        if conv.key in keys:
            yield batch
            batch, keys, size = [], set(), 0
        batch.append(conv)
        keys.add(conv.key)
        size += weight(conv)
        if size >= max_items:
            yield batch
            batch, keys, size = [], set(), 0
    if batch:
        yield batch
