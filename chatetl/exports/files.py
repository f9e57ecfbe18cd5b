"""Rendering a conversation into its export files, and collecting them with newest-wins.

`conversation_files` renders one conversation into every chosen per-conversation format:
one `ExportFile` per format and exported branch, at `<format>/<name>.<ext>`. The views (the
turns chosen, `meta.export_views`) are computed once per conversation and shared by every format;
a caller that also wants the training lines passes the same `views` to `training_lines`. The same
conversation can arrive more than once (two uploads, a resync, the same chat as .json and
.md): `ExportCollector` keeps, per conversation key, only the winning state's files (model.state_order, the
rule every output follows), so the training file and the zip hold each conversation once.
"""

from __future__ import annotations

import hashlib
import io
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from chatetl.exports.deflated import BLOCK, Deflated, DeflatedAt, Span, append_deflated, deflate
from chatetl.exports.formats import PER_CONVERSATION
from chatetl.exports.meta import ExportView, export_views
from chatetl.exports.sharegpt import training_line
from chatetl.filenames import conversation_basename
from chatetl.model import Conversation, StateOrder, state_order
from chatetl.selection import VISIBLE, ContentOptions


@dataclass(frozen=True)
class ExportFile:
    path: str  # `<format>/<name>.<ext>`, relative
    data: bytes
    content_type: str
    format: str


def view_name(conv: Conversation, view: ExportView, base: str | None = None) -> str:
    base = base or conversation_basename(conv)
    return base if not view.branch else f"{base}-branch-{view.branch}"


def conversation_files(conv: Conversation, formats: Iterable[str], options: ContentOptions = VISIBLE,
                       views: list[ExportView] | None = None) -> list[ExportFile]:
    """Every per-conversation file of one conversation (none when it has no turns to show);
    `views`, when given, are `export_views(conv, options)` computed by the caller."""
    wanted = [PER_CONVERSATION[f] for f in formats if f in PER_CONVERSATION]
    out: list[ExportFile] = []
    if not wanted:
        return out
    base = None
    for view in export_views(conv, options) if views is None else views:
        if not view.turns:
            continue
        base = base or conversation_basename(conv)
        name = view_name(conv, view, base)
        for fmt in wanted:
            out.append(ExportFile(f"{fmt.name}/{name}.{fmt.ext}", fmt.render_bytes(view), fmt.content_type, fmt.name))
    return out


def training_lines(conv: Conversation, options: ContentOptions = VISIBLE, views: list[ExportView] | None = None) -> list[bytes]:
    """The conversation's ShareGPT JSONL lines: the active branch, and each other branch when opted in
    (`views` as for `conversation_files`)."""
    lines = []
    for view in export_views(conv, options) if views is None else views:
        line = training_line(view)
        if line is not None:
            lines.append(line)
    return lines


def _slot(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class _Entry:
    state: StateOrder
    order: int
    slot: str  # (`_slot` of its key: the order of two files of one name in the zip)
    files: list[tuple[str, DeflatedAt]]  # (relative path, where its deflated bytes lie)
    lines: Span | None  # where its training lines lie
    linked: tuple[str, ...] = ()  # the attachments' copies its bundle files link (attachments.file_name)


@dataclass
class ExportCollector:
    """Collects rendered conversations on disk (never all in memory), their bundle files deflated once (the zip
    copies them: chatetl.exports.deflated); per key the winning state of model.state_order is kept (the same
    state twice: the first seen), whatever order they come in. A kept state stands where it came in: a state that
    replaces another takes its own place, not the replaced one's, so the order depends only on the winners and not on
    whether the older states were seen (one run of a day's uploads, or one run per upload that skips them).
    """

    workdir: Path
    bundle_formats: tuple[str, ...] = ()
    entries: dict[str, _Entry] = field(default_factory=dict)
    replaced: int = 0  # conversations seen again in an older or equal state
    kept: int = 0  # states kept so far: the next one's place

    def add(self, conv: Conversation, files: list[ExportFile], lines: list[bytes]) -> bool:
        """Keep this state's bundle files and training lines unless a winning (or the same) state is kept; True if
        kept."""
        state = state_order(conv)
        if not self._wins(conv.key, state):
            return False
        return self.add_state(conv.key, state, [(f.path, deflate(f.data)) for f in files if f.format in self.bundle_formats], lines)

    def _wins(self, key: str, state: StateOrder) -> bool:
        old = self.entries.get(key)
        if old is not None and old.state >= state:
            self.replaced += 1
            return False
        return True

    def add_state(self, key: str, state: StateOrder, members: Sequence[tuple[str, Deflated | DeflatedAt]],
                  lines: list[bytes] | Span, linked: Iterable[str] = ()) -> bool:
        """`add` of a conversation known by its key and state, its bundle files (path, deflated content) given;
        `linked`: the attachments' copies those files link. Files and lines given in memory are kept on disk here;
        those lying in a file already (a stored piece's, chatetl.exports.pieces) are read from there when the zip
        and the training file are written, and that file must stay until then."""
        if not self._wins(key, state):
            return False
        name = _slot(key)
        slot = self.workdir / name
        if key in self.entries:
            self.replaced += 1
        if slot.exists():
            shutil.rmtree(slot)
        kept: list[tuple[str, DeflatedAt]] = []
        for i, (path, member) in enumerate(members):
            if isinstance(member, Deflated):
                target = self._file(slot, f"{i:04d}", member.data)
                member = DeflatedAt(Span(str(target), 0, len(member.data)), member.crc, member.size)
            kept.append((path, member))
        lines_at = lines if isinstance(lines, Span) else None
        if isinstance(lines, list) and lines:
            data = b"".join(lines)
            lines_at = Span(str(self._file(slot, "lines.jsonl", data)), 0, len(data))
        self.entries[key] = _Entry(state, self.kept, name, kept, lines_at, tuple(linked))
        self.kept += 1
        return True

    @staticmethod
    def _file(slot: Path, name: str, data: bytes) -> Path:
        slot.mkdir(parents=True, exist_ok=True)
        target = slot / name
        target.write_bytes(data)
        return target

    def linked(self) -> list[str]:
        """The attachments' copies the kept bundle files link, each once, sorted."""
        return sorted({name for e in self.entries.values() for name in e.linked})

    @property
    def conversations(self) -> int:
        return len(self.entries)

    def _ordered(self) -> list[_Entry]:
        return sorted(self.entries.values(), key=lambda e: e.order)

    def write_training(self, path: str | Path) -> int:
        """The ShareGPT JSONL file, conversations in the order their kept states came in; the number of records."""
        records = 0
        with open(path, "wb") as out:
            for entry in self._ordered():
                if entry.lines is None:
                    continue
                data = entry.lines.read()
                out.write(data)
                records += len(io.BytesIO(data).readlines())  # (lines as a file reads them)
        return records

    def write_zip(self, path: str | Path, extra: Iterable[tuple[str, str | Path]] = (),
                  streams: Iterable[tuple[str, Callable[[], BinaryIO], int]] = (), zip64_limit: int = zipfile.ZIP64_LIMIT) -> int:
        """A zip of the bundle formats' files (and `extra` (name, file) members, and `streams` (name, opener, size)
        members copied from the reader each opener gives); byte-identical for the same inputs. A copied member
        whose size comes near `zip64_limit` (zipfile's own bound) is written with zip64 fields: zipfile cannot
        know a streamed member's size before it is written, and would refuse it past 2 GiB."""
        deflated = {(arc, f"{e.slot}/{i:04d}"): member for e in self.entries.values() for i, (arc, member) in enumerate(e.files)}
        openers: dict[tuple[str, str], Callable[[], BinaryIO]] = {(a, str(s)): _reader(s) for a, s in extra}
        sizes = {(a, str(s)): Path(s).stat().st_size for a, s in extra}
        for a, opener, size in streams:
            openers[(a, "")], sizes[(a, "")] = opener, size
        members = sorted([*deflated, *openers])
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
            for arcname, src in members:
                info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = 0o644 << 16
                info.create_system = 3  # unix: the same bytes whatever OS built the zip
                if (arcname, src) in deflated:
                    append_deflated(zf, info, deflated[(arcname, src)].read())
                    continue
                zip64 = sizes[(arcname, src)] * 1.05 > zip64_limit  # (zipfile's rule, on the size it cannot see)
                with openers[(arcname, src)]() as f, zf.open(info, "w", force_zip64=zip64) as dst:
                    shutil.copyfileobj(f, dst, BLOCK)
        return len(members)


def _reader(path: str | Path) -> Callable[[], BinaryIO]:
    return lambda: open(path, "rb")


@contextmanager
def temporary_collector(bundle_formats: Iterable[str] = ()) -> Iterator[ExportCollector]:
    """An ExportCollector in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="chatetl-export-") as tmp:
        yield ExportCollector(Path(tmp), tuple(bundle_formats))
