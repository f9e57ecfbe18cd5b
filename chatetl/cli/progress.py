"""Progress on stderr while a command reads its inputs: bytes read of the total, conversations per second, time.

Shown only when stderr is a terminal (or with `--progress`; never with `--quiet` alone), so a
pipe, a log or a CI job gets exactly what it got before, and stdout (the JSON summary) is never
touched: the bar is drawn by rich on a console of its own on stderr, with stdout and stderr not
redirected. Switched off, nothing is wrapped: the commands read as they do without it.

What is counted: each chat file the readers open (a file, a zip member, an S3 object) is
wrapped in a counting stream; a chat file counts as read up to the furthest byte a reader took
from it, and whole once the readers move on to the next one (a sidecar or a file read only in
part counts too, so the bar ends full). The total is the sum of the chat files' sizes, found before
reading by listing the inputs' chat files (zip directories and the first bytes of each member, as
detection reads them); for s3:// inputs it is left unknown (listing would download zips twice),
and the bar shows the bytes read alone. The conversations are those read (`normalize`: written).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any, BinaryIO, Self, TextIO, cast

from chatetl.readers.inputs.archive import ChatFile
from chatetl.readers.inputs.counting_stream import CountingStream
from chatetl.readers.inputs.detect import SIDECARS


def _counted(opener: Callable[[], BinaryIO], count: _FileCount) -> BinaryIO:
    return cast(BinaryIO, CountingStream(opener(), count.advanced))


def show_progress(progress: bool | None, quiet: bool, stream: TextIO | None = None) -> bool:
    """`--progress` / `--no-progress` when given; else on when stderr is a terminal and not `--quiet`."""
    if progress is not None:
        return progress
    if quiet:
        return False
    stream = stream or sys.stderr
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or odd stream
        return False


def chat_file_bytes(chat_files: Iterable[ChatFile]) -> int:
    """What the readers will read of these chat files (sidecars are skipped unopened, so not counted)."""
    return sum(entry.size or 0 for entry, fmt, _shape in chat_files if fmt not in SIDECARS)


class _FileCount:
    __slots__ = ("seen", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self.seen = 0  # the furthest byte a reader took (at most the size, when it is known)

    def advanced(self, pos: int) -> None:
        if pos > self.seen:
            self.seen = min(pos, self.size) if self.size else pos


class InputMeter:
    """Counts what a command reads and draws it on stderr (a no-op when `show` is False)."""

    def __init__(self, show: bool, total: int | None = None, label: str = "reading", stream: TextIO | None = None) -> None:
        self.show = show
        self.total = total
        self.label = label
        self.stream = stream
        self.done = 0  # bytes of the chat files finished
        self._current: _FileCount | None = None
        self._counted = 0
        self._count: Callable[[], int] = lambda: self._counted
        self._progress: Any = None
        self._task: Any = None

    # ---- what is read ----

    def read_bytes(self) -> int:
        current = self._current.seen if self._current is not None else 0
        return self.done + current

    def conversations_read(self) -> int:
        return self._count()

    def count_with(self, count: Callable[[], int]) -> None:
        """Take the conversations from `count` (normalize: the table writer's) instead of `conversations()`."""
        self._count = count

    def _finish_current(self) -> None:
        if self._current is not None:
            self.done += self._current.size
            self._current = None

    def chat_files(self, chat_files: Iterable[ChatFile]) -> Iterable[ChatFile]:
        """The same chat files, each opened through a counting stream (unchanged when not shown)."""
        if not self.show:
            return chat_files
        return self._counted_chat_files(chat_files)

    def _counted_chat_files(self, chat_files: Iterable[ChatFile]) -> Iterator[ChatFile]:
        try:
            for entry, fmt, shape in chat_files:
                self._finish_current()
                if fmt in SIDECARS:  # skipped unopened (and not in the total)
                    yield ChatFile(entry, fmt, shape)
                    continue
                count = _FileCount(entry.size or 0)
                self._current = count
                counted = replace(entry, opener=partial(_counted, entry.opener, count))
                yield ChatFile(counted, fmt, shape)
        finally:
            self._finish_current()

    def conversations(self, convs: Iterable[Any]) -> Iterable[Any]:
        """The same conversations, counted (unchanged when not shown)."""
        if not self.show:
            return convs
        return self._counted_conversations(convs)

    def _counted_conversations(self, convs: Iterable[Any]) -> Iterator[Any]:
        for conv in convs:
            self._counted += 1
            yield conv

    # ---- the bar ----

    def __enter__(self) -> Self:
        if self.show:
            self._progress = _progress(self)
            self._task = self._progress.add_task(self.label, total=self.total)
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            if exc[0] is None and self.total is not None:
                self.done = max(self.done, self.total)
            self._progress.refresh()
            self._progress.stop()
            self._progress = None


def _progress(meter: InputMeter) -> Any:
    """A rich Progress on stderr whose numbers are read from `meter` at each refresh (the readers
    only add to plain integers: no lock, no call per read)."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.text import Text

    class Conversations(ProgressColumn):
        def render(self, task: Any) -> Text:
            n = meter.conversations_read()
            elapsed = task.elapsed or 0.0
            rate = f"{n / elapsed:,.0f}/s" if elapsed > 0 else "-/s"
            return Text(f"{n:,} conversations {rate}", style="progress.data.speed")

    class MeterProgress(Progress):
        def get_renderables(self) -> Any:
            if meter._task is not None:
                self.update(meter._task, completed=meter.read_bytes())
            yield from super().get_renderables()

    # a terminal gets the live bar; anything else (`--progress` into a file) its last state once, at the end
    console = Console(file=meter.stream or sys.stderr, highlight=False)
    return MeterProgress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(bar_width=16),
        DownloadColumn(),
        Conversations(),
        TimeElapsedColumn(),
        console=console,
        refresh_per_second=4,
        redirect_stdout=False,
        redirect_stderr=False,
    )
