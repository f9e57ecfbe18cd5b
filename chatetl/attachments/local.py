"""The attachments of conversations read from local inputs (`chatetl normalize`, `chatetl export`).

Each conversation's upload is the input it came from: a zip (`x.zip!member`), a folder given as input (its
files are the upload's members), or the chat file itself. The inputs are read one after another, so one
upload's members are open at a time. s3:// inputs are not resolved here (the ingest stage does it).
"""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from types import TracebackType
from typing import Self

from chatetl.attachments.resolve import UploadFiles
from chatetl.model import Conversation
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.members import upload_members
from chatetl.readers.report import ReadReport
from chatetl.storage import ObjectStore


class LocalAttachments:
    """Conversations of local `inputs` set to their attachments' bytes, stored in `store` by content."""

    def __init__(self, inputs: tuple[str, ...], store: ObjectStore, report: ReadReport, workdir: Path) -> None:
        self.folders = [item.rstrip("/") for item in inputs if not item.startswith("s3://") and Path(item).is_dir()]
        self.store, self.report, self.workdir = store, report, workdir
        self.hashes: set[str] = set()  # every file stored
        self._upload: str | None = None
        self._files: UploadFiles | None = None
        self._open = ExitStack()

    def resolve(self, conv: Conversation) -> int:
        """Set `conv`'s attachments to the bytes its input holds; how many it held."""
        if not conv.source_file or conv.source_file.startswith("s3://") or not any(m.attachments for m in conv.messages):
            return 0
        upload, source_file = self._upload_of(conv.source_file)
        if upload != self._upload:
            self._open.close()
            self._upload, path = upload, Path(upload)
            members = self._open.enter_context(upload_members(Entry.from_path(path, upload))) if path.exists() else None
            self._files = None if members is None else UploadFiles(self.store, Entry.from_path(path, upload), members, self.report,
                                                                   self.workdir)
        if self._files is None:
            return 0
        found = self._files.resolve(conv, source_file)
        self.hashes.update(f.content_hash for f in self._files.files())
        return found

    def _upload_of(self, source_file: str) -> tuple[str, str]:
        """(the upload a chat file belongs to, the chat file as `upload!member` or the upload's own name)."""
        if "!" in source_file:
            return source_file.split("!", 1)[0], source_file
        for folder in self.folders:
            if source_file.startswith(folder + "/"):
                return folder, f"{folder}!{source_file[len(folder) + 1:]}"
        return source_file, source_file

    def close(self) -> None:
        self._open.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
