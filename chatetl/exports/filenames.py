"""File names from titles people wrote: no path separators, no control characters, bounded, unique."""

from __future__ import annotations

import hashlib
import re
import unicodedata

from chatetl.model import Conversation

_UNSAFE = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*\u2028\u2029]+')
_SPACES = re.compile(r"[\s_]+")
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}
MAX_TITLE = 80


def slug(text: str | None, limit: int = MAX_TITLE) -> str:
    value = unicodedata.normalize("NFKC", text or "")
    value = _UNSAFE.sub(" ", value)
    value = _SPACES.sub("-", value.strip())
    value = value.strip(".-")  # no hidden files, no '..'
    value = value[:limit].rstrip(".-")
    if not value or value.lower() in _RESERVED:
        value = "untitled" if not value else f"{value}-chat"
    return value


def export_basename(conv: Conversation) -> str:
    """`{platform}-{title}-{date}-{id8}`: the extension's pattern plus a short id that keeps
    two chats with the same title and day apart, deterministically across reruns."""
    date = (conv.created_at or conv.updated_at)
    day = date.strftime("%Y-%m-%d") if date else "undated"
    ident = hashlib.sha256(conv.key.encode()).hexdigest()[:8]
    return f"{slug(conv.platform, 32)}-{slug(conv.title)}-{day}-{ident}"
