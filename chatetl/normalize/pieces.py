"""A local array file cut into pieces by byte ranges, each piece read whole by whichever process is
free: every process reads, decodes, converts and builds its own rows, nothing of the file crosses
between processes but two offsets. The array members of a zip on local disk are pieces too, each
read whole (a deflated stream cannot start in its middle): the process opens the zip itself and
finds the member by its header offset (`convert_piece`'s source).

How a piece starts. The file's first record is read here and teaches the splitter how records
open (`ArraySplitter.opening`: `}`, `,` and an object opening with the first record's first key,
and its second key when the first value is a string, as ChatGPT's `"title": "...", "create_time"`
and Claude.ai's `"uuid": "...", "name"`). Every PIECE_BYTES of the file, the first such place is
a piece's start (`plan`): the byte where the next record's `{` is, found by one regex search over
a few KB (a piece with no such place in its range is joined to the one before it).

Why a piece's start need not be proven. A place that opens like a record is a record's start
unless it is an object nested inside one (a citation list of `{"title": ..., "create_time": ...}`
objects, say; inside a string a `"` before the key cannot stand unescaped). The piece before it
tells which: it reads from its own start, proven by the piece before it, with the proving
splitter (exactly the one-process path's `_iter_array`), and stops at the record that starts at
the next piece's start. When no record starts there (the start was inside a record, or the array
ended or broke before it), that piece `overran`: it reads on to the end of the file, as one
process would, and the pieces after it are dropped unread or unused. So the tables and the report
are the one-process path's whatever the file holds (a look-alike costs one piece's parallelism,
never a row), and a piece started inside a record produces nothing that is kept.

What a piece gives back (`PieceResult`): its rows, either as a part of the command line's output
folders, encoded to Parquet where the piece was read (`ParquetRows`; the TableWriter only renames
it, `adopt`), or as Arrow IPC streams in a temporary folder for a writer of one file per table
(`IpcRows`; an upload's tables), or straight into the TableWriter when this process reads the
first piece not yet written; its report (errors with their places counted from the piece's first
record, and their bad bytes; drift, skips, counts), how many records it handed out, whether it
reached the next piece's start, and what a member inflated. chatetl.normalize.pool merges the
pieces strictly in order, their errors shifted to the file's record numbers (`shift_place`), so
the tables (`Table.equals`) and the report equal one process's.

What it costs (200 MB ChatGPT-shaped file, 2 processes, 8 MB pieces): the CPU of all processes
together within 2-10% of one process's (5.2-5.5 s against 4.9-5.4 s in the same runs; 1 MB pieces
6.2-7.3 s: a piece's start costs a few ms); the last two pieces' worth is cut in quarters so neither
process waits long for the other at the end.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import pyarrow as pa

from chatetl.model import Conversation
from chatetl.readers import limits, read_chat_files
from chatetl.readers.convert import convert_records
from chatetl.readers.entry import Entry
from chatetl.readers.inputs.archive import ChatFile, until_damaged
from chatetl.readers.inputs.counting_stream import CountingStream
from chatetl.readers.inputs.detect import Format
from chatetl.readers.inputs.member_stream import open_member
from chatetl.readers.jsonscan.records import Shape, array_records
from chatetl.readers.jsonscan.splitter import ArraySplitter, BadRecord, SplitError
from chatetl.readers.report import ReadReport
from chatetl.tables import TableBatch, TableWriter

PIECE_BYTES = 8 * 1024 * 1024  # a piece's planned size (4 MB: more pieces, no faster; 16 MB: a longer tail)
SEARCH_READ = 256 * 1024  # bytes read at a time looking for a piece's start
OVERLAP = 64 * 1024  # bytes kept between reads of the search: an opening (with a first value of a string) longer is missed


def opening(f: BinaryIO, max_value: int) -> re.Pattern[bytes] | None:
    """How the records of the array file `f` open, learned from its first record (None: the file
    is no array of objects, or its first record cannot be read)."""
    splitter = ArraySplitter(f, max_value=max_value)
    try:
        first = next(iter(splitter), None)
    except SplitError:
        return None
    if first is None or isinstance(first, BadRecord):
        return None
    return splitter.opening


@dataclass
class Plan:
    """Where the pieces after the first start (each a `{` that opens like the first record), and
    how the records open (given to each piece's splitter: a piece's first record is found by it,
    not by the exact scanner)."""

    starts: list[int]
    opening: re.Pattern[bytes] | None = None


def plan(path: str | os.PathLike[str], size: int, max_value: int, piece_bytes: int | None = None) -> Plan:
    """The pieces of an array file: one start at or after every `piece_bytes` (no starts: the file is one piece)."""
    piece_bytes = piece_bytes or PIECE_BYTES
    if size < 2 * piece_bytes:
        return Plan([])
    with open(path, "rb") as f:
        pattern = opening(f, max_value)
        if pattern is None:
            return Plan([])
        starts: list[int] = []
        planned = _planned(size, piece_bytes)
        for at, limit in zip(planned, [*planned[1:], size]):
            start = _opening_in(f, max(at, starts[-1] + 1 if starts else 0), limit, pattern)
            if start is not None:
                starts.append(start)
    return Plan(starts, pattern)


def _planned(size: int, piece_bytes: int) -> list[int]:
    """Where the pieces after the first are looked for: every `piece_bytes`, and every quarter of that
    in the last two pieces' worth, so the process that takes the last piece finishes soon after the
    other (8 MB pieces on the 200 MB bench file: 0.2 s each here, the tail 0.05 s)."""
    out, at = [], piece_bytes
    while at < size:
        out.append(at)
        at += piece_bytes if size - at > 2 * piece_bytes else max(piece_bytes // 4, 1)
    return out


def _opening_in(f: BinaryIO, at: int, limit: int, pattern: re.Pattern[bytes]) -> int | None:
    """The offset of the `{` of the first place at or after `at` (its `}` before `limit`) where a
    record opens like the first one; None when there is none before `limit`."""
    f.seek(at)
    base, buf = at, b""
    while base < limit:
        data = f.read(SEARCH_READ)
        buf += data
        m = pattern.search(buf)
        if m is not None:
            if base + m.start() >= limit:
                return None
            return base + m.start() + m.group().index(b"{", 1)
        if not data:
            return None
        keep = buf[-OVERLAP:]
        base += len(buf) - len(keep)
        buf = keep
    return None


# ---- one piece, in a worker or in this process ----


class PieceReport(ReadReport):
    """A piece's (or a task's) report keeps every bad part's bytes: the merge applies the quarantine
    budget in order."""

    def _keep(self, raw: bytes | None) -> bytes | None:
        return raw


@dataclass
class PieceResult:
    """What one piece gave: its report's parts, the records it handed out, whether it reached the
    next piece's start, what it inflated (a zip member), and where its rows are: a Parquet part
    (`parquet`), IPC files with each batch's row counts, or nowhere (written straight into the
    TableWriter)."""

    conversations: int = 0
    messages: int = 0
    errors: list[tuple[str, str, str, bytes | None]] = field(default_factory=list)
    warnings: list[tuple[str, str, str, bytes | None]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    drift: dict[str, int] = field(default_factory=dict)
    records: int = 0
    reached: bool = True
    inflated: int = 0  # a zip member's bytes inflated (counted against the upload's cap where it is merged)
    files: tuple[str, str] | None = None
    parquet: bool = False  # files: a part for TableWriter.adopt (else IPC streams of `batches`)
    batches: list[tuple[int, int]] = field(default_factory=list)
    read_files: int = 0  # a batch of leaves: the files read (ReadReport.files), by format
    formats: dict[str, int] = field(default_factory=dict)
    inflated_each: list[int] = field(default_factory=list)  # a batch of zip members: each one's bytes inflated


class IpcRows:
    """A piece's rows as two Arrow IPC streams (conversations, messages), a TableBatch at a time,
    flushed at the TableWriter's thresholds (so its row groups are about as big)."""

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
        for stream, sink in zip(self.streams, self.sinks):
            if stream is not None:
                stream.close()
                sink.close()


class ParquetRows:
    """A piece's rows as a part of the command line's output folders (TableWriter.beside_parts),
    encoded in the process that read them: the TableWriter then only renames it (`adopt`)."""

    def __init__(self, conversations_path: str, messages_path: str, upload_key: str | None, batch_bytes: int,
                 batch_messages: int) -> None:
        self.paths = (conversations_path, messages_path)
        self.upload_key = upload_key
        self.writer = TableWriter(conversations_path, messages_path, batch_messages=batch_messages, batch_bytes=batch_bytes)

    def add(self, conv: Conversation) -> None:
        self.writer.add(conv, self.upload_key)

    def close(self) -> None:
        self.writer.close()


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


def convert_piece(
    fmt: str,
    source: str | tuple[str, int],
    name: str,
    start: int | None,
    stop: int | None,
    max_value: int,
    rows: IpcRows | ParquetRows | Callable[[Conversation], None],
    opening: re.Pattern[bytes] | None = None,
    add: Callable[[Conversation], Any] | None = None,
) -> PieceResult:
    """The records of the array file `source` (a path, or a zip's path and a member's header offset)
    from the one at byte `start` (None: the file's first) up to the one at byte `stop` (None: the
    end), converted by the format's reader into `rows`; places counted from the piece's first
    record. A record past `stop` without one at it: the piece reads on to the end (`reached`
    False). A damaged zip member ends the piece where it broke, as in one process: the
    conversations before it stand, the damage is reported after them."""
    from chatetl.normalize.pool import (
        CONVERTERS,  # (the per-record conversions, each reader's own)
    )

    report = PieceReport()
    result = PieceResult(reached=stop is None)
    if add is None:  # (given: `rows.add` and more)
        add = rows.add if isinstance(rows, IpcRows | ParquetRows) else rows

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

    convert = CONVERTERS[Format(fmt)](name, report)
    for conv in until_damaged(convert_records(Entry(name=name, opener=no_open), records(), report, convert), name, report):
        add(conv)
    _finished(result, report, rows)
    return result


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


def convert_piece_to_files(fmt: str, source: str | tuple[str, int], name: str, start: int | None, stop: int | None, max_value: int,
                           target: tuple[str, ...], upload_key: str | None, batch_bytes: int, batch_messages: int,
                           opening: re.Pattern[bytes] | None = None, tick: Callable[[], None] | None = None) -> PieceResult:
    """`convert_piece` with its rows written to files (what a worker runs): `target` is ("parquet",
    conversations path, messages path), a part for TableWriter.adopt, or ("ipc", prefix); `tick`
    runs after each conversation (the pool, when this process reads a piece, hands out the next)."""
    return _to_files(target, upload_key, batch_bytes, batch_messages, tick,
                     lambda rows, add: convert_piece(fmt, source, name, start, stop, max_value, rows, opening, add))


def _to_files(target: tuple[str, ...], upload_key: str | None, batch_bytes: int, batch_messages: int,
              tick: Callable[[], None] | None, convert: Callable[[IpcRows | ParquetRows, Callable[[Conversation], Any]], PieceResult]) -> PieceResult:
    """`convert(rows, add)` with its rows written to `target`'s files, `tick` run after each conversation."""
    if target[0] == "parquet":
        rows: IpcRows | ParquetRows = ParquetRows(target[1], target[2], upload_key, batch_bytes, batch_messages)
    else:
        rows = IpcRows(target[1], upload_key, batch_bytes, batch_messages)
    add = rows.add if tick is None else lambda conv: (rows.add(conv), tick())
    try:
        return convert(rows, add)
    except BaseException:  # (an unreadable file, an interrupt): what it wrote is not left behind
        discard(PieceResult(files=rows.paths))
        raise


# ---- a batch of leaves (zip members read whole by their readers), in a worker or in this process ----


@dataclass(frozen=True)
class LeafSpec:
    """A leaf another process reads with its reader: a member of a zip on local disk (its header offset:
    names may repeat), as `expand` found it, its format and shape."""

    name: str
    zip_path: str
    header_offset: int
    size: int | None
    fmt: str
    shape: str | None


def convert_leaves(leaves: list[LeafSpec], given: limits.Limits, rows: IpcRows | ParquetRows | Callable[[Conversation], None],
                   add: Callable[[Conversation], Any] | None = None) -> PieceResult:
    """The leaves, members of one zip, read in order as one process reads them (`read_chat_files`: each by its
    reader, a damaged one reported in its place) into `rows`, under the limits `given` (those of the process
    that queued them); each member's inflated bytes counted."""
    with limits.given_by(given):
        return _convert_leaves(leaves, rows, add)


def _convert_leaves(leaves: list[LeafSpec], rows: IpcRows | ParquetRows | Callable[[Conversation], None],
                    add: Callable[[Conversation], Any] | None) -> PieceResult:

    report = PieceReport()
    result = PieceResult(inflated_each=[0] * len(leaves))
    if add is None:
        add = rows.add if isinstance(rows, IpcRows | ParquetRows) else rows
    zf, infos = _opened_zip(leaves[0].zip_path)

    def opener(i: int, spec: LeafSpec) -> Callable[[], BinaryIO]:
        def took(pos: int) -> None:
            result.inflated_each[i] = max(result.inflated_each[i], pos)  # (opened again: counted once)

        return lambda: CountingStream(open_member(zf, infos[spec.header_offset]), took)  # type: ignore[return-value]

    entries = [ChatFile(Entry(name=spec.name, opener=opener(i, spec), size=spec.size), Format(spec.fmt),
                Shape(spec.shape) if spec.shape is not None else None) for i, spec in enumerate(leaves)]
    for conv in read_chat_files(entries, report):
        add(conv)
    _finished(result, report, rows)
    result.read_files, result.formats = report.files, dict(report.formats)
    result.inflated = sum(result.inflated_each)
    return result


# the zip the last batch of leaves came from, kept open in this process with its members by header offset: the
# central directory of a zip of 7,000 files takes 25 ms to read, once a batch it was 1.4 s of an AI Studio Takeout's
# 221 MB; ((path, size, mtime), the zip, its members), closed by close_zip (the pool's end, or another zip)
_ZIP: tuple[tuple[str, int, int], zipfile.ZipFile, dict[int, zipfile.ZipInfo]] | None = None


def _opened_zip(path: str) -> tuple[zipfile.ZipFile, dict[int, zipfile.ZipInfo]]:
    """The zip at `path`, open, and its members by header offset: the one kept from the last batch when it is
    the same file (its size and modification time unchanged)."""
    global _ZIP
    stat = os.stat(path)
    key = (path, stat.st_size, stat.st_mtime_ns)
    if _ZIP is None or _ZIP[0] != key:
        close_zip()
        zf = zipfile.ZipFile(path)
        _ZIP = (key, zf, {info.header_offset: info for info in zf.infolist()})
    return _ZIP[1], _ZIP[2]


def close_zip() -> None:
    """Close the zip kept for the batches of leaves, if any."""
    global _ZIP
    if _ZIP is not None:
        _ZIP[1].close()
        _ZIP = None


def convert_leaves_to_files(leaves: list[LeafSpec], given: limits.Limits, target: tuple[str, ...], upload_key: str | None,
                            batch_bytes: int, batch_messages: int, tick: Callable[[], None] | None = None) -> PieceResult:
    """`convert_leaves` with its rows written to files (what a worker runs), as `convert_piece_to_files`."""
    return _to_files(target, upload_key, batch_bytes, batch_messages, tick, lambda rows, add: convert_leaves(leaves, given, rows, add))


def _finished(result: PieceResult, report: ReadReport, rows: IpcRows | ParquetRows | Callable[[Conversation], None]) -> None:
    """A piece's (or a batch's) files closed, and what its report found, into its result."""
    if isinstance(rows, IpcRows | ParquetRows):
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


def no_open() -> Any:
    raise RuntimeError("a piece or a task reads records, not files")


_RECORD_PLACE = re.compile(r"^(after )?record (-?\d+)")


def shift_place(where: str, base: int) -> str:
    """A place counted from a piece's first record, counted from the file's (`base` records before it)."""
    if not base:
        return where
    return _RECORD_PLACE.sub(lambda m: f"{m.group(1) or ''}record {int(m.group(2)) + base}", where, count=1)


__all__ = ["PIECE_BYTES", "IpcRows", "LeafSpec", "ParquetRows", "PieceResult", "Plan", "close_zip", "convert_leaves", "convert_leaves_to_files", "convert_piece",
           "convert_piece_to_files", "discard", "no_open", "opening",
           "plan", "read_rows", "shift_place"]
