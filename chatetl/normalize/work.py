"""One piece of an input read by one process, a worker or this one: its rows and its report.

Three kinds of piece. A byte range of a local array file, or a zip member read whole (`read_range`):
the process opens the file itself, nothing of it crosses between processes but offsets. A group of
small members of a zip on local disk, each read by its format's reader (`read_members`). Records cut
by the process that writes the tables, from a stream that cannot be read at an offset
(`convert_records`): their bytes cross, and are decoded there, which proves the cut.

What a piece gives back (`PieceResult`): its report's parts (errors with their places counted from
the piece's first record, and their bad bytes: the merge applies the quarantine budget in order),
and its rows: a part for the writer's folders (`ParquetRows`, encoded where the piece was read), Arrow
IPC files for a writer of one file per table (`IpcRows`), or none (written straight into the writer
by this process). The pool merges the pieces strictly in order (chatetl.normalize.pool).
"""

from __future__ import annotations

import os
import re
import zipfile
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import pyarrow as pa

from chatetl.keepsakes import Keepsake
from chatetl.model import Conversation
from chatetl.readers import limits, read_chat_files
from chatetl.readers.convert import Convert, convert_records
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import ChatFile, until_damaged
from chatetl.readers.inputs.counting_stream import CountingStream
from chatetl.readers.inputs.detect import Format
from chatetl.readers.inputs.member_stream import open_member
from chatetl.readers.jsonscan.decode import decode, nests_too_deep
from chatetl.readers.jsonscan.depthguard import MAX_JSON_DEPTH
from chatetl.readers.jsonscan.records import Shape, array_records, report_repairs
from chatetl.readers.jsonscan.splitter import ArraySplitter
from chatetl.readers.registry import READERS
from chatetl.readers.report import ReadReport
from chatetl.tables import TableBatch, TableWriter

Found = tuple[str, str, str, bytes | None]  # an error or a warning: (file, where, reason, its bytes)


class PieceReport(ReadReport):
    """A piece's report keeps every bad part's bytes: the merge applies the quarantine budget in order."""

    def _keep(self, raw: bytes | None) -> bytes | None:
        return raw


@dataclass
class PieceResult:
    """What one piece gave: its report's parts, the records it handed out, whether it reached the next
    piece's start, what it inflated, and where its rows are: a part (`parquet`), IPC files with each
    batch's row counts, or nowhere (written straight into the writer)."""

    conversations: int = 0
    messages: int = 0
    errors: list[Found] = field(default_factory=list)
    warnings: list[Found] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    drift: dict[str, int] = field(default_factory=dict)
    records: int = 0
    reached: bool = True
    inflated: int = 0  # a zip member's bytes inflated (counted against the upload's cap where it is merged)
    files: tuple[str, str] | None = None
    parquet: bool = False  # files: a part for PartsWriter.adopt (else IPC streams of `batches`)
    batches: list[tuple[int, int]] = field(default_factory=list)
    read_files: int = 0  # a group of members: the files read (ReadReport.files), by format
    formats: dict[str, int] = field(default_factory=dict)
    inflated_each: list[int] = field(default_factory=list)  # a group of members: each one's bytes inflated
    kept: list[Keepsake] = field(default_factory=list)  # what its sidecars and activity files keep beside the chats


# ---- where a piece's rows go ----


class IpcRows:
    """A piece's rows as two Arrow IPC streams (conversations, messages), a TableBatch at a time,
    flushed at the writer's thresholds (so its row groups are about as big)."""

    def __init__(self, prefix: str, upload_key: str | None, batch_bytes: int, batch_messages: int) -> None:
        self.paths = (prefix + ".conversations.arrow", prefix + ".messages.arrow")
        self.upload_key = upload_key
        self.batch_bytes, self.batch_messages = batch_bytes, batch_messages
        self.batch = TableBatch()
        self.streams: list[Any] = [None, None]
        self.sinks: list[Any] = [None, None]
        self.batches: list[tuple[int, int]] = []

    def add(self, conv: Conversation) -> None:
        self.batch.add(conv, self.upload_key)
        if self.batch.bytes >= self.batch_bytes or self.batch.rows >= self.batch_messages:
            self.flush()

    def flush(self) -> None:
        built = self.batch.tables()
        if built is None:
            return
        convs, msgs = built
        self._write(0, convs)
        if msgs is not None:
            self._write(1, msgs)
        self.batches.append((convs.num_rows, msgs.num_rows if msgs is not None else 0))

    def _write(self, i: int, table: pa.Table) -> None:
        if self.streams[i] is None:
            self.sinks[i] = pa.OSFile(self.paths[i], "wb")
            self.streams[i] = pa.ipc.new_stream(self.sinks[i], table.schema)
        self.streams[i].write_table(table)

    def close(self) -> None:
        self.flush()
        for stream, sink in zip(self.streams, self.sinks, strict=True):
            if stream is not None:
                stream.close()
                sink.close()


class ParquetRows:
    """A piece's rows as a part of the writer's folders (PartsWriter.spare_paths), encoded in the
    process that read them: the writer then only renames it (`adopt`)."""

    def __init__(self, conversations_path: str, messages_path: str, upload_key: str | None, batch_bytes: int,
                 batch_messages: int) -> None:
        self.paths = (conversations_path, messages_path)
        self.upload_key = upload_key
        self.writer = TableWriter(conversations_path, messages_path, batch_messages=batch_messages, batch_bytes=batch_bytes)

    def add(self, conv: Conversation) -> None:
        self.writer.add(conv, self.upload_key)

    def close(self) -> None:
        self.writer.close()


Rows = IpcRows | ParquetRows
Target = tuple[str, ...]  # ("parquet", conversations path, messages path) or ("ipc", prefix)


def read_rows(result: PieceResult) -> Iterator[tuple[pa.Table, pa.Table | None]]:
    """A piece's rows back from its IPC files, a batch at a time (read, not mapped: the file's
    pages are not held), the files removed once read."""
    if result.files is None or result.parquet:
        return
    readers = [pa.ipc.open_stream(pa.OSFile(p, "rb")) if os.path.exists(p) else None for p in result.files]
    try:
        for n_convs, n_msgs in result.batches:
            yield _take(readers[0], n_convs), (_take(readers[1], n_msgs) if n_msgs else None)
    finally:
        discard(result)


def discard(result: PieceResult) -> None:
    """A piece's files removed (read, or not used)."""
    for p in result.files or ():
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def _take(reader: Any, rows: int) -> pa.Table:
    batches, got = [], 0
    while got < rows:
        batch = reader.read_next_batch()
        batches.append(batch)
        got += batch.num_rows
    return pa.Table.from_batches(batches, reader.schema)


def to_files(target: Target, upload_key: str | None, batch_bytes: int, batch_messages: int,
             tick: Callable[[], None] | None, read: Callable[[Rows, Callable[[Conversation], Any]], PieceResult]) -> PieceResult:
    """`read(rows, add)` with its rows written to `target`'s files, `tick` run after each conversation (the
    pool, when this process reads a piece, hands out the next meanwhile)."""
    rows: Rows
    if target[0] == "parquet":
        rows = ParquetRows(target[1], target[2], upload_key, batch_bytes, batch_messages)
    else:
        rows = IpcRows(target[1], upload_key, batch_bytes, batch_messages)

    def add(conv: Conversation) -> None:
        rows.add(conv)
        if tick is not None:
            tick()

    try:
        return read(rows, add)
    except BaseException:  # (an unreadable file, an interrupt): what it wrote is not left behind
        discard(PieceResult(files=rows.paths))
        raise


def _finished(result: PieceResult, report: ReadReport, rows: Rows | None) -> None:
    """A piece's files closed, and what its report found, into its result."""
    if rows is not None:
        rows.close()
        result.files = rows.paths
        if isinstance(rows, IpcRows):
            result.batches = rows.batches
        else:
            result.parquet = True
    result.conversations, result.messages = report.conversations, report.messages
    result.errors = [(e.file, e.where, e.reason, e.raw) for e in report.errors]
    result.warnings = [(e.file, e.where, e.reason, e.raw) for e in report.warnings]
    result.skipped, result.drift = dict(report.skipped), dict(report.drift)
    result.kept = report.kept


def no_open() -> BinaryIO:
    raise RuntimeError("a piece reads records, not files")


def _converter(fmt: str, name: str, report: ReadReport) -> Convert:
    converter = READERS[Format(fmt)].converter
    if converter is None:
        raise ValueError(f"{fmt} files are read whole by their reader, not record by record")
    return converter(name, report)


# ---- a byte range of a local array file, or a zip member whole ----


def read_range(fmt: str, source: str | tuple[str, int], name: str, start: int | None, stop: int | None, max_value: int,
               add: Callable[[Conversation], Any], rows: Rows | None = None, opening: re.Pattern[bytes] | None = None) -> PieceResult:
    """The records of the array file `source` (a path, or a zip's path and a member's header offset)
    from the one at byte `start` (None: the file's first) up to the one at byte `stop` (None: the
    end), converted by the format's reader and given to `add` (`rows`: the files they go to); places
    counted from the piece's first record. A record past `stop` without one at it: the piece reads
    on to the end (`reached` False). A damaged zip member ends the piece where it broke, as in one
    process: the conversations before it stand, the damage is reported after them."""
    report = PieceReport()
    result = PieceResult(reached=stop is None)

    def records() -> Iterator[tuple[str, Any]]:
        with _opened(source, result) as f:
            if start is None:
                splitter = ArraySplitter(f, max_value=max_value, opening=opening)
            else:
                f.seek(start)
                splitter = ArraySplitter.from_record(f, 0, 0, max_value=max_value, opening=opening)
                splitter.consumed = start - 1  # (offsets of the file: behind the `[` put before the record)
            if (yield from array_records(splitter, name, report, stop, from_start=start is None)):
                result.reached = True
                result.records = splitter.records - 1  # (the record at `stop` is the next piece's)
            else:
                result.records = splitter.records

    for conv in until_damaged(convert_records(Entry(name=name, opener=no_open), records(), report, _converter(fmt, name, report)),
                              name, report):
        add(conv)
    _finished(result, report, rows)
    return result


def read_range_to_files(fmt: str, source: str | tuple[str, int], name: str, start: int | None, stop: int | None,
                        max_value: int, target: Target, upload_key: str | None, batch_bytes: int, batch_messages: int,
                        opening: re.Pattern[bytes] | None = None, *, tick: Callable[[], None] | None = None) -> PieceResult:
    """`read_range` with its rows written to files (what a worker runs): `target` is ("parquet",
    conversations path, messages path), a part for PartsWriter.adopt, or ("ipc", prefix)."""
    return to_files(target, upload_key, batch_bytes, batch_messages, tick,
                    lambda rows, add: read_range(fmt, source, name, start, stop, max_value, add, rows, opening))


@contextmanager
def _opened(source: str | tuple[str, int], result: PieceResult) -> Iterator[BinaryIO]:
    """A piece's file, or its zip member (found by its header offset, its inflated bytes counted into `result`)."""
    if isinstance(source, str):
        with open(source, "rb") as f:
            yield f
        return
    zip_path, offset = source
    with zipfile.ZipFile(zip_path) as zf:
        info = next(i for i in zf.infolist() if i.header_offset == offset)
        with open_member(zf, info) as raw:
            yield CountingStream(raw, lambda pos: setattr(result, "inflated", pos))  # type: ignore[misc]


# ---- a group of members of a zip on local disk, each read by its reader ----


@dataclass(frozen=True)
class MemberSpec:
    """A member another process reads with its reader: a member of a zip on local disk (its header offset:
    names may repeat), as `expand` found it, its format and shape."""

    name: str
    zip_path: str
    header_offset: int
    size: int | None
    fmt: str
    shape: str | None


def read_members(members: list[MemberSpec], given: limits.Limits, add: Callable[[Conversation], Any],
                 rows: Rows | None = None) -> PieceResult:
    """The members, of one zip, read in order as one process reads them (`read_chat_files`: each by its
    reader, a damaged one reported in its place), under the limits `given` (those of the process that
    queued them); each member's inflated bytes counted."""
    report = PieceReport()
    result = PieceResult(inflated_each=[0] * len(members))
    zf, infos = _ZIPS.opened(members[0].zip_path)

    def opener(i: int, spec: MemberSpec) -> Callable[[], BinaryIO]:
        def took(pos: int) -> None:
            result.inflated_each[i] = max(result.inflated_each[i], pos)  # (opened again: counted once)

        return lambda: CountingStream(open_member(zf, infos[spec.header_offset]), took)  # type: ignore[return-value]

    chat_files = [ChatFile(Entry(name=spec.name, opener=opener(i, spec), size=spec.size), Format(spec.fmt),
                           Shape(spec.shape) if spec.shape is not None else None) for i, spec in enumerate(members)]
    with limits.given_by(given):
        for conv in read_chat_files(chat_files, report):
            add(conv)
    _finished(result, report, rows)
    result.read_files, result.formats = report.files, dict(report.formats)
    result.inflated = sum(result.inflated_each)
    return result


def read_members_to_files(members: list[MemberSpec], given: limits.Limits, target: Target, upload_key: str | None,
                          batch_bytes: int, batch_messages: int, *, tick: Callable[[], None] | None = None) -> PieceResult:
    """`read_members` with its rows written to files (what a worker runs), as `read_range_to_files`."""
    return to_files(target, upload_key, batch_bytes, batch_messages, tick, lambda rows, add: read_members(members, given, add, rows))


class _OpenZip:
    """The zip the last group of members came from, kept open in this process with its members by header
    offset (the central directory of a zip of thousands of files is read once, not once a group), until
    another zip's group comes or the pool closes it."""

    def __init__(self) -> None:
        self._held: tuple[tuple[str, int, int], zipfile.ZipFile, dict[int, zipfile.ZipInfo]] | None = None

    def opened(self, path: str) -> tuple[zipfile.ZipFile, dict[int, zipfile.ZipInfo]]:
        """The zip at `path`, open, and its members by header offset: the one kept from the last group when it
        is the same file (its size and modification time unchanged)."""
        stat = os.stat(path)
        key = (path, stat.st_size, stat.st_mtime_ns)
        if self._held is None or self._held[0] != key:
            self.close()
            zf = zipfile.ZipFile(path)
            self._held = (key, zf, {info.header_offset: info for info in zf.infolist()})
        return self._held[1], self._held[2]

    def close(self) -> None:
        if self._held is not None:
            self._held[1].close()
            self._held = None


_ZIPS = _OpenZip()


def close_zip() -> None:
    """Close the zip kept for the groups of members, if any."""
    _ZIPS.close()


# ---- records cut from a stream by the process that writes the tables ----


Record = tuple[int, int, bytes]  # (index in the file, byte offset, bytes)
Tables = tuple[pa.Table, pa.Table | None]  # (conversations, messages or None)


@dataclass
class RecordsResult:
    """What converting cut records gave: their tables (None: no conversation), the report's parts, and the
    misfit, (index, offset) of the record where the cut proved wrong (None: every cut was right)."""

    tables: Tables | None
    conversations: int
    messages: int
    errors: list[Found]
    skipped: Counter[str]
    drift: Counter[str]
    misfit: tuple[int, int] | None
    warnings: list[Found] = field(default_factory=list)


def convert_records_cut(fmt: str, name: str, upload_key: str | None, records: list[Record]) -> RecordsResult:
    """Records cut at their likely ends without decoding them, converted into tables. A record whose bytes
    do not decode as one value shallow enough (the cut was wrong, or the record is damaged or too deep)
    is the misfit, and the piece stops there: the process that cut it reads on from it with the proving
    splitter, as one process does."""
    report = PieceReport()
    misfit: tuple[int, int] | None = None

    def decoded() -> Iterator[tuple[str, Any]]:
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
    for conv in convert_records(Entry(name=name, opener=no_open), decoded(), report, _converter(fmt, name, report)):
        batch.add(conv, upload_key=upload_key)
    return RecordsResult(batch.tables(), report.conversations, report.messages,
                         [(e.file, e.where, e.reason, e.raw) for e in report.errors], report.skipped, report.drift, misfit,
                         [(e.file, e.where, e.reason, e.raw) for e in report.warnings])


def convert_records_in_worker(fmt: str, name: str, upload_key: str | None, records: list[Record]) -> RecordsResult:
    """`convert_records_cut` in a worker process: its tables as Arrow IPC streams, which cross to the
    other process several times cheaper than pickled tables (`tables_of_ipc` there)."""
    result = convert_records_cut(fmt, name, upload_key, records)
    if result.tables is not None:
        convs, msgs = result.tables
        result.tables = (_to_ipc(convs), None if msgs is None else _to_ipc(msgs))
    return result


def tables_of_ipc(result: RecordsResult) -> RecordsResult:
    """A worker's result with its tables read back from their IPC streams."""
    if result.tables is not None:
        convs, msgs = result.tables
        result.tables = (pa.ipc.open_stream(convs).read_all(), None if msgs is None else pa.ipc.open_stream(msgs).read_all())
    return result


def _to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as stream:
        stream.write_table(table)
    data: bytes = sink.getvalue().to_pybytes()
    return data


def started() -> bool:
    """A worker's first call: it answers once its process runs (the forkserver's imports done)."""
    return True


_RECORD_PLACE = re.compile(r"^(after )?record (-?\d+)")


def shift_place(where: str, base: int) -> str:
    """A place counted from a piece's first record, counted from the file's (`base` records before it)."""
    if not base:
        return where
    return _RECORD_PLACE.sub(lambda m: f"{m.group(1) or ''}record {int(m.group(2)) + base}", where, count=1)


__all__ = ["IpcRows", "MemberSpec", "ParquetRows", "PieceReport", "PieceResult", "RecordsResult", "close_zip",
           "convert_records_cut", "convert_records_in_worker", "discard", "read_members", "read_members_to_files",
           "read_range", "read_range_to_files", "read_rows", "shift_place", "started", "tables_of_ipc"]
