"""An attachment's bytes kept once in the bucket, under their sha256: a second upload of the same file
(or the same upload again) writes nothing."""

from __future__ import annotations

import hashlib
import io
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from chatetl.attachments.sniff import is_text, mime_of
from chatetl.attachments.text import file_text
from chatetl.layout import attachment_key
from chatetl.readers.inputs.members import Member
from chatetl.storage import ObjectStore

_BLOCK = 1024 * 1024  # what is read of a member at a time: memory never grows with its size
_HEAD = 4096  # what is kept of its start: its signature, and enough to tell text from binary


@dataclass(frozen=True)
class StoredFile:
    content_hash: str
    size: int
    mime_type: str | None  # sniffed from the bytes (text/plain: UTF-8 text)
    text: str | None  # its words, where it is a text file or a PDF (chatetl.attachments.text)
    new: bool  # written now (False: the bucket held it already)


def held(store: ObjectStore, key: str) -> bool:
    """Whether the store holds `key` (a local store's file looked at, not read: its head digests it)."""
    path = store.local_path(key)
    return path.is_file() if path is not None else store.head(key) is not None


def store_member(store: ObjectStore, member: Member, workdir: str | Path | None = None) -> StoredFile:
    """Stream `member` once (hashed as it is copied to a local file), then put it unless the bucket holds it."""
    return store_stream(store, member.open, workdir)


def store_bytes(store: ObjectStore, data: bytes, workdir: str | Path | None = None) -> StoredFile:
    """Bytes held in memory (a decoded data: URL), kept as a member's would be."""
    return store_stream(store, lambda: io.BytesIO(data), workdir)


def store_stream(store: ObjectStore, opener: Callable[[], BinaryIO], workdir: str | Path | None = None) -> StoredFile:
    """The bytes `opener` gives, streamed once (hashed as they are copied to a local file), then put unless the
    bucket holds them."""
    digest = hashlib.sha256()
    size = 0
    head = b""
    with tempfile.NamedTemporaryFile(dir=workdir, prefix="attachment-") as tmp:
        with opener() as src:
            while block := src.read(_BLOCK):
                digest.update(block)
                tmp.write(block)
                if len(head) < _HEAD:
                    head += block[: _HEAD - len(head)]
                size += len(block)
        tmp.flush()
        content_hash = digest.hexdigest()
        mime = mime_of(head) or ("text/plain" if is_text(head) else None)
        key = attachment_key(content_hash)
        new = not held(store, key)
        if new:
            store.put_file(key, tmp.name, mime or "application/octet-stream")
        text = file_text(Path(tmp.name), mime, head, size)
    return StoredFile(content_hash, size, mime, text, new)
