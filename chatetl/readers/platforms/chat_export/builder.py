"""The one builder every chat-export rendering goes through (JSON, sharegpt/1, Markdown, YAML).

So the same chat exported as .json, .md and .yaml gets the same conversation id, roles
and message ids.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Any
from urllib.parse import urlsplit

from chatetl.model import Citation, Conversation, Message, MessageKind, Role, Source
from chatetl.readers.data_url import markdown_images
from chatetl.readers.fields import expect_object, keep_unknown, list_field
from chatetl.readers.platform_names import derived_id, id_from_url, normalize_platform
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import iso, parse_time


def _usable_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        return None
    text = value.strip()
    # an id of nothing but dots ("...", "…") is a placeholder for one left out, not an id
    if not text or not text.strip(".…"):
        return None
    return text


def _text(value: Any) -> str | None:
    """A scalar as text (None stays None); structured values are not text."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return iso(_aware(value))
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return _aware(value)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=UTC)
    return parse_time(value)


# role -> (Role, kind); anything else is a provider slug (an assistant) the reader counts as drift
_USER_ROLES = frozenset({"user", "human", "you", "me", "prompter"})
_ASSISTANT_ROLES = frozenset(
    {
        "assistant", "ai", "bot", "model", "gpt", "chatgpt", "openai", "grok", "claude", "gemini", "bard",
        "perplexity", "deepseek", "copilot", "mistral", "lechat", "le-chat", "meta", "meta-ai", "llama",
        "qwen", "kimi", "poe", "pi", "character", "assistant-final",
    }
)
_SYSTEM_ROLES = frozenset({"system", "sys", "developer"})
_TOOL_ROLES = frozenset({"tool", "function", "observation", "ipython"})


# role tags chatetl's exporters give internals (reasoning, tool calls/results, summaries)
_INTERNAL_TAGS = {
    "reasoning": (Role.ASSISTANT, MessageKind.REASONING),
    "thinking": (Role.ASSISTANT, MessageKind.REASONING),
    "tool_call": (Role.ASSISTANT, MessageKind.TOOL_CALL),
    "tool_result": (Role.TOOL, MessageKind.TOOL_RESULT),
    "summary": (Role.SYSTEM, MessageKind.SUMMARY),
}


def _role(value: Any, report: ReadReport) -> tuple[Role, MessageKind]:
    name = value.strip().lower() if isinstance(value, str) else ""
    if name in _USER_ROLES:
        return Role.USER, MessageKind.TURN
    if name in _ASSISTANT_ROLES:
        return Role.ASSISTANT, MessageKind.TURN
    if name in _SYSTEM_ROLES:
        return Role.SYSTEM, MessageKind.HIDDEN
    if name in _TOOL_ROLES:
        return Role.TOOL, MessageKind.TOOL_RESULT
    # a role is user, assistant or a provider's own slug: a slug not named above is an
    # assistant turn all the same, counted as drift so a new provider shows up
    report.unknown(f"chat_export.role:{name or '(none)'}")
    return Role.ASSISTANT, MessageKind.TURN


def _host(url: str | None) -> str | None:
    if not url:
        return None
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if host and host.startswith("www."):
        host = host[4:]
    return host or None


def _citations(sources: Any) -> list[Citation]:
    out: list[Citation] = []
    seen: set[tuple[str | None, str | None]] = set()
    for s in sources if isinstance(sources, list) else []:
        if isinstance(s, str):
            s = {"url": s}
        if not isinstance(s, dict):
            continue
        url = _text(s.get("url") or s.get("href"))
        title = _text(s.get("title") or s.get("text"))
        if not url and not title:
            continue
        if (url, title) in seen:
            continue
        seen.add((url, title))
        out.append(Citation(title=title, url=url, snippet=_text(s.get("snippet")), source=_text(s.get("source")) or _host(url)))
    return out


KNOWN_META = frozenset(
    {
        "schema", "platform", "url", "title", "exported", "exported_at", "chat_id", "model",
        "user_name", "user_handle", "user_email", "created_at", "updated_at", "messages", "conversations",
    }
)
KNOWN_MESSAGE_FIELDS = frozenset({"role", "role_tag", "text", "links", "sources", "name"})
MD_EXTRAS = "\x00md"  # what only the Markdown parser found (text outside messages, odd sys lines ...)
KNOWN_SHAREGPT_FIELDS = frozenset({"from", "value"})


def _export_meta(record: dict[str, Any], rendering: str, exported: datetime | None, report: ReadReport) -> dict[str, Any]:
    """The record's meta: how it was rendered, its schema, export time and user, what only the
    Markdown parser found, and every field this reader does not know (counted, kept plain)."""
    exported_raw = record.get("exported_at", record.get("exported"))
    meta: dict[str, Any] = {"export_format": rendering}
    if record.get("schema") is not None:
        meta["schema"] = _text(record.get("schema"))
    if exported_raw is not None:
        meta["exported_at"] = iso(exported) if exported else _text(exported_raw)
    for k in ("user_name", "user_handle", "user_email"):
        if record.get(k) is not None:
            meta[k] = _text(record.get(k))
    if rendering == "md" and isinstance(record.get(MD_EXTRAS), dict):
        meta.update(record[MD_EXTRAS])
    keep_unknown(record, KNOWN_META | {MD_EXTRAS}, meta, report, "chat_export.field", keep=_plain)
    return meta


def conversation_from_export(
    record: Any, report: ReadReport, *, rendering: str, file: str = "", where: str = "", strip_block_newline: bool = False
) -> Conversation:
    """One chat-export/1 (or sharegpt/1, or parsed .md/.yaml) record as a Conversation.

    `rendering` is json, sharegpt/1, md or yaml (kept in meta["export_format"]).
    """
    record = expect_object(record, "a chat object")
    sharegpt = rendering == "sharegpt/1"
    raw_messages = list_field(record, "conversations" if sharegpt else "messages", "messages")

    url = _text(record.get("url"))
    platform = normalize_platform(record.get("platform"), url)
    title = _text(record.get("title"))
    exported = _time(record.get("exported_at", record.get("exported")))
    meta = _export_meta(record, rendering, exported, report)

    # messages first: the derived id needs the first message's text
    built: list[tuple[int, dict[str, Any]]] = []
    for i, raw in enumerate(raw_messages):
        if isinstance(raw, str) and not sharegpt:
            raw = {"text": raw}
        if not isinstance(raw, dict):
            place = f"{where} message {i}".strip()
            report.error(file, place, f"message is {type(raw).__name__}, not an object: left out", raw=repr(raw).encode()[:4096])
            continue
        if sharegpt:
            tag = _text(raw.get("from"))
            text = raw.get("value")
            known = KNOWN_SHAREGPT_FIELDS
        else:
            tag = _text(raw.get("role_tag"))
            text = raw.get("text")
            known = KNOWN_MESSAGE_FIELDS
        role_name = _text(raw.get("from") if sharegpt else raw.get("role")) or tag
        if tag and tag.strip().lower() in _INTERNAL_TAGS:
            # chatetl's own exports with internals opted in tag them: read them back as what they are
            role, kind = _INTERNAL_TAGS[tag.strip().lower()]
        else:
            role, kind = _role(role_name, report)
        text = _text(text) or ""
        if strip_block_newline and text.endswith("\n"):
            text = text[:-1]
        text, pictured = markdown_images(text)
        extra: dict[str, Any] = {}
        if not sharegpt and raw.get("links"):
            extra["links"] = _plain(raw.get("links"))
        keep_unknown(raw, known, extra, report, "chat_export.message_field", keep=_plain)
        built.append(
            (i, {
                "role": role,
                "kind": kind,
                "text": text,
                "author_name": (None if sharegpt else _text(raw.get("name"))) or tag or (role_name if role_name else None),
                "citations": [] if sharegpt else _citations(raw.get("sources")),
                "attachments": pictured,
                "extra": extra,
            })
        )

    conv_id = _usable_id(record.get("chat_id")) or id_from_url(url)
    if conv_id is None:
        first = next((b["text"] for _, b in built if b["kind"] is MessageKind.TURN), "")
        conv_id = derived_id(platform, title or "", first)

    messages: list[Message] = []
    parent: str | None = None
    for i, b in built:
        mid = f"{conv_id}:{i}"
        messages.append(Message(message_id=mid, parent_id=parent, **b))
        parent = mid

    created = _time(record.get("created_at"))
    updated = _time(record.get("updated_at"))
    if (created is None or updated is None) and exported is not None:
        meta["times_from"] = "exported_at"  # no better time in the file: the export time stands in
        created = created or exported
        updated = updated or exported

    return Conversation(
        source=Source.CHAT_EXPORT,
        platform=platform,
        conversation_id=conv_id,
        title=title,
        created_at=created,
        updated_at=updated,
        model=_text(record.get("model")),
        url=url,
        messages=messages,
        meta=meta,
    )


def _plain(value: Any) -> Any:
    """YAML may hand back dates and datetimes: keep meta/extra JSON-friendly (iteratively, no recursion)."""
    if isinstance(value, (datetime, date)):
        return _text(value)
    if not isinstance(value, (dict, list)):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while stack:
        target, key, v = stack.pop()
        if isinstance(v, dict):
            new: Any = {}
            target[key] = new
            for k, item in v.items():
                stack.append((new, str(k) if not isinstance(k, str) else k, item))
        elif isinstance(v, list):
            new = [None] * len(v)
            target[key] = new
            for j, item in enumerate(v):
                stack.append((new, j, item))
        elif isinstance(v, (datetime, date)):
            target[key] = _text(v)
        else:
            target[key] = v
    return root[0]


