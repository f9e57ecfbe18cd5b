"""Open what an upload is made of: zips (nested too), folders and single files, into its chat files.

Zip members are read where they lie, never extracted; a member with an unsafe name (`../x.json`,
`C:\\x.json`) is read under a sanitized one, the only name errors and everything after them see. Zip
bombs are refused before anything is inflated (what the members declare, against the ratio cap of
chatetl.readers.limits), and since headers can lie the bytes inflated are counted as they are read
(`Inflated`): past the absolute cap reading stops with an error naming the upload.

Nothing passes in silence: a file no reader knows is refused ("unrecognized format") when given on its
own or when it resembles a chat format; inside a zip or a folder other files are skipped and counted.
A Claude.ai manifest uploaded with its zips has the parts it names that the upload lacks reported.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple, cast

from chatetl.readers import limits
from chatetl.readers.entry import Entry, ZipMember
from chatetl.readers.inputs import claude_ai_manifest
from chatetl.readers.inputs.counting_stream import CountingStream
from chatetl.readers.inputs.cut import cut_format
from chatetl.readers.inputs.detect import ZIP_MAGIC, Format, detect, resembles
from chatetl.readers.inputs.encodings import INVALID_SEQUENCE, utf8_entry, wide_encoding
from chatetl.readers.inputs.member_stream import INFLATE_ERRORS, open_member
from chatetl.readers.jsonscan.depthguard import DepthGuard, NestingTooDeep
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.limits import size_text
from chatetl.readers.report import ReadReport

if TYPE_CHECKING:
    from chatetl.model import Conversation

MAX_ZIP_DEPTH = 3
MAX_MEMBER_BYTES = 8 * 1024**3  # 8 GiB unpacked: far past any real export file, far below a bomb
JUNK = ("__MACOSX/", ".DS_Store", "Thumbs.db")
# what reading a damaged zip member raises (bad CRC, corrupt deflate stream, cut short)
DAMAGED_MEMBER: tuple[type[Exception], ...] = (zipfile.BadZipFile, *INFLATE_ERRORS, EOFError)
_DRIVE = re.compile(r"^[A-Za-z]:")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class ChatFile(NamedTuple):
    """A file of an input that holds chat data: how to open it, its format and its shape."""

    entry: Entry
    format: Format
    shape: Shape | None


def expand(entry: Entry, report: ReadReport, *, top_level: bool = True, depth: int = 0, inflated: Inflated | None = None) -> Iterator[ChatFile]:
    """Every chat file inside `entry` (`inflated`: what the
    zips around it inflate to so far, shared by a nested zip with the upload's)."""
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
    encoding = wide_encoding(head)
    if encoding is not None:  # UTF-16/32 (Windows tools): read as UTF-8, streamed
        entry = utf8_entry(entry, encoding, lambda n: report.unknown(INVALID_SEQUENCE, n))
        head = entry.head()
    fmt, shape = detect(entry, head)
    if fmt is Format.ZIP:
        yield from _expand_zip(entry, report, depth, top_level, inflated)
        return
    if fmt is None:
        cut = cut_format(entry, head)
        if cut is not None:
            report.error(entry.name, f"byte {len(head)}", f"cut short: starts as a {cut.value} file but ends inside its first record", raw=head)
            return
        near = resembles(entry, head)
        if top_level or near is not None:
            report.error(entry.name, "", f"unrecognized format: {_why_unrecognized(head, shape, near)}")
        else:
            report.skip("not a chat file")
        return
    yield ChatFile(entry, fmt, shape)


def _why_unrecognized(head: bytes, shape: Shape | None, near: Format | None) -> str:
    if shape is None:
        return "content no reader knows (not JSON, JSONL, chat-export Markdown or YAML)"
    try:
        guard = DepthGuard(io.BytesIO(head))
        while guard.read(65536):
            pass
    except NestingTooDeep as exc:
        return str(exc)
    if near is not None:
        return f"JSON with some keys of a {near.value} file but not its shape"
    if head.strip(b"\xef\xbb\xbf \t\r\n") == b"[]":
        return "an empty JSON array (no records)"
    return "JSON of a shape no reader knows"


def expand_path(path: str | os.PathLike[str], report: ReadReport) -> Iterator[ChatFile]:
    """Every chat file of a local file or folder."""
    p = Path(path)
    if p.is_dir():
        yield from expand_folder(p, report)
    elif p.exists():
        yield from expand(Entry.from_path(p), report)
    else:
        report.error(str(p), "", "no such file or folder")


def expand_folder(folder: Path, report: ReadReport) -> Iterator[ChatFile]:
    """Every chat file under a local folder (hidden files and folders left out)."""
    paths = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if not any(part.startswith(".") for part in rel.parts):
            paths.append(path)
    names = [p.name for p in paths]
    errors_before = len(report.errors)
    found = 0
    for path in paths:
        for chat_file in _with_manifest_check(expand(Entry.from_path(path), report, top_level=False), names, report):
            found += 1
            yield chat_file
    if not found and len(report.errors) == errors_before:
        what = f"none of its {len(paths)} files is" if paths else "it holds no file, so none is"
        report.error(str(folder), "", f"unrecognized format: a folder, but {what} a chat format a reader knows")


def safe_member_name(name: str) -> str:
    """A zip member's name as it may be shown and kept: `/` separators, no drive, no absolute root,
    no `.` or `..` parts, no control characters (`../../x.json` -> `x.json`, `C:\\a\\x.json` -> `a/x.json`)."""
    text = _CONTROL.sub("_", name.replace("\\", "/"))
    text = _DRIVE.sub("", text)
    parts = [p for p in text.split("/") if p not in ("", ".", "..")]
    return "/".join(parts) or "unnamed"


def _expand_zip(entry: Entry, report: ReadReport, depth: int, top_level: bool, inflated: Inflated | None = None) -> Iterator[ChatFile]:
    if depth >= MAX_ZIP_DEPTH:
        report.error(entry.name, "", f"zip nested more than {MAX_ZIP_DEPTH} levels deep: not opened")
        return
    errors_before = len(report.errors)
    found = 0
    with local_copy(entry) as path:
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError) as exc:
            report.error(entry.name, "", f"not a readable zip: {exc}")
            return
        with zf:
            infos = [i for i in sorted(zf.infolist(), key=lambda i: i.filename) if not i.is_dir() and not any(j in i.filename for j in JUNK)]
            names = [safe_member_name(i.filename) for i in infos]
            if inflated is None:
                inflated = Inflated(entry.name, path.stat().st_size, limits.current())
            refusal = inflated.declare(entry.name, sum(i.file_size for i in infos))
            if refusal is not None:
                report.error(entry.name, "", refusal)
                return
            member_cap = min(MAX_MEMBER_BYTES, inflated.limits.max_inflated_bytes)
            json_bytes = sum(i.file_size for i in infos if i.filename.lower().endswith(".json")) or 1
            for info, safe in zip(infos, names):
                if inflated.stopped:
                    return  # (said once, by the member that went past the cap)
                member_name = f"{entry.name}!{safe}"
                if safe != info.filename:
                    report.skip("zip member with an unsafe name (read under a safe one)")
                if info.file_size > member_cap:
                    report.error(
                        member_name, "",
                        f"member unpacks to {info.file_size} bytes, more than the {member_cap} allowed: not read",
                    )
                    continue
                opener = inflated.opener(zf, info, member_name)
                lies = None if entry.path is None else inflated.member(path, zf, info, member_name, info.file_size / json_bytes)
                member = Entry(name=member_name, opener=opener, size=info.file_size, member=lies)
                try:
                    for chat_file in _with_manifest_check(expand(member, report, top_level=False, depth=depth + 1, inflated=inflated), names, report):
                        found += 1
                        yield chat_file
                except InflateLimit as exc:
                    report.error(member_name, "", str(exc))
                    return
                except (*DAMAGED_MEMBER, OSError) as exc:  # type: ignore[misc]  # (a tuple of exception types)
                    report.error(member_name, "", damage_reason(exc))
    if top_level and not found and len(report.errors) == errors_before:
        what = f"none of its {len(infos)} files is" if infos else "it holds no file, so none is"
        report.error(entry.name, "", f"unrecognized format: a zip, but {what} a chat format a reader knows")


def _with_manifest_check(chat_files: Iterable[ChatFile], present: list[str], report: ReadReport) -> Iterator[ChatFile]:
    """The chat files as they come; a Claude.ai manifest among them has the parts it names that are not
    among `present` (the names beside it in the same zip or folder) reported as missing."""
    for chat_file in chat_files:
        if chat_file.format is Format.CLAUDE_AI_MANIFEST:
            for part in claude_ai_manifest.missing_parts(claude_ai_manifest.read_parts(chat_file.entry) or [], present):
                report.warn(chat_file.entry.name, "", f"missing from this upload: {part.name}, named by the Claude.ai manifest")
        yield chat_file


def copied_if_zip(entry: Entry, path: Path) -> bool:
    """Whether the entry is a zip (by its first bytes); if so, it is copied (streamed) to `path`, so that its
    members can be read on every core (chatetl.normalize.pool reads the members of a zip on local disk whole,
    each by whichever process is free). Only its first bytes are read when it is not a zip."""
    with entry.open() as src:
        head = src.read(len(ZIP_MAGIC))
        if head != ZIP_MAGIC:
            return False
        with open(path, "wb") as out:
            out.write(head)
            shutil.copyfileobj(src, out, 1024 * 1024)
    return True


class local_copy:
    """A path to the entry's bytes on local disk (the file itself, or a streamed temp copy)."""

    def __init__(self, entry: Entry) -> None:
        self.entry = entry
        self.tmp: str | None = None

    def __enter__(self) -> Path:
        if self.entry.path is not None:
            return self.entry.path
        fd, self.tmp = tempfile.mkstemp(prefix="chatetl-", suffix=".zip")
        try:
            with os.fdopen(fd, "wb") as out, self.entry.open() as src:
                shutil.copyfileobj(src, out, 1024 * 1024)
        except BaseException:  # (a damaged member, the inflate cap: no copy is left behind)
            os.unlink(self.tmp)
            self.tmp = None
            raise
        return Path(self.tmp)

    def __exit__(self, *exc: object) -> None:
        if self.tmp:
            os.unlink(self.tmp)


def until_damaged(conversations: Iterable[Conversation], name: str, report: ReadReport) -> Iterator[Conversation]:
    """The conversations of the file `name` as they come; a damaged zip member (or the inflate cap) ends
    them where it broke: what came before stands, the damage is reported after it, the rest of the upload
    goes on."""
    read = 0
    try:
        for conv in conversations:
            read += 1
            yield conv
    except DAMAGED_MEMBER as exc:
        report.error(name, f"after {read} conversation(s)", damage_reason(exc))


def damage_reason(exc: BaseException) -> str:
    """What an error reading a zip member says: the cap's own words when reading stopped at it
    (`InflateLimit`), else "damaged zip member: ..." (a bad CRC, a corrupt stream, a cut member)."""
    return str(exc) if isinstance(exc, InflateLimit) else f"damaged zip member: {exc}"


class InflateLimit(zipfile.BadZipFile):
    """An upload's zips inflated past CHATETL_MAX_INFLATED_BYTES while being read: reading stops
    (a BadZipFile, so the readers' handling of a damaged member ends the file in its place)."""


class Inflated:
    """What one upload's zips inflate to: declared by their headers, and counted as it is read."""

    def __init__(self, upload: str, upload_bytes: int, caps: limits.Limits) -> None:
        self.upload = upload
        self.upload_bytes = upload_bytes
        self.limits = caps
        self.declared = 0  # bytes the members of the zips opened so far declare
        self.read = 0  # bytes inflated: per member, the furthest any reading of it reached
        self.stopped = False
        self._furthest: dict[tuple[int, int], int] = {}

    def declare(self, zip_name: str, declared: int) -> str | None:
        """Add what a zip's members declare; the error that refuses the zip unread (and stops the
        upload there: nothing more of it is inflated), or None."""
        self.declared += declared
        if self.declared <= self.limits.inflate_limit(self.upload_bytes):
            return None
        self.stopped = True
        ratio = f"{self.declared / max(self.upload_bytes, 1):,.0f} times"
        allowed = f"past the {self.limits.max_inflate_ratio:g} times allowed (CHATETL_MAX_INFLATE_RATIO)"
        if zip_name == self.upload:
            return f"zip bomb refused: its members declare {size_text(self.declared)}, {ratio} its own {size_text(self.upload_bytes)}, {allowed}: not inflated"
        return (
            f"zip bomb refused: its members declare {size_text(declared)}; with the zips around it {self.upload} "
            f"declares {size_text(self.declared)}, {ratio} its own {size_text(self.upload_bytes)}, {allowed}: "
            f"not inflated, nor the rest of {self.upload}"
        )

    def opener(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str) -> Callable[[], BinaryIO]:
        """How the readers open a member: its stream counted against the cap."""
        key = (id(zf), info.header_offset)
        return lambda: cast(BinaryIO, CountingStream(open_member(zf, info), lambda pos: self.took(key, pos, name), self.check))

    def member(self, path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, share: float) -> ZipMember:
        """Where a member of a zip on local disk lies (the zip itself, not a temp copy of a nested
        one, which goes when its zip is done), for another process to read it whole: what
        it inflates is counted as the readers' reading of it is (`took`, the same furthest byte).
        It may be read there while what the upload's zips declare so far is within the absolute
        cap: zipfile never inflates a member past its declared size, so the upload cannot pass the
        cap through it (one nested zip declaring more, and reading stays in the caller, counted)."""
        key = (id(zf), info.header_offset)
        return ZipMember(
            zip_path=str(path),
            header_offset=info.header_offset,
            took=lambda pos: self.took(key, pos, name),
            readable_elsewhere=lambda: not self.stopped and self.declared <= self.limits.max_inflated_bytes,
            share=share,
        )

    def check(self) -> None:
        """Before each read of a member: once the cap is passed (by any member), no more is inflated."""
        if self.stopped:
            raise InflateLimit(f"reading stopped: the zips of {self.upload} inflated past the cap")

    def took(self, key: tuple[int, int], pos: int, name: str) -> None:
        furthest = self._furthest.get(key, 0)
        if pos <= furthest:
            return
        self._furthest[key] = pos
        self.read += pos - furthest
        if self.read > self.limits.max_inflated_bytes:
            self.stopped = True
            raise InflateLimit(
                f"reading stopped: the zips of {self.upload} inflated past {size_text(self.limits.max_inflated_bytes)} "
                f"(CHATETL_MAX_INFLATED_BYTES) at byte {pos} of this member"
            )
