"""Normalizing a day's uploads, one group (chatetl.ingest.groups: an uploader's) or all, skipping what is done.

For each upload of the group (as it is in the bucket now):
- unchanged since its group's ledger recorded it (same ETag, same parser, outputs in place): skipped;
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

from chatetl.attachments.sweep import release as release_attachments
from chatetl.ingest.groups import uploader_of
from chatetl.ingest.index import current_state, partition_of
from chatetl.ingest.ledger import (
    Ledger,
    LedgerEntry,
    day_uploaders,
    forget_location,
    parser_fingerprint,
    read_location,
    write_location,
)
from chatetl.ingest.states import summary_rows
from chatetl.ingest.upload import NormalizeResult, normalize_upload
from chatetl.layout import (
    KEEPSAKE_TABLES,
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
    rows_written: Counter[str] = field(default_factory=Counter)  # table -> rows in the files written
    sources: dict[str, SourceCounts] = field(default_factory=lambda: defaultdict(SourceCounts))
    errors: list[str] = field(default_factory=list)
    error_reasons: Counter[str] = field(default_factory=Counter)
    failed_uploads: list[str] = field(default_factory=list)  # processed, nothing readable
    quarantined: list[str] = field(default_factory=list)
    drift: Counter[str] = field(default_factory=Counter)
    records_skipped: Counter[str] = field(default_factory=Counter)
    formats: Counter[str] = field(default_factory=Counter)
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


def _state(row: dict[str, Any]) -> tuple[Any, ...]:
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
    for key in output_keys(day, uid) + [table_key(t, day, uid) for t in KEEPSAKE_TABLES] + list(document_keys(day, uid)):
        if store.head(key) is not None:
            store.delete(key)
            removed.append(key)
    prefix = f"{QUARANTINE_PREFIX}date={day}/{uid}/"
    removed += [o.key for o in store.list(prefix)]
    store.delete_prefix(prefix)
    return removed + release_attachments(store, uid)  # (the files no other upload refers to leave with it)


def ingest_partition(
    store: ObjectStore,
    day: str,
    uploads: list[ObjectInfo],
    *,
    uploader: str | None = None,
    reprocess: bool = False,
    warn: Callable[[str], None] = log.warning,
) -> PartitionIngest:
    """Normalize the day's uploads, skipping those their group's ledger has seen unchanged: the group of
    `uploader` (chatetl.ingest.groups), or every group of the day (None: each upload's, each ledger's)."""
    started = time.monotonic()
    out = PartitionIngest(day)
    outputs_now = {o.key: o.etag for t in TABLES for o in store.list(f"{NORMALIZED_PREFIX}{t}/date={day}/")}
    uploaders = [uploader] if uploader is not None else sorted({uploader_of(u.key) for u in uploads} | day_uploaders(store, day))
    for one in uploaders:
        mine = [u for u in uploads if uploader_of(u.key) == one]
        _ingest_group(store, Ledger.load(store, day, one), mine, outputs_now, out, reprocess, warn)
    out.seconds = time.monotonic() - started
    return out


def _ingest_group(store: ObjectStore, ledger: Ledger, uploads: list[ObjectInfo], outputs_now: dict[str, str], out: PartitionIngest,
                  reprocess: bool, warn: Callable[[str], None]) -> None:
    """One group's uploads normalized into its day, `out` counting what it did."""
    day = ledger.day
    todo = _uploads_of_day(store, day, uploads, ledger, out, warn)
    out.uploads += len(todo)
    last_save = time.monotonic()
    for info in todo:
        entry = ledger.entries.get(info.key)
        if not reprocess and ledger.is_current(info.key, info.etag, outputs_now):
            assert entry is not None
            _count_skipped(out, info.key, entry)
            continue
        ledger.record(_ingest_upload(store, day, info, outputs_now, out, warn))
        if time.monotonic() - last_save > LEDGER_SAVE_SECONDS:
            ledger.save(store)  # a run cut short keeps what it finished
            last_save = time.monotonic()
    ledger.save(store)
    _preview_from_skipped(store, ledger, out)


def _uploads_of_day(store: ObjectStore, day: str, uploads: list[ObjectInfo], ledger: Ledger, out: PartitionIngest,
                    warn: Callable[[str], None]) -> list[ObjectInfo]:
    """The uploads whose current version belongs to the day; those the ledger knows that were deleted from raw/ or
    replaced on another day have their outputs of the day retracted (and leave the ledger)."""
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
            if info is None:  # (the sensor finds deletions by these records: chatetl.ingest.deletions)
                forget_location(store, ledger.entries[key].upload_id, day)
            ledger.drop(key)
            out.retracted[key] = why
            warn(f"{key}: {why}; its outputs of {day} were removed")
    return todo


def _count_skipped(out: PartitionIngest, key: str, entry: LedgerEntry) -> None:
    """An upload skipped as unchanged, counted from what the ledger recorded of it."""
    out.skipped.append(key)
    out.conversations_in_skipped += entry.conversations
    out.unchanged.extend(entry.outputs)
    for source, n in (entry.sources or {"unknown": entry.conversations}).items():
        out.sources[source].uploads += 1
        out.sources[source].uploads_skipped += 1
        out.sources[source].skipped += n


def _ingest_upload(store: ObjectStore, day: str, info: ObjectInfo, outputs_now: dict[str, str], out: PartitionIngest,
                   warn: Callable[[str], None]) -> LedgerEntry:
    """One upload normalized into the day (its outputs of an earlier day retracted when it was replaced here), what
    it did counted in `out`: the ledger's entry for it."""
    uid = upload_id(info.key)
    conv_key = table_key("conversations", day, uid)
    previous = {r["conversation_key"]: r for r in _read_states(store, conv_key)} if conv_key in outputs_now else {}
    where = read_location(store, uid)
    if where and where.get("day") not in (None, day) and where.get("key") == info.key:
        # the upload was replaced on this later day: its outputs leave the earlier one
        retract(store, where["day"], uid, info.key, f"replaced: moved to partition {day}", day)
        out.retracted[info.key] = f"replaced: moved here from partition {where['day']}"

    result = normalize_upload(store, info, day, previous=previous)
    write_location(store, uid, info.key, day, info.etag)
    _warn_of_states(info.key, result, out, warn)
    _count_result(out, info, result)
    per_source = _compare_with_previous(store, day, info.key, result.rows, previous, out)

    outputs = {}
    for key in output_keys(day, uid):
        head = store.head(key)
        if head is not None:
            outputs[key] = head.etag
    return LedgerEntry(
        key=info.key,
        etag=info.etag,
        size=info.size,
        upload_id=uid,
        parser=parser_fingerprint(),
        conversations=result.conversations,
        messages=result.messages,
        errors=len(result.report.errors),
        outputs=outputs,
        sources=dict(per_source),
        quarantined=len(result.quarantined),
        drift=dict(sorted(result.report.drift.items())),
    )


def _warn_of_states(upload: str, result: NormalizeResult, out: PartitionIngest, warn: Callable[[str], None]) -> None:
    """A warning (and a line in `out`) for each conversation reduced to one state in the upload's tables."""
    for key, n in result.duplicates.items():
        warn(f"{upload}: {n} states of conversation {key} (the same id twice): kept the newest "
             f"(update time, then format, then state hash), the same one in every output")
        out.duplicates.append(f"{upload}: {key}")
    for key in result.kept_newer:
        warn(f"{upload}: its new version holds an older state of conversation {key} than the version it "
             f"replaced: kept the newer state (an older upload never rolls an output back)")
        out.kept_newer.append(f"{upload}: {key}")


def _count_result(out: PartitionIngest, info: ObjectInfo, result: NormalizeResult) -> None:
    """What normalizing one upload read, wrote and reported, added to the day's counts."""
    report = result.report
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


def _compare_with_previous(store: ObjectStore, day: str, upload: str, rows: list[dict[str, Any]],
                           previous: dict[str, dict[str, Any]], out: PartitionIngest) -> Counter[str]:
    """The upload's conversations against its previous version's (new, updated, unchanged, removed: counted per
    source, the preview filled); those no longer in it recorded for the later stages to retract. Its conversations
    per source. `previous` is emptied of the conversations still there."""
    per_source: Counter[str] = Counter()
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
            out.preview.append({k: row.get(k) for k in ("platform", "title", "message_count", "updated_at")} | {"upload": upload})
    for old in previous.values():
        out.sources[old["source"]].removed += 1
    if previous:  # no longer in this upload: the later stages take them out (or another upload's state)
        record_retraction(store, day, upload, "no longer in the upload's new version", previous)
    for source in seen_sources or {"(nothing readable)"}:
        out.sources[source].uploads += 1
    return per_source


def _preview_from_skipped(store: ObjectStore, ledger: Ledger, out: PartitionIngest, max_files: int = 3) -> None:
    """A rerun that skipped everything still previews what the day holds."""
    for key in [k for k in out.skipped if k in ledger.entries][:max_files]:
        if len(out.preview) >= PREVIEW_ROWS:
            return
        entry = ledger.entries[key]
        conv_key = table_key("conversations", out.day, entry.upload_id)
        for row in _read_states(store, conv_key)[: PREVIEW_ROWS - len(out.preview)]:
            out.preview.append({k: row.get(k) for k in ("platform", "title", "message_count", "updated_at")} | {"upload": key})
