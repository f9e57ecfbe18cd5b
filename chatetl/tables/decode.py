"""The tables read back: rows as dicts, and conversations with their messages as the model."""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from chatetl.gc_pause import gc_paused
from chatetl.model import (
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    with_state_hash,
)
from chatetl.tables.schema import CONVERSATION_FIELDS, MESSAGE_LISTS, TS

BinaryIOLike = Any


def _source_fields_of(value: str | None) -> dict[str, Any]:
    """A `meta` / `extra` column's text back as its dict ({} where the column is null): source_fields_json undone."""
    return json.loads(value) if value else {}


# a message's fields in the model's order: each one a column of its own name
_MESSAGE_BACK = tuple(Message.model_fields)
_ROLES = {role.value: role for role in Role}
_KINDS = {kind.value: kind for kind in MessageKind}
_ITEM_BACK = tuple((cls.of_fields, tuple(cls.model_fields)) for _, cls in MESSAGE_LISTS)
_of_fields = Message.of_fields


def _messages_of(part: pa.Table | pa.RecordBatch) -> list[Message]:
    """The messages of rows of the messages table, column by column: values the table's schema typed, built as
    `Message(**row)` builds them without validating them again (the fast constructors; times made UTC; a role or
    kind the model does not know is a ValueError). Python's cyclic garbage collector is paused while they are built:
    they hold no cycles, and its passes over each part's new objects took about a third of the read-back's time."""
    with gc_paused():
        return _built_messages([part.column(name).to_pylist() if name != "created_at" else _utc_times(part.column(name))
                                for name in _MESSAGE_BACK])


def _built_messages(columns: list[list[Any]]) -> list[Message]:
    (tc_of, tc_given), (tr_of, tr_given), (ci_of, ci_given), (at_of, at_given) = _ITEM_BACK
    roles, kinds = _ROLES, _KINDS
    messages = []
    for (mid, pid, role, kind, text, created, model, author, recipient, ctype, reasoning,
         calls, results, citations, attachments, active, seq, branch_index, extra) in zip(*columns):
        messages.append(_of_fields({
            "message_id": mid, "parent_id": pid,
            "role": roles[role] if role in roles else Role(role),
            "kind": kinds[kind] if kind in kinds else MessageKind(kind),
            "text": text or "", "created_at": created, "model": model, "author_name": author, "recipient": recipient,
            "content_type": ctype, "reasoning": reasoning,
            "tool_calls": [tc_of(item, tc_given) for item in calls] if calls else [],
            "tool_results": [tr_of(item, tr_given) for item in results] if results else [],
            "citations": [ci_of(item, ci_given) for item in citations] if citations else [],
            "attachments": [at_of(item, at_given) for item in attachments] if attachments else [],
            "on_active_branch": bool(active), "seq": seq, "branch_index": branch_index,
            "extra": _source_fields_of(extra),
        }, _MESSAGE_BACK))
    return messages


def _utc_times(column: pa.ChunkedArray | pa.Array) -> list[datetime | None]:
    """A timestamp column's values as aware UTC datetimes (from its microseconds: several times faster than Arrow's own
    conversion, which looks up the column's zone for every value)."""
    micros = column.cast(TS).cast(pa.int64()).to_pylist()
    return [None if v is None else _EPOCH + timedelta(microseconds=v) for v in micros]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _conversation_from_row(row: dict[str, Any]) -> Conversation:
    return Conversation(
        **{name: row[name] for name in CONVERSATION_FIELDS},
        source=Source(row["source"]),
        meta=_source_fields_of(row["meta"]),
    )


def iter_conversations(conversations_file: BinaryIOLike, messages_file: BinaryIOLike,
                       rows: Iterable[int] | None = None) -> Iterator[tuple[Conversation, str | None]]:
    """Stream (conversation with its messages, upload_key) back from one pair of table files.

    Both files list conversations in the same order and messages are contiguous per
    conversation (as TableWriter writes them), so this holds one conversation at a time
    (and one batch of message rows).
    Each conversation takes its own `total_messages` rows: two states of one chat in a row
    (the same chat exported twice) keep their own messages. Each carries the state hash the
    table holds (`state_hash` column; files written before it compute it when asked).

    `rows`: only the conversations at these positions of the conversations table (in table
    order), their messages read from the row groups that hold them and no others.
    """
    if rows is not None:
        yield from _selected_conversations(conversations_file, messages_file, sorted(set(rows)))
        return
    messages = _keyed_messages(pq.ParquetFile(messages_file).iter_batches(batch_size=READ_BACK_ROWS))
    for crow in read_rows(conversations_file):
        yield _conversation_with(crow, [next(messages, None) for _ in range(crow["total_messages"] or 0)])


def _keyed_messages(parts: Iterable[pa.Table | pa.RecordBatch]) -> Iterator[tuple[str, Message]]:
    """(conversation_key, message) of each row of these parts of the messages table, in order."""
    for part in parts:
        yield from zip(part.column("conversation_key").to_pylist(), _messages_of(part))


def _conversation_with(crow: dict[str, Any], keyed: list[tuple[str, Message] | None]) -> tuple[Conversation, str | None]:
    """A conversation's row and its messages (with the conversation key of their rows) as the model (and its upload_key)."""
    conv = _conversation_from_row(crow)
    key = crow["conversation_key"]
    if any(item is None or item[0] != key for item in keyed):
        raise ValueError(f"messages table out of step with conversations at {key}")
    conv.messages = [m for _, m in keyed]  # type: ignore[misc]
    return with_state_hash(conv, crow.get("state_hash")), crow["upload_key"]


READ_BACK_ROWS = 2048  # message rows read back into the model at a time


def _selected_conversations(conversations_file: BinaryIOLike, messages_file: BinaryIOLike,
                            rows: list[int]) -> Iterator[tuple[Conversation, str | None]]:
    """The conversations at positions `rows` (sorted, distinct), a run of neighbours at a time: the messages of
    conversations next to each other in the table are next to each other too, so a run's rows (READ_BACK_ROWS at
    most, unless one conversation has more) are built at once, as `iter_conversations` builds the whole table
    (a first load selects every conversation: a conversation at a time, a table slice and its columns each, was
    most of the load)."""
    if not rows:
        return
    convs = pq.read_table(conversations_file)
    starts = [0, *accumulate(t or 0 for t in convs.column("total_messages").to_pylist())]
    messages = pq.ParquetFile(messages_file)
    group_starts = [0, *accumulate(messages.metadata.row_group(g).num_rows for g in range(messages.num_row_groups))]
    held: dict[int, pa.Table] = {}  # the row groups read, while a later selected conversation may still need them
    for run in _runs(rows, starts):
        lo, hi = starts[run[0]], starts[run[-1] + 1]
        end = min(hi, group_starts[-1])  # (a messages table shorter than the conversations say: out of step)
        first, last = bisect_right(group_starts, lo) - 1, bisect_right(group_starts, end - 1) - 1
        held = {g: t for g, t in held.items() if g >= first}
        keyed: list[tuple[str, Message] | None] = [None] * (hi - lo)
        if end > lo:
            for g in range(first, last + 1):
                if g not in held:
                    held[g] = messages.read_row_group(g)
            part = pa.concat_tables([held[g] for g in range(first, last + 1)]).slice(lo - group_starts[first], end - lo)
            keyed[:end - lo] = _keyed_messages([part])
        for i, crow in zip(run, convs.slice(run[0], len(run)).to_pylist()):
            yield _conversation_with(crow, keyed[starts[i] - lo:starts[i + 1] - lo])


def _runs(rows: list[int], starts: list[int]) -> Iterator[list[int]]:
    """`rows` cut into runs of consecutive positions whose messages (`starts[i]` to `starts[i + 1]`) come to
    READ_BACK_ROWS at most (a conversation of more is a run of its own)."""
    run: list[int] = []
    for i in rows:
        if run and (i != run[-1] + 1 or starts[i + 1] - starts[run[0]] > READ_BACK_ROWS):
            yield run
            run = []
        run.append(i)
    if run:
        yield run


def read_rows(source: BinaryIOLike, columns: list[str] | None = None, batch_size: int = 2048) -> Iterator[dict[str, Any]]:
    """A normalized file's rows as dicts, streamed a batch at a time (only `columns`, if given)."""
    for batch in pq.ParquetFile(source).iter_batches(batch_size=batch_size, columns=columns):
        yield from batch.to_pylist()
