"""An array file that cannot be read at an offset (a zip's one big member, a member of a nested zip, a
file in S3, a re-encoded one), read on every process all the same: this process cuts its records.

The records are cut without decoding them (`ArraySplitter(prove=False)`: an object record ends at the
next place that opens like the first record) into pieces of about `records_bytes`. A piece goes to a
worker while the workers hold fewer than QUEUED_PER_WORKER each; otherwise this process converts it
itself, at once: as many busy processes as cores, none waiting on the other.

A piece's conversion decodes each record, which proves the cut (a JSON value has one end). A record
that does not decode, or nests too deep, is a misfit: what was cut after it is dropped and this process
reads on from it, decoding that record itself as the one-process splitter does (so a damaged or
over-deep record is reported in the same words and place), then cuts fast again. The results are
written (about `batch_bytes` a row group) and the reports merged strictly in the order the records came.
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future

import pyarrow as pa

from chatetl.normalize import work
from chatetl.normalize.pool import Pool
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import DAMAGED_MEMBER, damage_reason
from chatetl.readers.inputs.detect import Format
from chatetl.readers.jsonscan.splitter import ArraySplitter, BadRecord, SplitError

QUEUED_PER_WORKER = 2  # pieces a worker holds (one converting, one waiting); past that this process converts
LOCAL_AHEAD = 2  # pieces converted here that may wait behind an unfinished worker's piece

Event = tuple[str, str, str, bytes | None]  # a bad record or a break the cutting found: (file, where, reason, bytes)


class _Misfit(Exception):
    def __init__(self, index: int, offset: int) -> None:
        super().__init__(index, offset)
        self.index, self.offset = index, offset


def read_stream(pool: Pool, entry: Entry, fmt: Format) -> None:
    """One array file: records cut here, converted here and by the workers; its damage reported in its
    place. First cut fast (ends not proven here); when a piece finds a record that does not fit, what
    came after it is dropped and the file is read on from that record."""
    pool.drain()  # the pieces before it are written first
    pool.start_workers()
    cut = _Cut(pool, entry, fmt)
    resume = cut.run(None)
    while resume is not None:
        again = cut.run(resume)
        if again is not None and again[0] <= resume[0]:
            raise RuntimeError(f"{entry.name}: record {again[0]}, proven by the splitter, did not decode in a piece")
        resume = again


class _Cut:
    """The pieces of one stream in flight (a worker's futures, results converted here) and the events
    the cutting found, settled strictly in order."""

    def __init__(self, pool: Pool, entry: Entry, fmt: Format) -> None:
        self.pool = pool
        self.entry = entry
        self.fmt = fmt
        self.queue: deque[Future[work.RecordsResult] | work.RecordsResult | Event] = deque()
        self.remote = 0  # pieces in the workers' hands
        self.limit = QUEUED_PER_WORKER * pool.processes
        self.conversations = 0  # of the file, merged so far
        # the pieces' tables, written together as one row group of about the writer's batch_bytes
        self.held: list[work.Tables] = []
        self.held_bytes = 0

    def run(self, resume: tuple[int, int] | None) -> tuple[int, int] | None:
        """Cut the records into pieces, from the start or from `resume` (index, offset: that record is
        decoded here to find its end, the ones after it are cut fast again); None when all is read, else
        where a misfit asks to read on from."""
        entry, name = self.entry, self.entry.name
        batch: list[work.Record] = []
        size = 0
        try:
            try:
                with entry.open() as f:
                    if resume is None:
                        splitter = ArraySplitter(f, prove=False)
                    else:
                        splitter = ArraySplitter.from_record(f, resume[0], resume[1], prove=False)
                    try:
                        for item in splitter:
                            index = splitter.records - 1
                            if isinstance(item, BadRecord):
                                self._submit(batch)
                                batch, size = [], 0
                                self._event((name, f"record {index}", item.reason, item.raw))
                                continue
                            raw = bytes(item[0])
                            batch.append((index, splitter.offset, raw))
                            size += len(raw)
                            if size >= self.pool.tuning.records_bytes:
                                self._submit(batch)
                                batch, size = [], 0
                    except SplitError as exc:
                        self._submit(batch)
                        batch, size = [], 0
                        done = splitter.records
                        after = f"after record {done - 1}" if done else "before the first record"
                        self._event((name, after, f"invalid or truncated JSON: {exc}", None))
                self._submit(batch)
                self._settle(everything=True)  # every cut proven before the next file
                self._write_held()
            except DAMAGED_MEMBER as exc:  # the records read before the damage stand, as in one process
                self._submit(batch)
                self._settle(everything=True)
                self._write_held()
                self.pool.report.error(name, f"after {self.conversations} conversation(s)", damage_reason(exc))
        except _Misfit as misfit:
            self._drop()
            self.pool.shares.misfits += 1
            return misfit.index, misfit.offset
        return None

    def _drop(self) -> None:
        """Everything after a misfit: cut from a wrong place, not used."""
        while self.queue:
            head = self.queue.popleft()
            if isinstance(head, Future):
                head.cancel() or head.exception()
        self.remote = 0

    def _submit(self, batch: list[work.Record]) -> None:
        if not batch:
            return
        pool = self.pool
        if self.remote < self.limit and pool.workers_ready():
            assert pool.executor is not None
            self.queue.append(pool.executor.submit(work.convert_records_in_worker, self.fmt.value, self.entry.name, pool.upload_key, batch))
            self.remote += 1
            pool.shares.workers += 1
        else:  # the workers have enough (or have not started): this process converts it meanwhile
            self._settle(wait=len(self.queue) > self.limit + LOCAL_AHEAD)
            self.queue.append(work.convert_records_cut(self.fmt.value, self.entry.name, pool.upload_key, batch))
            pool.shares.here += 1
        self._settle()

    def _event(self, event: Event) -> None:
        self.queue.append(event)
        self._settle()

    def _settle(self, everything: bool = False, wait: bool = False) -> None:
        """Merge what is done at the head of the queue, in order; `wait`: at least the head;
        `everything`: all of it."""
        while self.queue:
            head = self.queue[0]
            if isinstance(head, tuple):
                self.queue.popleft()
                self.pool.report.error(*head)
                continue
            if isinstance(head, work.RecordsResult):
                self.queue.popleft()
                self._merge(head)
                continue
            if not (everything or wait or head.done()):
                return
            wait = False
            self.queue.popleft()
            self.remote -= 1
            self._merge(work.tables_of_ipc(head.result()))

    def _merge(self, result: work.RecordsResult) -> None:
        if result.tables is not None:
            convs, msgs = result.tables
            self.held.append(result.tables)
            self.held_bytes += convs.nbytes + (msgs.nbytes if msgs is not None else 0)
            self.conversations += convs.num_rows
            if self.held_bytes >= self.pool.writer.batch_bytes:
                self._write_held()
        report = self.pool.report
        report.conversations += result.conversations
        report.messages += result.messages
        for file, where, reason, raw in result.errors:
            report.error(file, where, reason, raw=raw)
        for file, where, reason, raw in result.warnings:
            report.warn(file, where, reason, raw=raw)
        report.skipped.update(result.skipped)
        report.drift.update(result.drift)
        if result.misfit is not None:
            raise _Misfit(*result.misfit)

    def _write_held(self) -> None:
        if not self.held:
            return
        convs = pa.concat_tables([c for c, _ in self.held])
        msgs = [m for _, m in self.held if m is not None]
        self.held, self.held_bytes = [], 0
        self.pool.writer.write_tables(convs, pa.concat_tables(msgs) if msgs else None)


__all__ = ["read_stream"]
