"""One upload's attachments set to the bytes it holds: each member, each inline file, stored once.

`UploadFiles.resolve(conv)` finds each attachment's bytes (chatetl.attachments.find, .inline), stores
them in the given store by content and sets the attachment's `content_hash`, sniffed type, true size and
text. What the ingest stage (chatetl.attachments.tables) and the local commands (chatetl.attachments.local)
share.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from chatetl.attachments.find import Finder
from chatetl.attachments.inline import inline_files
from chatetl.attachments.manifest import Known
from chatetl.attachments.store import StoredFile, held, store_bytes, store_member
from chatetl.attachments.text import WORDS_TYPES
from chatetl.layout import attachment_key
from chatetl.model import Attachment, Conversation
from chatetl.readers.data_url import INLINE_ID_PREFIX
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import DAMAGED_MEMBER
from chatetl.readers.inputs.members import Members
from chatetl.readers.report import ReadReport
from chatetl.storage import ObjectStore


class UploadFiles:
    """The attachments of `upload` (its `members` listed once) resolved into `store`. `inline`: the ids of the
    inline files wanted (None: every one a chat file carries, each chat file scanned once); `known`: the
    files an upload of the same bytes found, taken without reading them again while the store holds them."""

    def __init__(self, store: ObjectStore, upload: Entry, members: Members, report: ReadReport, workdir: Path,
                 inline: set[str] | None = None, known: Known | None = None) -> None:
        self.store, self.upload, self.members, self.report, self.workdir = store, upload, members, report, workdir
        self.known = known or {}  # what an upload with the same bytes found (chatetl.attachments.manifest)
        self.finder = Finder(members)
        self.wanted = inline
        self.stored: dict[str, StoredFile | None] = {}  # by member name
        self.inline: dict[str, StoredFile] = {}  # by inline id
        self._scanned: set[str | None] = set()

    def resolve(self, conv: Conversation, source_file: str | None = None) -> int:
        """Set `conv`'s attachments to their bytes (its chat file `source_file`, `upload!member` or the
        upload's own name; default its own); how many the upload held."""
        source_file = source_file or conv.source_file
        found = 0
        for message in conv.messages:
            for att in message.attachments:
                kept, original = None, None
                if (att.id or "").startswith(INLINE_ID_PREFIX):
                    kept = self._inline(source_file, att.id)
                elif (where := self.finder.find(conv, att, source_file)) is not None:
                    name, original = where
                    if name not in self.stored:
                        self.stored[name] = self._member(name)
                    kept = self.stored[name]
                if kept is not None:
                    _set(att, kept, original)
                    found += 1
        if found:
            conv.messages = conv.messages  # (assigned: its state hash is computed anew)
        return found

    def found(self) -> Known:
        """The members read whose file has no words (chatetl.attachments.manifest keeps them)."""
        return {name: (s.content_hash, s.size, s.mime_type) for name, s in self.stored.items()
                if s is not None and s.text is None and s.mime_type not in WORDS_TYPES}

    def files(self) -> list[StoredFile]:
        """Every file stored (or found stored) so far."""
        return [s for s in (*self.stored.values(), *self.inline.values()) if s is not None]

    def restore_missing(self) -> int:
        """Each file stored or found here that the bucket no longer holds (a sweep took it before the upload's
        record named it: chatetl.attachments.sweep) stored again; how many were. One HEAD per file."""
        restored = 0
        for name, kept in self.stored.items():
            if kept is not None and not held(self.store, attachment_key(kept.content_hash)):
                restored += self._store(name) is not None
        missing = {i for i, kept in self.inline.items() if not held(self.store, attachment_key(kept.content_hash))}
        for source_file in sorted(self._scanned, key=str) if missing else ():
            if (opener := self._chat_file(source_file)) is not None:
                for _found, _mime, data in inline_files(opener, missing):
                    store_bytes(self.store, data, self.workdir)
                    restored += 1
        return restored

    def _member(self, name: str) -> StoredFile | None:
        member = self.members.get(name)
        where = f"{self.upload.name}!{name}"
        if member is None:
            return None
        if not self.members.take(member):
            self.report.warn(where, "", "attachment not kept: the upload's inflate cap (CHATETL_MAX_INFLATED_BYTES) is reached")
            return None
        if (known := self.known.get(name)) is not None and held(self.store, attachment_key(known[0])):
            return StoredFile(known[0], known[1], known[2], None, new=False)
        return self._store(name)

    def _store(self, name: str) -> StoredFile | None:
        """Member `name`'s bytes streamed into the store (None: a damaged member, said on the report)."""
        member = self.members.get(name)
        if member is None:
            return None
        try:
            return store_member(self.store, member, self.workdir)
        except (*DAMAGED_MEMBER, OSError) as exc:  # type: ignore[misc]  # (a damaged member: the attachment stays without its bytes)
            self.report.warn(f"{self.upload.name}!{name}", "", f"attachment not kept: {exc}")
            return None

    def _inline(self, source_file: str | None, ident: str | None) -> StoredFile | None:
        """An inline file, its chat file scanned the first time one of it is asked for."""
        if ident is None:
            return None
        if ident not in self.inline and source_file not in self._scanned:
            self._scanned.add(source_file)
            opener = self._chat_file(source_file)
            if opener is not None:
                wanted = None if self.wanted is None else self.wanted - set(self.inline)
                for found, _mime, data in inline_files(opener, wanted):
                    self.inline[found] = store_bytes(self.store, data, self.workdir)
        return self.inline.get(ident)

    def _chat_file(self, source_file: str | None) -> Callable[[], BinaryIO] | None:
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
