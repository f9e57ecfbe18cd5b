"""One upload through the normalize stage: read it (streamed) into its normalized tables, keep what failed.

An upload's outputs are `normalized/<table>/date=D/<upload-id>.parquet` (the keepsake tables only
when it keeps something beside its chats) and, when parts of it
could not be read, `quarantine/date=D/<upload-id>/` (see chatetl.layout). Rewriting the same
bytes is skipped, so normalizing an upload again changes nothing in the bucket.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatetl.attachments import AttachmentCounts, resolve_attachments
from chatetl.attachments.manifest import upload_digest
from chatetl.ingest.states import keep_newest_states, keep_previous_newer, summary_rows
from chatetl.layout import KEEPSAKE_TABLES, TABLES, quarantine_prefix, table_key, upload_id
from chatetl.normalize import normalize_into
from chatetl.readers import Entry, ReadReport
from chatetl.storage import ObjectInfo, ObjectStore, put_bytes_if_changed, put_if_changed
from chatetl.tables import TableWriter
from chatetl.tables.keepsakes import write_keepsakes


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
    kept_newer: list[str] = field(default_factory=list)  # conversations whose previous, newer state was kept
    duplicates: dict[str, int] = field(default_factory=dict)  # conversation key -> its states in the upload (one kept)
    rows: list[dict[str, Any]] = field(default_factory=list)  # the put conversations table's summary rows
    attachments: AttachmentCounts = field(default_factory=AttachmentCounts)  # attachment rows, those in the export, files stored


def upload_entry(store: ObjectStore, info: ObjectInfo) -> Entry:
    return Entry(name=store.uri(info.key), opener=lambda: store.open(info.key), size=info.size, path=store.local_path(info.key))


def normalize_upload(
    store: ObjectStore,
    info: ObjectInfo,
    day: str,
    workdir: str | Path | None = None,
    workers: int | None = None,
    previous: Mapping[str, Mapping[str, Any]] | None = None,
) -> NormalizeResult:
    """Read one upload (streamed) into the normalized tables of its partition; quarantine what fails.

    `workers`: processes reading it (chatetl.normalize.normalize_into; None: chosen by its size; a big zip
    from the bucket is copied into `workdir` first). Each process stays within the step's memory; the tables
    and the report are the same whatever the processes.

    Before the tables are put, one state per conversation (chatetl.ingest.states, on the local files):
    `previous`, the summary rows of the tables this upload's earlier version left in the bucket, keeps
    the earlier version's newer states (`kept_newer`); one conversation held twice keeps its winner
    (`duplicates`). `rows` are the put table's summary rows, read before it leaves local disk."""
    uid = upload_id(info.key)
    report = ReadReport()
    result = NormalizeResult(upload=info.key, upload_id=uid, report=report)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        paths = {t: Path(tmp, f"{t}.parquet") for t in TABLES}
        with TableWriter(paths["conversations"], paths["messages"]) as writer:
            normalize_into(writer, [upload_entry(store, info)], report, workers, upload_key=info.key, workdir=tmp)
        result.conversations, result.messages = writer.conversations, writer.messages
        result.attachments = resolve_attachments(store, upload_entry(store, info), uid, paths, report, Path(tmp),
                                                 upload_digest(info.etag, info.size))
        if previous:
            result.kept_newer = keep_previous_newer(store, day, uid, paths, previous, Path(tmp))
        result.duplicates = keep_newest_states(paths, Path(tmp))
        result.rows = summary_rows(paths["conversations"])
        for table in TABLES:
            key = table_key(table, day, uid)
            if put_if_changed(store, key, paths[table], "application/vnd.apache.parquet"):
                result.written.append(key)
                result.bytes_written += paths[table].stat().st_size
            else:
                result.unchanged.append(key)
        _put_keepsakes(store, result, day, uid, write_keepsakes(report.kept, tmp, upload_key=info.key, arrived_at=info.last_modified))
    result.quarantined = quarantine(store, info, day, uid, report)
    return result


def _put_keepsakes(store: ObjectStore, result: NormalizeResult, day: str, uid: str, paths: Mapping[str, Path]) -> None:
    """The upload's keepsake tables put beside its chats; a table it no longer has (a replaced upload) removed."""
    for table in KEEPSAKE_TABLES:
        key = table_key(table, day, uid)
        if table not in paths:
            if store.head(key) is not None:
                store.delete(key)
        elif put_if_changed(store, key, paths[table], "application/vnd.apache.parquet"):
            result.written.append(key)
            result.bytes_written += paths[table].stat().st_size
        else:
            result.unchanged.append(key)


def quarantine(store: ObjectStore, info: ObjectInfo, day: str, uid: str, report: ReadReport) -> list[str]:
    """Keep the bad parts: each isolated bad record, or the whole upload when nothing in it could be read."""
    prefix = quarantine_prefix(day, uid)
    if not report.errors and not report.warnings:
        store.delete_prefix(prefix)  # a replaced upload that now reads cleanly leaves no stale quarantine
        return []
    keys = []
    for i, err in enumerate(report.errors):
        if err.raw is not None:
            key = f"{prefix}part-{i:05d}.bin"
            put_bytes_if_changed(store, key, err.raw)
            keys.append(key)
    for i, warning in enumerate(report.warnings):  # (a cut last line ...: kept, though nothing failed)
        if warning.raw is not None:
            key = f"{prefix}warning-{i:05d}.bin"
            put_bytes_if_changed(store, key, warning.raw)
            keys.append(key)
    if report.conversations == 0 and report.errors:
        key = f"{prefix}upload"
        with tempfile.TemporaryDirectory() as tmp:
            put_if_changed(store, key, store.download(info.key, Path(tmp, "upload")))
        keys.append(key)
    errors = {"upload": info.key, "etag": info.etag, "errors": [e.to_dict() for e in report.errors],
              "warnings": [w.to_dict() for w in report.warnings]}
    key = f"{prefix}errors.json"
    put_bytes_if_changed(store, key, json.dumps(errors, indent=2, sort_keys=True).encode(), "application/json")
    keys.append(key)
    return keys


