"""Which uploads refer to each stored attachment, so a file leaves the bucket with the last one.

Each upload that holds a file leaves an empty mark `state/attachments/refs/<h>/<upload-id>` and the
list of its files (`state/attachments/by-upload/<upload-id>.json`). When an upload's new version no
longer holds a file, or the upload is deleted or moved, its marks go; a file no mark refers to any
more leaves with its exported copies (`exports/files/<h>…`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from chatetl.layout import attachment_key, attachment_ref_key, attachment_refs_prefix, attachments_of_upload_key, export_file_prefix
from chatetl.storage import ObjectStore, put_bytes_if_changed


def hold(store: ObjectStore, uid: str, hashes: Iterable[str]) -> list[str]:
    """Upload `uid` now refers to exactly `hashes`: marks added, its earlier marks it no longer needs taken
    away; the keys of the files that left with them."""
    now = sorted(set(hashes))
    before = _held(store, uid)
    for h in now:
        if h not in before:
            put_bytes_if_changed(store, attachment_ref_key(h, uid), b"")
    gone = []
    for h in sorted(before - set(now)):
        key = attachment_ref_key(h, uid)
        if store.head(key) is not None:
            store.delete(key)
        gone += _unreferenced(store, h)
    record = attachments_of_upload_key(uid)
    if now:
        put_bytes_if_changed(store, record, json.dumps(now).encode(), "application/json")
    elif before and store.head(record) is not None:
        store.delete(record)
    return gone


def release(store: ObjectStore, uid: str) -> list[str]:
    """Upload `uid` left: it refers to no file any more (the keys of the files that left)."""
    return hold(store, uid, ())


def _held(store: ObjectStore, uid: str) -> set[str]:
    record = attachments_of_upload_key(uid)
    if store.head(record) is None:
        return set()
    try:
        data = json.loads(store.get_bytes(record))
    except (ValueError, UnicodeDecodeError):
        return set()  # (a damaged record: the marks stay, the file too)
    return {h for h in data if isinstance(h, str)} if isinstance(data, list) else set()


def _unreferenced(store: ObjectStore, h: str) -> list[str]:
    """The file `h` and its exported copies deleted when no mark refers to it; the keys deleted."""
    if next(iter(store.list(attachment_refs_prefix(h), limit=1)), None) is not None:
        return []
    keys = [o.key for o in store.list(export_file_prefix(h))]
    if store.head(attachment_key(h)) is not None:
        keys.append(attachment_key(h))
    for key in keys:
        store.delete(key)
    return keys
