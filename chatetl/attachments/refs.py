"""Which uploads refer to each stored attachment, so a file leaves the bucket with the last one.

Each upload that holds files keeps their list (`state/attachments/by-upload/<upload-id>.json`, one
object however many files). When an upload's new version no longer holds a file, or the upload is
deleted or moved, the files it let go that no other upload's list names leave, with their exported
copies (`exports/files/<h>…`): the other lists are read only then, when something may leave.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from chatetl.layout import ATTACHMENTS_BY_UPLOAD_PREFIX, attachment_key, attachments_of_upload_key, export_file_prefix
from chatetl.storage import ObjectStore, put_bytes_if_changed


def hold(store: ObjectStore, uid: str, hashes: Iterable[str]) -> list[str]:
    """Upload `uid` now refers to exactly `hashes`; the keys of the files that left because it no longer does."""
    now = sorted(set(hashes))
    record = attachments_of_upload_key(uid)
    before = _listed(store, record)
    if now:
        put_bytes_if_changed(store, record, json.dumps(now).encode(), "application/json")
    elif before is not None:
        store.delete(record)
    let_go = (before or set()) - set(now)
    return _unreferenced(store, let_go) if let_go else []


def release(store: ObjectStore, uid: str) -> list[str]:
    """Upload `uid` left: it refers to no file any more (the keys of the files that left)."""
    return hold(store, uid, ())


def _listed(store: ObjectStore, key: str) -> set[str] | None:
    """The files an upload's list names (None: it has none)."""
    if store.head(key) is None:
        return None
    try:
        data = json.loads(store.get_bytes(key))
    except (ValueError, UnicodeDecodeError):
        return set()  # (a damaged list: rewritten by the upload's next run)
    return {h for h in data if isinstance(h, str)} if isinstance(data, list) else set()


def _unreferenced(store: ObjectStore, candidates: set[str]) -> list[str]:
    """The files among `candidates` no upload's list names, deleted with their exported copies; the keys deleted."""
    left = set(candidates)
    for info in store.list(ATTACHMENTS_BY_UPLOAD_PREFIX):
        left -= _listed(store, info.key) or set()
        if not left:
            return []
    keys = []
    for h in sorted(left):
        try:
            key = attachment_key(h)
        except ValueError:
            continue  # (a list's entry that is no sha256: never a key)
        keys += [o.key for o in store.list(export_file_prefix(h))]
        if store.head(key) is not None:
            keys.append(key)
    for key in keys:
        store.delete(key)
    return keys
