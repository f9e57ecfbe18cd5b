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
from typing import Any
from urllib.parse import urlsplit

from chatetl.model import Citation, Conversation
from chatetl.readers.timeutil import iso
from chatetl.selection import VISIBLE, ContentOptions, OutputTurn, branches


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
        return f"{self.conv.title or 'Untitled'} (branch {self.branch})"

    def meta(self) -> dict[str, Any]:
        """Meta keys in the order the extension's files give them; missing values are left out (never null)."""
        c = self.conv
        items = {
            "platform": c.platform,
            "url": c.url,
            "title": self.title,
            "exported_at": iso(c.updated_at or c.created_at),
            "chat_id": self.chat_id,
            "model": c.model,
            "created_at": iso(c.created_at),
            "updated_at": iso(c.updated_at),
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


def without_controls(text: str) -> str:
    """Text with its raw control characters (NUL, ESC, ...) taken out: they never reach a file a
    person opens (HTML, Markdown; YAML escapes them itself, JSON too). Ordinary text is returned as it is."""
    return _CONTROL.sub("", text) if _CONTROL.search(text) else text
