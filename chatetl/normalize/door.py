"""The door's body: normalize_into (chatetl.normalize), with everything it decides."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from chatetl.normalize.pieces import Plan
from chatetl.normalize.pieces import plan as plan_ranges
from chatetl.normalize.pool import Pool, Shares, Tuning
from chatetl.normalize.processes import processes_for
from chatetl.normalize.sources import Input, Sources, input_bytes
from chatetl.normalize.stream import read_stream
from chatetl.readers import read_chat_files
from chatetl.readers.inputs.archive import ChatFile
from chatetl.readers.inputs.detect import Format
from chatetl.readers.jsonscan.records import Shape
from chatetl.readers.registry import READERS
from chatetl.readers.report import ReadReport
from chatetl.tables import TableWriter

Watch = Callable[[Iterable[ChatFile]], Iterable[ChatFile]]

# the formats whose array files are read in pieces, record by record (by their readers' converters): the
# account exports, which grow with a user's history; the other formats' files are read whole in their place
# (a zip's members in groups, on every core)
CUT_FORMATS = frozenset(fmt for fmt in (Format.CHATGPT, Format.CLAUDE_AI) if READERS[fmt].converter is not None)


def normalize_into(
    writer: TableWriter,
    inputs: Iterable[Input],
    report: ReadReport,
    workers: int | None = None,
    *,
    size: int | None = None,
    upload_key: str | None = None,
    workdir: str | os.PathLike[str] | None = None,
    watch: Watch | None = None,
    failure: Callable[[Exception], str | None] | None = None,
    tuning: Tuning = Tuning(),  # noqa: B008 (frozen)
) -> Shares:
    """Every conversation of `inputs` (entries, local files and folders, read in order) into `writer`, with
    `report` as reading them in one process leaves it.

    `workers`: processes reading (1: this one alone); None: chosen from `size`, the inputs' bytes (None:
    counted from `inputs` when it is a list or a tuple). `upload_key`: the tables' upload_key column.
    `workdir`: where zips from a server are copied. `watch`: wraps each input's chat files (a progress
    meter). `failure`: the words of an error copying a zip from a server that is reported rather than
    raised. `tuning`: the sizes the work is cut by."""
    if workers is None and size is None and isinstance(inputs, list | tuple):
        size = input_bytes(inputs)
    processes = processes_for(workers, size)
    sources = Sources(report, copy=processes > 1, workdir=workdir, failure=failure)
    if processes == 1:
        for chat_files, _copy in sources.each(inputs):
            for conv in read_chat_files(watch(chat_files) if watch else chat_files, report):
                writer.add(conv, upload_key=upload_key)
        return Shares()
    with Pool(processes, writer, report, upload_key, tuning) as pool:
        for chat_files, copy in sources.each(inputs):
            for chat_file in watch(chat_files) if watch else chat_files:
                _read(pool, chat_file)
            if copy is not None:
                pool.drain()  # (its pieces read before the copy goes)
                copy.unlink()
    return pool.shares


def _read(pool: Pool, chat_file: ChatFile) -> None:
    """One chat file into the pool, in its place."""
    entry, fmt, shape = chat_file
    report = pool.report
    if fmt in CUT_FORMATS and (shape or READERS[fmt].shape) is Shape.ARRAY:
        pool.flush_members()
        report.files += 1
        report.formats[fmt.value] += 1
        plan = _ranges(pool, chat_file) if pool.tuning.ranges else None
        if plan is None:
            read_stream(pool, entry, fmt)
        elif plan.starts:
            pool.read_ranges(entry, fmt, plan)
        else:
            pool.read_whole(entry, fmt)
    elif entry.member is not None and entry.member.readable_elsewhere():
        pool.add_member(chat_file)  # read by its reader in a group of its zip's members
    else:
        pool.drain()  # what came before is written first
        for conv in read_chat_files([chat_file], report):
            pool.writer.add(conv, upload_key=pool.upload_key)


def _ranges(pool: Pool, chat_file: ChatFile) -> Plan | None:
    """The byte ranges of a local file (no starts: one piece, as a zip member on local disk is while the
    upload's inflate cap allows and it is one of several, at most `member_share` of the zip's JSON); None
    for a stream cut here: S3, a member of a nested zip, a file read through a re-encoding, the one big
    member of a zip (a deflated stream cannot start in its middle)."""
    entry, tuning = chat_file.entry, pool.tuning
    if entry.member is not None:
        return Plan([]) if entry.member.share <= tuning.member_share and entry.member.readable_elsewhere() else None
    if entry.path is None or entry.size is None:
        return None
    return plan_ranges(entry.path, entry.size, pool.max_value, tuning.piece_bytes)


__all__ = ["Shares", "Tuning", "normalize_into"]
