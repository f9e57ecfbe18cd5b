"""What every per-conversation export says about the conversation, and the turns it holds.

One place builds the meta keys (the Chat Export extension's `platform`, `url`, `title`,
`exported_at`, `chat_id`, `model`, plus `created_at` / `updated_at`, which chatetl's readers know) and the
branches to export, so every format says the same thing.

`exported_at` is the conversation state's own time (updated, else created), not the wall
clock: exporting the same state twice gives the same bytes, so a rerun changes nothing.
An abandoned branch (exported only with include_branches) is a file of its own whose
`chat_id` gets `~branch-N` and whose title gets ` (branch N)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import urlsplit

from chatetl.exports.inert import code_block, inert_markdown
from chatetl.labels import chat_title
from chatetl.model import Attachment, Citation, Conversation, MessageKind, Source
from chatetl.readers.timeutil import iso
from chatetl.selection import VISIBLE, ContentOptions, OutputTurn, branches

# A message whose text the reader rendered from the HTML the source held (Gemini's answers).
FROM_HTML = "html"
_TOOL_KINDS = frozenset({MessageKind.TOOL_CALL, MessageKind.TOOL_RESULT})
# the language of a tool's code, by the tool's name (ChatGPT's Code Interpreter is `python`)
_CODE_LANGUAGES = {"python": "python", "code_interpreter": "python"}


@dataclass(frozen=True)
class ExportView:
    """One file's worth of a conversation: its meta and its turns (the active branch, or another one)."""

    conv: Conversation
    branch: int
    turns: list[OutputTurn]

    @property
    def chat_id(self) -> str:
        return self.conv.conversation_id if not self.branch else f"{self.conv.conversation_id}~branch-{self.branch}"

    @property
    def title(self) -> str | None:
        if not self.branch:
            return self.conv.title
        return f"{chat_title(self.conv.title)} (branch {self.branch})"

    def meta(self) -> dict[str, Any]:
        """Meta keys in the order the extension's files give them; missing values are left out (never null)."""
        return dict(self._meta)  # (a copy: the caller may change it)

    def markdown(self, turn: OutputTurn) -> str:
        """A turn's text as the Markdown of a file (chat-export-md, which reads it back as it is): as
        it is, but for text rendered from HTML, where every `[`, `]` and `<` was a character on the
        page and stays one (`inert.inert_markdown`)."""
        return inert_markdown(turn.text) if turn.message_id in self._from_html else turn.text

    def shown(self, turn: OutputTurn) -> str:
        """A turn's Markdown as a person reads it (md, html): `markdown`, but a tool's code and its
        output (Code Interpreter's Python and what it printed) as code blocks, line breaks kept."""
        if turn.kind in _TOOL_KINDS:
            return code_block(turn.text, _CODE_LANGUAGES.get(turn.name or "", "") if turn.kind is MessageKind.TOOL_CALL else "")
        return self.markdown(turn)

    def attachments(self, turn: OutputTurn) -> list[Attachment]:
        """A visible turn's attachments (the files shared with it, the images an answer drew)."""
        return self._attachments.get(turn.message_id, []) if turn.kind is MessageKind.TURN else []

    @cached_property
    def _attachments(self) -> dict[str, list[Attachment]]:
        return {m.message_id: m.attachments for m in self.conv.messages if m.attachments}

    @cached_property
    def _from_html(self) -> frozenset[str]:
        if self.conv.source is not Source.GEMINI:  # (the one reader that renders HTML: no pass over the others' messages)
            return frozenset()
        return frozenset(m.message_id for m in self.conv.messages if m.content_type == FROM_HTML)

    @cached_property
    def _meta(self) -> dict[str, Any]:
        c = self.conv
        created, updated = iso(c.created_at), iso(c.updated_at)
        items = {
            "platform": c.platform,
            "url": c.url,
            "title": self.title,
            "exported_at": updated if c.updated_at else created,  # (the state's own time: updated, else created)
            "chat_id": self.chat_id,
            "model": c.model,
            "created_at": created,
            "updated_at": updated,
        }
        return {k: v for k, v in items.items() if v is not None and v != ""}


def export_views(conv: Conversation, options: ContentOptions = VISIBLE) -> list[ExportView]:
    """The active branch first, then (with include_branches) one view per other branch, in full."""
    out = []
    for b in branches(conv, options):
        out.append(ExportView(conv, b.index, b.turns))
    return out


def source_list(citations: tuple[Citation, ...]) -> list[dict[str, str]]:
    """`[{title, url}]` for the citations that have either, without duplicates."""
    out: list[dict[str, str]] = []
    seen: set[tuple[str | None, str | None]] = set()
    for c in citations:
        if not (c.url or c.title) or (c.title, c.url) in seen:
            continue
        seen.add((c.title, c.url))
        item = {}
        if c.title:
            item["title"] = c.title
        if c.url:
            item["url"] = c.url
        out.append(item)
    return out



# What a link may point at in a file a person opens (HTML, Markdown): never javascript:, data:, file: ...
SAFE_SCHEMES = frozenset({"http", "https", "mailto"})


def safe_link(url: str | None) -> str | None:
    """A URL fit to be a link (http, https, mailto, without control characters), else None: the
    HTML and Markdown exports then write the source's title as plain text, never the link."""
    if not url:
        return None
    candidate = url.strip()
    try:
        scheme = urlsplit(candidate).scheme.lower()
    except ValueError:
        return None
    if scheme not in SAFE_SCHEMES or _CONTROL.search(candidate) or any(ch.isspace() for ch in candidate[: len(scheme) + 1]):
        return None
    return candidate


# C0 controls but tab, line feed and carriage return; DEL; C1 controls but NEL (a line break some text holds)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x84\x86-\x9f]")
# every byte as itself but the ASCII controls, as a space: `data.translate(_MARK_CONTROLS) is data`
# when `data` holds none (bytes.translate gives back the very object when nothing changed)
_MARK_CONTROLS = bytes(0x20 if c < 0x80 and _CONTROL.match(chr(c)) else c for c in range(256))


def encode(text: str) -> bytes:
    """A file's text as its bytes: UTF-8, a lone surrogate from a damaged source as '?'."""
    return text.encode("utf-8", "replace")


_ASCII_CONTROLS = bytes(c for c in range(0x80) if _CONTROL.match(chr(c)))


def has_controls_utf8(data: bytes) -> bool:
    """`has_controls` of the text `data` is the UTF-8 of, for a whole file: each ASCII control byte
    is looked for with `memchr` (30 passes over a file at memory speed cost less than one pass
    that looks at every byte), the C1 controls as `has_controls` does."""
    for byte in _ASCII_CONTROLS:
        if byte in data:  # (an int: bytes.__contains__ goes straight to memchr)
            return True
    return b"\xc2" in data and _CONTROL.search(data.decode("utf-8", "surrogatepass")) is not None


def has_controls(text: str) -> bool:
    """Whether `text` holds a character `without_controls` takes out. The same answer as searching it
    with the pattern, several times faster: the ASCII controls are looked for in its UTF-8 bytes with
    one `bytes.translate` (a C loop), the C1 controls, U+0080 to U+009F (UTF-8 `\\xc2\\x80` to
    `\\xc2\\x9f`), with the pattern only where a `\\xc2` byte is."""
    if text.isascii():  # (known without reading the text)
        data = text.encode("ascii")
        return data.translate(_MARK_CONTROLS) is not data
    data = text.encode("utf-8", "surrogatepass")
    if data.translate(_MARK_CONTROLS) is not data:
        return True
    return b"\xc2" in data and _CONTROL.search(text) is not None


def without_controls(text: str) -> str:
    """Text with its raw control characters (NUL, ESC, ...) taken out: they never reach a file a
    person opens (HTML, Markdown; YAML escapes them itself, JSON too). Ordinary text is returned as it is."""
    return _CONTROL.sub("", text) if has_controls(text) else text
