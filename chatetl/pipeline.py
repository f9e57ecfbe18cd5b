"""The stages of the data's path, as plain functions the CLI and the Dagster assets both call.

raw/...                    uploads (any S3 client drops them here)
normalized/<table>/date=D/<upload-id>.parquet   conversations and messages, per upload
quarantine/date=D/<upload-id>/...               what could not be read, with errors.json
rag/documents/date=D/<upload-id>.jsonl          one Document per conversation
rag/chunks/date=D/<upload-id>.jsonl             its chunks for retrieval
exports/<format>/<platform>-<title>-<date>-<id>.<ext>   one file per conversation and format
exports/sharegpt-jsonl/sharegpt-D.jsonl, exports/zip/chats-D.zip   per partition

Every key is derived from the upload's key, so a rerun overwrites instead of adding,
and a write whose bytes are unchanged is skipped (same object, same ETag).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from chatetl.chunks import ChunkOptions, Embedder
from chatetl.exports.filenames import slug
from chatetl.exports.partition import ExportPlan, ExportsResult, write_partition_exports
from chatetl.rag import DocumentsResult, write_partition_documents
from chatetl.selection import VISIBLE, ContentOptions
from chatetl.graph.load import LoadSummary, load_conversations
from chatetl.model import Conversation
from chatetl.normalize import TableWriter, iter_conversations
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl import uploads
from chatetl.storage import ObjectInfo, ObjectStore

RAW_PREFIX = "raw/"
NORMALIZED_PREFIX = "normalized/"
QUARANTINE_PREFIX = "quarantine/"
RAG_PREFIX = "rag/documents/"
EXPORTS_PREFIX = "exports/"
TABLES = ("conversations", "messages")


def upload_id(key: str) -> str:
    """A file-name-safe, unique, stable id for an upload key."""
    stem = key[len(RAW_PREFIX):] if key.startswith(RAW_PREFIX) else key
    return f"{slug(stem.replace('/', '-'), 60)}-{hashlib.sha256(key.encode()).hexdigest()[:10]}"


def partition_of(info: ObjectInfo) -> str:
    """Uploads belong to the day (UTC) their current version arrived in the bucket."""
    return uploads.partition_of(info)


def table_key(table: str, day: str, uid: str) -> str:
    return f"{NORMALIZED_PREFIX}{table}/date={day}/{uid}.parquet"


def _md5(path: str | Path) -> str:
    h = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1024 * 1024), b""):
            h.update(chunk)
    return h.hexdigest()


def put_if_changed(store: ObjectStore, key: str, path: str | Path, content_type: str | None = None) -> bool:
    """Write unless the object already holds exactly these bytes; True when written."""
    old = store.head(key)
    if old is not None and old.size == os.path.getsize(path) and old.etag == _md5(path):
        return False
    store.put_file(key, path, content_type)
    return True


def put_bytes_if_changed(store: ObjectStore, key: str, data: bytes, content_type: str | None = None) -> bool:
    old = store.head(key)
    if old is not None and old.size == len(data) and old.etag == hashlib.md5(data, usedforsecurity=False).hexdigest():
        return False
    store.put_bytes(key, data, content_type)
    return True


@dataclass
class NormalizeResult:
    upload: str
    upload_id: str
    report: ReadReport
    conversations: int = 0
    messages: int = 0
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    quarantined: list[str] = field(default_factory=list)
    bytes_written: int = 0


def upload_entry(store: ObjectStore, info: ObjectInfo) -> Entry:
    return Entry(name=store.uri(info.key), opener=lambda: store.open(info.key), size=info.size)


def normalize_upload(store: ObjectStore, info: ObjectInfo, day: str, workdir: str | Path | None = None) -> NormalizeResult:
    """Read one upload (streamed) into the normalized tables of its partition; quarantine what fails."""
    uid = upload_id(info.key)
    report = ReadReport()
    result = NormalizeResult(upload=info.key, upload_id=uid, report=report)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        paths = {t: Path(tmp, f"{t}.parquet") for t in TABLES}
        with TableWriter(paths["conversations"], paths["messages"]) as writer:
            for conv in read_entry(upload_entry(store, info), report):
                writer.add(conv, upload_key=info.key)
        result.conversations, result.messages = writer.conversations, writer.messages
        for table in TABLES:
            key = table_key(table, day, uid)
            if put_if_changed(store, key, paths[table], "application/vnd.apache.parquet"):
                result.written.append(key)
                result.bytes_written += paths[table].stat().st_size
            else:
                result.unchanged.append(key)
    result.quarantined = quarantine(store, info, day, uid, report)
    return result


def quarantine(store: ObjectStore, info: ObjectInfo, day: str, uid: str, report: ReadReport) -> list[str]:
    """Keep the bad parts: each isolated bad record, or the whole upload when nothing in it could be read."""
    prefix = f"{QUARANTINE_PREFIX}date={day}/{uid}/"
    if not report.errors:
        store.delete_prefix(prefix)  # a replaced upload that now reads cleanly leaves no stale quarantine
        return []
    keys = []
    for i, err in enumerate(report.errors):
        if err.raw is not None:
            key = f"{prefix}part-{i:05d}.bin"
            put_bytes_if_changed(store, key, err.raw)
            keys.append(key)
    if report.conversations == 0:
        key = f"{prefix}upload"
        with tempfile.TemporaryDirectory() as tmp:
            put_if_changed(store, key, store.download(info.key, Path(tmp, "upload")))
        keys.append(key)
    errors = {"upload": info.key, "etag": info.etag, "errors": [e.to_dict() for e in report.errors]}
    key = f"{prefix}errors.json"
    put_bytes_if_changed(store, key, json.dumps(errors, indent=2, sort_keys=True).encode(), "application/json")
    keys.append(key)
    return keys


def partition_table_pairs(store: ObjectStore, day: str) -> list[tuple[str, str]]:
    """(conversations key, messages key) of every upload normalized into a partition."""
    conv_prefix = f"{NORMALIZED_PREFIX}conversations/date={day}/"
    pairs = []
    for info in store.list(conv_prefix):
        uid = info.key[len(conv_prefix):].removesuffix(".parquet")
        msg_key = table_key("messages", day, uid)
        pairs.append((info.key, msg_key))
    return pairs


def iter_partition(store: ObjectStore, day: str) -> Iterator[tuple[str, Iterator[tuple[Conversation, str | None]]]]:
    """For each upload of a partition: (upload id, stream of its normalized conversations)."""
    for conv_key, msg_key in partition_table_pairs(store, day):
        uid = conv_key.rsplit("/", 1)[-1].removesuffix(".parquet")
        with tempfile.TemporaryDirectory() as tmp:
            c_path = store.download(conv_key, Path(tmp, "c.parquet"))
            m_path = store.download(msg_key, Path(tmp, "m.parquet"))
            yield uid, iter_conversations(c_path, m_path)


def load_graph_partition(store: ObjectStore, driver: Any, day: str, database: str | None = None, deep: bool = False) -> LoadSummary:
    total = LoadSummary()
    for _uid, convs in iter_partition(store, day):
        total.add(load_conversations(driver, (c for c, _ in convs), database=database, deep=deep))
    return total


def write_documents_partition(
    store: ObjectStore,
    driver: Any | None,
    day: str,
    database: str | None = None,
    *,
    content: ContentOptions = VISIBLE,
    chunking: ChunkOptions | None = None,
    embedder: Embedder | None = None,
) -> DocumentsResult:
    """Documents and chunks of every upload of the partition: rag/documents/, rag/chunks/ and (with a driver) Neo4j."""
    return write_partition_documents(
        store, driver, day, iter_partition(store, day), database=database, content=content, chunking=chunking, embedder=embedder
    )


def write_exports_partition(store: ObjectStore, day: str, plan: ExportPlan | None = None, content: ContentOptions = VISIBLE) -> ExportsResult:
    """Every conversation of the partition in every chosen format, the training file and the zip (see chatetl.exports.partition)."""
    return write_partition_exports(store, day, iter_partition(store, day), plan, content)
