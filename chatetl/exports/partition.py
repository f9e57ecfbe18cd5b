"""The exports stage of a partition: every conversation of every upload into the chosen formats.

    exports/<format>/<platform>-<title>-<date>-<id8>.<ext>   one file per conversation and format
    exports/sharegpt-jsonl/sharegpt-<day>.jsonl               the partition's ShareGPT training file
    exports/zip/chats-<day>.zip                               the partition's bundle of the chosen formats
    exports/_conversations/<hash>.json                        per conversation: its state and files

Per-conversation files follow newest-wins across partitions (see `bucket`); the training
file and the zip hold each conversation of the partition once, in its newest state within
the partition. A rerun writes no byte that is already there.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Mapping

from pydantic import BaseModel, ConfigDict

from chatetl.exports.bucket import publish_conversation
from chatetl.exports.files import conversation_files, temporary_collector, training_lines
from chatetl.exports.formats import ALL_FORMATS, PER_CONVERSATION, TRAINING, parse_formats
from chatetl.layout import bundle_key, export_prefix, training_key
from chatetl.model import Conversation
from chatetl.selection import VISIBLE, ContentOptions
from chatetl.settings import SettingError, Settings
from chatetl.storage import ObjectStore, put_if_changed
from chatetl.tables import iter_partition
from chatetl.tally import Tally

DEFAULT_BUNDLE = ("chat-export-json", "md", "html")


class ExportPlan(BaseModel):
    """Which formats to write, and which go into the partition's zip (none: no zip)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    formats: tuple[str, ...] = ALL_FORMATS
    bundle_formats: tuple[str, ...] = DEFAULT_BUNDLE

    @classmethod
    def from_settings(cls, settings: Settings) -> "ExportPlan":
        """`CHATETL_EXPORT_FORMATS` (default all) and `CHATETL_EXPORT_ZIP_FORMATS` (default chat-export-json,md,html;
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
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "ExportPlan":
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
) -> ExportsResult:
    """Every conversation of the partition (`uploads`: its normalized uploads, read from the
    bucket when not given) in every chosen format, the training file and the zip."""
    plan = plan or ExportPlan()
    if uploads is None:
        uploads = iter_partition(store, day)
    result = ExportsResult(files={f: 0 for f in plan.formats})
    want_training = TRAINING in plan.formats or TRAINING in plan.bundle_formats
    with temporary_collector(plan.bundle_formats) as collector:
        for _uid, convs in uploads:
            for conv, _ in convs:
                result.conversations += 1
                files = conversation_files(conv, plan.rendered_formats, content)
                lines = training_lines(conv, content) if want_training else []
                if not files and not lines:
                    result.empty += 1
                    continue
                written_files = [f for f in files if f.format in plan.formats]
                published = publish_conversation(store, conv, written_files, plan.file_formats)
                result.skipped_older += published.skipped_older
                if not published.skipped_older:
                    for f in written_files:
                        result.files[f.format] += 1
                result.written += published.written
                result.unchanged += published.unchanged
                result.deleted += published.deleted
                if result.preview_key is None:
                    result.preview_key = next((k for k in published.written + published.unchanged if k.startswith(export_prefix("md"))), None)
                collector.add(conv, files, lines)
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
                result.bundle_files = collector.write_zip(zip_path, extra)
                result.bundle_key = bundle_key(day)
                _put(store, result.bundle_key, zip_path, "application/zip", result)
    return result
