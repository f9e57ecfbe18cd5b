"""Open what an upload is made of: zips (nested too), folders and single files, into leaf entries.

Zip members are read where they lie (never extracted by name), so a member named
`../../x.json` cannot write anywhere; such names are refused and reported. A member
whose declared size passes `MAX_MEMBER_BYTES` (a zip bomb) is refused unread: zipfile
never inflates a member past its declared size, so the cap bounds the bytes read (and
the temp copy of a nested zip).
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Iterator

from chatetl.readers.depthguard import DepthGuard, NestingTooDeep
from chatetl.readers.detect import Format, Layout, detect
from chatetl.readers.entry import Entry
from chatetl.readers.report import ReadReport

MAX_ZIP_DEPTH = 3
MAX_MEMBER_BYTES = 8 * 1024**3  # 8 GiB unpacked: far past any real export file, far below a bomb
_JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")
# what reading a damaged zip member raises (bad CRC, corrupt deflate stream, cut short)
DAMAGED_MEMBER = (zipfile.BadZipFile, zlib.error, EOFError)


def expand(entry: Entry, report: ReadReport, *, top_level: bool = True, depth: int = 0) -> Iterator[tuple[Entry, Format, Layout | None]]:
    """Yield (leaf entry, format, layout) for every chat file inside `entry`."""
    try:
        head = entry.head()
    except OSError as exc:
        report.error(entry.name, "", f"cannot be opened: {exc}")
        return
    if not head:
        if top_level:
            report.error(entry.name, "", "empty file")
        else:
            report.skip("empty file")
        return
    fmt, layout = detect(entry, head)
    if fmt is Format.ZIP:
        yield from _expand_zip(entry, report, depth)
        return
    if fmt is None:
        if top_level:
            report.error(entry.name, "", f"unrecognized format: {_why_unrecognized(head, layout)}")
        else:
            report.skip("not a chat file")
        return
    yield entry, fmt, layout


def _why_unrecognized(head: bytes, layout: Layout | None) -> str:
    if layout is None:
        return "content no reader knows (not JSON, JSONL, chat-export Markdown or YAML)"
    try:
        guard = DepthGuard(io.BytesIO(head))
        while guard.read(65536):
            pass
    except NestingTooDeep as exc:
        return str(exc)
    return "JSON of a shape no reader knows"


def expand_folder(folder: Path, report: ReadReport) -> Iterator[tuple[Entry, Format, Layout | None]]:
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        yield from expand(Entry.from_path(path), report, top_level=False)


def _unsafe(name: str) -> bool:
    pure = PurePosixPath(name.replace("\\", "/"))
    return pure.is_absolute() or ".." in pure.parts or (len(name) > 1 and name[1] == ":")


def _expand_zip(entry: Entry, report: ReadReport, depth: int) -> Iterator[tuple[Entry, Format, Layout | None]]:
    if depth >= MAX_ZIP_DEPTH:
        report.error(entry.name, "", f"zip nested more than {MAX_ZIP_DEPTH} levels deep: not opened")
        return
    with _local_copy(entry) as path:
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            report.error(entry.name, "", f"not a readable zip: {exc}")
            return
        with zf:
            for info in sorted(zf.infolist(), key=lambda i: i.filename):
                if info.is_dir() or any(j in info.filename for j in _JUNK):
                    continue
                member_name = f"{entry.name}!{info.filename}"
                if _unsafe(info.filename):
                    report.error(member_name, "", "unsafe member name (absolute or with '..'): not read")
                    continue
                if info.file_size > MAX_MEMBER_BYTES:
                    report.error(
                        member_name, "",
                        f"member unpacks to {info.file_size} bytes, more than the {MAX_MEMBER_BYTES} allowed: not read",
                    )
                    continue
                member = Entry(name=member_name, opener=lambda info=info: zf.open(info), size=info.file_size)
                try:
                    yield from expand(member, report, top_level=False, depth=depth + 1)
                except (*DAMAGED_MEMBER, OSError) as exc:
                    report.error(member_name, "", f"damaged zip member: {exc}")


class _local_copy:
    """A path to the entry's bytes on local disk (the file itself, or a streamed temp copy)."""

    def __init__(self, entry: Entry) -> None:
        self.entry = entry
        self.tmp: str | None = None

    def __enter__(self) -> Path:
        if self.entry.path is not None:
            return self.entry.path
        fd, self.tmp = tempfile.mkstemp(prefix="chatetl-", suffix=".zip")
        with os.fdopen(fd, "wb") as out, self.entry.open() as src:
            shutil.copyfileobj(src, out, 1024 * 1024)
        return Path(self.tmp)

    def __exit__(self, *exc: object) -> None:
        if self.tmp:
            os.unlink(self.tmp)
