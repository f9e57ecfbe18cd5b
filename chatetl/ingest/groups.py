"""Upload groups: the uploads of one uploader on one day, what one run normalizes.

The uploader is the first folder under raw/ (`raw/alice/export.zip`: alice); uploads at the top
of raw/ make their day's group without an uploader. Groups of one day share nothing that
normalizing writes (each has its own ledger, each upload its own tables), so they run at the same
time; a group's key (`D`, or `D/alice`) names it wherever a run or a person needs it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from chatetl.ingest.index import partition_of
from chatetl.layout import RAW_PREFIX
from chatetl.storage import ObjectInfo

SEPARATOR = "/"


def uploader_of(key: str) -> str:
    """The first folder of an upload key under raw/ ("" at its top, or for a folder name that cannot
    be part of a group's key: control characters, `...`)."""
    first, sep, _rest = key.removeprefix(RAW_PREFIX).partition("/")
    if not sep or "..." in first or any(ord(c) < 0x20 or c == "\x7f" for c in first):
        return ""
    return first


@dataclass(frozen=True, order=True)
class UploadGroup:
    day: str  # the day (UTC) the uploads' current versions arrived (chatetl.ingest.index.partition_of)
    uploader: str = ""

    @property
    def key(self) -> str:
        return f"{self.day}{SEPARATOR}{self.uploader}" if self.uploader else self.day

    @classmethod
    def parse(cls, key: str) -> UploadGroup:
        day, _, uploader = key.partition(SEPARATOR)
        return cls(day, uploader)

    def holds(self, key: str) -> bool:
        """Whether the upload key belongs to this group's uploader (its day is the upload version's)."""
        return uploader_of(key) == self.uploader


def group_of(info: ObjectInfo) -> UploadGroup:
    return UploadGroup(partition_of(info), uploader_of(info.key))


def by_group(uploads: Iterable[ObjectInfo]) -> dict[UploadGroup, list[ObjectInfo]]:
    """Uploads sorted into their groups, in the order of the groups' keys."""
    groups: dict[UploadGroup, list[ObjectInfo]] = defaultdict(list)
    for info in uploads:
        groups[group_of(info)].append(info)
    return dict(sorted(groups.items()))
