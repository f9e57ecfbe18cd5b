"""File names from titles people wrote: safe on every file system, bounded, unique, deterministic.

`{platform}-{title}-{date}-{id8}.{ext}`: the Chat Export extension's pattern plus eight hex
characters of the conversation key's SHA-256.

Why the id is always there (and not only when two titles collide): the names live in one
bucket prefix shared by every partition, upload and rerun, so "is this name taken?" has no
stable answer. A suffix added on collision would depend on what was processed first (a
backfill could rename files, or two chats could overwrite each other across partitions).
With the id, the same conversation always gets the same name whatever else is processed,
two conversations never share one, and names stay readable: the title comes first.

Safety: letters, digits and marks of any script are kept, with `- . _ ( ) + , ' ! & @`; everything
else (path separators, control and format characters, bidi overrides, private-use characters,
`< > : " / \\ | ? *`, whitespace) becomes one `-`. No leading or trailing dot or dash (no
hidden files, no `..`), at most `MAX_TITLE_BYTES` UTF-8 bytes of title (never cutting a
character), Windows' reserved device names (CON, NUL, COM1 ...) defused.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import datetime

MAX_TITLE_BYTES = 96
MAX_PLATFORM_BYTES = 32
_KEEP_PUNCT = frozenset("-._()+,'!&@")
_DASHES = re.compile(r"-{2,}")
RESERVED = frozenset(
    {"con", "prn", "aux", "nul", "conin$", "conout$", *(f"com{i}" for i in "0123456789¹²³"), *(f"lpt{i}" for i in "0123456789¹²³")}
)


def _keep(ch: str) -> bool:
    if ch in _KEEP_PUNCT:
        return True
    return unicodedata.category(ch)[0] in "LNM"


def truncate_utf8(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes, never cutting a character (nor leaving a dangling combining mark)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    cut = data[:limit].decode("utf-8", "ignore")
    while cut and unicodedata.combining(cut[-1]):
        cut = cut[:-1]
    return cut


# what each ASCII character becomes (itself, or `-`): the rule of `_keep`, for a whole ASCII title at once
_ASCII_SLUG = str.maketrans({chr(c): chr(c) if _keep(chr(c)) and chr(c) != "_" else "-" for c in range(128)})


def slug(text: str | None, limit: int = MAX_TITLE_BYTES, fallback: str = "untitled") -> str:
    """A title as one safe file-name part (never empty, never a path, never a reserved name)."""
    value = text or ""
    if value.isascii():  # (NFKC leaves ASCII as it is)
        value = value.translate(_ASCII_SLUG)
    else:
        value = unicodedata.normalize("NFKC", value)
        value = "".join(ch if _keep(ch) else "-" for ch in value).replace("_", "-")
    value = _DASHES.sub("-", value).strip(".-")
    value = truncate_utf8(value, limit).rstrip(".-")
    if not value:
        return fallback
    if value.split(".")[0].lower() in RESERVED:
        value = f"{value}-chat" if "." not in value else f"chat-{value}"
    return value


def short_id(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def export_basename(platform: str, title: str | None, when: datetime | None, key: str) -> str:
    """`{platform}-{title}-{date}-{id8}` (no extension): deterministic, unique per conversation key."""
    day = when.strftime("%Y-%m-%d") if when else "undated"
    return f"{slug(platform, MAX_PLATFORM_BYTES, 'chat')}-{slug(title)}-{day}-{short_id(key)}"


def conversation_basename(conv) -> str:  # type: ignore[no-untyped-def]
    """The base name of every file exported for one conversation."""
    return export_basename(conv.platform, conv.title, conv.created_at or conv.updated_at, conv.key)
