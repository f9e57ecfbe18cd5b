"""An attachment's bytes kept once in the bucket, under their sha256: a second upload of the same file
(or the same upload again) writes nothing."""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from chatetl.attachments.sniff import HEAD_BYTES, mime_of
from chatetl.layout import attachment_key
from chatetl.readers.inputs.members import Member
from chatetl.storage import ObjectStore

_BLOCK = 1024 * 1024  # what is read of a member at a time: memory never grows with its size


@dataclass(frozen=True)
class StoredFile:
    content_hash: str
    size: int
    mime_type: str | None  # sniffed from the bytes
    head: bytes  # its first bytes (what tells text from binary)
    new: bool  # written now (False: the bucket held it already)


def store_member(store: ObjectStore, member: Member, workdir: str | Path | None = None) -> StoredFile:
    """Stream `member` once (hashed as it is copied to a local file), then put it unless the bucket holds it."""
    digest = hashlib.sha256()
    size = 0
    head = b""
    with tempfile.NamedTemporaryFile(dir=workdir, prefix="attachment-") as tmp:
        with member.open() as src:
            while block := src.read(_BLOCK):
                digest.update(block)
                tmp.write(block)
                if len(head) < HEAD_BYTES * 64:
                    head += block[: HEAD_BYTES * 64 - len(head)]
                size += len(block)
        tmp.flush()
        content_hash = digest.hexdigest()
        mime = mime_of(head)
        key = attachment_key(content_hash)
        new = store.head(key) is None
        if new:
            store.put_file(key, tmp.name, mime or "application/octet-stream")
    return StoredFile(content_hash, size, mime, head, new)
