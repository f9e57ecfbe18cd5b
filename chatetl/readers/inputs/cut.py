"""A JSON file cut short inside its first record (a download or a copy that stopped early), and the
chat format its start shows. Such a file is that format's error, naming it, never a file skipped as
"not a chat file": what starts like a chat and ends early is a chat lost, not an unrelated file."""

from __future__ import annotations

import orjson

from chatetl.readers.entry import Entry
from chatetl.readers.inputs.detect import Format, classify
from chatetl.readers.inputs.head import Head, first_record_head

HEAD_BYTES = 65536  # what detection reads of a file (Entry.head's default)


def cut_format(entry: Entry, head: bytes) -> Format | None:
    """The format a JSON file that ends inside its first record starts like; None for a file that is
    not JSON, not cut (or cut past its head: its reader reports that), or starts like no format."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] not in (b"[", b"{"):
        return None
    whole = entry.size == len(head) if entry.size is not None else len(head) < HEAD_BYTES
    if not whole:
        return None
    try:
        orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        if not str(exc).startswith("unexpected end of data"):
            return None  # damaged, not cut: detection's own error says so
    else:
        return None
    first = first_record_head(text, array=text[:1] == b"[")
    return classify(first) or _starts_like(first)


def _starts_like(head: Head) -> Format | None:
    """The format whose first keys a record cut early shows (the keys before its cut; a detection
    rule looks for keys that may come after it)."""
    keys = head.keys
    if "chatId" in keys and keys & {"version", "role", "content", "contentChunks", "createdAt"}:
        return Format.LE_CHAT  # a Le Chat message: {id, version, chatId, content, contentChunks, role, ...}
    if keys & {"runSettings", "chunkedPrompt"}:
        return Format.AI_STUDIO  # an AI Studio prompt: {runSettings, systemInstruction, chunkedPrompt}
    header = head.scalars.get("header")
    if "title" in keys and isinstance(header, str) and ("Gemini" in header or "Bard" in header):
        return Format.GEMINI  # a My Activity row: {header, title, titleUrl, time, ...}
    return None
