"""The files of an upload by name: where the attachments its chat files point at may lie.

Names are the members' safe names (`archive.safe_member_name`: never `..`, never absolute), so a name
an export's JSON gives is only ever matched against this list, never joined into a path. Members are
opened one at a time and streamed; a zip from a server is copied to local disk once. Nested zips are
not looked into. What one upload may inflate (chatetl.readers.limits) caps what is read of it here too.
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from chatetl.readers import limits
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import JUNK, local_copy, safe_member_name
from chatetl.readers.inputs.detect import ZIP_MAGIC
from chatetl.readers.inputs.member_stream import open_member


@dataclass(frozen=True)
class Member:
    name: str  # safe, `/`-separated, relative to the upload's root
    size: int  # as declared (a zip member is never inflated past it)
    opener: Callable[[], BinaryIO]

    def open(self) -> BinaryIO:
        return self.opener()


class Members:
    """An upload's files by safe name; `budget`: the bytes all reads of them may still inflate."""

    def __init__(self, members: list[Member], budget: int) -> None:
        self.by_name = {m.name: m for m in members}
        self.budget = budget

    def __len__(self) -> int:
        return len(self.by_name)

    def __iter__(self) -> Iterator[Member]:
        return iter(self.by_name.values())

    def get(self, name: str) -> Member | None:
        return self.by_name.get(name)

    def take(self, member: Member) -> bool:
        """Whether `member` may be read whole within what the upload may still inflate (counted if so)."""
        if member.size > self.budget:
            return False
        self.budget -= member.size
        return True


@contextmanager
def upload_members(entry: Entry) -> Iterator[Members]:
    """The files of an upload: a zip's members, a folder's files (hidden ones left out); none for a single
    file that is not a zip."""
    budget = limits.current().max_inflated_bytes
    if entry.path is not None and entry.path.is_dir():
        yield Members(list(_folder_files(entry.path)), budget)
        return
    if entry.head(len(ZIP_MAGIC)) != ZIP_MAGIC:
        yield Members([], budget)
        return
    with local_copy(entry) as path:
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError):
            yield Members([], budget)  # (reading it reported why)
            return
        with zf:
            members = []
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if info.is_dir() or any(j in info.filename for j in JUNK):
                    continue
                members.append(Member(safe_member_name(info.filename), info.file_size, _opener(zf, info)))
            yield Members(members, budget)


def _opener(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Callable[[], BinaryIO]:
    return lambda: open_member(zf, info)


def _folder_files(folder: Path) -> Iterator[Member]:
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if not any(part.startswith(".") for part in rel.parts):
            yield Member(rel.as_posix(), path.stat().st_size, _file_opener(path))


def _file_opener(path: Path) -> Callable[[], BinaryIO]:
    return lambda: open(path, "rb")
