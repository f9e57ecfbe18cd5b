"""Normalize on every core: the parent cuts records, worker processes convert them, the parent writes in order.

For an array file of a format with a per-record conversion (ChatGPT and Claude.ai
`conversations.json`, sharded ones read from a zip member by member), the parent cuts the records
(`ArraySplitter`, but an object record ends at the next place that opens like the first record,
not decoded there) and sends their bytes, 1 MB at a time, to a pool of worker processes. A worker
decodes each, which proves the cut (a JSON value has one end); a record that does not decode, or
nests too deep, is a misfit: what was cut after it is dropped and the parent reads on from it,
decoding that record itself as the one-process splitter does (so a damaged or over-deep record
is reported in the same words and place), then cuts fast again. The worker converts each (the reader's conversion, branches
resolved by `convert_records`), builds the batch's columns with a `TableWriter` and sends back
Arrow tables with what it found (errors with their places, drift, skips, counts). The parent
writes the tables to Parquet and merges the reports in the order the records came, so the tables
(`Table.equals`) and the report are the one-process path's; only the row groups are cut differently.
Everything else (other formats and layouts, JSON Lines) is read in the parent as before, in its place.

`workers=None` is automatic (see AUTO: off for now, so one process); with AUTO on, both cores (at
most `MAX_AUTO_WORKERS`) when the input has at least `AUTO_MIN_BYTES`, else one; `workers=1` is
the one-process path itself. Workers come from the
'forkserver' start method (never forked from the caller, which may hold threads: Dagster steps,
the Parquet writer thread), preloaded with this module: the imports are paid once (0.3-1.5 s
here), each worker then forks from it in a few ms.

The cost: the parent does what is not split (the cut, the Parquet encoding, the hand-over); a
record boundary's look-alike inside a string costs one misfit (the tasks in flight are redone).
Each process holds at most a few 1 MB tasks and one batch of tables (peak RSS per process is
printed by bench/normalize_throughput.py).
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, Callable, Iterable

from chatetl.model import Conversation
from chatetl.readers import _read_leaves, chatgpt, claude_ai, jsonstream
from chatetl.readers.archive import DAMAGED_MEMBER, expand, expand_folder
from chatetl.readers.depthguard import MAX_JSON_DEPTH
from chatetl.readers.detect import Format, Layout
from chatetl.readers.entry import Entry
from chatetl.readers.jsonstream import convert_records
from chatetl.readers.report import ReadError, ReadReport
from chatetl.readers.splitter import WS, ArraySplitter, BadRecord, SplitError, decode, nests_too_deep
from chatetl.tables import TableWriter

AUTO_MIN_BYTES = 32 * 1024 * 1024  # smaller inputs read in one process (a pool costs 0.3-1.5 s to start)
MAX_AUTO_WORKERS = 2
TASK_BYTES = 1024 * 1024  # record bytes sent to a worker at once
CUT_SEARCH = 8 * 1024 * 1024  # bytes a fast cut looks through for the next record's opening
SWITCH_INTERVAL = 0.0002  # seconds (sys.setswitchinterval) while the pool runs: see _Pool.__enter__
Leaf = tuple[Entry, Format, "Layout | None"]


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# Whether `workers=None` may choose the pool. Off: on the shared 2-core bench machine the pool was
# faster on ChatGPT files (0.34 vs 0.28 of bare ijson) but slower on Claude.ai ones (0.12 vs 0.16),
# so the default stays the one-process path until bench/normalize_throughput.py shows it winning on
# every input; `--workers 2` (or workers=2) uses it.
AUTO = False


def resolve_workers(workers: int | None, input_bytes: int | None) -> int:
    """Worker processes to use: `workers` when given (1: the one-process path), else automatic:
    1 while AUTO is off; with AUTO on, both cores for an input of at least AUTO_MIN_BYTES or of
    unknown size, else 1."""
    if workers is not None:
        return max(1, int(workers))
    if not AUTO or (input_bytes is not None and input_bytes < AUTO_MIN_BYTES):
        return 1
    return max(1, min(cores(), MAX_AUTO_WORKERS))


def path_leaves(path: Any, report: ReadReport) -> Iterable[Leaf]:
    """The leaves of a local file or folder, as `read_path` reads them."""
    from pathlib import Path

    p = Path(path)
    if p.is_dir():
        yield from expand_folder(p, report)
    elif p.exists():
        yield from expand(Entry.from_path(p), report)
    else:
        report.error(str(p), "", "no such file or folder")


def read_into(writer: TableWriter, leaves: Iterable[Leaf], report: ReadReport, workers: int, upload_key: str | None = None) -> None:
    """Every conversation of `leaves` into `writer`, with `report` as `_read_leaves` leaves it; on
    `workers` processes when more than one."""
    if workers <= 1:
        for conv in _read_leaves(leaves, report):
            writer.add(conv, upload_key=upload_key)
        return
    with _Pool(workers, writer, report, upload_key) as pool:
        for leaf, fmt, layout in leaves:
            if fmt in CONVERTERS and (layout or Layout.ARRAY) is Layout.ARRAY and jsonstream.FAST:
                report.files += 1
                report.formats[fmt.value] += 1
                pool.read_leaf(leaf, fmt)
            else:
                pool.drain()  # what came before is written first
                for conv in _read_leaves([(leaf, fmt, layout)], report):
                    writer.add(conv, upload_key=upload_key)


# ---- the per-record conversions: each reader's own (the one its `read` uses) ----


CONVERTERS: dict[Format, Callable[[str, ReadReport], Callable[[Any, str], Conversation | None]]] = {
    Format.CHATGPT: chatgpt.record_converter,
    Format.CLAUDE_AI: claude_ai.record_converter,
}


# ---- the worker ----


class _WorkerReport(ReadReport):
    """A worker's report keeps every bad part's bytes: the parent applies the quarantine budget in order."""

    def error(self, file: str, where: str, reason: str, raw: bytes | None = None) -> ReadError:
        err = ReadError(file=file, where=where, reason=reason, raw=raw)
        self.errors.append(err)
        return err


class _Collector(TableWriter):
    """A TableWriter whose batches are kept as Arrow tables instead of written."""

    def __init__(self) -> None:
        super().__init__(os.devnull, os.devnull)
        self.out: list[tuple[Any, Any]] = []

    def _write(self, convs: Any, msgs: Any) -> None:
        self.out.append((convs, msgs))


_collector: _Collector | None = None


def _no_open() -> Any:
    raise RuntimeError("a worker reads records, not files")


def convert_batch(fmt: str, name: str, upload_key: str | None, records: list[tuple[int, int, bytes]]) -> tuple[list, dict, Any]:
    """In a worker: records (index in the file, byte offset, bytes) -> ([(conversations table,
    messages table)], report delta, misfit). The parent cut the records at their likely ends
    without decoding them: a record whose bytes do not decode as one value shallow enough (the
    cut was wrong, or the record is damaged or too deep) is the misfit, (index, offset), and the
    batch stops there: the parent reads on from it with the exact splitter."""
    global _collector
    if _collector is None:
        _collector = _Collector()
    report = _WorkerReport()
    convert = CONVERTERS[Format(fmt)](name, report)
    misfit = None

    def decoded():
        nonlocal misfit
        for i in range(len(records)):
            index, offset, raw = records[i]
            records[i] = None  # type: ignore[call-overload]  # let the bytes go once decoded
            try:
                value = decode(raw)
            except (ValueError, RecursionError):
                value = _MISFIT
            if value is _MISFIT or (
                raw.count(b"{") + raw.count(b"[") >= MAX_JSON_DEPTH and nests_too_deep(value)
            ):
                misfit = (index, offset)
                return
            yield f"record {index}", value

    for conv in convert_records(Entry(name=name, opener=_no_open), decoded(), report, convert):
        _collector.add(conv, upload_key=upload_key)
    _collector.flush()
    _collector._wait()
    out, _collector.out = _collector.out, []
    delta = {
        "conversations": report.conversations,
        "messages": report.messages,
        "errors": [(e.file, e.where, e.reason, e.raw) for e in report.errors],
        "skipped": report.skipped,
        "drift": report.drift,
    }
    return out, delta, misfit


_MISFIT = object()


class _Cutter(ArraySplitter):
    """The splitter, but an object record ends at its first candidate end, not decoded here (the
    worker proves it by decoding). A record while the opening is not known (the first, the first
    after a resume or after one that opened otherwise) is decoded and proven as the splitter does."""

    def _object_by_candidates(self) -> tuple[int, Any] | None:
        if self._cand is None:
            return super()._object_by_candidates()
        # only the learned opening (never "any object", which is most often a message inside the
        # record), or the array's end; past CUT_SEARCH bytes the exact scanner takes the record
        search = 1
        while True:
            m = self._cand.search(self.buf, self.start + search)
            if m is not None:
                return m.start() + 1 - self.start, None
            if self.eof:
                tail = self.buf.rstrip(WS)
                if tail.endswith(b"]"):
                    end = len(tail[:-1].rstrip(WS)) - self.start
                    if self.buf[self.start + end - 1:self.start + end] == b"}" and end > search:
                        return end, None
                return None
            if len(self.buf) - self.start > CUT_SEARCH:
                return None
            search = max(search, len(self.buf) - self.start - 256)  # a candidate may straddle the read
            self._more()


class _Resumed:
    """A stream read on from a record's start, behind a `[`: the splitter reads it as the array's rest."""

    def __init__(self, stream: Any, offset: int) -> None:
        self.stream = stream
        self.head = b"["
        while offset > 0:  # (a zip member or an S3 body cannot seek)
            skipped = stream.read(min(offset, 1024 * 1024))
            if not skipped:
                break
            offset -= len(skipped)

    def read(self, n: int = -1) -> bytes:
        head, self.head = self.head, b""
        return head + self.stream.read(n - len(head) if n > 0 else n)


class _Misfit(Exception):
    def __init__(self, index: int, offset: int) -> None:
        self.index, self.offset = index, offset


# ---- the parent ----


def _context() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


class _Pool:
    """Tasks in flight and local events (a bad record the splitter found), settled strictly in order."""

    def __init__(self, workers: int, writer: TableWriter, report: ReadReport, upload_key: str | None) -> None:
        self.workers = workers
        self.writer = writer
        self.report = report
        self.upload_key = upload_key
        self.executor: ProcessPoolExecutor | None = None
        self.queue: deque[Future | tuple] = deque()
        self.in_flight = 0
        self.limit = workers + 1  # tasks held at once: bounds the parent's memory
        self.leaf_conversations = 0
        # the workers' small batches, written together as one row group of about writer.batch_bytes
        self.held: list[tuple[Any, Any]] = []
        self.held_bytes = 0

    def _write_held(self) -> None:
        if not self.held:
            return
        import pyarrow as pa

        convs = pa.concat_tables([c for c, _ in self.held])
        msgs = [m for _, m in self.held if m is not None]
        self.held, self.held_bytes = [], 0
        write_tables(self.writer, convs, pa.concat_tables(msgs) if msgs else None)

    def __enter__(self) -> "_Pool":
        # the executor's threads hand tasks and results over while this one cuts records: let them
        # have the GIL soon (at the default 5 ms, every handover waits on the cutting)
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        try:
            if exc_type is None:
                self.drain()
        finally:
            sys.setswitchinterval(self._switch)
            if self.executor is not None:
                self.executor.shutdown(wait=True, cancel_futures=exc_type is not None)

    def read_leaf(self, leaf: Entry, fmt: Format) -> None:
        """One array file: records cut here, converted by the workers; its damage reported in its place.

        First cut fast (ends not proven here); when a worker finds a record that does not fit, what
        came after it is dropped and the file is read on from that record with the exact splitter."""
        self.leaf_conversations = 0
        resume = self._cut(leaf, fmt, None)
        while resume is not None:
            again = self._cut(leaf, fmt, resume)
            if again is not None and again[0] <= resume[0]:
                raise RuntimeError(f"{leaf.name}: record {again[0]}, proven by the splitter, did not decode in a worker")
            resume = again

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
                        splitter = _Cutter(f)
                    else:  # (the first record after the `[` is decoded to learn the opening again)
                        splitter = _Cutter(_Resumed(f, resume[1]))  # type: ignore[arg-type]
                        splitter.consumed, splitter.records = resume[1] - 1, resume[0]
                    try:
                        for item in splitter:
                            index = splitter.records - 1
                            if isinstance(item, BadRecord):
                                self._submit(fmt, leaf.name, batch)
                                batch, size = [], 0
                                self._event(leaf.name, f"record {index}", item.reason, item.raw)
                                continue
                            raw = bytes(item[0])
                            batch.append((index, splitter.consumed + splitter.start, raw))
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
                self.report.error(leaf.name, f"after {self.leaf_conversations} conversation(s)", f"damaged zip member: {exc}")
        except _Misfit as misfit:
            self._drop()
            return misfit.index, misfit.offset
        return None

    def _drop(self) -> None:
        """Everything after a misfit: cut from a wrong place, not used."""
        while self.queue:
            head = self.queue.popleft()
            if not isinstance(head, tuple):
                head.cancel() or head.exception()
        self.in_flight = 0

    def _submit(self, fmt: Format, name: str, batch: list[tuple[int, int, bytes]]) -> None:
        if not batch:
            return
        if self.executor is None:
            self.executor = ProcessPoolExecutor(self.workers, mp_context=_context())
        self.queue.append(self.executor.submit(convert_batch, fmt.value, name, self.upload_key, batch))
        self.in_flight += 1
        self._settle()

    def _event(self, file: str, where: str, reason: str, raw: bytes | None) -> None:
        self.queue.append((file, where, reason, raw))
        self._settle()

    def drain(self) -> None:
        """Everything in flight settled and written."""
        self._settle(everything=True)
        self._write_held()

    def _settle(self, everything: bool = False) -> None:
        while self.queue:
            head = self.queue[0]
            if isinstance(head, tuple):
                self.queue.popleft()
                self.report.error(*head)
                continue
            if not (everything or head.done() or self.in_flight > self.limit):
                return
            self.queue.popleft()
            self.in_flight -= 1
            self._merge(*head.result())

    def _merge(self, tables: list[tuple[Any, Any]], delta: dict, misfit: tuple[int, int] | None) -> None:
        for convs, msgs in tables:
            self.held.append((convs, msgs))
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


def write_tables(writer: TableWriter, convs: Any, msgs: Any) -> None:
    """Arrow tables of a batch into `writer`'s files, after what `writer.add` holds, in its Parquet thread."""
    writer.flush()
    writer._wait()
    if writer._pool is None:
        from concurrent.futures import ThreadPoolExecutor

        writer._pool = ThreadPoolExecutor(1, thread_name_prefix="parquet")
    writer._pending = writer._pool.submit(writer._write, convs, msgs)
    writer.conversations += convs.num_rows
    writer.messages += msgs.num_rows if msgs is not None else 0


__all__ = ["AUTO_MIN_BYTES", "CONVERTERS", "convert_batch", "path_leaves", "read_into", "resolve_workers", "write_tables"]
