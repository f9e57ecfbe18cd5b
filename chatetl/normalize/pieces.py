"""Where a local array file is cut into pieces: byte ranges, each read whole by whichever process is free.

The file's first record teaches the splitter how records open (`ArraySplitter.opening`: `}`, `,` and an
object opening with the first record's first key, and its second key when the first value is a string,
as ChatGPT's `"title": "...", "create_time"` and Claude.ai's `"uuid": "...", "name"`). Every
`piece_bytes` of the file, the first such place is a piece's start (`plan`), found by one regex search
over a few KB; a piece with no such place in its range is joined to the one before it.

Why a piece's start need not be proven. A place that opens like a record is a record's start unless it
is an object nested inside one. The piece before it tells which: it reads from its own start, proven by
the piece before it, with the proving splitter (the one-process path's), and stops at the record that
starts at the next piece's start. When no record starts there, that piece reads on to the end of the
file, as one process would, and the pieces after it are dropped. So the tables and the report are the
one-process path's whatever the file holds: a look-alike costs one piece's parallelism, never a row.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import BinaryIO

from chatetl.readers.jsonscan.splitter import ArraySplitter, BadRecord, SplitError

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
    other."""
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


__all__ = ["PIECE_BYTES", "Plan", "opening", "plan"]
