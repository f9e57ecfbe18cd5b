"""What one upload gave its day's bundles, kept so that a later run of the day rebuilds them without rendering.

    cache/exports/date=D/<upload-id>.json   its stamp, and per conversation (the upload's order): state, files, row
    cache/exports/date=D/<upload-id>.zip    those conversations' files of the zip's formats (deflated) and training lines

A piece is written whenever its upload is rendered. Its stamp names what the rendering depended on: the
upload's normalized files (their ETags), the plan, the content options and the export code itself
(`render_fingerprint`); a piece whose stamp matches gives exactly the bytes rendering again would.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from chatetl.exports.archive import ArchiveEntry
from chatetl.exports.deflated import Deflated, DeflatedAt, Span, stored_span
from chatetl.fingerprint import code_fingerprint
from chatetl.model import StateOrder

# the code a conversation's export bytes depend on (chatetl/<name>: a package or a module)
RENDER_CODE = ("exports", "selection.py", "labels.py", "filenames.py", "model.py")


@lru_cache(maxsize=1)
def render_fingerprint() -> str:
    """The export code and its templates: any change to them makes every piece stale."""
    return code_fingerprint(RENDER_CODE)


@dataclass
class ConversationPiece:
    """One conversation of an upload, as its day's bundles take it."""

    key: str
    state: StateOrder
    empty: bool  # no turn to show: no files, no lines
    written: list[tuple[str, str]]  # (format, path relative to exports/) of the files it publishes
    bundle: Sequence[tuple[str, Deflated | DeflatedAt]]  # its files of the zip's formats: (path relative to the zip, content deflated)
    lines: list[bytes] | Span  # its training lines (or where they lie)
    row: ArchiveEntry | None  # its archive row (when the plan has the archive)
    linked: list[str] = field(default_factory=list)  # the attachments' copies its bundle files link (attachments.file_name)

    def meta(self, members: list[str]) -> dict[str, Any]:
        doc = {"key": self.key, "state": list(self.state), "empty": self.empty, "written": [list(w) for w in self.written],
               "bundle": [[path, m, f.crc, f.size] for (path, f), m in zip(self.bundle, members, strict=True)],
               "lines": bool(self.lines), "row": asdict(self.row) if self.row is not None else None}
        if self.linked:
            doc["linked"] = self.linked
        return doc


def _state(value: list[Any]) -> StateOrder:
    return float(value[0]), int(value[1]), str(value[2])


@dataclass
class PieceHead:
    """A stored piece's JSON: its stamp and its conversations without their bytes."""

    stamp: dict[str, Any]
    conversations: list[dict[str, Any]]

    def states(self) -> Iterator[tuple[str, StateOrder, bool]]:
        """(key, state, empty) of each conversation."""
        for c in self.conversations:
            yield c["key"], _state(c["state"]), c["empty"]

    def pieces(self, zip_path: Path) -> Iterator[ConversationPiece]:
        """The conversations, their bytes where they lie in the piece's zip (which must stay until they are read)."""
        with zipfile.ZipFile(zip_path) as zf:
            for i, c in enumerate(self.conversations):
                bundle: list[tuple[str, Deflated | DeflatedAt]] = [
                    (path, DeflatedAt(stored_span(zf, member), crc, size)) for path, member, crc, size in c["bundle"]]
                lines: list[bytes] | Span = stored_span(zf, f"{i}/lines") if c["lines"] else []
                yield ConversationPiece(c["key"], _state(c["state"]), c["empty"], [(w[0], w[1]) for w in c["written"]], bundle, lines,
                                        ArchiveEntry(**c["row"]) if c["row"] is not None else None, list(c.get("linked", [])))


def read_head(data: bytes) -> PieceHead | None:
    """A piece's JSON (None when damaged: its upload is rendered again)."""
    try:
        doc = json.loads(data)
        return PieceHead(doc["stamp"], doc["conversations"])
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        return None


class PieceWriter:
    """An upload's piece written as its conversations are rendered: the bytes to a zip on disk, the rest kept for
    the JSON (`head`)."""

    def __init__(self, zip_path: Path, stamp: dict[str, Any]) -> None:
        self.zip = zipfile.ZipFile(zip_path, "w", zipfile.ZIP_STORED)
        self.stamp = stamp
        self.conversations: list[dict[str, Any]] = []

    def add(self, piece: ConversationPiece) -> None:
        i = len(self.conversations)
        members = []
        for j, (_, f) in enumerate(piece.bundle):
            members.append(f"{i}/{j}")
            self._write(members[-1], (f if isinstance(f, Deflated) else f.read()).data)
        if piece.lines:
            self._write(f"{i}/lines", b"".join(piece.lines) if isinstance(piece.lines, list) else piece.lines.read())
        self.conversations.append(piece.meta(members))

    def _write(self, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # (bytes that depend on the content alone)
        self.zip.writestr(info, data)

    def close(self) -> bytes:
        """The zip closed; the piece's JSON."""
        self.zip.close()
        doc = {"stamp": self.stamp, "conversations": self.conversations}
        return (json.dumps(doc, sort_keys=True) + "\n").encode("ascii")
