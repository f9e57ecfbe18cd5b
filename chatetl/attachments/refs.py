"""Which uploads refer to each stored attachment: one record per upload that holds files.

`state/attachments/by-upload/<upload-id>.json` names the files (sha256) the upload's tables refer to
and the upload's content digest (its `state/attachments/by-content/` record, chatetl.attachments.manifest):
one object however many files. A file or a content record no upload's record names may leave the
bucket (chatetl.attachments.sweep decides when); the records are read all together only then.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chatetl.layout import ATTACHMENTS_BY_UPLOAD_PREFIX, attachments_of_upload_key
from chatetl.storage import ObjectStore, put_bytes_if_changed


@dataclass(frozen=True)
class Refs:
    """What upload records name: files (sha256) and content digests (`<etag>-<size>`)."""

    files: frozenset[str] = field(default_factory=frozenset)
    contents: frozenset[str] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.files or self.contents)


def hold(store: ObjectStore, uid: str, hashes: Iterable[str], content: str | None = None) -> Refs:
    """Upload `uid` (whose bytes have the digest `content`) now refers to exactly `hashes`: its record written (or
    removed when it refers to none); what it referred to before and no longer does."""
    now = sorted(set(hashes))
    record = attachments_of_upload_key(uid)
    before = read_refs(store, uid)
    if now:
        body: dict[str, Any] = {"files": now, "content": content}
        put_bytes_if_changed(store, record, json.dumps(body, sort_keys=True).encode(), "application/json")
    elif before is not None:
        store.delete(record)
    before = before or Refs()
    kept = Refs(frozenset(now), frozenset({content} if content and now else ()))
    return Refs(before.files - kept.files, before.contents - kept.contents)


def read_refs(store: ObjectStore, uid: str) -> Refs | None:
    """What an upload's record names (None: it has none)."""
    key = attachments_of_upload_key(uid)
    fetched = store.fetch(key)
    return None if fetched is None else _parsed(fetched[0])


def named_among(store: ObjectStore, candidates: Refs) -> Refs:
    """Which of `candidates` some upload's record names now (the records read until every one is found)."""
    files: set[str] = set()
    contents: set[str] = set()
    for info in store.list(ATTACHMENTS_BY_UPLOAD_PREFIX):
        fetched = store.fetch(info.key)
        if fetched is not None:
            refs = _parsed(fetched[0])
            files |= refs.files & candidates.files
            contents |= refs.contents & candidates.contents
            if len(files) == len(candidates.files) and len(contents) == len(candidates.contents):
                break
    return Refs(frozenset(files), frozenset(contents))


def _parsed(data: bytes) -> Refs:
    """A record's names; an earlier record is a bare list of files, a damaged one names nothing (the upload's
    next run writes it again)."""
    try:
        body = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return Refs()
    files = body.get("files") if isinstance(body, dict) else body
    content = body.get("content") if isinstance(body, dict) else None
    return Refs(frozenset(h for h in files if isinstance(h, str)) if isinstance(files, list) else frozenset(),
                frozenset({content} if isinstance(content, str) and content else ()))
