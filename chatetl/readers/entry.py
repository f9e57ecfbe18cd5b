"""An input file to read: a name for messages and a way to open it as bytes."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO


@dataclass(frozen=True)
class ZipMember:
    """Where a zip member lies when its zip is a file on local disk, so another process can open it
    (chatetl.normalize.pieces): the zip's path and the member's header offset (names may repeat in a
    zip). `took(position)` counts what another process inflated from it against the upload's cap
    (chatetl.readers.inputs.archive.Inflated); `readable_elsewhere()` tells whether reading it there whole
    cannot take the upload past that cap (what the upload's zips declare so far is within it).
    `share`: its size over that of all the zip's `.json` members (one big `conversations.json`
    near 1, one of four shards near 0.25)."""

    zip_path: str
    header_offset: int
    took: Callable[[int], None]
    readable_elsewhere: Callable[[], bool]
    share: float = 1.0


@dataclass(frozen=True)
class Entry:
    name: str  # shown in errors: "uploads/x.zip!conversations-000.json"
    opener: Callable[[], BinaryIO]
    size: int | None = None
    path: Path | None = None  # set for local files, so archives can be opened in place
    member: ZipMember | None = None  # set for a member of a zip on local disk

    def open(self) -> BinaryIO:
        return self.opener()

    def head(self, n: int = 65536) -> bytes:
        with self.open() as f:
            return f.read(n)

    @classmethod
    def from_path(cls, path: str | Path, name: str | None = None) -> Entry:
        p = Path(path)
        return cls(name=name or str(p), opener=lambda: open(p, "rb"), size=p.stat().st_size, path=p)

    @classmethod
    def from_bytes(cls, name: str, data: bytes) -> Entry:
        return cls(name=name, opener=lambda: io.BytesIO(data), size=len(data))
