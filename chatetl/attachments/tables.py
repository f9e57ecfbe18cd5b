"""Each attachment of an upload's new tables (on local disk, before they are put) set to its stored bytes.

Runs only where the tables hold an attachment and the upload holds files beside its chat files; each
member is stored once however many attachments name it. The conversations whose attachments changed are
written with their state hash computed anew (their `content_hash`, sniffed type and true size are part of
their state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from chatetl.attachments.find import Finder
from chatetl.attachments.inline import inline_files
from chatetl.attachments.refs import hold
from chatetl.attachments.store import StoredFile, store_bytes, store_member
from chatetl.layout import TABLES
from chatetl.model import Attachment
from chatetl.readers.data_url import INLINE_ID_PREFIX
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import DAMAGED_MEMBER
from chatetl.readers.inputs.members import Members, upload_members
from chatetl.readers.report import ReadReport
from chatetl.storage import ObjectStore
from chatetl.tables import TableWriter, iter_conversations, read_rows


@dataclass
class AttachmentCounts:
    attachments: int = 0  # rows in the tables
    in_export: int = 0  # whose bytes the upload held
    files: int = 0  # distinct files among them
    new_files: int = 0  # files the bucket did not hold before
    hashes: list[str] = field(default_factory=list)  # the files', sorted


def resolve_attachments(store: ObjectStore, upload: Entry, uid: str, paths: dict[str, Path], report: ReadReport,
                        workdir: Path) -> AttachmentCounts:
    """Set the attachments of the tables at `paths` to the bytes `upload` (id `uid`) holds for them, stored in
    `store`; the upload's references to stored files follow (chatetl.attachments.refs)."""
    counts = _resolved(store, upload, paths, report, workdir)
    hold(store, uid, counts.hashes)
    return counts


def _resolved(store: ObjectStore, upload: Entry, paths: dict[str, Path], report: ReadReport, workdir: Path) -> AttachmentCounts:
    counts = AttachmentCounts()
    inline_ids: set[str] = set()
    for row in read_rows(paths["messages"], ["attachments"]):
        counts.attachments += len(row["attachments"] or ())
        inline_ids.update(a["id"] for a in row["attachments"] or () if (a["id"] or "").startswith(INLINE_ID_PREFIX))
    if not counts.attachments:
        return counts
    with upload_members(upload) as members:
        if not members and not inline_ids:
            return counts
        finder = Finder(members)
        inline = _Inline(store, upload, members, inline_ids, workdir)
        stored: dict[str, StoredFile | None] = {}
        out = {t: workdir / f"attachments-{t}.parquet" for t in TABLES}
        with TableWriter(out["conversations"], out["messages"]) as writer:
            for conv, upload_key in iter_conversations(paths["conversations"], paths["messages"]):
                changed = False
                for message in conv.messages:
                    for att in message.attachments:
                        kept, original = None, None
                        if att.id in inline_ids:
                            kept = inline.get(conv.source_file, att.id)
                        elif (found := finder.find(conv, att)) is not None:
                            name, original = found
                            if name not in stored:
                                stored[name] = _stored(store, members, name, report, upload.name, workdir)
                            kept = stored[name]
                        if kept is not None:
                            _set(att, kept, original)
                            counts.in_export += 1
                            changed = True
                if changed:
                    conv.messages = conv.messages  # (assigned: its state hash is computed anew)
                writer.add(conv, upload_key=upload_key)
        files = [s for s in (*stored.values(), *inline.stored.values()) if s is not None]
        counts.hashes = sorted({s.content_hash for s in files})
        counts.files = len(counts.hashes)
        counts.new_files = len({s.content_hash for s in files if s.new})
    if counts.in_export:
        for t in TABLES:
            out[t].replace(paths[t])
    return counts


def _stored(store: ObjectStore, members: Members, name: str, report: ReadReport, upload: str, workdir: Path) -> StoredFile | None:
    member = members.get(name)
    if member is None:
        return None
    if not members.take(member):
        report.warn(f"{upload}!{name}", "", "attachment not kept: the upload's inflate cap (CHATETL_MAX_INFLATED_BYTES) is reached")
        return None
    try:
        return store_member(store, member, workdir)
    except (*DAMAGED_MEMBER, OSError) as exc:  # type: ignore[misc]  # (a damaged member: the attachment stays without its bytes)
        report.warn(f"{upload}!{name}", "", f"attachment not kept: {exc}")
        return None


class _Inline:
    """The upload's data: URL files (chatetl.attachments.inline), each chat file scanned once, when a chat of
    it first names one: every inline file the upload's tables name is stored from that pass."""

    def __init__(self, store: ObjectStore, upload: Entry, members: Members, wanted: set[str], workdir: Path) -> None:
        self.store, self.upload, self.members, self.wanted, self.workdir = store, upload, members, wanted, workdir
        self.scanned: set[str | None] = set()
        self.stored: dict[str, StoredFile] = {}

    def get(self, source_file: str | None, ident: str | None) -> StoredFile | None:
        if ident is None:
            return None
        if ident not in self.stored and source_file not in self.scanned:
            self.scanned.add(source_file)
            opener = self._opener(source_file)
            if opener is not None:
                for found, _mime, data in inline_files(opener, self.wanted - set(self.stored)):
                    self.stored[found] = store_bytes(self.store, data, self.workdir)
        return self.stored.get(ident)

    def _opener(self, source_file: str | None) -> Callable[[], BinaryIO] | None:
        """The chat file a conversation came from: the upload itself, or the member it names."""
        if source_file == self.upload.name:
            return self.upload.open
        member = self.members.get(source_file.split("!", 1)[1]) if source_file and "!" in source_file else None
        return member.open if member is not None else None


def _set(att: Attachment, kept: StoredFile, original: str | None) -> None:
    att.__dict__.update(content_hash=kept.content_hash, size=kept.size, mime_type=kept.mime_type or att.mime_type,
                        name=att.name or original, text=att.text or kept.text)
    if att.kind == "file" and kept.mime_type and kept.mime_type.startswith("image/"):
        att.__dict__["kind"] = "image"

