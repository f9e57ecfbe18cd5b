"""Records into conversations: each record converted by its reader, branches resolved, damage
reported in its place; what every platform reader shares."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from chatetl.model import Conversation, MessageKind, Role
from chatetl.readers.entry import Entry
from chatetl.readers.jsonscan.decode import INT64, NUMBER_AS_NULL
from chatetl.readers.jsonscan.records import (
    Shape,
    iter_records,
    record_place,
    report_repairs,
)
from chatetl.readers.report import ReadReport
from chatetl.readers.timeutil import OUT_OF_RANGE as TIME_OUT_OF_RANGE
from chatetl.readers.timeutil import out_of_range_count
from chatetl.readers.tree import TreeProblems, resolve_branches

# how one record of a file becomes a conversation: `converter(file name, report)(record, where)`, None to skip it
Convert = Callable[[Any, str], Conversation | None]
Converter = Callable[[str, ReadReport], Convert]


def read_records(entry: Entry, shape: Shape, report: ReadReport, converter: Converter) -> Iterator[Conversation]:
    """The conversations of a file whose records (in `shape`) each become one by `converter`."""
    return convert_records(entry, iter_records(entry, shape, report), report, converter(entry.name, report))


def convert_records(
    entry: Entry,
    records: Iterator[tuple[str, Any]],
    report: ReadReport,
    convert: Convert,
) -> Iterator[Conversation]:
    """Turn records into conversations one at a time; a bad record is reported and skipped.

    `convert(record, where)` returns a Conversation with parent pointers set (or None to skip);
    this function resolves its branches, reports tree damage and counts it, counts the record's
    times no datetime holds (drift `time.out_of_range`) and reads an attachment size past int64
    as null (reported with the record's bytes, like the numbers `decode.decode` reads as null).
    """
    for where, record in records:
        times = out_of_range_count()
        try:
            conv = convert(record, where)
        except RecursionError:
            report.error(entry.name, where, "record nested too deeply", raw=raw_bytes(record))
            continue
        except Exception as exc:  # noqa: BLE001  # a bad record must never stop the rest of the file
            report.error(entry.name, record_place(where, record), f"{type(exc).__name__}: {_short(exc)}", raw=raw_bytes(record))
            continue
        times = out_of_range_count() - times
        if times:
            report.unknown(TIME_OUT_OF_RANGE, times)
        if conv is None:
            continue
        wide = _null_wide_sizes(conv)
        if wide:
            report_repairs(report, entry.name, where, record, Counter({INT_OUT_OF_RANGE: wide}), raw_bytes(record))
        unread = unread_text_fields(conv, report)
        if unread:
            report.error(entry.name, record_place(where, record),
                         f"read as {conv.platform}: 0 visible turns, while its messages hold text in fields this reader does not "
                         f"read ({', '.join(unread)}): not a {conv.platform} conversation", raw=raw_bytes(record))
            continue
        if conv.source_file is None:
            conv.source_file = entry.name
        problems = resolve_branches(conv)
        if problems:
            report_tree(report, entry.name, record_place(where, record), problems, record)
        if conv.model is None:
            model_from_messages(conv)
        report.conversations += 1
        report.messages += len(conv.messages)
        record = None  # (the decoded record not held while the caller makes the rows: a long one is large)
        yield conv


def unread_text_fields(conv: Conversation, report: ReadReport) -> list[str]:
    """The fields no reader read (counted as drift `<reader>.<what>_field:<name>` and kept in a message's
    extra) that hold text, in a conversation of messages none of which is a visible turn: a file read
    as a format it only resembles (a misread, refused rather than written as empty); [] otherwise."""
    if not conv.messages or any(m.kind is MessageKind.TURN for m in conv.messages):
        return []
    found: set[str] = set()
    for m in conv.messages:
        for key, value in m.extra.items():
            if key not in found and _holds_text(value) and any(d.endswith("_field:" + key) for d in report.drift):
                found.add(key)
    return sorted(found)


def _holds_text(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if v.strip():
                return True
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return False


def model_from_messages(conv: Conversation) -> None:
    """A conversation whose source names no model takes the one its messages name: the last
    assistant message on the active branch that names one, else the last message in the file that
    does (by branch order, never by time). None when no message names one."""
    named = [m for m in conv.messages if m.model]
    if not named:
        return
    on_branch = [m for m in named if m.on_active_branch and m.role is Role.ASSISTANT]
    chosen = max(on_branch, key=lambda m: m.branch_index or 0) if on_branch else named[-1]
    conv.model = chosen.model


DUPLICATE_MESSAGE_ID = "tree.duplicate_message_id"


def report_tree(report: ReadReport, file: str, where: str, problems: TreeProblems, record: Any = None) -> None:
    """The one rule for what resolving a conversation's tree found, in every reader. Damage (a
    parent cycle, a duplicate message id: the last copy kept, as a JSON object keeps its last
    repeated member) is an error, a duplicate with the record's bytes (quarantine holds the copies
    the conversation lost) and counted as drift `tree.duplicate_message_id`; a parent or a current
    node the file does not hold, read whole, is a warning."""
    damage = problems.damage()
    if damage:
        if problems.duplicates:
            report.unknown(DUPLICATE_MESSAGE_ID, len(problems.duplicates))
        raw = raw_bytes(record) if problems.duplicates and record is not None else None
        report.error(file, where, f"damaged message tree: {damage}", raw=raw)
    notes = problems.notes()
    if notes:
        report.warn(file, where, f"damaged message tree: {notes}")


INT_OUT_OF_RANGE = NUMBER_AS_NULL + "integer_out_of_range"
_INT64_MIN, _INT64_END = INT64


def _null_wide_sizes(conv: Conversation) -> int:
    """Attachment sizes past int64 (the one source integer the tables hold as such; orjson reads
    integers up to 2^64 - 1) set to None; how many. Elsewhere (meta, extra) JSON text holds them."""
    wide = 0
    for m in conv.messages:
        if m.attachments:
            for a in m.attachments:
                if a.size is not None and not _INT64_MIN <= a.size < _INT64_END:
                    a.__dict__["size"] = None  # (as the readers build the model: no validation to re-run)
                    wide += 1
    return wide


def raw_bytes(record: Any) -> bytes | None:
    """A record as JSON bytes, to keep a bad part for quarantine (None when it cannot be encoded)."""
    try:
        return json.dumps(record, default=str).encode()
    except (TypeError, ValueError, RecursionError):
        return None


def json_text(value: Any) -> str:
    """A structured value (tool input, tool output) as text: strings as they are, the rest as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return str(value)




def _short(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."
