"""Each attachment of an upload's new tables (on local disk, before they are put) set to its stored bytes.

Runs only where the tables hold an attachment and the upload holds files (beside its chat files, or inside
them as data: URLs); each file is stored once however many attachments name it (chatetl.attachments.resolve). The conversations whose attachments changed are
written with their state hash computed anew (their `content_hash`, sniffed type and true size are part of
their state).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from chatetl.attachments.manifest import read_manifest, write_manifest
from chatetl.attachments.resolve import UploadFiles
from chatetl.attachments.sweep import refer, resolving
from chatetl.layout import TABLES
from chatetl.model import Conversation
from chatetl.readers.data_url import INLINE_ID_PREFIX
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.members import upload_members
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
                        workdir: Path, digest: str | None = None) -> AttachmentCounts:
    """Set the attachments of the tables at `paths` to the bytes `upload` (id `uid`) holds for them, stored in
    `store`; the upload's references to stored files follow (chatetl.attachments.refs), what it let go is swept
    (chatetl.attachments.sweep). `digest`: the upload's content digest (chatetl.attachments.manifest.upload_digest),
    so the same bytes again are not re-read."""
    counts = AttachmentCounts()
    counts.attachments, inline_ids = attachment_ids(paths["messages"])
    if counts.attachments:
        with upload_members(upload) as members:
            if members or inline_ids:
                with resolving(store, uid) as run:
                    files = UploadFiles(store, upload, members, report, workdir, inline_ids, read_manifest(store, digest))
                    _resolve(files, paths, workdir, counts)
                    write_manifest(store, digest, files.found())
                    refer(store, uid, counts.hashes, digest, run=run.key)
                    if run.files_may_be_gone():  # (a sweep overlapped this run: what it took is stored again)
                        files.restore_missing()
                return counts
    refer(store, uid, ())
    return counts


def attachment_ids(messages: Path) -> tuple[int, set[str]]:
    """How many attachments the messages table at `messages` holds, and the ids of its inline files among them."""
    rows, inline = 0, set[str]()
    for row in read_rows(messages, ["attachments"]):
        rows += len(row["attachments"] or ())
        inline.update(a["id"] for a in row["attachments"] or () if (a["id"] or "").startswith(INLINE_ID_PREFIX))
    return rows, inline


def rewrite_resolved(paths: dict[str, Path], resolve: Callable[[Conversation], int], workdir: Path) -> int:
    """The tables at `paths` with each conversation through `resolve` (which sets its attachments' bytes, giving
    how many it found), rewritten in place only where one was found; how many were."""
    found = 0
    out = {t: workdir / f"attachments-{t}.parquet" for t in TABLES}
    with TableWriter(out["conversations"], out["messages"]) as writer:
        for conv, upload_key in iter_conversations(paths["conversations"], paths["messages"]):
            found += resolve(conv)
            writer.add(conv, upload_key=upload_key)
    for t in TABLES:
        if found:
            out[t].replace(paths[t])
        else:
            out[t].unlink(missing_ok=True)
    return found


def _resolve(files: UploadFiles, paths: dict[str, Path], workdir: Path, counts: AttachmentCounts) -> None:
    """The tables at `paths` rewritten with each attachment set to its stored file, counted in `counts`."""
    counts.in_export = rewrite_resolved(paths, files.resolve, workdir)
    stored = files.files()
    counts.hashes = sorted({s.content_hash for s in stored})
    counts.files = len(counts.hashes)
    counts.new_files = len({s.content_hash for s in stored if s.new})
