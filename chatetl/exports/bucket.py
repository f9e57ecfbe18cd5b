"""Export files in the object store: one set per conversation, the newest state wins, nothing stale stays.

Every conversation has a small manifest at `exports/_conversations/<sha256(key)[:32]>.json`
listing its state version and its files per format. Publishing a conversation:

- when the bucket already holds a newer state of it (an older upload processed later, a
  backfill), nothing is written: exports never regress. "Newer" is model.state_order (update
  time, then format, then state hash, all kept in the manifest), the graph's, so two states of one
  time give the same winner whichever is published first;
- otherwise its files are written (a file whose bytes are unchanged is skipped, so a rerun
  writes nothing), and the files of the formats just written that the manifest lists but
  this state no longer has (the title changed, a branch went away) are deleted; files of
  formats not written this time are left alone.

`retract_conversation` removes a conversation's files and manifest (no upload holds it any more,
or another upload's state is to be published in its place: chatetl.retractions).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from chatetl.exports.attachments import publish_files
from chatetl.exports.files import ExportFile
from chatetl.layout import EXPORTS_PREFIX, export_manifest_key, export_prefix
from chatetl.model import Conversation, StateOrder, order_of, state_hash, state_order, state_version
from chatetl.storage import Held, ObjectStore, put_bytes_if_changed


@dataclass
class PublishResult:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped_older: bool = False
    manifest: tuple[str, StateOrder] | None = None  # the manifest after the call: its ETag and state


def read_manifest(store: ObjectStore, conversation_key: str) -> dict[str, Any] | None:
    return _read_manifest(store, conversation_key)[0]


def _read_manifest(store: ObjectStore, conversation_key: str) -> tuple[dict[str, Any] | None, str | None]:
    """The manifest (None: none, or damaged) and its ETag."""
    fetched = store.fetch(export_manifest_key(conversation_key))
    if fetched is None:
        return None, None
    raw, etag = fetched
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None, etag  # a damaged manifest is rewritten
    return (data if isinstance(data, dict) and data.get("key") == conversation_key else None), etag


def manifest_state(store: ObjectStore, conversation_key: str) -> StateOrder | None:
    """The state the conversation's manifest holds (None: no manifest, or a damaged one)."""
    manifest = read_manifest(store, conversation_key)
    return _stored_order(manifest) if manifest is not None else None


def publish_conversation(store: ObjectStore, conv: Conversation, files: list[ExportFile], formats: Iterable[str]) -> PublishResult:
    result = PublishResult()
    version, digest = state_version(conv), state_hash(conv)
    old, etag = _read_manifest(store, conv.key)
    if old is not None and _stored_order(old) > state_order(conv, digest):
        result.skipped_older = True
        result.manifest = (etag or "", _stored_order(old))
        return result
    formats = list(formats)
    new: dict[str, list[str]] = {f: [] for f in formats}
    # a conversation without a manifest has no files yet (its manifest is written after them): none is asked for
    held: Held | None = Held.ASK if etag is not None else None
    for f in files:
        key = EXPORTS_PREFIX + f.path
        new.setdefault(f.format, []).append(key)
        (result.written if put_bytes_if_changed(store, key, f.data, f.content_type, held) else result.unchanged).append(key)
    result.written += publish_files(store, conv)  # (the attachments its files link, once each)
    old_files: dict[str, list[str]] = (old or {}).get("files") or {}
    for fmt in formats:
        for key in old_files.get(fmt, []):
            if key not in new[fmt] and key.startswith(export_prefix(fmt)):
                store.delete(key)
                result.deleted.append(key)
    merged = {fmt: sorted(keys) for fmt, keys in old_files.items() if fmt not in new}
    merged.update({fmt: sorted(keys) for fmt, keys in new.items() if keys})
    manifest = {"key": conv.key, "state_version": version, "state_source": conv.source.value, "state_hash": digest,
                "files": dict(sorted(merged.items()))}
    data = (json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode("utf-8", "replace")
    put_bytes_if_changed(store, export_manifest_key(conv.key), data, "application/json", etag)
    result.manifest = (hashlib.md5(data, usedforsecurity=False).hexdigest(), state_order(conv, digest))
    return result


def _stored_order(manifest: dict[str, Any]) -> StateOrder:
    """A manifest's state in model.state_order (one written before it kept source and hash: its time alone,
    so any state of that time may replace it)."""
    digest = manifest.get("state_hash")
    return order_of(float(manifest.get("state_version", 0.0)), manifest.get("state_source"), str(digest) if digest else None)


def retract_conversation(store: ObjectStore, conversation_key: str) -> list[str]:
    """Delete every file the conversation's manifest lists, then the manifest; the keys deleted."""
    manifest = read_manifest(store, conversation_key)
    deleted: list[str] = []
    for fmt, keys in ((manifest or {}).get("files") or {}).items():
        for key in keys:
            if key.startswith(export_prefix(fmt)) and store.head(key) is not None:
                store.delete(key)
                deleted.append(key)
    key = export_manifest_key(conversation_key)
    if store.head(key) is not None:
        store.delete(key)
        deleted.append(key)
    return deleted
