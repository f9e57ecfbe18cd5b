"""Export files in the object store: one set per conversation, the newest state wins, nothing stale stays.

Every conversation has a small manifest at `exports/_conversations/<sha256(key)[:32]>.json`
listing its state version and its files per format. Publishing a conversation:

- when the bucket already holds a newer state of it (an older upload processed later, a
  backfill), nothing is written: exports never regress;
- otherwise its files are written (a file whose bytes are unchanged is skipped, so a rerun
  writes nothing), and the files of the formats just written that the manifest lists but
  this state no longer has (the title changed, a branch went away) are deleted; files of
  formats not written this time are left alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from chatetl.exports.files import ExportFile
from chatetl.layout import EXPORTS_PREFIX, export_manifest_key, export_prefix
from chatetl.model import Conversation, state_version
from chatetl.storage import ObjectStore, put_bytes_if_changed


@dataclass
class PublishResult:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    skipped_older: bool = False


def read_manifest(store: ObjectStore, conversation_key: str) -> dict[str, Any] | None:
    key = export_manifest_key(conversation_key)
    if store.head(key) is None:
        return None
    try:
        data = json.loads(store.get_bytes(key))
    except (ValueError, UnicodeDecodeError):
        return None  # a damaged manifest is rewritten
    return data if isinstance(data, dict) and data.get("key") == conversation_key else None


def publish_conversation(store: ObjectStore, conv: Conversation, files: list[ExportFile], formats: Iterable[str]) -> PublishResult:
    result = PublishResult()
    version = state_version(conv)
    old = read_manifest(store, conv.key)
    if old is not None and float(old.get("state_version", 0.0)) > version:
        result.skipped_older = True
        return result
    formats = list(formats)
    new: dict[str, list[str]] = {f: [] for f in formats}
    for f in files:
        key = EXPORTS_PREFIX + f.path
        new.setdefault(f.format, []).append(key)
        (result.written if put_bytes_if_changed(store, key, f.data, f.content_type) else result.unchanged).append(key)
    old_files: dict[str, list[str]] = (old or {}).get("files") or {}
    for fmt in formats:
        for key in old_files.get(fmt, []):
            if key not in new[fmt] and key.startswith(export_prefix(fmt)):
                store.delete(key)
                result.deleted.append(key)
    merged = {fmt: sorted(keys) for fmt, keys in old_files.items() if fmt not in new}
    merged.update({fmt: sorted(keys) for fmt, keys in new.items() if keys})
    manifest = {"key": conv.key, "state_version": version, "files": dict(sorted(merged.items()))}
    data = (json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode("utf-8", "replace")
    put_bytes_if_changed(store, export_manifest_key(conv.key), data, "application/json")
    return result
