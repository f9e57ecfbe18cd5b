"""The exports stage of a partition: every conversation of every upload into the chosen formats.

    exports/<format>/<platform>-<title>-<date>-<id8>.<ext>   one file per conversation and format
    exports/sharegpt-jsonl/sharegpt-<day>.jsonl               the partition's ShareGPT training file
    exports/zip/chats-<day>.zip                               the partition's bundle of the chosen formats, with
                                                              files/<sha256><ext>: the attachments its md and html link
    exports/_conversations/<hash>.json                        per conversation: its state and files
    exports/_archive/date=<day>.json, exports/archive/index.html   the archive's rows, its page (`archive`)

Per-conversation files follow newest-wins across partitions (see `bucket`); the training
file, the zip and the archive rows hold each conversation of the partition once, and only in the
state its manifest holds (model.state_order, across partitions): a conversation whose newer
state another partition published is left out, never shown older. `write_day_exports` first applies
the day's retractions (chatetl.retractions): the files of a conversation no upload holds go, and
the partitions still holding one are exported again, their state published as the winner. The archive page covers the whole bucket: each partition writes its rows, and the
page is rebuilt from every partition's (`archive.write_archive`). A rerun writes no byte that is
already there. A run renders only the uploads that changed: the others' conversations come from the
pieces their last rendering stored (chatetl.exports.pieces), so a small upload on a big day costs
its own rendering and the day's bundles put together again, with the bytes of rendering everything.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import BinaryIO

from pydantic import BaseModel, ConfigDict, field_validator

from chatetl.exports.archive import (
    ARCHIVE,
    NewestEntries,
    archive_entry,
    render_archive,
    write_archive,
    write_day_rows,
)
from chatetl.exports.attachments import FILES_FOLDER, LINKING_FORMATS, linked_names, source_key
from chatetl.exports.bucket import PublishResult, manifest_state, publish_conversation, retract_conversation
from chatetl.exports.deflated import deflate
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
from chatetl.exports.pieces import ConversationPiece, PieceHead, PieceWriter, read_head, render_fingerprint
from chatetl.heartbeat import heartbeat
from chatetl.layout import (
    EXPORT_MANIFEST_PREFIX,
    EXPORTS_PREFIX,
    TABLES,
    bundle_key,
    export_manifest_key,
    export_piece_key,
    export_pieces_prefix,
    export_prefix,
    export_states_key,
    table_prefix,
    training_key,
)
from chatetl.model import Conversation, StateOrder, state_order
from chatetl.retractions import (
    holder_days,
    holders,
    mark_applied,
    pending,
    retracted_keys,
)
from chatetl.selection import VISIBLE, ContentOptions
from chatetl.settings import SettingError, Settings
from chatetl.side_by_side import side_by_side
from chatetl.storage import ObjectStore, put_bytes_if_changed, put_if_changed
from chatetl.tables.decode import iter_conversations
from chatetl.tables.partitions import partition_table_pairs
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
    progress: Callable[[str], None] | None = None,
) -> ExportsResult:
    """Every conversation of the partition in every chosen format, the training file and the zip; with `archive`,
    the partition's rows and (unless `archive_page` is False: a run over several days rebuilds it once,
    `write_archive`) the bucket's archive page. `uploads`: the partition's normalized uploads, all rendered;
    when not given, the bucket's, and only the uploads whose stored piece cannot stand for them are rendered
    (`_stored_uploads`): the others' conversations come from their pieces, with the same bytes. `progress`
    is told one line per upload done (a long step says how far it got)."""
    plan = plan or ExportPlan()
    result = ExportsResult(files={f: 0 for f in plan.formats})
    want_training = TRAINING in plan.formats or TRAINING in plan.bundle_formats
    want_archive = ARCHIVE in plan.formats or ARCHIVE in plan.bundle_formats
    rows = NewestEntries()
    with temporary_collector(plan.bundle_formats) as collector:
        walk = _Walk(store, plan, content, result, collector, rows if want_archive else None, want_training)
        if uploads is None:
            _stored_uploads(store, day, walk, progress)
        else:
            for number, (_uid, convs) in enumerate(uploads, start=1):
                rendered = 0
                for conv, _ in heartbeat(convs, progress, f"exports {day}: upload {number}, conversations rendered"):
                    walk.rendered(conv)
                    rendered += 1
                if progress is not None:
                    progress(f"exports {day}: upload {number}, {rendered} conversations rendered")
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
                result.bundle_files = collector.write_zip(zip_path, extra, _attachment_streams(store, collector.linked()))
                result.bundle_key = bundle_key(day)
                _put(store, result.bundle_key, zip_path, "application/zip", result)
    return result


def _attachment_streams(store: ObjectStore, names: list[str]) -> list[tuple[str, Callable[[], BinaryIO], int]]:
    """The zip's `files/` members: each linked copy whose bytes the attachment store holds, read from there as the
    zip is written (never whole in memory), with its size."""
    heads = ((name, store.head(source_key(name))) for name in names)
    return [(f"{FILES_FOLDER}/{name}", partial(store.open, source_key(name)), head.size) for name, head in heads if head is not None]


@dataclass
class _Walk:
    """The partition's conversations in order, each rendered and published, or taken from its upload's piece; either
    way counted, and (unless another partition holds a newer state of it) given to the zip's collector, the training
    lines and the archive's `rows`. `current`: each conversation's manifest state as this run leaves it, for the
    conversations taken from pieces (their publishing is what the manifests already say)."""

    store: ObjectStore
    plan: ExportPlan
    content: ContentOptions
    result: ExportsResult
    collector: ExportCollector
    rows: NewestEntries | None
    want_training: bool
    current: dict[str, tuple[str, StateOrder]] = field(default_factory=dict)

    def rendered(self, conv: Conversation) -> ConversationPiece:
        """The conversation rendered, published and counted; its piece."""
        plan = self.plan
        views = export_views(conv, self.content)  # one selection of turns for every format and the training lines
        files = conversation_files(conv, plan.rendered_formats, self.content, views)
        lines = training_lines(conv, self.content, views) if self.want_training else []
        written_files = [f for f in files if f.format in plan.formats]
        row = None
        if self.rows is not None and (files or lines):
            row = archive_entry(conv, next((f.path for f in files if f.format == "html"), None))
        bundle = [(f.path, deflate(f.data)) for f in files if f.format in plan.bundle_formats]
        linking = any(f.format in LINKING_FORMATS and f.format in plan.bundle_formats for f in files)
        piece = ConversationPiece(conv.key, state_order(conv), not files and not lines, [(f.format, f.path) for f in written_files],
                                  bundle, lines, row, linked_names(views) if linking else [])
        if piece.empty:
            self.count(piece, PublishResult())
            return piece
        published = publish_conversation(self.store, conv, written_files, plan.file_formats)
        if published.manifest is not None:
            self.current[conv.key] = published.manifest
        self.count(piece, published)
        return piece

    def stored(self, piece: ConversationPiece) -> None:
        """A conversation of an unchanged upload: published as it was (its files are there), or left out for the
        newer state the manifests hold."""
        held = self.current.get(piece.key)
        skipped = not piece.empty and held is not None and held[1] > piece.state
        self.count(piece, PublishResult(unchanged=[EXPORTS_PREFIX + path for _, path in piece.written], skipped_older=skipped))

    def count(self, piece: ConversationPiece, published: PublishResult) -> None:
        result = self.result
        result.conversations += 1
        if piece.empty:
            result.empty += 1
            return
        result.skipped_older += published.skipped_older
        if published.skipped_older:
            return  # another partition holds a newer state: not in this one's zip, training file, rows
        for fmt, _ in piece.written:
            result.files[fmt] += 1
        result.written += published.written
        result.unchanged += published.unchanged
        result.deleted += published.deleted
        if result.preview_key is None:
            result.preview_key = next((k for k in published.written + published.unchanged if k.startswith(export_prefix("chat-export-md"))), None)
        self.collector.add_state(piece.key, piece.state, piece.bundle, piece.lines, piece.linked)
        if self.rows is not None and piece.row is not None:
            self.rows.add(piece.row)


def _stored_uploads(store: ObjectStore, day: str, walk: _Walk, progress: Callable[[str], None] | None = None) -> None:
    """The partition's uploads from the bucket: each rendered (and its piece stored) unless its stored piece has the
    stamp rendering would give it and every conversation of it is published as the piece says (its manifest holds its
    state or a newer one). A retraction takes a manifest away: the uploads still holding that conversation are
    rendered again. The manifests' states come from the day's states file where their ETags are unchanged."""
    plan = walk.plan
    base = {"plan": plan.model_dump(mode="json"), "content": walk.content.model_dump(mode="json"), "code": render_fingerprint()}
    tables = {o.key: o.etag for t in TABLES for o in store.list(table_prefix(t, day))}
    pieces_prefix = export_pieces_prefix(day)
    stored = {o.key: o.etag for o in store.list(pieces_prefix)}
    uploads = []
    for conv_key, msg_key in partition_table_pairs(store, day):
        uid = conv_key.rsplit("/", 1)[-1].removesuffix(".parquet")
        stamp = {**base, "tables": [tables.get(conv_key), tables.get(msg_key)]}
        head = None
        if export_piece_key(day, uid) in stored and _head_key(day, uid) in stored:
            head = read_head(store.get_bytes(_head_key(day, uid)))
        uploads.append((uid, conv_key, msg_key, stamp, head if head is not None and head.stamp == stamp else None))
    # the bucket-wide listing of the manifests waits on the server: the pieces that may stand for their uploads are
    # fetched meanwhile (into the collector's folder: their conversations' bytes are read from there when the zip is
    # written); one the manifests then show stale is rendered instead, its piece left unread
    listing, fetched = side_by_side(
        lambda: {o.key: o.etag for o in store.list(EXPORT_MANIFEST_PREFIX)},
        lambda: {uid: store.download(export_piece_key(day, uid), walk.collector.workdir / f"piece-{number}.zip")
                 for number, (uid, *_, head) in enumerate(uploads, start=1) if head is not None},
    )
    known, states_etag = _read_states(store, day)
    usable = {uid for uid, *_, head in uploads if head is not None and _published(store, head, walk.current, listing, known)}
    with tempfile.TemporaryDirectory(prefix="chatetl-pieces-") as tmp:
        for number, (uid, conv_key, msg_key, stamp, head) in enumerate(uploads, start=1):
            done = f"exports {day}: upload {number}/{len(uploads)}"
            if head is not None and uid in usable:
                zip_path = fetched[uid]
                taken = 0
                for piece in head.pieces(zip_path):
                    walk.stored(piece)
                    taken += 1
                if progress is not None:
                    progress(f"{done}, {taken} conversations unchanged")
                continue
            writer = PieceWriter(Path(tmp, "piece.zip"), stamp)
            c_path, m_path = store.download(conv_key, Path(tmp, "c.parquet")), store.download(msg_key, Path(tmp, "m.parquet"))
            rendered = 0
            for conv, _ in heartbeat(iter_conversations(c_path, m_path), progress, f"{done}, conversations rendered"):
                writer.add(walk.rendered(conv))
                rendered += 1
            head_bytes = writer.close()
            put_if_changed(store, export_piece_key(day, uid), Path(tmp, "piece.zip"), "application/zip", stored.get(export_piece_key(day, uid)))
            put_bytes_if_changed(store, _head_key(day, uid), head_bytes, "application/json", stored.get(_head_key(day, uid)))
            if progress is not None:
                progress(f"{done}, {rendered} conversations rendered")
    day_keys = {_head_key(day, u) for u, *_ in uploads} | {export_piece_key(day, u) for u, *_ in uploads}
    for key in sorted(set(stored) - day_keys):
        store.delete(key)  # the piece of an upload the day no longer holds
    _write_states(store, day, walk.current, states_etag)


def _head_key(day: str, uid: str) -> str:
    return export_piece_key(day, uid).removesuffix(".zip") + ".json"


def _published(store: ObjectStore, head: PieceHead, current: dict[str, tuple[str, StateOrder]], listing: dict[str, str],
               known: dict[str, tuple[str, StateOrder]]) -> bool:
    """Whether every conversation of the piece is published as it says (its manifest holds its state or a newer
    one); the manifests' states found are kept in `current`."""
    for key, state, empty in head.states():
        held = current.get(key) or _held_state(store, key, listing, known)
        if held is not None:
            current[key] = held
        if not empty and (held is None or held[1] < state):
            return False
    return True


def _held_state(store: ObjectStore, key: str, listing: dict[str, str], known: dict[str, tuple[str, StateOrder]]) -> tuple[str, StateOrder] | None:
    """The conversation's manifest (ETag, state): from the day's states file while its ETag is the same, else read."""
    etag = listing.get(export_manifest_key(key))
    if etag is None:
        return None
    hit = known.get(key)
    if hit is not None and hit[0] == etag:
        return hit
    state = manifest_state(store, key)
    return (etag, state) if state is not None else None


def _read_states(store: ObjectStore, day: str) -> tuple[dict[str, tuple[str, StateOrder]], str | None]:
    """The day's states file, and its ETag (None: no file)."""
    fetched = store.fetch(export_states_key(day))
    if fetched is None:
        return {}, None
    try:
        doc = json.loads(fetched[0])
        return {k: (str(v[0]), (float(v[1][0]), int(v[1][1]), str(v[1][2]))) for k, v in doc.items()}, fetched[1]
    except (ValueError, UnicodeDecodeError, KeyError, TypeError, IndexError, AttributeError):
        return {}, fetched[1]  # damaged: every manifest is read


def _write_states(store: ObjectStore, day: str, states: dict[str, tuple[str, StateOrder]], held: str | None) -> None:
    doc = {k: [etag, list(state)] for k, (etag, state) in sorted(states.items())}
    data = (json.dumps(doc, sort_keys=True) + "\n").encode("ascii")
    put_bytes_if_changed(store, export_states_key(day), data, "application/json", held)


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
    progress: Callable[[str], None] | None = None,
) -> ExportsResult:
    """The day's retractions applied, then the partition's exports (`write_partition_exports`), then those of
    the partitions that still hold a retracted conversation (their state is published in its place);
    `progress` is told one line per upload done."""
    records = pending(store, day, "exports")
    keys = retracted_keys(records)
    deleted: list[str] = []
    redo: set[str] = set()
    if keys:
        redo = holder_days(holders(store, keys)) - {day}
        for key in sorted(keys):
            deleted += retract_conversation(store, key)
    result = write_partition_exports(store, day, plan=plan, content=content, archive_page=archive_page and not redo, progress=progress)
    for other in sorted(redo):
        result.add(write_partition_exports(store, other, plan=plan, content=content, archive_page=False, progress=progress))
    if redo and archive_page and ARCHIVE in (plan or ExportPlan()).formats:
        page = write_archive(store)
        result.archive_key = page.key
        (result.written if page.written else result.unchanged).append(page.key)
    result.retracted = len(keys)
    result.days_rewritten = sorted(redo)
    result.deleted = deleted + result.deleted
    mark_applied(store, records, "exports")
    return result
