"""Which member of an upload holds which stored file, kept by the upload's own content digest, so the same
bytes uploaded again (under any name) are not hashed again.

The digest is the one the ingest ledger already trusts for "these bytes were normalized": the object
store's ETag (an MD5 of the content, or of its parts) with the size; never a zip member's CRC32. A
listed file is used only while the bucket still holds it; text and PDF files are always read again (their
words go into the tables, not into this list).
"""

from __future__ import annotations

import json
from typing import Any

from chatetl.layout import attachments_of_content_key
from chatetl.storage import ObjectStore, put_bytes_if_changed

Known = dict[str, tuple[str, int, str | None]]  # member name -> (sha256, size, sniffed type)


def upload_digest(etag: str | None, size: int | None) -> str | None:
    """The manifest's name for an upload's bytes (None: the store gives no usable digest)."""
    if not etag or size is None:
        return None
    digest = f"{etag.lower()}-{size}"
    try:
        attachments_of_content_key(digest)
    except ValueError:
        return None
    return digest


def read_manifest(store: ObjectStore, digest: str | None) -> Known:
    """What an earlier run of an upload with these bytes found ({} when none, or a damaged list)."""
    if digest is None:
        return {}
    key = attachments_of_content_key(digest)
    if store.head(key) is None:
        return {}
    try:
        data: Any = json.loads(store.get_bytes(key))
    except (ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: (v[0], v[1], v[2]) for name, v in data.items()
            if isinstance(v, list) and len(v) == 3 and isinstance(v[0], str) and len(v[0]) == 64 and isinstance(v[1], int)
            and (v[2] is None or isinstance(v[2], str))}


def write_manifest(store: ObjectStore, digest: str | None, known: Known) -> None:
    if digest is None or not known:
        return
    data = json.dumps({name: list(v) for name, v in sorted(known.items())}, sort_keys=True).encode()
    put_bytes_if_changed(store, attachments_of_content_key(digest), data, "application/json")
