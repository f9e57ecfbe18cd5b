"""One upload through the normalize stage: read it (streamed) into its normalized tables, keep what failed.

An upload's outputs are `normalized/<table>/date=D/<upload-id>.parquet` and, when parts of it
could not be read, `quarantine/date=D/<upload-id>/` (see chatetl.layout). Rewriting the same
bytes is skipped, so normalizing an upload again changes nothing in the bucket.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from chatetl.layout import TABLES, quarantine_prefix, table_key, upload_id
from chatetl.readers import Entry, ReadReport, read_entry
from chatetl.readers.archive import expand
from chatetl.readers.parallel import read_into, resolve_workers
from chatetl.storage import ObjectInfo, ObjectStore, put_bytes_if_changed, put_if_changed
from chatetl.tables import TableWriter


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


def normalize_upload(
    store: ObjectStore, info: ObjectInfo, day: str, workdir: str | Path | None = None, workers: int | None = None
) -> NormalizeResult:
    """Read one upload (streamed) into the normalized tables of its partition; quarantine what fails.

    `workers`: processes converting records (chatetl.readers.parallel); None: its automatic choice
    (this process alone while parallel.AUTO is off; with it on, both cores for an upload of at least
    AUTO_MIN_BYTES). Each process stays within the step's memory; the tables and the report are
    the same either way."""
    uid = upload_id(info.key)
    report = ReadReport()
    result = NormalizeResult(upload=info.key, upload_id=uid, report=report)
    n = resolve_workers(workers, info.size)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        paths = {t: Path(tmp, f"{t}.parquet") for t in TABLES}
        with TableWriter(paths["conversations"], paths["messages"]) as writer:
            if n == 1:
                for conv in read_entry(upload_entry(store, info), report):
                    writer.add(conv, upload_key=info.key)
            else:
                read_into(writer, expand(upload_entry(store, info), report), report, n, upload_key=info.key)
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


