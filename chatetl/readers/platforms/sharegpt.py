"""ShareGPT datasets: `[{"id", "conversations": [{"from", "value"}], "system"?, "tools"?}]`, array or JSONL.

Flat conversations: each message's parent is the one before it, so the shared resolver
makes one linear branch. `from` values: human/user, gpt/assistant/chatgpt/bard/model,
system, observation (a tool's output), function_call (the model calling a tool). Any
other `from` is format drift: counted and kept as a hidden message. An empty human or gpt
turn follows the one rule of `chatetl.readers.tree` (hidden, `extra["empty"]`).

Ids. A dataset's own ids ("identity_0") get a digest of the content (`identity_0~1a2b3c4d`); a
record naming its platform keeps its id; a record without one gets a uuid5 of its content.
Datasets repeat records (merged shards, a file concatenated twice), so within one file:
- a record equal to one read before (the same JSON value, key order aside) is the same
  conversation: read once, each repeat counted as skipped (`sharegpt.duplicate record`);
- a record whose id is taken by a different record gets `~` and the first 8 hex digits of its
  own fingerprint appended (`x~9f8e7d6c`; deterministic: the same record always gets the same
  id), the id it shares kept in `meta["shared_id"]`;
so no conversation id, message id or (conversation, seq) is written twice. What is kept is a
16-byte fingerprint per record (id digest -> record digest, in one bytearray), never the
records: 16 to 32 bytes a record, at most `MAX_FINGERPRINTS` records per file (past that, a
repeat of a record not remembered is not caught; counted as `sharegpt.records past the
duplicate check`). The shape follows FastChat's and LLaMA-Factory's dataset docs (the shared
FastChat sample).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from chatetl.model import (
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolCall,
    ToolResult,
)
from chatetl.readers.convert import convert_records
from chatetl.readers.entry import Entry
from chatetl.readers.fields import expect_object, keep_unknown, list_field
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.platform_names import derived_id, normalize_platform
from chatetl.readers.report import ReadReport
from chatetl.readers.tree import turn_kind

USER_FROM = frozenset({"human", "user"})
ASSISTANT_FROM = frozenset({"gpt", "assistant", "chatgpt", "bard", "model"})
SYSTEM_FROM = frozenset({"system"})
TOOL_RESULT_FROM = frozenset({"observation"})
TOOL_CALL_FROM = frozenset({"function_call"})

KNOWN_RECORD_FIELDS = frozenset({"id", "conversations", "system", "tools", "model", "platform", "title", "url"})
KNOWN_TURN_FIELDS = frozenset({"from", "value"})
_OPENAI_TURN_FIELDS = KNOWN_TURN_FIELDS | {"role", "content"}  # a turn without `from` may be OpenAI-style

# a dataset that names its model says which service it came from
_MODEL_PLATFORMS = (
    ("gpt-", "chatgpt"),
    ("chatgpt", "chatgpt"),
    ("o1", "chatgpt"),
    ("o3", "chatgpt"),
    ("o4", "chatgpt"),
    ("claude", "claude-ai"),
    ("gemini", "gemini"),
    ("bard", "gemini"),
    ("grok", "grok"),
    ("deepseek", "deepseek"),
)


DUPLICATE = "sharegpt.duplicate record"
PAST_THE_CHECK = "sharegpt.records past the duplicate check"
MAX_FINGERPRINTS = 4_000_000  # records remembered per file (a table of at most 128 MB)


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    records = iter_records(entry, shape or Shape.ARRAY, report)
    yield from convert_records(entry, records, report, record_converter(entry.name, report))


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one record of file `name` becomes a Conversation: a repeat of an earlier record of the
    same file is None (counted), a different record with a taken id gets an id of its own."""
    seen = Fingerprints(MAX_FINGERPRINTS)

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_sharegpt(record, report, file=name, where=where, seen=seen)

    return convert


class Fingerprints:
    """Which record each id went to, in one file: id digest (8 bytes) -> record digest (8 bytes)
    in one bytearray, open addressing (a dict of the same takes ~115 bytes a record, this 16 to
    32). At most `capacity` ids: past it `put` refuses."""

    EMPTY = bytes(8)

    def __init__(self, capacity: int, slots: int = 1 << 12) -> None:
        self.capacity = capacity
        self._slots = slots
        self._table = bytearray(16 * slots)
        self._used = 0

    def __len__(self) -> int:
        return self._used

    def _find(self, key: bytes) -> int:
        """Where `key` is, or the empty slot where it would go."""
        table, mask, empty = self._table, self._slots - 1, self.EMPTY
        i = int.from_bytes(key, "little") & mask
        while True:
            at = 16 * i
            here = table[at:at + 8]
            if here == key or here == empty:
                return at
            i = (i + 1) & mask

    def get(self, key: bytes) -> bytes | None:
        key = _slot_key(key)
        at = self._find(key)
        return bytes(self._table[at + 8:at + 16]) if self._table[at:at + 8] == key else None

    def put(self, key: bytes, value: bytes) -> bool:
        key = _slot_key(key)
        at = self._find(key)
        if self._table[at:at + 8] != key:
            if self._used >= self.capacity:
                return False
            self._used += 1
            if 4 * self._used > 3 * self._slots:  # past 3/4 full: twice the slots
                self._grow()
                at = self._find(key)
        self._table[at:at + 16] = key + value
        return True

    def _grow(self) -> None:
        old = self._table
        self._slots *= 2
        self._table = bytearray(16 * self._slots)
        for at in range(0, len(old), 16):
            if old[at:at + 8] != self.EMPTY:
                new = self._find(bytes(old[at:at + 8]))
                self._table[new:new + 16] = old[at:at + 16]


def _slot_key(key: bytes) -> bytes:
    return key if key != Fingerprints.EMPTY else b"\x01" + key[1:]  # all zeros marks an empty slot


def _digest(text: str) -> bytes:
    # sha256 (cut to 8 bytes): twice blake2b's rate where the CPU has SHA instructions
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8]


def _platform(record: dict[str, Any]) -> str:
    if isinstance(record.get("platform"), str) and record["platform"].strip():
        return normalize_platform(record["platform"])
    model = record.get("model")
    if isinstance(model, str):
        name = model.strip().lower()
        for prefix, platform in _MODEL_PLATFORMS:
            if name.startswith(prefix):
                return platform
    return "unknown"


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _guess_role(name: str) -> Role:
    low = name.lower()
    if any(w in low for w in ("human", "user", "prompter", "customer")):
        return Role.USER
    if "system" in low:
        return Role.SYSTEM
    if any(w in low for w in ("tool", "observation", "function", "ipython", "result")):
        return Role.TOOL
    return Role.ASSISTANT


def conversation_from_sharegpt(
    record: Any, report: ReadReport, *, file: str = "", where: str = "", seen: Fingerprints | None = None
) -> Conversation | None:
    """One record as a Conversation; with `seen` (the ids of the file so far), None for a repeat of
    a record read before (counted) and an id of its own for a different record with a taken id."""
    record = expect_object(record, "a ShareGPT record object")
    turns = list_field(record, "conversations", "turns")

    platform = _platform(record)
    system = record.get("system")
    content = json.dumps({"system": system, "conversations": turns}, ensure_ascii=False, sort_keys=True, default=str)
    meta: dict[str, Any] = {}
    conv_id = _conversation_id(record, platform, content, meta)
    if seen is not None:
        rest = {k: v for k, v in record.items() if k not in ("system", "conversations")}
        fingerprint = _digest(content + "\x00" + json.dumps(rest, ensure_ascii=False, sort_keys=True, default=str))
        own = _own_id(conv_id, fingerprint, seen, report)
        if own is None:
            report.skip(DUPLICATE)
            return None
        if own != conv_id:
            meta["shared_id"] = conv_id
            conv_id = own

    if record.get("tools") is not None:
        meta["tools"] = record["tools"]
    keep_unknown(record, KNOWN_RECORD_FIELDS, meta, report, "sharegpt.field")

    messages: list[Message] = []
    parent: str | None = None

    def add(**kw: Any) -> None:
        nonlocal parent
        mid = f"{conv_id}:{len(messages)}"
        messages.append(Message(message_id=mid, parent_id=parent, **kw))
        parent = mid

    if isinstance(system, str) and system.strip() or isinstance(system, (dict, list)) and system:
        add(role=Role.SYSTEM, kind=MessageKind.HIDDEN, text=_text(system), content_type="system")

    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            report.error(file, f"{where} turn {i}".strip(), f"turn is {type(turn).__name__}, not an object: left out", raw=repr(turn).encode()[:4096])
            continue
        # {"from", "value"}; the OpenAI-style {"role", "content"} some datasets mix in reads the same way
        who_raw = turn.get("from", turn.get("role"))
        who = who_raw.strip().lower() if isinstance(who_raw, str) else ""
        text = _text(turn.get("value", turn.get("content")))
        extra: dict[str, Any] = {}
        keep_unknown(turn, KNOWN_TURN_FIELDS if "from" in turn else _OPENAI_TURN_FIELDS, extra, report, "sharegpt.turn_field")
        if who in USER_FROM:
            add(role=Role.USER, kind=turn_kind(text, (), extra), text=text, extra=extra)
        elif who in ASSISTANT_FROM:
            add(role=Role.ASSISTANT, kind=turn_kind(text, (), extra), text=text, extra=extra)
        elif who in SYSTEM_FROM:
            add(role=Role.SYSTEM, kind=MessageKind.HIDDEN, text=text, extra=extra)
        elif who in TOOL_CALL_FROM:
            name = _json_name(text)
            add(
                role=Role.ASSISTANT,
                kind=MessageKind.TOOL_CALL,
                text=text,
                content_type="function_call",
                tool_calls=[ToolCall(id=None, name=name, input=text)],
                extra=extra,
            )
        elif who in TOOL_RESULT_FROM:
            add(
                role=Role.TOOL,
                kind=MessageKind.TOOL_RESULT,
                text=text,
                content_type="observation",
                author_name=_json_name(text),
                # ShareGPT carries no call ids: results are never paired by position
                tool_results=[ToolResult(tool_call_id=None, name=_json_name(text), output=text)],
                extra=extra,
            )
        else:
            label = who_raw if isinstance(who_raw, str) else repr(who_raw)
            report.unknown(f"sharegpt.from:{label}")
            extra["from"] = who_raw
            add(role=_guess_role(who), kind=MessageKind.HIDDEN, text=text, author_name=who_raw if isinstance(who_raw, str) else None, extra=extra)

    title = record.get("title")
    model = record.get("model")
    url = record.get("url")
    return Conversation(
        source=Source.SHAREGPT,
        platform=platform,
        conversation_id=conv_id,
        title=title if isinstance(title, str) else None,
        model=model if isinstance(model, str) else None,
        url=url if isinstance(url, str) else None,
        messages=messages,
        meta=meta,
    )


def _conversation_id(record: dict[str, Any], platform: str, content: str, meta: dict[str, Any]) -> str:
    """The record's id: its own where it names its platform, a dataset's id with a digest of the
    content (kept as `meta["dataset_id"]`), else one derived from the content."""
    raw_id = record.get("id")
    if isinstance(raw_id, (int, float)) and not isinstance(raw_id, bool):
        raw_id = str(raw_id)
    platform_said = isinstance(record.get("platform"), str) and bool(record["platform"].strip())
    if isinstance(raw_id, str) and raw_id.strip() and platform_said:
        return raw_id.strip()  # a record that names its platform carries that platform's id
    if isinstance(raw_id, str) and raw_id.strip():
        # a dataset's ids ("identity_0") are its own, not a platform's: two datasets reuse them, so
        # the id keeps a digest of the content and one chat never swallows another in the graph
        suffix = "~" + derived_id(platform, content)[:8]
        ident = raw_id.strip().removesuffix(suffix)  # chatetl's own training files carry it already
        meta["dataset_id"] = ident
        return ident + suffix
    return derived_id(platform, content)


def _own_id(conv_id: str, fingerprint: bytes, seen: Fingerprints, report: ReadReport) -> str | None:
    """The id a record gets in its file: its own when free; None when an equal record has it;
    else the id with its fingerprint's first 8 (then all 16) hex digits appended."""
    candidates = (conv_id, f"{conv_id}~{fingerprint.hex()[:8]}", f"{conv_id}~{fingerprint.hex()}")
    for candidate in candidates:
        key = _digest(candidate)
        prior = seen.get(key)
        if prior == fingerprint:
            return None
        if prior is None:
            if not seen.put(key, fingerprint):
                report.skip(PAST_THE_CHECK)
            return candidate
    return candidates[-1]  # three different records behind one id and both of its digests: not seen in practice


def _json_name(text: str) -> str | None:
    """The `name` of a JSON function call / observation value, when the value is JSON (read by
    orjson, which refuses an escaped lone surrogate: a name no table can write is no name)."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        value = orjson.loads(stripped)
    except (orjson.JSONDecodeError, RecursionError):
        return None
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None
