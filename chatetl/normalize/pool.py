"""The worker processes, and the pieces they read merged in the records' order.

A piece (chatetl.normalize.work) is read whole by one process: a worker, or this one while the workers
have enough; its rows and its report are merged strictly in the order of the input, so the tables
(`Table.equals`) and the report are the one-process path's, only the row groups cut differently. The
pieces of a local array file or a zip member, and groups of small zip members, wait in `_queue` and go
to the workers one each (`_feed`); records cut from a stream by this process are chatetl.normalize.stream's.

Workers come from the 'forkserver' start method (chatetl.normalize.processes): never forked from the
caller, which may hold threads. Until the first worker answers (the server's imports take a while,
waited for in a thread), this process reads everything itself.
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from chatetl.model import Conversation
from chatetl.normalize import work
from chatetl.normalize.pieces import Plan
from chatetl.normalize.processes import context
from chatetl.readers import limits
from chatetl.readers.entry import Entry, ZipMember
from chatetl.readers.inputs.archive import ChatFile
from chatetl.readers.inputs.detect import Format
from chatetl.readers.report import ReadReport
from chatetl.tables import PartsWriter, TableWriter

if TYPE_CHECKING:  # imported where the pool starts: one process never imports multiprocessing
    from concurrent.futures import ProcessPoolExecutor


SWITCH_INTERVAL = 0.0002  # seconds between the threads' turns at the GIL (sys.setswitchinterval) while the pool runs


@dataclass(frozen=True)
class Tuning:
    """The sizes the pool cuts its work by, and two choices the tests make: whether a local array file is
    read in byte ranges (`ranges`; False: cut here as a stream is) and whether the first piece waits for a
    worker (`wait_for_workers`, so the workers surely take part)."""

    piece_bytes: int = 8 * 1024 * 1024  # a local array file's byte ranges (chatetl.normalize.pieces)
    records_bytes: int = 1024 * 1024  # records cut from a stream, converted as one piece (chatetl.normalize.stream)
    members_bytes: int = 4 * 1024 * 1024  # small members of a zip on local disk read by their readers as one piece
    # a zip member is read whole as a piece when it is at most this share of the zip's JSON; a bigger one (an
    # export's one conversations.json: a deflated stream cannot start in its middle) is cut here as a stream
    member_share: float = 0.6
    ranges: bool = True
    wait_for_workers: bool = False


@dataclass
class Shares:
    """What the pool did: pieces read in this process and by the workers, and cuts that proved wrong
    (records cut where one did not end: read on from it; a byte range whose next one did not start at
    a record: read on to the end)."""

    here: int = 0
    workers: int = 0
    misfits: int = 0
    ranges: int = 0  # of these, byte ranges of a local file and zip members read whole
    groups: int = 0  # of these, groups of a zip's members read by their readers


class _Piece:
    """A piece in the pool's queue: what to read (a file's byte range, a zip member whole, or a group of
    members), where the report stood when it was queued, and its state (None: not started; a worker's
    Future; its PieceResult)."""

    __slots__ = ("errors_at", "fmt", "group", "member", "members", "name", "opening", "source", "specs", "start", "state",
                 "stop", "warnings_at")

    def __init__(self, fmt: Format, source: str | tuple[str, int], name: str, start: int | None = None, stop: int | None = None,
                 opening: Any = None, group: object | None = None, member: ZipMember | None = None) -> None:
        self.fmt, self.source, self.name, self.start, self.stop = fmt, source, name, start, stop
        self.opening, self.group, self.member = opening, group, member  # group: the file whose ranges these are
        self.errors_at = self.warnings_at = 0
        self.state: Future[work.PieceResult] | work.PieceResult | None = None
        self.specs: list[work.MemberSpec] | None = None  # a group of members: what each is, and where it lies
        self.members: list[ZipMember] = []


class Pool:
    """`processes - 1` worker processes beside this one, and the pieces in flight, merged in order."""

    def __init__(self, processes: int, writer: TableWriter, report: ReadReport, upload_key: str | None, tuning: Tuning) -> None:
        self.processes = processes - 1  # the workers
        self.writer = writer
        self.report = report
        self.upload_key = upload_key
        self.tuning = tuning
        self.executor: ProcessPoolExecutor | None = None
        self.started: Future[bool] | None = None  # the first worker's answer: until then, this process reads
        self._starter: threading.Thread | None = None
        self.shares = Shares()
        self.limits = limits.current()  # what a group of members is read under, wherever it is read
        self.max_value = self.limits.max_value_bytes  # the longest value a piece may hold
        self._queue: deque[_Piece] = deque()  # in the order their rows are written: waiting, in a worker or done
        self._waiting: deque[_Piece] = deque()  # of these, the ones no process has taken yet
        self._running: list[Future[work.PieceResult]] = []  # pieces in the workers' hands, not done yet
        self._bases: dict[object, int] = {}  # a file's records in its ranges merged so far
        self._inserted = {"errors": 0, "warnings": 0}  # merged in their places so far (what came after moved on)
        self._seq = 0
        self._tmp: Any = None  # the IPC files' folder (for a writer of one file per table), made when needed
        self._members: list[tuple[work.MemberSpec, ZipMember]] = []  # the group of members being gathered
        self._members_bytes = 0

    def __enter__(self) -> Self:
        # the executor's threads hand pieces and results over (three GIL hand-offs a piece) while this one
        # reads: at the default 5 ms a worker waits on them
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        try:
            if exc_type is None:
                self.drain()
        finally:
            sys.setswitchinterval(self._switch)
            if self.executor is not None:
                if self._starter is not None:
                    self._starter.join()
                self.executor.shutdown(wait=True, cancel_futures=exc_type is not None)
            for piece in self._queue:  # (after an error) what no one merged: its files removed
                if isinstance(piece.state, Future) and not piece.state.cancelled() and piece.state.exception() is None:
                    piece.state = piece.state.result()
                if isinstance(piece.state, work.PieceResult):
                    work.discard(piece.state)
            if self._tmp is not None:
                self._tmp.cleanup()
            work.close_zip()  # (the zip this process kept open for the groups it read)

    # ---- the worker processes ----

    def start_workers(self) -> None:
        if self.executor is None:
            from concurrent.futures import ProcessPoolExecutor

            self.executor = ProcessPoolExecutor(self.processes, mp_context=context())
            # the first submit starts the forkserver (unless already running) and waits for its imports:
            # done in a thread, so this one reads meanwhile
            self._starter = threading.Thread(target=self._start, name="chatetl-pool-start", daemon=True)
            self._starter.start()
            if self.tuning.wait_for_workers:
                self._starter.join()
                self.started.result()  # type: ignore[union-attr]

    def _start(self) -> None:
        self.started = self.executor.submit(work.started)  # type: ignore[union-attr]

    def workers_ready(self) -> bool:
        return self.started is not None and self.started.done()

    # ---- pieces read where they lie ----

    def read_ranges(self, entry: Entry, fmt: Format, plan: Plan) -> None:
        """One local array file in byte ranges, the first at the file's start and the others at `plan.starts`,
        read to its end: each range read whole by a worker, or here while the workers have enough; merged in
        order. The ranges after one that overran (no record at the next one's start) are dropped: that one
        read on to the end."""
        group = object()
        self._bases[group] = 0
        for start, stop in zip([None, *plan.starts], [*plan.starts, None], strict=True):
            self._add(_Piece(fmt, str(entry.path), entry.name, start, stop, plan.opening, group))
        self._run(until_done=True)
        del self._bases[group]

    def read_whole(self, entry: Entry, fmt: Format) -> None:
        """One local array file or zip member read whole as a piece, by a worker (which opens it, or the zip,
        itself) or here; queued, so the next chat files are found while it is read (at most one piece is read
        here before this returns)."""
        member = entry.member
        source = str(entry.path) if member is None else (member.zip_path, member.header_offset)
        self._add(_Piece(fmt, source, entry.name, member=member))
        self._run(until_done=False)

    def add_member(self, chat_file: ChatFile) -> None:
        """A zip member read by its reader, in a group of its zip's members (members_bytes), by a worker or
        here; merged in its place like a piece."""
        entry, fmt, shape = chat_file
        member = entry.member
        assert member is not None
        if self._members and self._members[0][0].zip_path != member.zip_path:
            self.flush_members()
        spec = work.MemberSpec(entry.name, member.zip_path, member.header_offset, entry.size, fmt.value,
                               shape.value if shape is not None else None)
        self._members.append((spec, member))
        self._members_bytes += entry.size or 0
        if self._members_bytes >= self.tuning.members_bytes:
            self.flush_members()

    def flush_members(self) -> None:
        """The group of members gathered so far queued as a piece (before whatever comes after them)."""
        if not self._members:
            return
        first = self._members[0][0]
        piece = _Piece(Format(first.fmt), first.zip_path, first.name)
        piece.specs = [spec for spec, _ in self._members]
        piece.members = [member for _, member in self._members]
        self._members, self._members_bytes = [], 0
        self._add(piece)
        self._run(until_done=False)

    def drain(self) -> None:
        """Every piece queued read and merged."""
        self.flush_members()
        self._run(until_done=True)

    def _add(self, piece: _Piece) -> None:
        self.start_workers()
        # where the report stands, counting only what was not merged from pieces (whose places move with every merge)
        piece.errors_at = len(self.report.errors) - self._inserted["errors"]
        piece.warnings_at = len(self.report.warnings) - self._inserted["warnings"]
        self._queue.append(piece)
        self._waiting.append(piece)

    def _run(self, until_done: bool) -> None:
        """Pieces to the workers, one each, merged in order as they are done, the next one read here
        meanwhile: all of them (`until_done`), or at most one before returning (while more are
        waiting than there are workers)."""
        ran_here = False
        while self._queue:
            self.feed()
            if self._merge_head():
                continue
            # short of the end, one piece a worker is left waiting for it (its feed hands it over), so a
            # worker never waits on this process finding the next one
            if len(self._waiting) > (0 if until_done else self.processes) and (until_done or not ran_here):
                self._read_here(self._waiting.popleft())
                ran_here = True
                continue
            if not until_done:
                return
            head = self._queue[0].state
            if isinstance(head, Future):  # the first piece's, or any worker's: the one done is fed or merged
                wait_for([head, *self._running], return_when=FIRST_COMPLETED)

    def feed(self) -> None:
        """The next pieces to the workers, one each: also called while this process reads a piece (after
        each conversation), so a worker that is done waits no longer than that for its next one."""
        running = self._running
        if any(f.done() for f in running):
            running[:] = [f for f in running if not f.done()]
        while len(running) < self.processes and self._waiting and self.workers_ready():
            piece = self._waiting.popleft()
            assert self.executor is not None
            if piece.specs is not None:
                future = self.executor.submit(work.read_members_to_files, *self._members_arguments(piece, self._files()))
            else:
                future = self.executor.submit(work.read_range_to_files, *self._range_arguments(piece, self._files()))
            piece.state = future
            running.append(future)
            self.shares.workers += 1
            self._count(piece)

    def _range_arguments(self, piece: _Piece, target: work.Target) -> tuple[Any, ...]:
        """read_range_to_files's arguments for `piece`, its rows going to `target`."""
        writer = self.writer
        return (piece.fmt.value, piece.source, piece.name, piece.start, piece.stop, self.max_value, target,
                self.upload_key, writer.batch_bytes, writer.batch_messages, piece.opening)

    def _members_arguments(self, piece: _Piece, target: work.Target) -> tuple[Any, ...]:
        """read_members_to_files's arguments for a group of members, its rows going to `target`."""
        return (piece.specs, self.limits, target, self.upload_key, self.writer.batch_bytes, self.writer.batch_messages)

    def _files(self) -> work.Target:
        """Where a piece read elsewhere writes its rows: a part beside the writer's, or Arrow IPC to merge."""
        self._seq += 1
        if isinstance(self.writer, PartsWriter):
            conversations, messages = self.writer.spare_paths(f"piece-{self._seq:06d}")
            return ("parquet", str(conversations), str(messages))
        if self._tmp is None:
            import tempfile

            self._tmp = tempfile.TemporaryDirectory(prefix="chatetl-pieces-")
        return ("ipc", f"{self._tmp.name}/{self._seq:06d}")

    def _read_here(self, piece: _Piece) -> None:
        """A piece read in this process: straight into the writer when nothing before it waits."""
        if piece is self._queue[0]:
            def add(conv: Conversation) -> None:
                self.writer.add(conv, upload_key=self.upload_key)
                self.feed()

            if piece.specs is not None:
                piece.state = work.read_members(piece.specs, self.limits, add)
            else:
                piece.state = work.read_range(piece.fmt.value, piece.source, piece.name, piece.start, piece.stop, self.max_value, add,
                                              opening=piece.opening)
        elif piece.specs is not None:
            piece.state = work.read_members_to_files(*self._members_arguments(piece, self._files()), tick=self.feed)
        else:
            piece.state = work.read_range_to_files(*self._range_arguments(piece, self._files()), tick=self.feed)
        self.shares.here += 1
        self._count(piece)

    def _count(self, piece: _Piece) -> None:
        if piece.specs is not None:
            self.shares.groups += 1
        else:
            self.shares.ranges += 1

    def _merge_head(self) -> bool:
        """The first piece's rows and report merged, if it is done; whether it was."""
        if not self._queue:
            return False
        piece = self._queue[0]
        if piece.state is None or (isinstance(piece.state, Future) and not piece.state.done()):
            return False
        self._queue.popleft()
        result = self._result(piece)
        self._merge(piece, result)
        if not result.reached:  # it read on to the end of its file: its file's ranges after it are not used
            self.shares.misfits += 1
            for later in [p for p in self._queue if p.group is piece.group]:
                self._queue.remove(later)
                if later.state is None:
                    self._waiting.remove(later)
                elif not (isinstance(later.state, Future) and later.state.cancel()):
                    work.discard(self._result(later))
        return True

    def _result(self, piece: _Piece) -> work.PieceResult:
        if isinstance(piece.state, Future):
            piece.state = piece.state.result()
        assert piece.state is not None
        return piece.state

    def _merge(self, piece: _Piece, result: work.PieceResult) -> None:
        """A piece's rows after what is written, its report in its place: its errors and warnings
        where the report stood when it was queued (what was found after, while it was read, comes
        after them, as in one process), its places counted over its whole file."""
        if result.parquet:
            assert isinstance(self.writer, PartsWriter) and result.files is not None
            if result.conversations:
                self.writer.adopt(*result.files, result.conversations, result.messages)
            else:
                work.discard(result)
        for convs, msgs in work.read_rows(result):
            self.writer.write_tables(convs, msgs)
        if piece.member is not None and result.inflated:
            piece.member.took(result.inflated)
        for member, inflated in zip(piece.members, result.inflated_each, strict=False):
            if inflated:
                member.took(inflated)
        report = self.report
        report.files += result.read_files
        report.formats.update(result.formats)
        base = self._bases.get(piece.group, 0)
        if piece.group is not None:
            self._bases[piece.group] = base + result.records
        report.conversations += result.conversations
        report.messages += result.messages
        for kind, found, at in (("errors", result.errors, piece.errors_at), ("warnings", result.warnings, piece.warnings_at)):
            add, listed = (report.error, report.errors) if kind == "errors" else (report.warn, report.warnings)
            place = at + self._inserted[kind]
            for i, (file, where, reason, raw) in enumerate(found):
                add(file, work.shift_place(where, base), reason, raw=raw)  # appended, the quarantine budget applied
                listed.insert(place + i, listed.pop())
            self._inserted[kind] += len(found)
        report.skipped.update(result.skipped)
        report.drift.update(result.drift)
        report.kept.extend(result.kept)


__all__ = ["Pool", "Shares", "Tuning"]
