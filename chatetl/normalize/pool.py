"""Normalize on every core, two ways.

A local array file of a format with a per-record conversion (ChatGPT and Claude.ai
`conversations.json`: a file on disk, or in the local-folder store) is read in pieces by byte range
(chatetl.normalize.pieces, `read_pieces`): each piece is read whole, from its bytes to its encoded
rows, by a worker or by this process while the workers have enough, and merged in order; nothing
of the file crosses between processes. The command line's pieces are parts of its output folders
(renamed into place), an upload's come back as Arrow IPC files this process writes into its one
file per table. The array members of a zip on local disk are pieces too, read whole, when it
has several (MEMBER_SHARE). Measured (`bench/normalize_throughput.py`): two cores reach 0.82-0.96
of what two independent one-process runs reach side by side; in alternating runs of the 200 MB
ChatGPT-shaped file one process / the stream below / pieces took 4.10 / 3.51 / 3.25 s (the one
process already keeps the second core partly busy with its Parquet thread).

The other members of a zip on local disk (AI Studio prompt files, Le Chat chats, chat-export files,
DeepSeek's or Grok's one file ...: each read whole by its own reader) go to the workers in batches of
about LEAF_BATCH_BYTES of them (`add_leaf`; chatetl.normalize.pieces.convert_leaves runs
`_read_leaves` on them there, under this process's limits), each batch one part, merged in order
like a piece. Measured (bench/platforms, alternating, one process against two): a Drive Takeout of
7,031 AI Studio files 5.6 -> 4.05-4.24 s, a Le Chat zip of 8,030 files 5.5-5.6 -> 3.7-4.2 s (the
detection of each member, before it is batched, stays in this process).

What is not read in pieces (the one big member of a zip, a nested zip's members, an array file
in S3, a re-encoded file) is cut here: for an array file of a format with a
per-record conversion, this process cuts the records (`ArraySplitter(prove=False)`: an object
record ends at the next place that opens like the first record, not decoded here) into tasks of
TASK_BYTES. A task goes to a worker process while
the workers hold fewer than QUEUED_PER_WORKER tasks each; otherwise this process converts it
itself, at once. So `workers=2` is this process and one worker, both converting: as many busy
processes as cores, none waiting on the other (three busy processes on two cores, this one
cutting, writing and handing over while two workers converted, ran slower than one process).
Before the first worker has started (the forkserver's imports take 0.3-1.5 s, waited for in a
thread), this process converts everything itself.

A task's conversion (`convert_batch`, the same function wherever it runs) decodes each record,
which proves the cut (a JSON value has one end); a record that does not decode, or nests too
deep, is a misfit: what was cut after it is dropped and this process reads on from it,
decoding that record itself as the one-process splitter does (so a damaged or over-deep record is
reported in the same words and place), then cuts fast again. It converts each record (the
reader's own conversion, branches resolved by `convert_records`) into a `TableBatch` and gives
back its Arrow tables (from a worker as Arrow IPC streams) with what it found (errors with their
places and bytes, drift, skips, counts). The results are written (`TableWriter.write_tables`,
about `batch_bytes` a row group) and the reports merged strictly in the order the records came,
so the tables (`Table.equals`) and the report are the one-process path's; only the row groups are
cut differently. Everything else (other formats and layouts, JSON Lines) is read in this process
as before, in its place.

How many processes (`workers=None`: automatic) is chatetl.normalize.workers.resolve_workers; `workers=1` is
the one-process path itself. Workers come from the 'forkserver' start method (never forked from
the caller, which may hold threads: Dagster steps, the Parquet writer thread), preloaded with this
module (and pyarrow without numpy or its cloud filesystems: chatetl.normalize.lean_pyarrow; chatetl.normalize.workers.context): the
imports are paid once, each worker then forks from it in a few ms. The command line starts the
forkserver before its own imports (chatetl.normalize.workers.start_forkserver); elsewhere the pool's first
task starts it.

Memory: each process holds a few tasks and one batch of tables; results converted here while a
worker's earlier task is still running wait in order, at most LOCAL_AHEAD of them (peak RSS per
process is printed by bench/normalize_throughput.py).
"""

from __future__ import annotations

import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future
from concurrent.futures import wait as wait_for
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

import pyarrow as pa

from chatetl.model import Conversation
from chatetl.normalize import pieces
from chatetl.normalize.workers import context
from chatetl.readers import limits, read_chat_files
from chatetl.readers.convert import convert_records
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import (
    DAMAGED_MEMBER,
    damage_reason,
)
from chatetl.readers.inputs.detect import Format
from chatetl.readers.jsonscan import records as jsonstream
from chatetl.readers.jsonscan.decode import decode, nests_too_deep
from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH
from chatetl.readers.jsonscan.records import Shape, report_repairs
from chatetl.readers.jsonscan.splitter import ArraySplitter, BadRecord, SplitError
from chatetl.readers.platforms import chatgpt, claude_ai
from chatetl.readers.report import ReadReport
from chatetl.tables import TableBatch, TableWriter

if TYPE_CHECKING:  # imported where the pool starts: one process never imports multiprocessing (~25 ms)
    from concurrent.futures import ProcessPoolExecutor

TASK_BYTES = 1024 * 1024  # record bytes converted as one task (512 KB: 4-8% more CPU, no less RSS)
QUEUED_PER_WORKER = 2  # tasks a worker holds (one converting, one waiting); past that this process converts
LOCAL_AHEAD = 2  # tasks converted here that may wait behind an unfinished worker's task
PIPE_BYTES = 1024 * 1024  # capacity asked for the pool's task and result pipes (Linux; see _widen_pipes)
SWITCH_INTERVAL = 0.0002  # seconds (sys.setswitchinterval) while the pool runs: see _Pool.__enter__
PIECES = True  # local array files read in pieces by byte range (chatetl.normalize.pieces); False: cut here, as a stream
# a zip member is read whole as a piece when it is at most this share of the zip's JSON; a bigger one is cut here as a
# stream (200 MB ChatGPT file, 3 alternating runs: as the one member 2.79 s cut here, 3.59 s whole, 3.54 s inflated to
# a file first and read in pieces; as four 50 MB shards 2.93 s whole, 3.19 s cut here)
MEMBER_SHARE = 0.6
# the leaves of a zip on local disk that are no array of records (AI Studio prompt files, Le Chat chats, a single
# chat-export file ...) go to the workers in batches of about this many bytes, each read whole by its reader
# (chatetl.normalize.pieces.convert_leaves); a batch is one Parquet part
LEAF_BATCH_BYTES = 4 * 1024 * 1024
WAIT_FOR_WORKERS = False  # True: the first task waits for the first worker (the tests, so workers take part)
Leaf = tuple[Entry, Format, "Shape | None"]


@dataclass
class Shares:
    """What the pool did: tasks converted in this process and by the workers, and cuts that
    proved wrong (a record that did not decode where it was cut: read on from it; a piece whose
    next one did not start at a record: read on to the end)."""

    here: int = 0
    workers: int = 0
    misfits: int = 0
    pieces: int = 0  # of these, pieces read whole (chatetl.normalize.pieces: a local file's byte ranges, a zip's members)
    batches: int = 0  # of these, batches of a zip's members read whole by their readers (add_leaf)


def read_into(
    writer: TableWriter, leaves: Iterable[Leaf], report: ReadReport, workers: int, upload_key: str | None = None
) -> Shares:
    """Every conversation of `leaves` into `writer`, with `report` as `_read_leaves` leaves it; on
    `workers` processes (this one and `workers - 1` worker processes) when more than one."""
    if workers <= 1:
        for conv in read_chat_files(leaves, report):
            writer.add(conv, upload_key=upload_key)
        return Shares()
    with _Pool(workers - 1, writer, report, upload_key) as pool:
        for leaf, fmt, shape in leaves:
            if fmt in CONVERTERS and (shape or Shape.ARRAY) is Shape.ARRAY and jsonstream.FAST:
                pool.flush_leaves()
                report.files += 1
                report.formats[fmt.value] += 1
                plan = _pieces(leaf, pool.max_value) if PIECES else None
                if plan is None:
                    pool.read_leaf(leaf, fmt)
                elif plan.starts:
                    pool.read_pieces(leaf, fmt, plan)
                else:
                    pool.read_whole(leaf, fmt)
            elif jsonstream.FAST and leaf.member is not None and leaf.member.readable_elsewhere():
                pool.add_leaf(leaf, fmt, shape)  # read by its reader in a batch of its zip's members
            else:
                pool.drain()  # what came before is written first
                for conv in read_chat_files([(leaf, fmt, shape)], report):
                    writer.add(conv, upload_key=upload_key)
    return pool.shares


def _pieces(leaf: Entry, max_value: int) -> pieces.Plan | None:
    """The pieces of a local file (chatetl.normalize.pieces; no starts: one piece, as a zip member on
    local disk is while the upload's inflate cap allows and it is one of several, at most
    MEMBER_SHARE of the zip's JSON); None for a stream read here: S3, a member of a nested zip,
    a file read through a re-encoding, the one big member of a zip (a ChatGPT export before 2026:
    a deflated stream cannot be cut, and inflating it to a file first cost more than it gave)."""
    if leaf.member is not None:
        return pieces.Plan([]) if leaf.member.share <= MEMBER_SHARE and leaf.member.readable_elsewhere() else None
    if leaf.path is None or leaf.size is None:
        return None
    return pieces.plan(leaf.path, leaf.size, max_value)


# ---- the per-record conversions: each reader's own (the one its `read` uses) ----


CONVERTERS: dict[Format, Callable[[str, ReadReport], Callable[[Any, str], Conversation | None]]] = {
    Format.CHATGPT: chatgpt.record_converter,
    Format.CLAUDE_AI: claude_ai.record_converter,
}


# ---- one task, in a worker or here ----


Tables = tuple[Any, Any]  # (conversations table, messages table or None)


def convert_batch(fmt: str, name: str, upload_key: str | None, records: list[tuple[int, int, bytes]]) -> tuple[Tables | None, dict, Any]:
    """Records (index in the file, byte offset, bytes) -> (their tables or None, report delta,
    misfit). The records were cut at their likely ends without decoding them: a record whose bytes
    do not decode as one value shallow enough (the cut was wrong, or the record is damaged or too
    deep) is the misfit, (index, offset), and the task stops there: the caller reads on from it with
    the proving splitter."""
    report = pieces.PieceReport()  # (every bad part's bytes kept: the merge applies the quarantine budget in order)
    convert = CONVERTERS[Format(fmt)](name, report)
    misfit = None

    def decoded():
        nonlocal misfit
        for i in range(len(records)):
            index, offset, raw = records[i]
            records[i] = None  # type: ignore[call-overload]  # let the bytes go once decoded
            try:
                value, repairs = decode(raw)
            except (ValueError, RecursionError):
                misfit = (index, offset)
                return
            if raw.count(b"{") + raw.count(b"[") >= MAX_JSON_DEPTH and nests_too_deep(value):
                misfit = (index, offset)
                return
            where = f"record {index}"
            if repairs:
                report_repairs(report, name, where, value, repairs, raw)
            yield where, value

    batch = TableBatch()
    for conv in convert_records(Entry(name=name, opener=pieces.no_open), decoded(), report, convert):
        batch.add(conv, upload_key=upload_key)
    delta = {
        "conversations": report.conversations,
        "messages": report.messages,
        "errors": [(e.file, e.where, e.reason, e.raw) for e in report.errors],
        "skipped": report.skipped,
        "drift": report.drift,
    }
    return batch.tables(), delta, misfit


def convert_in_worker(fmt: str, name: str, upload_key: str | None, records: list[tuple[int, int, bytes]]) -> tuple:
    """`convert_batch` in a worker process: its tables as Arrow IPC streams, which cross to this
    process several times cheaper than pickled tables (measured 0.27 vs 1.27 ms for a 0.5 MB task,
    both ends together)."""
    tables, delta, misfit = convert_batch(fmt, name, upload_key, records)
    return (None if tables is None else tuple(None if t is None else _to_ipc(t) for t in tables)), delta, misfit


def _to_ipc(table: Any) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes | None) -> Any:
    return None if data is None else pa.ipc.open_stream(data).read_all()


def _started() -> bool:
    """A worker's first task: it answers once its process runs (the forkserver's imports done)."""
    return True


class _Misfit(Exception):
    def __init__(self, index: int, offset: int) -> None:
        self.index, self.offset = index, offset


class _Done:
    """A task converted in this process: its result, waiting its turn in the queue."""

    __slots__ = ("result",)

    def __init__(self, result: tuple) -> None:
        self.result = result


# ---- this process ----


def _widen_pipes(executor: ProcessPoolExecutor) -> None:
    """Ask the kernel for PIPE_BYTES of buffer on the pipes that carry tasks to the workers and
    results back (Linux F_SETPIPE_SZ; the default is 64 KB). A 1 MB task or result then goes
    through in one write instead of 16, each waiting for the reader's thread to take the GIL:
    about 5% faster at 200 MB here (ChatGPT-shaped, 5 alternating runs: median 2.96 vs 3.13 s). The pipes are the executor's own
    (private attributes, so looked up defensively); anything refused (another OS, a lower
    /proc/sys/fs/pipe-max-size) leaves the default, which is only slower."""
    try:
        import fcntl
    except ImportError:  # not on POSIX
        return
    setpipe = getattr(fcntl, "F_SETPIPE_SZ", None)  # Linux only
    if setpipe is None:
        return
    for queue in (getattr(executor, "_call_queue", None), getattr(executor, "_result_queue", None)):
        connection = getattr(queue, "_writer", None)
        if connection is None:
            continue
        try:
            fcntl.fcntl(connection.fileno(), setpipe, PIPE_BYTES)
        except (OSError, ValueError):
            pass


class _Job:
    """A piece in the pool's queue: what to read (a file's byte range, or a zip member whole), where
    the report stood when it was queued, and its state (None: not started; a worker's Future; its
    PieceResult)."""

    __slots__ = ("errors_at", "fmt", "group", "leaves", "member", "members", "name", "opening", "source", "start", "state", "stop",
                 "warnings_at")

    def __init__(self, fmt: Format, source: str | tuple[str, int], name: str, start: int | None, stop: int | None,
                 opening: Any, group: object | None, member: Any = None) -> None:
        self.fmt, self.source, self.name, self.start, self.stop = fmt, source, name, start, stop
        self.opening, self.group, self.member = opening, group, member  # group: the file whose pieces these are
        self.errors_at = self.warnings_at = 0
        self.state: Future | pieces.PieceResult | None = None
        # a batch of leaves (zip members read whole by their readers) instead: their specs and ZipMembers
        self.leaves: list[pieces.LeafSpec] | None = None
        self.members: list[Any] = []


class _Pool:
    """Tasks in flight (a worker's futures, tasks converted here) and local events (a bad record
    the splitter found), settled strictly in order."""

    def __init__(self, processes: int, writer: TableWriter, report: ReadReport, upload_key: str | None) -> None:
        self.processes = processes
        self.writer = writer
        self.report = report
        self.upload_key = upload_key
        self.executor: ProcessPoolExecutor | None = None
        self.started: Future | None = None  # the first worker's answer: until then, this process converts
        self.queue: deque[Future | _Done | tuple] = deque()
        self.remote = 0  # tasks in the workers' hands
        self.limit = QUEUED_PER_WORKER * processes
        self.leaf_conversations = 0
        self.shares = Shares()
        # the tasks' tables, written together as one row group of about writer.batch_bytes
        self.held: list[Tables] = []
        self.held_bytes = 0
        # pieces (chatetl.normalize.pieces) in the order their rows are written: queued, in a worker or done
        self.jobs: deque[_Job] = deque()
        self._waiting: deque[_Job] = deque()  # of these, the ones no process has taken yet
        self._running: list[Future] = []  # pieces in the workers' hands, not done yet
        self._bases: dict[object, int] = {}  # a file's records in its pieces merged so far
        self._inserted = {"errors": 0, "warnings": 0}  # merged in their places so far (what came after moved on)
        self._seq = 0
        self.limits = limits.current()  # what a batch of leaves is read under, wherever it is read
        self.max_value = self.limits.max_value_bytes  # the longest value a piece may hold (limits)
        self._tmp: Any = None  # the IPC files' folder (for a writer of one file per table), made when needed
        self._leaves: list[tuple[pieces.LeafSpec, Any]] = []  # the batch of leaves being gathered, with their ZipMembers
        self._leaves_bytes = 0

    def __enter__(self) -> Self:
        # the executor's threads hand tasks and results over (three GIL hand-offs a task) while
        # this one converts: at the default 5 ms a worker waits on them, at 0.2 ms 10-15% faster
        # on a quiet machine (measured on the 200 MB Claude.ai file of bench/normalize_throughput.py)
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
                self._starter.join()
                self.executor.shutdown(wait=True, cancel_futures=exc_type is not None)
            for job in self.jobs:  # (after an error) what no one merged: its files removed
                if isinstance(job.state, Future) and not job.state.cancelled() and job.state.exception() is None:
                    job.state = job.state.result()
                if isinstance(job.state, pieces.PieceResult):
                    pieces.discard(job.state)
            if self._tmp is not None:
                self._tmp.cleanup()
            pieces.close_zip()  # (the zip this process kept open for the batches it read)

    def read_leaf(self, leaf: Entry, fmt: Format) -> None:
        """One array file: records cut here, converted here and by the workers; its damage reported
        in its place. First cut fast (ends not proven here); when a task finds a record that does
        not fit, what came after it is dropped and the file is read on from that record."""
        self._run_jobs(until_done=True)  # the pieces before it are written first
        self._start_workers()
        self.leaf_conversations = 0
        resume = self._cut(leaf, fmt, None)
        while resume is not None:
            again = self._cut(leaf, fmt, resume)
            if again is not None and again[0] <= resume[0]:
                raise RuntimeError(f"{leaf.name}: record {again[0]}, proven by the splitter, did not decode in a task")
            resume = again

    def read_pieces(self, leaf: Entry, fmt: Format, plan: pieces.Plan) -> None:
        """One local array file in pieces (chatetl.normalize.pieces), the first at the file's start and
        the others at `plan.starts`, read to its end: each piece read whole by a worker, or here
        while the workers have enough; merged in order. Pieces after one that overran (no record at
        the next one's start) are dropped: that piece read on to the end."""
        group = object()
        self._bases[group] = 0
        for start, stop in zip([None, *plan.starts], [*plan.starts, None]):
            self._add(_Job(fmt, str(leaf.path), leaf.name, start, stop, plan.opening, group))
        self._run_jobs(until_done=True)
        del self._bases[group]

    def read_whole(self, leaf: Entry, fmt: Format) -> None:
        """One local array file or zip member read whole as a piece, by a worker (which opens it, or
        the zip, itself) or here; queued, so the next leaves are found while it is read (at most
        one piece is read here before this returns). Its rows and report are merged in its place."""
        member = leaf.member
        source = str(leaf.path) if member is None else (member.zip_path, member.header_offset)
        self._add(_Job(fmt, source, leaf.name, None, None, None, None, member))
        self._run_jobs(until_done=False)

    def add_leaf(self, leaf: Entry, fmt: Format, shape: Shape | None) -> None:
        """A zip member read whole by its reader, in a batch of its zip's members (LEAF_BATCH_BYTES), by a
        worker or here; merged in its place like a piece."""
        member = leaf.member
        if self._leaves and self._leaves[0][0].zip_path != member.zip_path:  # type: ignore[union-attr]
            self.flush_leaves()
        spec = pieces.LeafSpec(leaf.name, member.zip_path, member.header_offset, leaf.size, fmt.value,  # type: ignore[union-attr]
                               shape.value if shape is not None else None)
        self._leaves.append((spec, member))
        self._leaves_bytes += leaf.size or 0
        if self._leaves_bytes >= LEAF_BATCH_BYTES:
            self.flush_leaves()

    def flush_leaves(self) -> None:
        """The batch of leaves gathered so far queued as a job (before whatever comes after them)."""
        if not self._leaves:
            return
        first = self._leaves[0][0]
        job = _Job(Format(first.fmt), first.zip_path, first.name, None, None, None, None)
        job.leaves = [spec for spec, _ in self._leaves]
        job.members = [member for _, member in self._leaves]
        self._leaves, self._leaves_bytes = [], 0
        self._add(job)
        self._run_jobs(until_done=False)

    def _add(self, job: _Job) -> None:
        self._start_workers()
        # where the report stands, counting only what was not merged from pieces (whose places move with every merge)
        job.errors_at = len(self.report.errors) - self._inserted["errors"]
        job.warnings_at = len(self.report.warnings) - self._inserted["warnings"]
        self.jobs.append(job)
        self._waiting.append(job)

    def _run_jobs(self, until_done: bool) -> None:
        """Pieces to the workers, one each, merged in order as they are done, the next one read here
        meanwhile: all of them (`until_done`), or at most one before returning (while more are
        waiting than there are workers)."""
        ran_here = False
        while self.jobs:
            self._feed()
            if self._merge_head():
                continue
            # short of the end, one piece a worker is left waiting for it (its tick hands it over), so a
            # worker never waits on this process finding the next one (a zip member: one whole member)
            if len(self._waiting) > (0 if until_done else self.processes) and (until_done or not ran_here):
                self._read_here(self._waiting.popleft())
                ran_here = True
                continue
            if not until_done:
                return
            head = self.jobs[0].state
            if isinstance(head, Future):  # the first piece's, or any worker's: the one done is fed or merged
                wait_for([head, *self._running], return_when=FIRST_COMPLETED)

    def _feed(self) -> None:
        """The next pieces to the workers, one each: also called while this process reads a piece (after
        each conversation), so a worker that is done waits no longer than that for its next one."""
        running = self._running
        if any(f.done() for f in running):
            running[:] = [f for f in running if not f.done()]
        while len(running) < self.processes and self._waiting and self.started is not None and self.started.done():
            job = self._waiting.popleft()
            if job.leaves is not None:
                job.state = self.executor.submit(pieces.convert_leaves_to_files, *self._leaf_arguments(job, self._files(job)))  # type: ignore[union-attr]
            else:
                job.state = self.executor.submit(pieces.convert_piece_to_files, *self._arguments(job, self._files(job)))  # type: ignore[union-attr]
            running.append(job.state)
            self.shares.workers += 1
            self._count(job)

    def _arguments(self, job: _Job, target: tuple[str, ...]) -> tuple:
        """convert_piece_to_files's arguments for `job`, its rows going to `target`."""
        writer = self.writer
        return (job.fmt.value, job.source, job.name, job.start, job.stop, self.max_value, target,
                self.upload_key, writer.batch_bytes, writer.batch_messages, job.opening)

    def _leaf_arguments(self, job: _Job, target: tuple[str, ...]) -> tuple:
        """convert_leaves_to_files's arguments for a batch of leaves, its rows going to `target`."""
        return (job.leaves, self.limits, target, self.upload_key, self.writer.batch_bytes, self.writer.batch_messages)

    def _files(self, job: _Job) -> tuple[str, ...]:
        """Where a piece read elsewhere writes its rows: a part beside the writer's, or Arrow IPC to merge."""
        self._seq += 1
        beside = self.writer.beside_parts(f"piece-{self._seq:06d}")
        if beside is not None:
            return ("parquet", str(beside[0]), str(beside[1]))
        if self._tmp is None:
            import tempfile

            self._tmp = tempfile.TemporaryDirectory(prefix="chatetl-pieces-")
        return ("ipc", f"{self._tmp.name}/{self._seq:06d}")

    def _read_here(self, job: _Job) -> None:
        """A piece read in this process: straight into the writer when nothing before it waits."""
        if job is self.jobs[0]:
            def rows(conv: Conversation) -> None:
                self.writer.add(conv, upload_key=self.upload_key)
                self._feed()

            if job.leaves is not None:
                job.state = pieces.convert_leaves(job.leaves, self.limits, rows)
            else:
                job.state = pieces.convert_piece(job.fmt.value, job.source, job.name, job.start, job.stop, self.max_value, rows, job.opening)
        elif job.leaves is not None:
            job.state = pieces.convert_leaves_to_files(*self._leaf_arguments(job, self._files(job)), tick=self._feed)
        else:
            job.state = pieces.convert_piece_to_files(*self._arguments(job, self._files(job)), tick=self._feed)
        self.shares.here += 1
        self._count(job)

    def _count(self, job: _Job) -> None:
        if job.leaves is not None:
            self.shares.batches += 1
        else:
            self.shares.pieces += 1

    def _merge_head(self) -> bool:
        """The first piece's rows and report merged, if it is done; whether it was."""
        if not self.jobs:
            return False
        job = self.jobs[0]
        if job.state is None or (isinstance(job.state, Future) and not job.state.done()):
            return False
        self.jobs.popleft()
        result = self._result(job)
        self._merge_piece(job, result)
        if not result.reached:  # it read on to the end of its file: its file's pieces after it are not used
            self.shares.misfits += 1
            for later in [j for j in self.jobs if j.group is job.group]:
                self.jobs.remove(later)
                if later.state is None:
                    self._waiting.remove(later)
                elif not (isinstance(later.state, Future) and later.state.cancel()):
                    pieces.discard(self._result(later))
        return True

    def _result(self, job: _Job) -> pieces.PieceResult:
        if isinstance(job.state, Future):
            job.state = job.state.result()
        return job.state  # type: ignore[return-value]

    def _merge_piece(self, job: _Job, result: pieces.PieceResult) -> None:
        """A piece's rows after what is written, its report in its place: its errors and warnings
        where the report stood when it was queued (what was found after, while it was read, comes
        after them, as in one process), its places counted over its whole file."""
        if result.parquet:
            if result.conversations:
                self.writer.adopt(*result.files, result.conversations, result.messages)  # type: ignore[misc]
            else:
                pieces.discard(result)
        for convs, msgs in pieces.read_rows(result):
            self.writer.write_tables(convs, msgs)
        if job.member is not None and result.inflated:
            job.member.took(result.inflated)
        for member, inflated in zip(job.members, result.inflated_each):
            if inflated:
                member.took(inflated)
        self.report.files += result.read_files
        self.report.formats.update(result.formats)
        base = self._bases.get(job.group, 0)
        if job.group is not None:
            self._bases[job.group] = base + result.records
        report = self.report
        report.conversations += result.conversations
        report.messages += result.messages
        for kind, found, at in (("errors", result.errors, job.errors_at), ("warnings", result.warnings, job.warnings_at)):
            add, listed = (report.error, report.errors) if kind == "errors" else (report.warn, report.warnings)
            place = at + self._inserted[kind]
            for i, (file, where, reason, raw) in enumerate(found):
                add(file, pieces.shift_place(where, base), reason, raw=raw)  # appended, the quarantine budget applied
                listed.insert(place + i, listed.pop())
            self._inserted[kind] += len(found)
        report.skipped.update(result.skipped)
        report.drift.update(result.drift)

    def _start_workers(self) -> None:
        if self.executor is None:
            from concurrent.futures import ProcessPoolExecutor

            self.executor = ProcessPoolExecutor(self.processes, mp_context=context())
            _widen_pipes(self.executor)
            # the first submit starts the forkserver (unless already running) and waits for its
            # imports (0.3-1.5 s): done in a thread, so this one converts meanwhile
            self._starter = threading.Thread(target=self._start, name="chatetl-pool-start", daemon=True)
            self._starter.start()
            if WAIT_FOR_WORKERS:
                self._starter.join()
                self.started.result()  # type: ignore[union-attr]

    def _start(self) -> None:
        self.started = self.executor.submit(_started)  # type: ignore[union-attr]

    def _cut(self, leaf: Entry, fmt: Format, resume: tuple[int, int] | None) -> tuple[int, int] | None:
        """Cut the records of `leaf` into tasks, from the start or from `resume` (index, offset: that
        record is decoded here to find its end, the ones after it are cut fast again); None when
        all is read, else where a misfit asks to read on from."""
        batch: list[tuple[int, int, bytes]] = []
        size = 0
        try:
            try:
                with leaf.open() as f:
                    if resume is None:
                        splitter = ArraySplitter(f, prove=False)
                    else:
                        splitter = ArraySplitter.from_record(f, resume[0], resume[1], prove=False)
                    try:
                        for item in splitter:
                            index = splitter.records - 1
                            if isinstance(item, BadRecord):
                                self._submit(fmt, leaf.name, batch)
                                batch, size = [], 0
                                self._event(leaf.name, f"record {index}", item.reason, item.raw)
                                continue
                            raw = bytes(item[0])
                            batch.append((index, splitter.offset, raw))
                            size += len(raw)
                            if size >= TASK_BYTES:
                                self._submit(fmt, leaf.name, batch)
                                batch, size = [], 0
                    except SplitError as exc:
                        self._submit(fmt, leaf.name, batch)
                        batch, size = [], 0
                        done = splitter.records
                        after = f"after record {done - 1}" if done else "before the first record"
                        self._event(leaf.name, after, f"invalid or truncated JSON: {exc}", None)
                self._submit(fmt, leaf.name, batch)
                self.drain()  # every cut proven before the next file
            except DAMAGED_MEMBER as exc:  # the records read before the damage stand, as in one process
                self._submit(fmt, leaf.name, batch)
                self.drain()
                self.report.error(leaf.name, f"after {self.leaf_conversations} conversation(s)", damage_reason(exc))
        except _Misfit as misfit:
            self._drop()
            self.shares.misfits += 1
            return misfit.index, misfit.offset
        return None

    def _drop(self) -> None:
        """Everything after a misfit: cut from a wrong place, not used."""
        while self.queue:
            head = self.queue.popleft()
            if isinstance(head, Future):
                head.cancel() or head.exception()
        self.remote = 0

    def _submit(self, fmt: Format, name: str, batch: list[tuple[int, int, bytes]]) -> None:
        if not batch:
            return
        if self.remote < self.limit and self.started is not None and self.started.done():
            self.queue.append(self.executor.submit(convert_in_worker, fmt.value, name, self.upload_key, batch))  # type: ignore[union-attr]
            self.remote += 1
            self.shares.workers += 1
        else:  # the workers have enough (or have not started): this process converts it meanwhile
            self._settle(wait=len(self.queue) > self.limit + LOCAL_AHEAD)
            self.queue.append(_Done(convert_batch(fmt.value, name, self.upload_key, batch)))
            self.shares.here += 1
        self._settle()

    def _event(self, file: str, where: str, reason: str, raw: bytes | None) -> None:
        self.queue.append((file, where, reason, raw))
        self._settle()

    def drain(self) -> None:
        """Everything in flight settled and written."""
        self.flush_leaves()
        self._run_jobs(until_done=True)
        self._settle(everything=True)
        self._write_held()

    def _settle(self, everything: bool = False, wait: bool = False) -> None:
        """Merge what is done at the head of the queue, in order; `wait`: at least the head;
        `everything`: all of it."""
        while self.queue:
            head = self.queue[0]
            if isinstance(head, tuple):
                self.queue.popleft()
                self.report.error(*head)
                continue
            if isinstance(head, _Done):
                self.queue.popleft()
                self._merge(*head.result)
                continue
            if not (everything or wait or head.done()):
                return
            wait = False
            self.queue.popleft()
            self.remote -= 1
            tables, delta, misfit = head.result()
            self._merge(None if tables is None else (_from_ipc(tables[0]), _from_ipc(tables[1])), delta, misfit)

    def _merge(self, tables: Tables | None, delta: dict, misfit: tuple[int, int] | None) -> None:
        if tables is not None:
            convs, msgs = tables
            self.held.append(tables)
            self.held_bytes += convs.nbytes + (msgs.nbytes if msgs is not None else 0)
            self.leaf_conversations += convs.num_rows
            if self.held_bytes >= self.writer.batch_bytes:
                self._write_held()
        report = self.report
        report.conversations += delta["conversations"]
        report.messages += delta["messages"]
        for file, where, reason, raw in delta["errors"]:
            report.error(file, where, reason, raw=raw)
        report.skipped.update(delta["skipped"])
        report.drift.update(delta["drift"])
        if misfit is not None:
            raise _Misfit(*misfit)

    def _write_held(self) -> None:
        if not self.held:
            return
        convs = pa.concat_tables([c for c, _ in self.held])
        msgs = [m for _, m in self.held if m is not None]
        self.held, self.held_bytes = [], 0
        self.writer.write_tables(convs, pa.concat_tables(msgs) if msgs else None)


__all__ = ["CONVERTERS", "Shares", "convert_batch", "convert_in_worker", "read_into"]
