"""xAI Grok account exports: prod-grok-backend.json (in the export zip under ttl/30d/export_data/<user>/).

Layout (researched from public parsers and notes: Superkikim/nexus-ai-chat-importer
src/providers/grok/{grok-types,grok-converter}.ts, the HalluScribe Grok reader, the PAM importer
field mappings (xAI section), a `grok_parser.py` that walks `leaf_response_id` back through
`parent_response_id`, and a protobuf mirror of grok.com's Response message):

    {"conversations": [{"conversation": {"id", "title", "create_time", "modify_time", "leaf_response_id",
                                         "summary", "starred", "temporary", "system_prompt_name", ...},
                        "responses": [{"response": {"_id", "parent_response_id", "sender", "message", "model",
                                                    "create_time": {"$date": {"$numberLong": "<ms>"}}, ...},
                                       "share_link": null}, ...]}, ...],
     "projects": [...], "tasks": [...], "media_posts": [...]}

The file is one object: its `conversations` array is streamed one conversation at a time
(`member_records` of the JSON layer: the sections before it scanned past unheld), so memory
follows the largest conversation, never the file. The other top-level sections (projects, tasks,
Imagine posts) hold no chats and are not read.

Every response becomes a Message: `sender` in any case (human, Human, ASSISTANT, and model names
such as grok-3 for the assistant), times as ISO strings or Mongo `{"$date": ...}` (ISO, millis,
or `{"$numberLong": "<ms>"}`). `thinking_trace`, `agent_thinking_traces` and the `steps`'
summaries are its reasoning; the `<xai:tool_usage_card>`s in them its tool calls, the steps'
`tool_usage_results` their results; `web_search_results`, `cited_web_search_results`, citation
cards (`card_attachments_json`) and `xpost_ids` its citations; `file_attachments` (asset ids,
named by `file_attachments_metadata`), `image_attachments` and `generated_image_urls` its
attachments; `model` per response. Inline `<grok:render>` cards are taken out of the visible text
(kept in extra as `raw_text`). Branches follow `parent_response_id`; the active leaf is
`leaf_response_id` when the responses hold it, else the latest. `source`/`platform` are `grok`;
the url is https://grok.com/chat/<id>. Ids are spelled two ways in the wild, record by record:
`conversation.id` / `response._id` (2026) and `conversation.conversation_id` / `response_id`
(mid-2025). A grok.com web capture (`capture_converter`) is one item with the REST API's camelCase
keys, read as the export's. The card scans are forward scans (`elements`): linear in the text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

import orjson

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
from chatetl.readers.convert import convert_records, json_text, raw_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.fields import expect_object, keep_unknown, known_role, text_or_none
from chatetl.readers.jsonscan.records import Places, Shape, iter_records, member_records
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import parse_time

PLATFORM = "grok"
URL = "https://grok.com/chat/{}"

KNOWN_RECORD_FIELDS = frozenset({"conversation", "responses"})
KNOWN_WRAPPER_FIELDS = frozenset({"response", "share_link"})
_MAPPED_CONVERSATION_FIELDS = frozenset({"id", "conversation_id", "_id", "title", "create_time", "modify_time", "leaf_response_id"})
# conversation fields kept in Conversation.meta as they are, when set
_META_FIELDS = (
    "summary", "starred", "temporary", "system_prompt_name", "system_prompt_id", "media_types", "asset_ids",
    "root_asset_id", "user_id", "anon_user_id", "x_user_id", "controller", "task_result_id", "team_id",
    "shared_with_team", "shared_with_user_ids", "project_id", "workspace_id",
)
KNOWN_CONVERSATION_FIELDS = _MAPPED_CONVERSATION_FIELDS | frozenset(_META_FIELDS)
_MAPPED_RESPONSE_FIELDS = frozenset(
    {
        "_id", "response_id", "id", "parent_response_id", "sender", "message", "model", "create_time", "thinking_trace",
        "agent_thinking_traces", "steps", "web_search_results", "cited_web_search_results", "card_attachments_json",
        "xpost_ids", "file_attachments", "file_attachments_metadata", "image_attachments", "generated_image_urls",
        "file_uris", "tool_responses",
        # the conversation's and the account's ids, repeated on every response: known, left out
        "conversation_id", "xai_user_id",
    }
)
# response fields kept in Message.extra as they are, when set
_EXTRA_FIELDS = (
    "manual", "partial", "shared", "query", "query_type", "error", "is_control",
    "metadata", "media_types", "webpage_urls", "xposts", "image_edit_uri", "image_edit_uris", "generated_image_height",
    "generated_image_width", "ui_layout", "thinking_start_time", "thinking_end_time", "selected_file_text_content",
    "selected_file_text_content_start_position", "selected_file_text_content_end_position", "thread_parent_id",
    "parent_quoted_text", "side_by_side_config", "fast_tool_response", "request_metadata", "rag_results",
    "cited_rag_results", "search_product_results", "connector_search_results", "collection_search_results",
    "stream_errors",
)
KNOWN_RESPONSE_FIELDS = _MAPPED_RESPONSE_FIELDS | frozenset(_EXTRA_FIELDS)
_EXTRA_SET = frozenset(_EXTRA_FIELDS)
_RICH_FIELDS = frozenset(
    {"thinking_trace", "agent_thinking_traces", "steps", "tool_responses", "cited_web_search_results", "web_search_results",
     "card_attachments_json", "xpost_ids"}
)
_ATTACHMENT_FIELDS = frozenset({"file_attachments", "file_attachments_metadata", "image_attachments", "generated_image_urls", "file_uris"})
KNOWN_STEP_FIELDS = frozenset(
    {"tag_order", "tagged_text", "web_search_results", "tool_usage_results", "tool_usage_card_results", "rag_results", "step_id"}
)
SENDERS = {"human": Role.USER, "user": Role.USER, "assistant": Role.ASSISTANT, "grok": Role.ASSISTANT, "system": Role.SYSTEM}

_RENDER_OPEN, _RENDER_CLOSE = "<grok:render", "</grok:render>"
_TOOL_OPEN, _TOOL_CLOSE = "<xai:tool_usage_card>", "</xai:tool_usage_card>"
_CDATA_OPEN, _CDATA_CLOSE = "<![CDATA[", "]]>"


def read(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[Conversation]:
    yield from convert_records(entry, iter_conversation_records(entry, shape, report), report, record_converter(entry.name, report))


def record_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one item of `conversations` in file `name` becomes a Conversation."""
    return lambda record, where: conversation_from_grok(expect_object(record, "a {conversation, responses} object"), report, file=name, where=where)


def capture_converter(name: str, report: ReadReport) -> Callable[[Any, str], Conversation | None]:
    """How one grok.com web capture (`{conversation, responses}` with the REST API's camelCase keys) in
    file `name` becomes a Conversation: its keys read as the export's, then as an export's item."""
    return lambda record, where: conversation_from_grok(
        snake_record(expect_object(record, "a {conversation, responses} object")), report, file=name, where=where
    )


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def snake_record(record: dict[str, Any]) -> dict[str, Any]:
    """A web capture's conversation and responses with their camelCase keys (`conversationId`,
    `responseId`, `parentResponseId`, `createTime`, `thinkingTrace`, `webSearchResults` ...) spelled
    as the export spells them; `responses` a list or the `{"responses": [...]}` body it was loaded as."""
    out = dict(record)
    conversation = record.get("conversation")
    if isinstance(conversation, dict):
        out["conversation"] = _snake_keys(conversation)
    responses = record.get("responses")
    if isinstance(responses, dict) and isinstance(responses.get("responses"), list):
        responses = responses["responses"]
    if isinstance(responses, list):
        out["responses"] = [_snake_keys(r) if isinstance(r, dict) else r for r in responses]
    return out


def _snake_keys(fields: dict[str, Any]) -> dict[str, Any]:
    return {_CAMEL.sub(r"_\1", key).lower() if not key.islower() else key: value
            for key, value in fields.items()}


# ---- streaming `conversations` out of the one object ----


def iter_conversation_records(entry: Entry, shape: Shape | None, report: ReadReport) -> Iterator[tuple[str, Any]]:
    """Yield (where, item) for each item of the top-level object's `conversations`, one at a time."""
    if shape is Shape.JSONL:  # an export object per line (not how xAI ships it, but cheap to take)
        for where, record in iter_records(entry, Shape.JSONL, report):
            items = record.get("conversations") if isinstance(record, dict) else None
            for index, item in enumerate(items if isinstance(items, list) else ()):
                yield f"{where} conversations[{index}]", item
        return
    yield from member_records(entry, "conversations", report, CONVERSATIONS)


CONVERSATIONS = Places("conversations[{}]", "before the first conversation")


# ---- one conversation ----


def conversation_from_grok(record: dict[str, Any], report: ReadReport, file: str = "", where: str = "") -> Conversation:
    """One `{conversation, responses}` item as a Conversation (parent pointers set, branches not yet resolved)."""
    conv = record.get("conversation")
    if not isinstance(conv, dict):
        raise TypeError(f"`conversation` is not an object (got {type(conv).__name__})")
    responses = _responses(record)
    conv_id = _conversation_id(conv)
    if conv_id is None:
        raise ValueError("conversation has no id")
    if not isinstance(responses, list):
        raise TypeError(f"conversation {conv_id}: `responses` is {type(responses).__name__}, not a list")
    meta = _conversation_meta(conv, record, report)

    place = f"{where} (conversation {conv_id})" if where else f"conversation {conv_id}"
    messages: list[Message] = []
    pointed = False
    for index, wrapper in enumerate(responses):
        raw = wrapper.get("response") if isinstance(wrapper, dict) else None
        if raw is None and isinstance(wrapper, dict) and "sender" in wrapper:
            raw, wrapper = wrapper, {}  # a response not wrapped in {"response": ...}
        if not isinstance(raw, dict):
            got = type(raw).__name__ if isinstance(wrapper, dict) else type(wrapper).__name__
            report.error(file, f"{place} response {index}", f"response is not an object (got {got})", raw=raw_bytes(wrapper))
            continue
        msg = message_from_grok(raw, report, fallback_id=f"{conv_id}:{index}")
        if isinstance(wrapper, dict):
            if wrapper.get("share_link") is not None:
                msg.extra["share_link"] = wrapper["share_link"]
            keep_unknown(wrapper, KNOWN_WRAPPER_FIELDS, msg.extra, report, "grok.response_wrapper_field")
        pointed = pointed or "parent_response_id" in raw
        messages.append(msg)
    if not pointed:  # no tree in the file: the responses in time order are the conversation
        ordered = sorted(messages, key=lambda m: m.created_at or _EPOCH)  # (stable: file order breaks ties)
        for prev, msg in pairwise(ordered):
            msg.parent_id = prev.message_id

    leaf = _id_text(conv.get("leaf_response_id"))
    if leaf is not None and not any(m.message_id == leaf for m in messages):
        meta["leaf_response_id"] = leaf  # names a response the export does not hold: the latest leaf is used
        leaf = None
    return Conversation.fast(
        source=Source.GROK,
        platform=PLATFORM,
        conversation_id=conv_id,
        title=text_or_none(conv.get("title")),
        created_at=mongo_time(conv.get("create_time")),
        updated_at=mongo_time(conv.get("modify_time")),
        url=URL.format(conv_id),
        current_node=leaf,
        messages=messages,
        meta=meta,
    )


def _responses(record: dict[str, Any]) -> Any:
    """The item's `responses` (a list when the file is sound): unwrapped from a capture's whole
    load-responses body; none is an empty list."""
    responses = record.get("responses")
    if isinstance(responses, dict) and "responses" in responses:  # a capture's load-responses body kept whole
        responses = responses["responses"]
    return [] if responses is None else responses


def _conversation_meta(conv: dict[str, Any], record: dict[str, Any], report: ReadReport) -> dict[str, Any]:
    """The conversation's fields kept as meta: the set ones of `_META_FIELDS`, then every field
    this reader does not know (counted)."""
    meta: dict[str, Any] = {}
    for key in _META_FIELDS:
        if _is_set(conv.get(key)):
            meta[key] = conv[key]
    keep_unknown(conv, KNOWN_CONVERSATION_FIELDS, meta, report, "grok.conversation_field")
    keep_unknown(record, KNOWN_RECORD_FIELDS, meta, report, "grok.record_field")
    return meta


def message_from_grok(raw: dict[str, Any], report: ReadReport, fallback_id: str) -> Message:
    """One `response` as a canonical Message."""
    get = raw.get
    mid = _id_text(get("_id")) or _id_text(get("response_id")) or _id_text(get("id")) or fallback_id
    extra: dict[str, Any] = {}
    rich = attached = False
    for key, value in raw.items():  # one pass: most responses carry a handful of fields
        if key in _EXTRA_SET:
            if _is_set(value):
                extra[key] = value
        elif key in _RICH_FIELDS:
            rich = rich or bool(value)
        elif key in _ATTACHMENT_FIELDS:
            attached = attached or bool(value)
    keep_unknown(raw, KNOWN_RESPONSE_FIELDS, extra, report, "grok.response_field")
    role = _role(get("sender"), report, extra)

    message = get("message")
    text = message if isinstance(message, str) else ""
    visible = _without_elements(text, _RENDER_OPEN, _RENDER_CLOSE, attributes=True) if _RENDER_OPEN in text else text
    if visible != text:
        extra["raw_text"] = text

    reasoning: list[str] = []
    calls: dict[str, ToolCall] = {}
    results: list[ToolResult] = []
    citations = _Citations()
    if rich:
        _read_behaviour(raw, report, extra, reasoning, calls, results, citations)
    attachments = _attachments(raw) if attached else []

    joined_reasoning = "\n\n".join(reasoning) or None
    tool_calls = list(calls.values())
    if role is Role.SYSTEM or raw.get("is_control") is True:
        kind, shown = MessageKind.HIDDEN, visible
    elif visible.strip() or attachments:  # (the empty-message rule of every reader: text a person could see, or a file)
        kind, shown = MessageKind.TURN, visible
    elif tool_calls:
        kind, shown = MessageKind.TOOL_CALL, "\n".join(c.input for c in tool_calls)
    elif joined_reasoning:
        kind, shown = MessageKind.REASONING, joined_reasoning
    else:
        kind, shown = MessageKind.HIDDEN, ""  # nothing in it (a failed or stopped answer: see extra["error"])
        extra["empty"] = True

    return Message.fast(
        message_id=mid,
        parent_id=_id_text(raw.get("parent_response_id")),
        role=role,
        kind=kind,
        text=shown,
        created_at=mongo_time(raw.get("create_time")),
        model=_model(raw),
        reasoning=joined_reasoning,
        tool_calls=tool_calls,
        tool_results=results,
        citations=citations.items,
        attachments=attachments,
        extra=extra,
    )


def _read_behaviour(
    raw: dict[str, Any], report: ReadReport, extra: dict[str, Any], reasoning: list[str], calls: dict[str, ToolCall],
    results: list[ToolResult], citations: _Citations,
) -> None:
    """What a response did besides its text: thinking, tool steps and their results, web results, cards, X posts."""
    for trace in _traces(raw):
        cleaned = _take_tool_cards(trace, calls).strip()
        if cleaned:
            reasoning.append(cleaned)
    for index, step in enumerate(_list(raw.get("steps"))):
        if isinstance(step, dict):
            _read_step(index, step, report, extra, reasoning, calls, results, citations)
    for item in _list(raw.get("tool_responses")):
        results.append(ToolResult.fast(output=json_text(item)))
    citations.add_results(raw.get("cited_web_search_results"))
    citations.add_results(raw.get("web_search_results"))
    cards = citations.add_cards(raw.get("card_attachments_json"))
    if cards:
        extra["cards"] = cards
    for post in _list(raw.get("xpost_ids")):
        if isinstance(post, (str, int)) and not isinstance(post, bool) and str(post):
            citations.add(Citation.fast(url=f"https://x.com/i/status/{post}", source="x.com"))


def _read_step(
    index: int, step: dict[str, Any], report: ReadReport, extra: dict[str, Any], reasoning: list[str], calls: dict[str, ToolCall],
    results: list[ToolResult], citations: _Citations,
) -> None:
    """One of a response's `steps`: its summary as reasoning, its tool cards, results and web results."""
    unknown: dict[str, Any] = {}
    keep_unknown(step, KNOWN_STEP_FIELDS, unknown, report, "grok.step_field")
    if unknown:
        extra.setdefault("step_fields", []).append({"step": index, **unknown})
    tagged = step.get("tagged_text")
    if isinstance(tagged, dict):
        summary = "\n".join(t for t in (text_or_none(tagged.get("header")), text_or_none(tagged.get("summary"))) if t)
        if summary:
            reasoning.append(summary)
        cards = tagged.get("tool_usage_card")
        for card in cards if isinstance(cards, list) else [cards]:
            if isinstance(card, str):
                _take_tool_cards(card, calls)
    for key in ("tool_usage_results", "tool_usage_card_results"):
        for item in _list(step.get(key)):
            results.append(_tool_result(item, calls, citations))
    if step.get("web_search_results"):
        citations.add_results(step["web_search_results"])
        results.append(ToolResult.fast(name="web_search", output=_results_text(step["web_search_results"])))


# ---- fields ----

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def mongo_time(value: Any) -> datetime | None:
    """A time as Grok writes it: ISO text, or Mongo extended JSON `{"$date": ISO | ms | {"$numberLong": "ms"}}`."""
    if not isinstance(value, dict):
        return parse_time(value)
    date = value.get("$date")
    if isinstance(date, dict):
        date = date.get("$numberLong")
        if isinstance(date, str):
            try:
                date = int(date.strip())
            except ValueError:
                return None
    if isinstance(date, (int, float)) and not isinstance(date, bool):
        try:
            return datetime.fromtimestamp(date / 1000.0, tz=UTC)  # extended JSON dates are milliseconds
        except (OverflowError, OSError, ValueError):
            return None
    return parse_time(date) if isinstance(date, str) else None


def _conversation_id(conv: dict[str, Any]) -> str | None:
    """The conversation's id as the export spells it: `id` (2026), `conversation_id` (mid-2025), `_id`.
    (Its responses repeat it, but a conversation that names none is refused, never given theirs.)"""
    for key in ("id", "conversation_id", "_id"):
        found = _id_text(conv.get(key))
        if found is not None:
            return found
    return None


def _id_text(value: Any) -> str | None:
    """An id as text: a string, or a Mongo `{"$oid": ...}`."""
    if isinstance(value, dict):
        value = value.get("$oid")
    return value if isinstance(value, str) and value else None


def _is_set(value: Any) -> bool:
    return value is not None and value is not False and value != "" and value != [] and value != {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _role(sender: Any, report: ReadReport, extra: dict[str, Any]) -> Role:
    """`sender` in any case; a model name (grok-3, grok-4 ...) is the assistant, as Grok writes it."""
    name = sender.strip().lower() if isinstance(sender, str) else None
    role = SENDERS.get(name) if name is not None else None
    if role is not None:
        return role
    if name is not None and name.startswith("grok"):
        extra["raw_sender"] = sender
        return Role.ASSISTANT
    return known_role(SENDERS, sender, report, drift="grok.sender", extra=extra, keep_as="raw_sender", default=Role.ASSISTANT)


def _model(raw: dict[str, Any]) -> str | None:
    model = text_or_none(raw.get("model"))
    if model is None and isinstance(raw.get("request_metadata"), dict):
        model = text_or_none(raw["request_metadata"].get("model"))
    if model is None and isinstance(raw.get("metadata"), dict) and isinstance(raw["metadata"].get("requestModelDetails"), dict):
        model = text_or_none(raw["metadata"]["requestModelDetails"].get("modelId"))
    return model


def _traces(raw: dict[str, Any]) -> Iterator[str]:
    if isinstance(raw.get("thinking_trace"), str):
        yield raw["thinking_trace"]
    for trace in _list(raw.get("agent_thinking_traces")):
        if isinstance(trace, str):
            yield trace
        elif isinstance(trace, dict) and isinstance(trace.get("thinking_trace"), str):
            yield trace["thinking_trace"]


def elements(text: str, opener: str, closer: str, attributes: bool = False) -> Iterator[tuple[int, int, int, int]]:
    """(start, content start, content end, end) of each `opener ... closer` element of `text`, in
    order, in one forward scan: each is closed by the first `closer` after it, and the first opener
    with no closer after it ends the scan (no later one has one either), so the work is linear in the
    text whatever it holds (a value of unclosed openers included). `attributes`: the opener is a tag's
    name, its attributes up to the first `>` after it (the next character is no name character)."""
    pos = 0
    while (start := text.find(opener, pos)) >= 0:
        body = start + len(opener)
        if attributes:
            if body < len(text) and (text[body].isalnum() or text[body] in "_-:."):
                pos = body  # a longer tag name (<grok:renderer>): not this element
                continue
            gt = text.find(">", body)
            if gt < 0:
                return
            body = gt + 1
        close = text.find(closer, body)
        if close < 0:
            return
        yield start, body, close, close + len(closer)
        pos = close + len(closer)


def _without_elements(text: str, opener: str, closer: str, attributes: bool = False,
                      take: Callable[[str], object] | None = None) -> str:
    """`text` without its `opener ... closer` elements (`elements`), each element's content given to `take`."""
    pieces: list[str] = []
    last = 0
    for start, body, close, end in elements(text, opener, closer, attributes):
        pieces.append(text[last:start])
        if take is not None:
            take(text[body:close])
        last = end
    if not last:
        return text
    pieces.append(text[last:])
    return "".join(pieces)


def _card_field(card: str, name: str) -> str | None:
    """The first `<xai:{name}>` element of a card: its text, or its CDATA section's."""
    found = next(elements(card, f"<xai:{name}>", f"</xai:{name}>"), None)
    if found is None:
        return None
    value = card[found[1]:found[2]].strip()
    if value.startswith(_CDATA_OPEN) and value.endswith(_CDATA_CLOSE):
        value = value[len(_CDATA_OPEN):-len(_CDATA_CLOSE)]
    return value.strip() or None


def _take_tool_cards(text: str, calls: dict[str, ToolCall]) -> str:
    """The `<xai:tool_usage_card>`s in `text` as tool calls (by card id, once each); the text without them."""
    if _TOOL_OPEN not in text:
        return text

    def take(card: str) -> None:
        card_id = _card_field(card, "tool_usage_card_id") or f"card-{len(calls)}"
        if card_id not in calls:
            calls[card_id] = ToolCall.fast(id=card_id, name=_card_field(card, "tool_name"), input=_card_field(card, "tool_args") or "")

    return _without_elements(text, _TOOL_OPEN, _TOOL_CLOSE, take=take)


def _tool_result(item: Any, calls: dict[str, ToolCall], citations: _Citations) -> ToolResult:
    """One of a step's tool results: {tool_usage_card_id, web_results | ...}."""
    if not isinstance(item, dict):
        return ToolResult.fast(output=json_text(item))
    call_id = text_or_none(item.get("tool_usage_card_id"))
    call = calls.get(call_id) if call_id else None
    pages = item.get("web_results") or item.get("web_search_results") or item.get("x_search_results")
    if isinstance(pages, list) and pages:
        citations.add_results(pages)
        output = _results_text(pages)
    else:
        output = json_text({k: v for k, v in item.items() if k != "tool_usage_card_id"})
    return ToolResult.fast(tool_call_id=call_id, name=call.name if call else None, output=output)


def _results_text(results: Any) -> str:
    parts = []
    for r in _list(results):
        if isinstance(r, dict):
            parts.append("\n".join(p for p in (text_or_none(r.get("title")), _url(r), _snippet(r)) if p))
        elif isinstance(r, str):
            parts.append(r)
    return "\n\n".join(p for p in parts if p)


def _url(result: dict[str, Any]) -> str | None:
    return text_or_none(result.get("url")) or text_or_none(result.get("URL")) or text_or_none(result.get("link"))


def _snippet(result: dict[str, Any]) -> str | None:
    return text_or_none(result.get("preview")) or text_or_none(result.get("description")) or text_or_none(result.get("snippet"))


_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#:\[\]]+)")


def _domain(url: str | None) -> str | None:
    m = _HOST.match(url) if url else None
    return m.group(1).lower() if m else None


class _Citations:
    """A response's citations, each URL once (the first place it is found keeps it)."""

    def __init__(self) -> None:
        self.items: list[Citation] = []
        self._urls: set[str] = set()

    def add(self, citation: Citation) -> None:
        if citation.url is not None:
            if citation.url in self._urls:
                return
            self._urls.add(citation.url)
        self.items.append(citation)

    def add_results(self, results: Any) -> None:
        """web_search_results items: {url, title, preview | description, site_name | siteName, ...}."""
        for r in _list(results):
            if not isinstance(r, dict):
                continue
            url, title, snippet = _url(r), text_or_none(r.get("title")), _snippet(r)
            if url or title or snippet:
                site = text_or_none(r.get("site_name")) or text_or_none(r.get("siteName"))
                self.add(Citation.fast(title=title, url=url, snippet=snippet, source=site or _domain(url)))

    def add_cards(self, cards: Any) -> list[Any]:
        """card_attachments_json: JSON strings, one card each; citation cards are citations, the rest kept."""
        kept: list[Any] = []
        for raw in _list(cards):
            try:
                card = orjson.loads(raw) if isinstance(raw, (str, bytes)) else raw
            except orjson.JSONDecodeError:
                kept.append(raw)
                continue
            if isinstance(card, dict) and card.get("cardType") == "citation_card" and text_or_none(card.get("url")):
                url = card["url"]
                self.add(Citation.fast(title=text_or_none(card.get("title")), url=url, source=_domain(url)))
            else:
                kept.append(card)
        return kept


def _attachments(raw: dict[str, Any]) -> list[Attachment]:
    """Uploads (asset ids, named by file_attachments_metadata), images and generated images."""
    out: list[Attachment] = []
    named: dict[str, dict[str, Any]] = {}
    for meta in _list(raw.get("file_attachments_metadata")):
        if isinstance(meta, dict) and text_or_none(meta.get("file_metadata_id")):
            named[meta["file_metadata_id"]] = meta
    seen: set[str] = set()
    for asset in [*_list(raw.get("file_attachments")), *named]:
        asset_id = _id_text(asset) if not isinstance(asset, str) else asset
        if not asset_id or asset_id in seen:
            continue
        seen.add(asset_id)
        meta = named.get(asset_id, {})
        mime = text_or_none(meta.get("file_mime_type"))
        pointer = text_or_none(meta.get("file_uri"))
        if pointer is not None:
            seen.add(pointer)
        out.append(
            Attachment.fast(
                kind="image" if mime is not None and mime.startswith("image/") else "file",
                id=asset_id,
                name=text_or_none(meta.get("file_name")),
                mime_type=mime,
                pointer=pointer or f"prod-mc-asset-server/{asset_id}/content",
            )
        )
    for key, kind in (("image_attachments", "image"), ("generated_image_urls", "image"), ("file_uris", "file")):
        for item in _list(raw.get(key)):
            if isinstance(item, str) and item and item not in seen:
                seen.add(item)
                out.append(Attachment.fast(kind=kind, pointer=item))
    return out
