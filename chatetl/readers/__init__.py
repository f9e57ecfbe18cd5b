"""Readers: every export format into the canonical model, one conversation at a time.

`read_entry`, `read_path` and `read_entries` are the door: the inputs (`inputs/`) open archives and
folders and detect each file's format from its content; its reader (`registry`, one per format, in
`platforms/`) reads it, its records cut by the JSON layer (`jsonscan/`) and converted, branches
resolved, by what every reader shares (`convert`, `fields`, `tree`, `timeutil`, `platform_names`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from chatetl.model import Conversation
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import ChatFile, expand, expand_path, until_damaged
from chatetl.readers.inputs.detect import SIDECARS, Format
from chatetl.readers.registry import KEEPSAKE_READERS, READERS
from chatetl.readers.report import ReadError, ReadReport

__all__ = ["ChatFile", "Entry", "Format", "ReadError", "ReadReport", "read_chat_files", "read_entries", "read_entry", "read_path"]


def read_chat_files(chat_files: Iterable[ChatFile], report: ReadReport) -> Iterator[Conversation]:
    """The conversations of chat files, each read by its format's reader (a sidecar skipped, counted, what it
    keeps beside the chats read into `report.kept`); a damaged zip member ends its file's conversations where
    it broke, reported."""
    for entry, fmt, shape in chat_files:
        if fmt in SIDECARS:
            report.skip(f"{fmt.value} file")
            if fmt in KEEPSAKE_READERS:
                default, read_kept = KEEPSAKE_READERS[fmt]
                read_kept(entry, shape or default, report)
            continue
        report.files += 1
        report.formats[fmt.value] += 1
        yield from until_damaged(READERS[fmt].conversations(entry, shape, report), entry.name, report)


def read_entry(entry: Entry, report: ReadReport) -> Iterator[Conversation]:
    """Every conversation in one input (a file or an archive)."""
    yield from read_chat_files(expand(entry, report), report)


def read_path(path: str | Path, report: ReadReport) -> Iterator[Conversation]:
    """Every conversation in a local file or folder."""
    yield from read_chat_files(expand_path(path, report), report)


def read_entries(entries: Iterable[Entry], report: ReadReport) -> Iterator[Conversation]:
    for entry in entries:
        yield from read_entry(entry, report)
