"""A file carried inside a chat as a `data:` URL (Open WebUI's pasted images): its bytes and an id of them.

The id is the bytes' sha256 (`sha256:<hex>`), so the attachment stage (chatetl.attachments.inline) finds
the same bytes again in the chat file without the tables ever holding them. Only base64 payloads are read;
a payload past MAX_DATA_URL_CHARS (the reader's bound on one JSON value) is not.
"""

from __future__ import annotations

import binascii
import hashlib
from base64 import b64decode

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
