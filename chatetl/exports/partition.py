"""The exports stage of a partition: every conversation of every upload into the chosen formats.

    exports/<format>/<platform>-<title>-<date>-<id8>.<ext>   one file per conversation and format
    exports/sharegpt-jsonl/sharegpt-<day>.jsonl               the partition's ShareGPT training file
    exports/zip/chats-<day>.zip                               the partition's bundle of the chosen formats
    exports/_conversations/<hash>.json                        per conversation: its state and files
    exports/_archive/date=<day>.json, exports/archive/index.html   the archive's rows, its page (`archive`)

Per-conversation files follow newest-wins across partitions (see `bucket`); the training
file, the zip and the archive rows hold each conversation of the partition once, and only in the
state its manifest holds (model.state_order, across partitions): a conversation whose newer
state another partition published is left out, never shown older. `write_day_exports` first applies
the day's retractions (chatetl.retractions): the files of a conversation no upload holds go, and
the partitions still holding one are exported again, their state published as the winner. The archive page covers the whole bucket: each partition writes its rows, and the
page is rebuilt from every partition's (`archive.write_archive`). A rerun writes no byte that is
already there.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from chatetl.exports.archive import (
    ARCHIVE,
    NewestEntries,
    archive_entry,
    render_archive,
    write_archive,
    write_day_rows,
)
from chatetl.exports.bucket import publish_conversation, retract_conversation
from chatetl.exports.files import (
    ExportCollector,
    conversation_files,
    temporary_collector,
    training_lines,
)
from chatetl.exports.formats import (
    ALL_FORMATS,
    PER_CONVERSATION,
    TRAINING,
    parse_formats,
    with_needed,
)
from chatetl.exports.meta import export_views
from chatetl.layout import bundle_key, export_prefix, training_key
from chatetl.model import Conversation
from chatetl.retractions import (
    holder_days,
    holders,
    mark_applied,
    pending,
    retracted_keys,
)
from chatetl.selection import VISIBLE, ContentOptions
from chatetl.settings import SettingError, Settings
from chatetl.storage import ObjectStore, put_if_changed
from chatetl.tables import iter_partition
from chatetl.tally import Tally

DEFAULT_BUNDLE = ("chat-export-json", "chat-export-md", "html")


class ExportPlan(BaseModel):
    """Which formats to write, and which go into the partition's zip (none: no zip)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    formats: tuple[str, ...] = ALL_FORMATS
    bundle_formats: tuple[str, ...] = DEFAULT_BUNDLE

    @field_validator("formats", "bundle_formats")
    @classmethod
    def _known_with_needed(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [n for n in value if n not in ALL_FORMATS]
        if unknown:
            raise ValueError(f"unknown export format(s): {', '.join(unknown)}")
        return with_needed(value)  # archive brings html

    @classmethod
    def from_settings(cls, settings: Settings) -> ExportPlan:
        """`CHATETL_EXPORT_FORMATS` (default all) and `CHATETL_EXPORT_ZIP_FORMATS` (default chat-export-json,chat-export-md,html;
        `none` for no zip); an unknown format name is an error naming the variable."""
        try:
            formats = parse_formats(settings.export_formats)
        except ValueError as exc:
            raise SettingError(f"CHATETL_EXPORT_FORMATS={settings.export_formats!r}: {exc}") from None
        raw_zip = settings.export_zip_formats or ""
        try:
            bundle = () if raw_zip.lower() == "none" else parse_formats(raw_zip or None, DEFAULT_BUNDLE)
        except ValueError as exc:
            raise SettingError(f"CHATETL_EXPORT_ZIP_FORMATS={raw_zip!r}: {exc}") from None
        return cls(formats=formats, bundle_formats=bundle)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ExportPlan:
        return cls.from_settings(Settings.from_env(environ))

    @property
    def file_formats(self) -> tuple[str, ...]:
        return tuple(f for f in self.formats if f in PER_CONVERSATION)

    @property
    def rendered_formats(self) -> tuple[str, ...]:
        """Per-conversation formats rendered: the written ones and the zip's."""
        return tuple(f for f in PER_CONVERSATION if f in self.formats or f in self.bundle_formats)


@dataclass
class ExportsResult(Tally):
    """What exporting a partition did; results add up (`add`) over days (the keys of the first day that has one)."""

    conversations: int = 0
    empty: int = 0  # conversations without a turn to show: no files
    skipped_older: int = 0  # the bucket holds a newer state: files left as they are
    files: dict[str, int] = field(default_factory=dict)  # per format: files this partition's conversations have in the bucket now
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)  # stale files of a conversation's older state
    training_key: str | None = None
    training_records: int = 0
    bundle_key: str | None = None
    bundle_files: int = 0
    preview_key: str | None = None
    archive_key: str | None = None  # the bucket's archive page, when rebuilt by this call
    archive_rows_key: str | None = None  # the partition's rows for it
    retracted: int = 0  # conversations whose files a retraction removed (chatetl.retractions)
    days_rewritten: list[str] = field(default_factory=list)  # other partitions exported again for a retraction

    @property
    def items(self) -> int:
        return sum(self.files.values())


def _put(store: ObjectStore, key: str, path: Path, content_type: str, result: ExportsResult) -> None:
    (result.written if put_if_changed(store, key, path, content_type) else result.unchanged).append(key)


def write_partition_exports(
    store: ObjectStore,
    day: str,
    uploads: Iterable[tuple[str, Iterator[tuple[Conversation, str | None]]]] | None = None,
    plan: ExportPlan | None = None,
    content: ContentOptions = VISIBLE,
    archive_page: bool = True,
) -> ExportsResult:
    """Every conversation of the partition (`uploads`: its normalized uploads, read from the
    bucket when not given) in every chosen format, the training file and the zip; with `archive`,
    the partition's rows and (unless `archive_page` is False: a run over several days rebuilds it
    once, `write_archive`) the bucket's archive page."""
    plan = plan or ExportPlan()
    if uploads is None:
        uploads = iter_partition(store, day)
    result = ExportsResult(files={f: 0 for f in plan.formats})
    want_training = TRAINING in plan.formats or TRAINING in plan.bundle_formats
    want_archive = ARCHIVE in plan.formats or ARCHIVE in plan.bundle_formats
    rows = NewestEntries()
    with temporary_collector(plan.bundle_formats) as collector:
        for _uid, convs in uploads:
            for conv, _ in convs:
                _export_conversation(store, conv, plan, content, result, collector, rows if want_archive else None, want_training)
        if ARCHIVE in plan.formats:
            _publish_archive(store, day, rows, archive_page, result)
        with tempfile.TemporaryDirectory(prefix="chatetl-partition-") as tmp:
            training_path = Path(tmp, "sharegpt.jsonl")
            records = collector.write_training(training_path) if want_training else 0
            if TRAINING in plan.formats:
                result.training_key = training_key(day, TRAINING)
                result.training_records = records
                result.files[TRAINING] = 1 if records else 0
                if records:
                    _put(store, result.training_key, training_path, "application/x-ndjson", result)
                elif store.head(result.training_key) is not None:
                    store.delete(result.training_key)  # nothing left to train on in this partition
                    result.deleted.append(result.training_key)
            if plan.bundle_formats:
                zip_path = Path(tmp, "bundle.zip")
                extra = [(f"{TRAINING}/sharegpt-{day}.jsonl", training_path)] if TRAINING in plan.bundle_formats and records else []
                if ARCHIVE in plan.bundle_formats:  # the day's own page, linking into the zip's html/
                    day_page = Path(tmp, "archive.html")
                    day_page.write_bytes(render_archive(rows.entries(), title=f"Chats of {day}").encode("utf-8", "replace"))
                    extra.append((f"{ARCHIVE}/index.html", day_page))
                result.bundle_files = collector.write_zip(zip_path, extra)
                result.bundle_key = bundle_key(day)
                _put(store, result.bundle_key, zip_path, "application/zip", result)
    return result


def _export_conversation(store: ObjectStore, conv: Conversation, plan: ExportPlan, content: ContentOptions, result: ExportsResult,
                         collector: ExportCollector, rows: NewestEntries | None, want_training: bool) -> None:
    """One conversation's files published, and (unless another partition holds a newer state of it) given
    to the zip's collector, the training lines and the archive's `rows`."""
    result.conversations += 1
    views = export_views(conv, content)  # one selection of turns for every format and the training lines
    files = conversation_files(conv, plan.rendered_formats, content, views)
    lines = training_lines(conv, content, views) if want_training else []
    if not files and not lines:
        result.empty += 1
        return
    written_files = [f for f in files if f.format in plan.formats]
    published = publish_conversation(store, conv, written_files, plan.file_formats)
    result.skipped_older += published.skipped_older
    if published.skipped_older:
        return  # another partition holds a newer state: not in this one's zip, training file, rows
    for f in written_files:
        result.files[f.format] += 1
    result.written += published.written
    result.unchanged += published.unchanged
    result.deleted += published.deleted
    if result.preview_key is None:
        result.preview_key = next((k for k in published.written + published.unchanged if k.startswith(export_prefix("chat-export-md"))), None)
    collector.add(conv, files, lines)
    if rows is not None:
        rows.add(archive_entry(conv, next((f.path for f in files if f.format == "html"), None)))


def _publish_archive(store: ObjectStore, day: str, rows: NewestEntries, archive_page: bool, result: ExportsResult) -> None:
    """The partition's archive rows, and (with `archive_page`) the bucket's archive page rebuilt."""
    result.archive_rows_key, changed = write_day_rows(store, day, rows.entries())
    (result.written if changed else result.unchanged).append(result.archive_rows_key)
    if archive_page:
        page = write_archive(store)
        result.archive_key = page.key
        result.files[ARCHIVE] = 1
        (result.written if page.written else result.unchanged).append(page.key)


def write_day_exports(
    store: ObjectStore,
    day: str,
    plan: ExportPlan | None = None,
    content: ContentOptions = VISIBLE,
    archive_page: bool = True,
) -> ExportsResult:
    """The day's retractions applied, then the partition's exports (`write_partition_exports`), then those of
    the partitions that still hold a retracted conversation (their state is published in its place)."""
    records = pending(store, day, "exports")
    keys = retracted_keys(records)
    deleted: list[str] = []
    redo: set[str] = set()
    if keys:
        redo = holder_days(holders(store, keys)) - {day}
        for key in sorted(keys):
            deleted += retract_conversation(store, key)
    result = write_partition_exports(store, day, plan=plan, content=content, archive_page=archive_page and not redo)
    for other in sorted(redo):
        result.add(write_partition_exports(store, other, plan=plan, content=content, archive_page=False))
    if redo and archive_page and ARCHIVE in (plan or ExportPlan()).formats:
        page = write_archive(store)
        result.archive_key = page.key
        (result.written if page.written else result.unchanged).append(page.key)
    result.retracted = len(keys)
    result.days_rewritten = sorted(redo)
    result.deleted = deleted + result.deleted
    mark_applied(store, records, "exports")
    return result
