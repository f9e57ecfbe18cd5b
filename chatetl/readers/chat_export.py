"""Chat Export browser extension files (seed 002): one chat per file.

Four renderings of the same message stream, each read into one Conversation:

- `read_json`: `{"schema": "chat-export/1", platform, url, title, exported_at, chat_id, model, messages: [...]}`
- `read_sharegpt1`: `{"schema": "sharegpt/1", platform, title, conversations: [{from, value}]}`
- `read_markdown`: fenced ```md blocks (`sys` meta, `user:`/`assistant:`/... role markers, `sources`)
  with the message bodies between them; parsed line by line with a state machine that
  knows the bodies' own code fences.
- `read_yaml`: the same meta keys plus a `messages:` list, read with `yaml.safe_load`.

All four share one builder, so the same chat exported as .json, .md and .yaml gets the
same conversation id, roles and message ids.
"""

from __future__ import annotations

import io
import re
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime, time, timezone
from typing import Any, Iterator
from urllib.parse import parse_qs, urlsplit

import yaml

from chatetl.model import Citation, Conversation, Message, MessageKind, Role, Source
from chatetl.readers.detect import Layout
from chatetl.readers.entry import Entry
from chatetl.readers.jsonstream import convert_records, iter_records
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import iso, parse_time

# ---------------------------------------------------------------------------------------------
# Shared helpers (also used by the ShareGPT dataset reader)

_PLATFORM_ALIASES = {
    "claude": "claude-ai",
    "claude.ai": "claude-ai",
    "claude_ai": "claude-ai",
    "claudeai": "claude-ai",
    "anthropic": "claude-ai",
    "openai": "chatgpt",
    "chat.openai.com": "chatgpt",
    "chatgpt.com": "chatgpt",
    "chat-gpt": "chatgpt",
    "bard": "gemini",
    "google-gemini": "gemini",
    "gemini.google.com": "gemini",
    "grok.com": "grok",
    "x.ai": "grok",
    "xai": "grok",
    "perplexity.ai": "perplexity",
    "www.perplexity.ai": "perplexity",
    "deepseek.com": "deepseek",
    "chat.deepseek.com": "deepseek",
    "copilot.microsoft.com": "copilot",
    "microsoft-copilot": "copilot",
    "chat.mistral.ai": "mistral",
    "le-chat": "mistral",
    "lechat": "mistral",
}

# host (or host suffix) -> platform, for files that carry a URL but no platform
_HOST_PLATFORMS = (
    ("chatgpt.com", "chatgpt"),
    ("chat.openai.com", "chatgpt"),
    ("claude.ai", "claude-ai"),
    ("grok.com", "grok"),
    ("x.com", "grok"),
    ("gemini.google.com", "gemini"),
    ("bard.google.com", "gemini"),
    ("perplexity.ai", "perplexity"),
    ("deepseek.com", "deepseek"),
    ("copilot.microsoft.com", "copilot"),
    ("mistral.ai", "mistral"),
)

# path segments after which a chat URL carries the chat's own id (chatgpt.com/c/<id>, claude.ai/chat/<uuid>,
# gemini.google.com/app/<id>, grok.com/chat/<id>, perplexity.ai/search/<slug>, chat.deepseek.com/a/chat/s/<id>)
_ID_MARKERS = frozenset({"c", "chat", "app", "s", "search", "conversation", "conversations", "thread", "threads"})
_ID_QUERY_KEYS = ("conversation", "conversation_id", "chat_id", "chat")
_ID_SHAPE = re.compile(r"^[A-Za-z0-9][\w.\-]{3,}$")


def normalize_platform(value: Any, url: Any = None) -> str:
    """The service a chat happened on, lowercase and normalized ("claude" -> "claude-ai"); "unknown" if unsaid."""
    if isinstance(value, str) and value.strip():
        name = value.strip().lower()
        if "://" in name:
            return platform_from_url(name) or "unknown"
        name = _PLATFORM_ALIASES.get(name, name)
        name = re.sub(r"\s+", "-", name)
        return _PLATFORM_ALIASES.get(name, name)
    return platform_from_url(url) or "unknown"


def platform_from_url(url: Any) -> str | None:
    if not isinstance(url, str) or not url.strip():
        return None
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except ValueError:
        return None
    for suffix, platform in _HOST_PLATFORMS:
        if host == suffix or host.endswith("." + suffix):
            return platform
    return None


def id_from_url(url: Any) -> str | None:
    """The chat's own id from its URL (chatgpt.com/c/<id>, claude.ai/chat/<uuid>, ...), or None."""
    if not isinstance(url, str) or not url.strip():
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    found = None
    segments = [s for s in parts.path.split("/") if s]
    for before, seg in zip(segments, segments[1:]):
        if before.lower() in _ID_MARKERS and _ID_SHAPE.match(seg):
            found = seg
    if found:
        return found
    query = parse_qs(parts.query)
    for key in _ID_QUERY_KEYS:
        for value in query.get(key, []):
            if _ID_SHAPE.match(value):
                return value
    return None


def derived_id(*parts: Any) -> str:
    """A deterministic conversation id from stable content, for sources that carry none."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "chatetl:" + "\n".join("" if p is None else str(p) for p in parts)))


def _usable_id(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        return None
    value = value.strip()
    # "…" / "..." are the seed's placeholders, not ids
    if not value or not value.strip(".…"):
        return None
    return value


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
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)


def _time(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return _aware(value)
    if isinstance(value, date):
        return datetime.combine(value, time(), tzinfo=timezone.utc)
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
    # the seed: role is user, assistant "or a provider-specific slug" -> an assistant turn we did not know
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


# ---------------------------------------------------------------------------------------------
# The one builder every rendering goes through

KNOWN_META = frozenset(
    {
        "schema", "platform", "url", "title", "exported", "exported_at", "chat_id", "model",
        "user_name", "user_handle", "user_email", "created_at", "updated_at", "messages", "conversations",
    }
)
KNOWN_MESSAGE_FIELDS = frozenset({"role", "role_tag", "text", "links", "sources", "name"})
_MD_EXTRAS = "\x00md"  # what only the Markdown parser found (text outside messages, odd sys lines ...)
KNOWN_SHAREGPT_FIELDS = frozenset({"from", "value"})


def conversation_from_export(
    record: Any, report: ReadReport, *, rendering: str, file: str = "", where: str = "", strip_block_newline: bool = False
) -> Conversation:
    """One chat-export/1 (or sharegpt/1, or parsed .md/.yaml) record as a Conversation.

    `rendering` is json, sharegpt/1, md or yaml (kept in meta["export_format"]).
    """
    if not isinstance(record, dict):
        raise ValueError(f"expected a chat object, got {type(record).__name__}")
    sharegpt = rendering == "sharegpt/1"
    key = "conversations" if sharegpt else "messages"
    raw_messages = record.get(key)
    if raw_messages is None:
        raw_messages = []
    if not isinstance(raw_messages, list):
        raise ValueError(f"`{key}` is {type(raw_messages).__name__}, not a list of messages")

    url = _text(record.get("url"))
    platform = normalize_platform(record.get("platform"), url)
    title = _text(record.get("title"))
    exported_raw = record.get("exported_at", record.get("exported"))
    exported = _time(exported_raw)

    meta: dict[str, Any] = {"export_format": rendering}
    if record.get("schema") is not None:
        meta["schema"] = _text(record.get("schema"))
    if exported_raw is not None:
        meta["exported_at"] = iso(exported) if exported else _text(exported_raw)
    for k in ("user_name", "user_handle", "user_email"):
        if record.get(k) is not None:
            meta[k] = _text(record.get(k))
    if rendering == "md" and isinstance(record.get(_MD_EXTRAS), dict):
        meta.update(record[_MD_EXTRAS])
    for k in sorted(record.keys() - KNOWN_META - {_MD_EXTRAS}):
        report.unknown(f"chat_export.field:{k}")
        meta[k] = _plain(record[k])

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
        extra: dict[str, Any] = {}
        if not sharegpt and raw.get("links"):
            extra["links"] = _plain(raw.get("links"))
        for k in sorted(raw.keys() - known):
            report.unknown(f"chat_export.message_field:{k}")
            extra[k] = _plain(raw[k])
        built.append(
            (i, {
                "role": role,
                "kind": kind,
                "text": text,
                "author_name": (None if sharegpt else _text(raw.get("name"))) or tag or (role_name if role_name else None),
                "citations": [] if sharegpt else _citations(raw.get("sources")),
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


# ---------------------------------------------------------------------------------------------
# JSON renderings


def read_json(entry: Entry, layout: Layout | None, report: ReadReport) -> Iterator[Conversation]:
    """A `chat-export/1` JSON file (one object; an array of them is read too)."""

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_export(record, report, rendering="json", file=entry.name, where=where)

    yield from convert_records(entry, iter_records(entry, layout or Layout.OBJECT, report), report, convert)


def read_sharegpt1(entry: Entry, layout: Layout | None, report: ReadReport) -> Iterator[Conversation]:
    """A `sharegpt/1` JSON file written by the extension: {"schema", "platform", "title", "conversations"}."""

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_export(record, report, rendering="sharegpt/1", file=entry.name, where=where)

    yield from convert_records(entry, iter_records(entry, layout or Layout.OBJECT, report), report, convert)


# ---------------------------------------------------------------------------------------------
# Markdown: ```md fences

_MD_MARKER = re.compile(r"^(`{3,})md[ \t]*$")  # a fence whose info string is exactly `md`, at column 0
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_ROLE_LABEL = re.compile(r"^[a-z][a-z0-9 _.\-]*:$")
_KNOWN_ROLE_LABEL = re.compile(r"^(user|assistant|system|human):$", re.IGNORECASE)
_SOURCE_LINE = re.compile(r"^\s*(?:\d+[.)]|[-*+])\s+(.*?)\s*$")
_MD_LINK = re.compile(r"^\[(?P<title>.*)\]\((?P<url>[^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(?:\s+\"[^\"]*\")?\)$")
_BARE_URL = re.compile(r"https?://\S+")


def _closes(line: str, char: str, length: int) -> bool:
    """A closing fence: up to 3 spaces, at least `length` of `char`, nothing else but spaces."""
    stripped = line.rstrip()
    body = stripped.lstrip(" ")
    if len(stripped) - len(body) > 3 or len(body) < length:
        return False
    return body == char * len(body)


def _is_label(label: str) -> bool:
    return label in ("sys", "sources") or bool(_ROLE_LABEL.match(label) or _KNOWN_ROLE_LABEL.match(label))


def _is_role_label(label: str) -> bool:
    return label not in ("sys", "sources")


@dataclass
class _Candidate:
    """An open ```md fence: a marker, unless what follows shows it is a body's own code block."""

    ticks: int
    lines: list[str]
    label: str | None = None
    payload: list[str] = field(default_factory=list)


@dataclass
class _MarkdownState:
    meta: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    body: list[str] | None = None  # the current message's body lines while a body is open
    body_fence: tuple[str, int] | None = None  # an open code fence inside a body: (char, length)
    candidate: _Candidate | None = None
    stray: list[str] = field(default_factory=list)  # text outside any message body
    sys_lines: list[str] = field(default_factory=list)  # `sys` lines that are not `key: value`
    orphan_sources: list[dict[str, str]] = field(default_factory=list)  # `sources` before any message

    def text(self, line: str) -> None:
        if self.body is not None:
            self.body.append(line)
        elif line.strip():
            self.stray.append(line)

    def feed(self, line: str) -> None:
        cand = self.candidate
        if cand is not None:
            if _closes(line, "`", cand.ticks):
                cand.lines.append(line)
                self.finish(cand)
                return
            cand.lines.append(line)
            if cand.label is None:
                label = line.strip()
                # the one `sys` fence comes before the messages: a later one is a body's md code block
                if _is_label(label) and not (label == "sys" and self.messages):
                    cand.label = label
                else:
                    self.demote(cand)
                return
            if _is_role_label(cand.label) and line.strip():
                self.demote(cand)  # role markers are empty: this is an md code block in a body
                return
            cand.payload.append(line)
            return
        if self.body_fence is not None:
            self.text(line)
            if _closes(line, *self.body_fence):
                self.body_fence = None
            return
        m = _MD_MARKER.match(line)
        if m:
            self.candidate = _Candidate(ticks=len(m.group(1)), lines=[line])
            return
        m = _FENCE_OPEN.match(line)
        if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
            self.body_fence = (m.group(1)[0], len(m.group(1)))
        self.text(line)

    def demote(self, cand: _Candidate, closed: bool = False) -> None:
        """The ```md fence was a body's own code block: its lines are body text."""
        self.candidate = None
        for line in cand.lines:
            self.text(line)
        if not closed:
            self.body_fence = ("`", cand.ticks)

    def finish(self, cand: _Candidate) -> None:
        self.candidate = None
        label = cand.label
        if label is None:
            self.demote(cand, closed=True)  # an empty ```md block
            return
        if label == "sources" and not all(_SOURCE_LINE.match(p) for p in cand.payload if p.strip()):
            self.demote(cand, closed=True)  # not a numbered list of links: a body's md code block
            return
        self.close_body()
        if label == "sys":
            for raw in cand.payload:
                if not raw.strip():
                    continue
                key, sep, value = raw.partition(":")
                if sep and key.strip():
                    self.meta.setdefault(key.strip().lower().replace(" ", "_"), value.strip())
                else:
                    self.sys_lines.append(raw.strip())
        elif label == "sources":
            sources = _parse_sources(cand.payload)
            if self.messages:
                self.messages[-1].setdefault("sources", []).extend(sources)
            else:
                self.orphan_sources.extend(sources)
        else:
            tag = label[:-1].strip()
            self.messages.append({"role": tag, "role_tag": tag, "text": ""})
            self.body = []

    def close_body(self) -> None:
        if self.body is None or not self.messages:
            self.body = None
            return
        lines = self.body
        if lines and not lines[0].strip():
            lines = lines[1:]  # exactly one leading blank line (the one after the marker)
        end = len(lines)
        while end and not lines[end - 1].strip():
            end -= 1
        self.messages[-1]["text"] = "\n".join(lines[:end])
        self.body = None

    def end(self, report: ReadReport) -> None:
        cand = self.candidate
        if cand is not None:
            if cand.label is not None:
                self.finish(cand)  # a marker whose closing fence is missing at the end of the file
            else:
                self.demote(cand)
        if self.body_fence is not None:
            report.unknown("chat_export.md:unclosed-code-fence")
        self.close_body()


def _parse_sources(lines: list[str]) -> list[dict[str, str]]:
    out = []
    for raw in lines:
        m = _SOURCE_LINE.match(raw)
        if not m:
            continue
        item = m.group(1)
        link = _MD_LINK.match(item)
        if link:
            out.append({"title": link.group("title"), "url": link.group("url")})
            continue
        bare = _BARE_URL.search(item)
        if bare:
            title = item[: bare.start()].strip(" -–—:") or None
            out.append({"title": title, "url": bare.group(0).rstrip(").,;")} if title else {"url": bare.group(0).rstrip(").,;")})
        elif item:
            out.append({"title": item})
    return out


def parse_markdown_lines(lines: Iterator[str], report: ReadReport) -> _MarkdownState:
    state = _MarkdownState()
    for raw in lines:
        state.feed(raw.rstrip("\r\n"))
    state.end(report)
    return state


def read_markdown(entry: Entry, layout: Layout | None, report: ReadReport) -> Iterator[Conversation]:
    """A Markdown export: ```md fences mark meta (`sys`), each message (`user:` ...) and `sources`."""

    def records() -> Iterator[tuple[str, Any]]:
        with entry.open() as raw:
            text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline=None)
            state = parse_markdown_lines(iter(text), report)
        if not state.messages:
            report.error(
                entry.name,
                "",
                "no chat-export role markers found (```md fences labelled user:, assistant:, ...): not a chat-export Markdown file",
            )
            return
        record: dict[str, Any] = dict(state.meta)
        extras: dict[str, Any] = {}
        if state.stray:
            report.unknown("chat_export.md:text-outside-messages")
            extras["text_outside_messages"] = "\n".join(state.stray)
        if state.sys_lines:
            report.unknown("chat_export.md:sys-line-without-key")
            extras["sys_lines"] = state.sys_lines
        if state.orphan_sources:
            report.unknown("chat_export.md:sources-before-any-message")
            extras["orphan_sources"] = state.orphan_sources
        record[_MD_EXTRAS] = extras
        record["messages"] = state.messages
        yield "", record

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_export(record, report, rendering="md", file=entry.name)

    yield from convert_records(entry, records(), report, convert)


# ---------------------------------------------------------------------------------------------
# YAML

# A YAML export is one chat, parsed whole (PyYAML does not stream): bigger is not such a file.
MAX_YAML_BYTES = 64 * 1024 * 1024


class _NoAliasLoader(yaml.SafeLoader):
    """SafeLoader refusing `*alias` references: exports never write them, and a few nested
    aliases (a "billion laughs") unfold into billions of values when the tree is walked."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"alias *{event.anchor} (YAML aliases are not allowed)", event.start_mark)
        return super().compose_node(parent, index)


def read_yaml(entry: Entry, layout: Layout | None, report: ReadReport) -> Iterator[Conversation]:
    """A YAML export: meta keys and a `messages:` list (block scalars for bodies)."""

    def records() -> Iterator[tuple[str, Any]]:
        with entry.open() as raw:
            data_bytes = raw.read(MAX_YAML_BYTES + 1)
        if len(data_bytes) > MAX_YAML_BYTES:
            report.error(entry.name, "", f"YAML file larger than {MAX_YAML_BYTES} bytes: not read")
            return
        text = data_bytes.decode("utf-8-sig", errors="replace")
        del data_bytes
        try:
            data = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            report.error(entry.name, where, f"malformed YAML: {exc.problem or exc.context or 'parse error'}", raw=text.encode())
            return
        except yaml.YAMLError as exc:
            report.error(entry.name, "", f"malformed YAML: {exc}", raw=text.encode())
            return
        except RecursionError:
            report.error(entry.name, "", "YAML nested too deeply")
            return
        if not isinstance(data, dict):
            report.error(entry.name, "", f"YAML top level is {type(data).__name__}, not a mapping of meta keys and messages")
            return
        if _has_typed_scalars(data):
            _restore_scalar_text(data, text)
        yield "", data

    def convert(record: Any, where: str) -> Conversation | None:
        return conversation_from_export(record, report, rendering="yaml", file=entry.name, strip_block_newline=True)

    yield from convert_records(entry, records(), report, convert)


def _walk(data: Any) -> Iterator[Any]:
    stack = [data]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        else:
            yield v


def _has_typed_scalars(data: Any) -> bool:
    return any(isinstance(v, (bool, int, float, date)) for v in _walk(data))


def _restore_scalar_text(data: dict, text: str) -> None:
    """YAML 1.1 turns a reply `yes` into True, `3:25` into 205 and `0123` into 83: every value in this
    format is text, so take typed scalars back to exactly what the file says (from the node tree,
    which `yaml.compose` builds without constructing any object)."""
    try:
        root = yaml.compose(text, Loader=_NoAliasLoader)
    except (yaml.YAMLError, RecursionError):
        return
    stack: list[tuple[Any, Any]] = [(data, root)]
    while stack:
        value, node = stack.pop()
        if isinstance(value, dict) and isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
                if key is None or key not in value:
                    continue
                child = value[key]
                if isinstance(child, (dict, list)):
                    stack.append((child, value_node))
                elif isinstance(child, (bool, int, float, date)) and isinstance(value_node, yaml.ScalarNode):
                    value[key] = value_node.value
        elif isinstance(value, list) and isinstance(node, yaml.SequenceNode):
            for j, (child, child_node) in enumerate(zip(value, node.value)):
                if isinstance(child, (dict, list)):
                    stack.append((child, child_node))
                elif isinstance(child, (bool, int, float, date)) and isinstance(child_node, yaml.ScalarNode):
                    value[j] = child_node.value
