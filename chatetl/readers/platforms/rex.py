"""REX `rex-conversation` records: ChatGPT conversations collected for research studies.

A file (JSON array or JSONL) holds one record per conversation and sync; a resync repeats
the same `identifier` with a later state and only the newest state is yielded. The file is
streamed twice: pass 1 keeps `identifier -> winning record index` (small values only), pass 2
yields the winners, so memory is O(number of conversations), never O(file).

Other record types in the same file (`rex-history-visit`, `pdk-app-event`, ...) are skipped
and counted. Field names are read with and without the redaction `*` suffix (`title*`/`title`).
Every detail level reads: `conversation_times` gives a conversation with no messages, the
`message_times` levels give turns with an empty text, `full` gives everything, the turn's raw
upstream ChatGPT message read by the ChatGPT reader's own message converter.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from chatetl.model import (
    Citation,
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolResult,
)
from chatetl.readers.convert import convert_records
from chatetl.readers.entry import Entry
from chatetl.readers.fields import expect_object, keep_unknown, known_role, list_field
from chatetl.readers.jsonscan.records import Shape, iter_records
from chatetl.readers.platform_names import derived_id, normalize_platform
from chatetl.readers.platforms.chatgpt import message_from_chatgpt, pair_tool_results
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import iso, parse_time

CONVERSATION = "rex-conversation"
ROOT = "client-created-root"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MIN = datetime.min.replace(tzinfo=UTC)

KNOWN_FIELDS = frozenset(
    {"name", "date", "platform", "identifier", "title", "started", "ended", "turns", "metadata", "passive-data-metadata"}
)
KNOWN_TURN_FIELDS = frozenset({"speaker", "when", "identifier", "content", "parent", "metadata", "search", "citations"})
KNOWN_PDM_FIELDS = frozenset(
    {"source", "group", "generator", "generator-id", "timestamp", "timezone", "configuration-hash", "encrypted_transmission"}
)
# a field counts as known with or without its redaction suffix
_KNOWN_KEYS = KNOWN_FIELDS | {f"{name}*" for name in KNOWN_FIELDS}
_KNOWN_TURN_KEYS = KNOWN_TURN_FIELDS | {f"{name}*" for name in KNOWN_TURN_FIELDS}
_ROLES = {"user": Role.USER, "assistant": Role.ASSISTANT, "system": Role.SYSTEM, "tool": Role.TOOL}


def field(d: dict[str, Any], name: str) -> Any:
    """A field read with or without its redaction suffix: `title*`, else `title`."""
    starred = name + "*"
    if starred in d:
        return d[starred]
    return d.get(name)


def _base(key: str) -> str:
    return key.removesuffix("*")


def _str(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return value if isinstance(value, str) and value else None


def _pdm(record: dict[str, Any]) -> dict[str, Any]:
    pdm = record.get("passive-data-metadata")
    return pdm if isinstance(pdm, dict) else {}


_Newness = tuple[datetime, datetime, datetime, int]


def _newness(record: dict[str, Any], index: int) -> _Newness:
    """Which state of a resynced conversation is newest: `ended`, then `date`, then the capture time, then file order."""
    return (
        parse_time(record.get("ended")) or _MIN,
        parse_time(record.get("date")) or _MIN,
        parse_time(_pdm(record).get("timestamp")) or _MIN,
        index,
    )


def _winners(entry: Entry, shape: Shape, report: ReadReport) -> set[int]:
    """Pass 1: the record index holding the newest state of each identifier."""
    best: dict[str, tuple[_Newness, int]] = {}
    winners: set[int] = set()
    for index, (_where, record) in enumerate(iter_records(entry, shape, report)):
        if not isinstance(record, dict) or record.get("name") != CONVERSATION:
            continue
        ident = _str(record.get("identifier"))
        if ident is None:
            winners.add(index)  # nothing to resync against: every such record stands alone
            continue
        key = _newness(record, index)
        current = best.get(ident)
        if current is None or key > current[0]:
            best[ident] = (key, index)
    winners.update(index for _key, index in best.values())
    return winners


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    shape = shape or Shape.ARRAY
    # pass 1 reports nothing: pass 2 meets the same damage and reports it once
    winners = _winners(entry, shape, ReadReport())

    def records() -> Iterator[tuple[str, Any]]:
        for index, (where, record) in enumerate(iter_records(entry, shape, report)):
            if not isinstance(record, dict):
                yield where, record  # reported by convert_records with its place
                continue
            name = record.get("name")
            if name != CONVERSATION:
                report.skip(f"rex:{name if isinstance(name, str) and name else '(no name)'}")
                continue
            if index not in winners:
                report.skip("rex:superseded-resync")
                continue
            yield where, record

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_rex(record, report, file=entry.name, where=where)

    yield from convert_records(entry, records(), report, convert)


def detail_level(record: dict[str, Any]) -> str:
    """The spider's detail level, as far as the record shows it."""
    has_title = "title*" in record or "title" in record
    turns = record.get("turns")
    if not isinstance(turns, list):
        return "titles" if has_title else "conversation_times"
    rich = any(
        isinstance(t, dict) and any(k in t for k in ("content*", "content", "metadata*", "metadata", "search", "citations"))
        for t in turns
    )
    if rich:
        return "full"
    return "titles_and_message_times" if has_title else "message_times"


def _conversation_meta(record: dict[str, Any], pdm: dict[str, Any], report: ReadReport) -> dict[str, Any]:
    """The conversation's meta: its detail level, the capture's metadata by our names, and every
    field this reader does not know (counted)."""
    meta: dict[str, Any] = {"detail_level": detail_level(record)}
    for key, name in (("source", "participant"), ("group", "group"), ("generator", "generator"),
                      ("generator-id", "generator_id"), ("configuration-hash", "configuration_hash"),
                      ("encrypted_transmission", "encrypted_transmission")):
        if pdm.get(key) is not None:
            meta[name] = pdm[key]
    captured = parse_time(pdm.get("timestamp"))
    if captured is not None:
        meta["captured_at"] = iso(captured)
    synced = parse_time(record.get("date"))
    if synced is not None:
        meta["record_date"] = iso(synced)
    unknown_pdm: dict[str, Any] = {}
    keep_unknown(pdm, KNOWN_PDM_FIELDS, unknown_pdm, report, "rex.passive_data_metadata")
    if unknown_pdm:
        meta["passive_data_metadata"] = unknown_pdm
    keep_unknown(record, _KNOWN_KEYS, meta, report, "rex.field")
    return meta


def _debug_payload(record: dict[str, Any], meta: dict[str, Any]) -> tuple[str | None, str | None]:
    """(model, current node) from ChatGPT's raw conversation payload, which the debug mode alone
    carries (kept in `meta["chatgpt_metadata"]` without its mapping)."""
    model: str | None = None
    current_node: str | None = None
    debug = field(record, "metadata")
    if isinstance(debug, dict):
        meta["chatgpt_metadata"] = {k: v for k, v in debug.items() if k != "mapping"}
        if isinstance(debug.get("default_model_slug"), str):
            model = debug["default_model_slug"]
        if isinstance(debug.get("current_node"), str):
            current_node = debug["current_node"]
    return model, current_node


def conversation_from_rex(record: Any, report: ReadReport, *, file: str = "", where: str = "") -> Conversation:
    record = expect_object(record, "a REX record object")
    turns = list_field(record, "turns", "turns")

    platform = normalize_platform(record.get("platform")) if record.get("platform") else "chatgpt"
    title = _str(field(record, "title"))
    started = parse_time(record.get("started")) or parse_time(record.get("date"))
    ended = parse_time(record.get("ended"))
    ident = _str(record.get("identifier"))
    if ident is None:
        first = next((t.get("identifier") for t in turns if isinstance(t, dict)), "")
        ident = derived_id("rex", platform, title or "", iso(started) or "", first)

    pdm = _pdm(record)
    meta = _conversation_meta(record, pdm, report)
    model, current_node = _debug_payload(record, meta)

    messages: list[Message] = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, dict):
            report.error(file, f"{where} turn {i}".strip(), f"turn is {type(turn).__name__}, not an object: left out", raw=repr(turn).encode()[:4096])
            continue
        messages.append(_message(turn, i, ident, report, file, where))

    if messages and not any(isinstance(t, dict) and _has_parent(t) for t in turns):
        # the message_times levels carry no parent pointers: the pre-order turn list is all there is
        meta["tree"] = "file order (the record has no parent pointers)"
        for prev, m in pairwise(messages):
            m.parent_id = prev.message_id
    _root_parents(messages)
    pair_tool_results(messages)
    ids = {m.message_id for m in messages}
    if current_node not in ids:
        current_node = None
    if model is None:
        with_model = [(m.created_at or _EPOCH, n, m.model) for n, m in enumerate(messages) if m.model]
        if with_model:
            model = max(with_model)[2]

    return Conversation(
        source=Source.REX,
        platform=platform,
        conversation_id=ident,
        title=title,
        created_at=started,
        updated_at=ended or started,
        model=model,
        url=f"https://chatgpt.com/c/{ident}" if platform == "chatgpt" and _str(record.get("identifier")) else None,
        timezone=_str(pdm.get("timezone")),
        current_node=current_node,
        messages=messages,
        meta=meta,
    )


def _message(turn: dict[str, Any], index: int, conv_id: str, report: ReadReport, file: str, where: str) -> Message:
    tid = _str(turn.get("identifier")) or f"{conv_id}:{index}"
    upstream = field(turn, "metadata")
    upstream = upstream if isinstance(upstream, dict) else {}
    parent = turn.get("parent") if "parent" in turn else upstream.get("parent")
    parent = _str(parent)
    if parent == ROOT:
        parent = None
    when = parse_time(turn.get("when"))
    content = field(turn, "content")
    text = content if isinstance(content, str) else ("" if content is None else str(content))
    speaker = turn.get("speaker")

    msg: Message | None = None
    raw_message = upstream.get("message")
    if isinstance(raw_message, dict):
        try:
            msg = message_from_chatgpt(raw_message, report, message_id=tid)
        except Exception as exc:  # noqa: BLE001  # a damaged upstream payload: the turn's own fields still stand
            report.error(file, f"{where} turn {index} ({tid})".strip(), f"unreadable metadata*.message: {type(exc).__name__}: {exc}")
            msg = None
    if msg is None:
        msg = _plain_message(tid, speaker, text, report)
    else:
        if text and not msg.text:
            msg.text = text
            if msg.extra.pop("empty", None) and msg.kind is MessageKind.HIDDEN:
                msg.kind = MessageKind.TURN
    msg.message_id = tid
    msg.parent_id = parent
    msg.created_at = when or msg.created_at  # both aware UTC (parse_time)

    msg.citations = _merge_citations(msg.citations, turn)
    search = turn.get("search")
    if isinstance(search, dict):
        info = {_base(k): v for k, v in search.items() if k != "results"}
        if info:
            msg.extra["search"] = info
    keep_unknown(turn, _KNOWN_TURN_KEYS, msg.extra, report, "rex.turn_field")
    return msg


def _has_parent(turn: dict[str, Any]) -> bool:
    if "parent" in turn:
        return True
    upstream = field(turn, "metadata")
    return isinstance(upstream, dict) and "parent" in upstream


def _plain_message(tid: str, speaker: Any, text: str, report: ReadReport) -> Message:
    """A turn from its own fields only (the message_times levels, or no upstream payload)."""
    extra: dict[str, Any] = {}
    role = known_role(_ROLES, speaker, report, drift="rex.speaker", extra=extra, keep_as="speaker", default=Role.ASSISTANT)
    if role is Role.SYSTEM:
        kind = MessageKind.HIDDEN
    elif role is Role.TOOL:
        kind = MessageKind.TOOL_RESULT
    else:
        kind = MessageKind.TURN
    tool_results = [ToolResult(output=text)] if kind is MessageKind.TOOL_RESULT else []
    return Message(message_id=tid, role=role, kind=kind, text=text, tool_results=tool_results, extra=extra)


def _merge_citations(existing: list[Citation], turn: dict[str, Any]) -> list[Citation]:
    """The message's own citations plus the turn's `search` results and `citations`, one per url."""
    out: list[Citation] = []
    by_key: dict[str, int] = {}

    def add(c: Citation) -> None:
        key = c.url or (f"title:{c.title}" if c.title else None)
        if key is None:
            return
        if key in by_key:
            old = out[by_key[key]]
            out[by_key[key]] = Citation(
                title=old.title or c.title, url=old.url or c.url, snippet=old.snippet or c.snippet, source=old.source or c.source
            )
            return
        by_key[key] = len(out)
        out.append(c)

    for c in existing:
        add(c)
    search = turn.get("search")
    if isinstance(search, dict):
        for r in search.get("results") or []:
            if isinstance(r, dict):
                add(Citation(title=_str(r.get("title")), url=_str(r.get("url")), snippet=_str(r.get("preview") or r.get("snippet")), source=_str(r.get("source"))))
    for c in turn.get("citations") or []:
        if isinstance(c, dict):
            add(Citation(title=_str(c.get("title")), url=_str(c.get("url")), snippet=_str(c.get("snippet")), source=_str(c.get("source"))))
    return out


def _root_parents(messages: list[Message]) -> None:
    """When no turn hangs off `client-created-root` and one single parent outside the record is shared by
    the top turns, that parent is the tree's synthetic root (an older export's root UUID, whose node has
    no message): those turns are roots. Anything else missing is damage, left for the resolver to report."""
    ids = {m.message_id for m in messages}
    if any(m.parent_id is None for m in messages):
        return  # the tree has its root already: a missing parent is damage
    missing = {m.parent_id for m in messages if m.parent_id is not None and m.parent_id not in ids}
    if len(missing) != 1:
        return
    root = missing.pop()
    for m in messages:
        if m.parent_id == root:
            m.extra["root_parent"] = root
            m.parent_id = None
