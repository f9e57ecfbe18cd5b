"""Normalizing one daily partition: every upload of the day, skipping what is already done.

For each upload of the day (as it is in the bucket now):
- unchanged since the ledger recorded it (same ETag, same parser, outputs in place): skipped;
- otherwise read and written to `normalized/<table>/date=D/<upload-id>.parquet` (bad parts to
  quarantine), compared with what the same upload gave last time (conversations new,
  updated, unchanged, removed), and recorded in the ledger.
Uploads the ledger knows but whose current version belongs elsewhere (replaced on a later
day) or that were deleted from raw/ have their outputs of this day retracted, so each
upload's rows live in exactly one partition. What left is recorded (chatetl.retractions: the
conversations of the retracted outputs, and those a new version of an upload no longer holds),
so the graph, documents and exports stages take them out too, or write the state another upload
still holds.

Two states of one conversation in one upload (the same id twice in a file, or in two files of
a zip) are reduced to one in its tables, the winner of model.state_order, with a warning:
every later stage then sees the same pick (chatetl.ingest.states, before the tables are put).
"""

from __future__ import annotations

import logging
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chatetl.ingest.index import current_state, partition_of
from chatetl.ingest.ledger import (
    Ledger,
    LedgerEntry,
    parser_fingerprint,
    read_location,
    write_location,
)
from chatetl.ingest.states import summary_rows
from chatetl.ingest.upload import normalize_upload
from chatetl.layout import (
    NORMALIZED_PREFIX,
    QUARANTINE_PREFIX,
    TABLES,
    document_keys,
    table_key,
    upload_id,
)
from chatetl.retractions import record_retraction
from chatetl.storage import ObjectInfo, ObjectStore
from chatetl.tally import Tally, capped, summed_by

log = logging.getLogger(__name__)

PREVIEW_ROWS = 10
LEDGER_SAVE_SECONDS = 20.0


@dataclass
class SourceCounts(Tally):
    uploads: int = 0
    uploads_skipped: int = 0
    conversations: int = 0  # read from the uploads processed now
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0  # in the upload's previous version, gone from this one
    skipped: int = 0  # in uploads skipped as unchanged
    messages: int = 0


@dataclass
class PartitionIngest(Tally):
    """What normalizing a day did, for the person reading the materialization. Days add up
    (`add`, a run over a range of partitions): the first day's `day`, at most PREVIEW_ROWS rows."""

    day: str
    uploads: int = 0
    processed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    retracted: dict[str, str] = field(default_factory=dict)  # upload key -> why (moved to D / deleted)
    duplicates: list[str] = field(default_factory=list)  # "upload: key": a second state of a conversation in one upload
    kept_newer: list[str] = field(default_factory=list)  # "upload: key": its new version held an older state, the newer kept
    conversations: int = 0  # read from the uploads processed now
    messages: int = 0
    conversations_in_skipped: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    rows_written: Counter = field(default_factory=Counter)  # table -> rows in the files written
    sources: dict[str, SourceCounts] = field(default_factory=lambda: defaultdict(SourceCounts))
    errors: list[str] = field(default_factory=list)
    error_reasons: Counter = field(default_factory=Counter)
    failed_uploads: list[str] = field(default_factory=list)  # processed, nothing readable
    quarantined: list[str] = field(default_factory=list)
    drift: Counter = field(default_factory=Counter)
    records_skipped: Counter = field(default_factory=Counter)
    formats: Counter = field(default_factory=Counter)
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    preview: list[dict[str, Any]] = summed_by(capped(PREVIEW_ROWS), default_factory=list)  # noqa: RUF009
    seconds: float = 0.0

    @property
    def useful(self) -> bool:
        """Some conversation came out of the day (now or in a run whose outputs stand)."""
        return self.conversations + self.conversations_in_skipped > 0



def _read_states(store: ObjectStore, key: str) -> list[dict[str, Any]]:
    """The summary rows (chatetl.ingest.states.SUMMARY_COLUMNS) of a conversations file in the bucket."""
    with tempfile.TemporaryDirectory() as tmp:
        return summary_rows(store.download(key, Path(tmp, "conversations.parquet")))


def _state(row: dict[str, Any]) -> tuple:
    return (row.get("updated_at"), row.get("message_count"), row.get("total_messages"), row.get("title"))


def output_keys(day: str, uid: str) -> list[str]:
    return [table_key(t, day, uid) for t in TABLES]


def _keys_of(store: ObjectStore, key: str) -> list[str]:
    if store.head(key) is None:
        return []
    return [r["conversation_key"] for r in _read_states(store, key)]


def retract(store: ObjectStore, day: str, uid: str, upload: str | None = None, why: str = "", run_day: str | None = None) -> list[str]:
    """Remove one upload's outputs from a day: its normalized rows, quarantine and RAG files; with
    `upload`, its conversations are recorded (under `run_day`) for the later stages to retract."""
    removed = []
    if upload is not None:
        record_retraction(store, run_day or day, upload, why, _keys_of(store, table_key("conversations", day, uid)))
    for key in output_keys(day, uid) + list(document_keys(day, uid)):
        if store.head(key) is not None:
            store.delete(key)
            removed.append(key)
    prefix = f"{QUARANTINE_PREFIX}date={day}/{uid}/"
    removed += [o.key for o in store.list(prefix)]
    store.delete_prefix(prefix)
    return removed


def ingest_partition(
    store: ObjectStore,
    day: str,
    uploads: list[ObjectInfo],
    *,
    reprocess: bool = False,
    warn: Callable[[str], None] = log.warning,
) -> PartitionIngest:
    """Normalize the day's uploads, skipping those the ledger has seen unchanged."""
    started = time.monotonic()
    out = PartitionIngest(day)
    ledger = Ledger.load(store, day)
    outputs_now = {o.key: o.etag for t in TABLES for o in store.list(f"{NORMALIZED_PREFIX}{t}/date={day}/")}

    # the truth is the bucket now: HEAD the day's uploads and whatever the ledger remembers
    keys = sorted({u.key for u in uploads} | set(ledger.entries))
    now = current_state(store, keys)
    todo: list[ObjectInfo] = []
    for key in keys:
        info = now[key]
        if info is not None and partition_of(info) == day:
            todo.append(info)
        elif key in ledger.entries:
            why = "deleted from raw/" if info is None else f"replaced: now in partition {partition_of(info)}"
            retract(store, day, ledger.entries[key].upload_id, key, why, day)
            ledger.drop(key)
            out.retracted[key] = why
            warn(f"{key}: {why}; its outputs of {day} were removed")
    out.uploads = len(todo)

    last_save = time.monotonic()
    for info in todo:
        uid = upload_id(info.key)
        entry = ledger.entries.get(info.key)
        if not reprocess and ledger.is_current(info.key, info.etag, outputs_now):
            assert entry is not None
            out.skipped.append(info.key)
            out.conversations_in_skipped += entry.conversations
            out.unchanged.extend(entry.outputs)
            for source, n in (entry.sources or {"unknown": entry.conversations}).items():
                out.sources[source].uploads += 1
                out.sources[source].uploads_skipped += 1
                out.sources[source].skipped += n
            continue

        conv_key = table_key("conversations", day, uid)
        previous = {r["conversation_key"]: r for r in _read_states(store, conv_key)} if conv_key in outputs_now else {}
        where = read_location(store, uid)
        if where and where.get("day") not in (None, day) and where.get("key") == info.key:
            # the upload was replaced on this later day: its outputs leave the earlier one
            retract(store, where["day"], uid, info.key, f"replaced: moved to partition {day}", day)
            out.retracted[info.key] = f"replaced: moved here from partition {where['day']}"

        result = normalize_upload(store, info, day, previous=previous)
        report = result.report
        write_location(store, uid, info.key, day, info.etag)
        for key, n in result.duplicates.items():
            warn(f"{info.key}: {n} states of conversation {key} (the same id twice): kept the newest "
                 f"(update time, then format, then state hash), the same one in every output")
            out.duplicates.append(f"{info.key}: {key}")
        for key in result.kept_newer:
            warn(f"{info.key}: its new version holds an older state of conversation {key} than the version it "
                 f"replaced: kept the newer state (an older upload never rolls an output back)")
            out.kept_newer.append(f"{info.key}: {key}")
        rows = result.rows
        out.processed.append(info.key)
        out.bytes_read += info.size
        out.bytes_written += result.bytes_written
        out.conversations += result.conversations
        out.messages += result.messages
        if result.written:
            out.rows_written["conversations"] += result.conversations
            out.rows_written["messages"] += result.messages
        out.written += result.written
        out.unchanged += result.unchanged
        out.quarantined += result.quarantined
        out.errors += [str(e) for e in report.errors]
        out.error_reasons.update(e.reason.split(":")[0][:80] for e in report.errors)
        out.drift.update(report.drift)
        out.records_skipped.update(report.skipped)
        out.formats.update(report.formats)
        if result.conversations == 0:
            out.failed_uploads.append(info.key)

        per_source: Counter = Counter()
        seen_sources: set[str] = set()
        for row in rows:
            counts = out.sources[row["source"]]
            seen_sources.add(row["source"])
            per_source[row["source"]] += 1
            counts.conversations += 1
            counts.messages += row.get("total_messages") or 0
            old = previous.pop(row["conversation_key"], None)
            if old is None:
                counts.new += 1
            elif _state(old) == _state(row):
                counts.unchanged += 1
            else:
                counts.updated += 1
            if len(out.preview) < PREVIEW_ROWS:
                out.preview.append({k: row.get(k) for k in ("platform", "title", "message_count", "updated_at")} | {"upload": info.key})
        for old in previous.values():
            out.sources[old["source"]].removed += 1
        if previous:  # no longer in this upload: the later stages take them out (or another upload's state)
            record_retraction(store, day, info.key, "no longer in the upload's new version", previous)
        for source in seen_sources or {"(nothing readable)"}:
            out.sources[source].uploads += 1

        outputs = {}
        for key in output_keys(day, uid):
            head = store.head(key)
            if head is not None:
                outputs[key] = head.etag
        ledger.record(
            LedgerEntry(
                key=info.key,
                etag=info.etag,
                size=info.size,
                upload_id=uid,
                parser=parser_fingerprint(),
                conversations=result.conversations,
                messages=result.messages,
                errors=len(report.errors),
                outputs=outputs,
                sources=dict(per_source),
                quarantined=len(result.quarantined),
            )
        )
        if time.monotonic() - last_save > LEDGER_SAVE_SECONDS:
            ledger.save(store)  # a run cut short keeps what it finished
            last_save = time.monotonic()
    ledger.save(store)
    _preview_from_skipped(store, ledger, out)
    out.seconds = time.monotonic() - started
    return out


def _preview_from_skipped(store: ObjectStore, ledger: Ledger, out: PartitionIngest, max_files: int = 3) -> None:
    """A rerun that skipped everything still previews what the day holds."""
    for key in out.skipped[:max_files]:
        if len(out.preview) >= PREVIEW_ROWS:
            return
        entry = ledger.entries[key]
        conv_key = table_key("conversations", out.day, entry.upload_id)
        for row in _read_states(store, conv_key)[: PREVIEW_ROWS - len(out.preview)]:
            out.preview.append({k: row.get(k) for k in ("platform", "title", "message_count", "updated_at")} | {"upload": key})
