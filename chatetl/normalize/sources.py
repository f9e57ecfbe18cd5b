"""The inputs of a normalize run as their chat files, input by input; a zip from a server copied to local
disk first when more than one process reads it, so its members are read on every core as a local zip's are.

An array file from a server is not copied: its records are cut from the stream as it arrives
(chatetl.normalize.stream), which the copy and its own reading in ranges did not beat.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from chatetl.normalize.processes import AUTO_MIN_BYTES, path_bytes
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import ChatFile, copied_if_zip, expand, expand_path
from chatetl.readers.report import ReadReport

Input = Entry | str | os.PathLike[str]  # an entry (an upload, an object in S3), or a local file or folder
COPY_MIN_BYTES = AUTO_MIN_BYTES  # a zip from a server at least this big is copied first (when several processes read)


def input_bytes(inputs: Iterable[Input]) -> int | None:
    """What the inputs hold: entries by their size, local files and folders from the disk (None when an
    entry's size is unknown)."""
    total = 0
    for item in inputs:
        if isinstance(item, Entry):
            if item.size is None:
                return None
            total += item.size
        else:
            total += path_bytes(item)
    return total


class _Reported(Exception):
    """A zip that could not be copied, reported: skipped, as reading it would be."""


class Sources:
    """Each input's chat files (`each`), with the copy to remove once they are read (None: nothing copied).
    `copy`: whether big zips from a server are copied (into `workdir`); `failure`: the words of an error
    copying one that is reported (and the zip skipped) rather than raised (None: raised)."""

    def __init__(self, report: ReadReport, copy: bool, workdir: str | os.PathLike[str] | None = None,
                 failure: Callable[[Exception], str | None] | None = None) -> None:
        self.report = report
        self.copy = copy
        self.workdir = workdir
        self.failure = failure
        self._folder: tempfile.TemporaryDirectory[str] | None = None
        self._copied = 0

    def each(self, inputs: Iterable[Input]) -> Iterator[tuple[Iterable[ChatFile], Path | None]]:
        try:
            for item in inputs:
                if not isinstance(item, Entry):
                    yield expand_path(item, self.report), None
                    continue
                if not (self.copy and item.path is None and (item.size or 0) >= COPY_MIN_BYTES):
                    yield expand(item, self.report), None
                    continue
                try:
                    copy = self._copied_zip(item)
                except _Reported:
                    continue
                if copy is None:  # (no zip)
                    yield expand(item, self.report), None
                else:
                    yield expand(Entry.from_path(copy, name=item.name), self.report), copy
        finally:
            if self._folder is not None:
                self._folder.cleanup()

    def _copied_zip(self, entry: Entry) -> Path | None:
        """The local copy of `entry` when it is a zip, None when it is none; _Reported when copying it failed
        and `failure` says why (reported)."""
        if self._folder is None:
            self._folder = tempfile.TemporaryDirectory(prefix="chatetl-copies-", dir=self.workdir)
        self._copied += 1
        path = Path(self._folder.name, f"object-{self._copied:06d}.zip")
        try:
            return path if copied_if_zip(entry, path) else None
        except Exception as exc:
            path.unlink(missing_ok=True)
            why = self.failure(exc) if self.failure is not None else None
            if why is None:
                raise
            self.report.error(entry.name, "", why)
            raise _Reported from exc


__all__ = ["COPY_MIN_BYTES", "Input", "Sources", "input_bytes"]
