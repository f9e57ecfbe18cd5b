"""A file carried inside a chat as a `data:` URL: its bytes and an id of them.

Open WebUI keeps pasted images so in its `files`, and answers of image models (or its filters) write
them into the text as Markdown images, `![alt](data:image/png;base64,…)`, as do Markdown exporters.
The id is the bytes' sha256 (`sha256:<hex>`), so the attachment stage (chatetl.attachments.inline) finds
the same bytes again in the chat file without the tables ever holding them. Only base64 payloads are read;
a payload past the reader's bound on one JSON value is not. An image taken out of a text leaves the
text without its base64 (which would bloat every table, chunk and export) and becomes an attachment.
"""

from __future__ import annotations

import binascii
import hashlib
import re
from base64 import b64decode

from chatetl.model import Attachment
from chatetl.readers import limits

INLINE_ID_PREFIX = "sha256:"


def max_data_url_chars() -> int:
    """The longest data: URL read (a JSON value's bound: what the readers take of one value)."""
    return limits.current().max_value_bytes


def decode_data_url(url: str | bytes) -> tuple[str | None, bytes] | None:
    """(the MIME type it states, its decoded bytes) of a base64 `data:` URL, or None where it is none or damaged."""
    raw = url.encode("ascii", "replace") if isinstance(url, str) else url
    if not raw.startswith(b"data:") or len(raw) > max_data_url_chars():
        return None
    header, sep, payload = raw[5:].partition(b",")
    params = header.split(b";")
    if not sep or b"base64" not in params[1:]:
        return None
    try:
        data = b64decode(payload.replace(b"\\/", b"/").translate(None, b" \t\r\n"), validate=True)
    except (binascii.Error, ValueError):
        return None
    mime = params[0].decode("ascii", "replace").strip().lower() or None
    return mime, data


def inline_id(data: bytes) -> str:
    """The id of an inline file: its bytes' sha256."""
    return INLINE_ID_PREFIX + hashlib.sha256(data).hexdigest()


def described(url: str) -> tuple[str | None, int | None, str | None]:
    """(id, decoded size, stated MIME type) of a data: URL; a damaged one has no id, its size estimated
    from the payload's length."""
    mime = url[5:].split(";", 1)[0].split(",", 1)[0] or None  # (as the URL states it)
    decoded = decode_data_url(url)
    if decoded is None:
        return None, len(url.split(",", 1)[-1]) * 3 // 4, mime
    return inline_id(decoded[1]), len(decoded[1]), mime


# `![alt](data:…)` or `![alt](<data:…>)`: base64 holds no `)`, `>` or whitespace, so the URL ends there
_MARKDOWN_IMAGE = re.compile(r"!\[([^\]\n]{0,1024})\]\(\s*(?:<(data:[^>\s]+)>|(data:[^)\s]+))\s*\)")


def markdown_images(text: str) -> tuple[str, list[Attachment]]:
    """`text` without its Markdown images written as data: URLs, and those images as attachments (in
    the order they appear; the alt text is the name)."""
    if "](data:" not in text and "](<data:" not in text:
        return text, []
    found: list[Attachment] = []

    def take(match: re.Match[str]) -> str:
        ident, size, mime = described(match.group(2) or match.group(3))
        found.append(Attachment.fast(kind="image", id=ident, name=match.group(1).strip() or None, mime_type=mime, size=size))
        return ""

    return _MARKDOWN_IMAGE.sub(take, text), found
