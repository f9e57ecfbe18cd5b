"""The normalized tables: canonical conversations as Parquet, and back.

`conversations` has one row per conversation, `messages` one row per message (every
branch, every kind). Rows are written in batches as conversations stream by, so
memory stays bounded by the batch size, not the upload. Messages of one
conversation are contiguous, so later stages can stream them back grouped.
"""

from __future__ import annotations

import json
import os
import tempfile
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Self

import pyarrow as pa
import pyarrow.parquet as pq

from chatetl.gc_pause import gc_paused
from chatetl.layout import table_key, table_prefix
from chatetl.model import (
    HASHED_MESSAGE_FIELDS,
    Attachment,
    Citation,
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolCall,
    ToolResult,
    hash_of_message_rows,
    hashed_message_rows,
    source_fields_json,
    state_version,
    with_state_hash,
)
from chatetl.storage import ObjectStore

TS = pa.timestamp("us", tz="UTC")

CONVERSATIONS_SCHEMA = pa.schema(
    [
        ("conversation_key", pa.string()),  # "{platform}:{conversation_id}": one chat, whatever the source
        ("source", pa.string()),  # format family: chatgpt, claude-ai, chat-export, sharegpt, rex, claude-code
        ("platform", pa.string()),  # where the chat happened: chatgpt, claude-ai, grok, gemini ...
        ("conversation_id", pa.string()),
        ("title", pa.string()),
        ("created_at", TS),
        ("updated_at", TS),
        ("message_count", pa.int32()),  # visible turns on the active branch
        ("total_messages", pa.int32()),  # every message of every branch and kind
        ("model", pa.string()),
        ("models_used", pa.list_(pa.string())),
        ("url", pa.string()),
        ("timezone", pa.string()),
        ("current_node", pa.string()),
        ("source_file", pa.string()),
        ("upload_key", pa.string()),
        ("meta", pa.string()),  # JSON: source-specific extras
        # chatetl.model.state_hash of the state as these tables hold it, computed once when it is written (files
        # written before it was a column lack it: readers compute it then; null where it could not be computed)
        ("state_hash", pa.string()),
    ]
)

_TOOL_CALL = pa.struct([("id", pa.string()), ("name", pa.string()), ("input", pa.string())])
_TOOL_RESULT = pa.struct([("tool_call_id", pa.string()), ("name", pa.string()), ("output", pa.string()), ("is_error", pa.bool_())])
_CITATION = pa.struct(
    [("title", pa.string()), ("url", pa.string()), ("snippet", pa.string()), ("source", pa.string()), ("offset", pa.int32())]
)
_ATTACHMENT = pa.struct(
    [
        ("kind", pa.string()), ("id", pa.string()), ("name", pa.string()), ("mime_type", pa.string()),
        ("size", pa.int64()), ("pointer", pa.string()), ("text", pa.string()),
    ]
)

MESSAGES_SCHEMA = pa.schema(
    [
        ("conversation_key", pa.string()),
        ("source", pa.string()),
        ("platform", pa.string()),
        ("conversation_id", pa.string()),
        ("message_id", pa.string()),
        ("parent_id", pa.string()),
        ("seq", pa.int32()),  # 0-based among visible turns of the active branch; null elsewhere
        ("branch_index", pa.int32()),  # position along the active branch among all its messages
        ("on_active_branch", pa.bool_()),
        ("role", pa.string()),  # user, assistant, system, tool
        ("kind", pa.string()),  # turn, reasoning, tool_call, tool_result, hidden, summary
        ("text", pa.string()),
        ("created_at", TS),
        ("model", pa.string()),
        ("author_name", pa.string()),
        ("recipient", pa.string()),
        ("content_type", pa.string()),
        ("reasoning", pa.string()),
        ("tool_calls", pa.list_(_TOOL_CALL)),
        ("tool_results", pa.list_(_TOOL_RESULT)),
        ("citations", pa.list_(_CITATION)),
        ("attachments", pa.list_(_ATTACHMENT)),
        ("extra", pa.string()),  # JSON: unknown source fields, kept raw
    ]
)


# Columns that hold a model field as it is, under the field's own name: written from the
# field and read back into it unchanged. The other columns are converted (below) both ways.
_CONVERSATION_FIELDS = (
    "platform", "conversation_id", "title", "created_at", "updated_at", "model", "url", "timezone", "current_node", "source_file",
)
_MESSAGE_FIELDS = (
    "message_id", "parent_id", "seq", "branch_index", "created_at", "model", "author_name", "recipient", "content_type", "reasoning",
)
# list columns of structs: (column, the model class of one item)
_MESSAGE_LISTS = (("tool_calls", ToolCall), ("tool_results", ToolResult), ("citations", Citation), ("attachments", Attachment))


def conversation_row(conv: Conversation, upload_key: str | None = None) -> dict[str, Any]:
    meta = source_fields_json(conv.meta)
    return {
        **{name: getattr(conv, name) for name in _CONVERSATION_FIELDS},
        "conversation_key": conv.key,
        "source": conv.source.value,
        "message_count": conv.message_count,
        "total_messages": len(conv.messages),
        "models_used": sorted({m.model for m in conv.messages if m.model}),
        "upload_key": upload_key,
        "meta": meta,
        "state_hash": stored_state_hash(conv, meta, hashed_message_rows(conv, [source_fields_json(m.extra) for m in conv.messages])),
    }


def stored_state_hash(conv: Conversation, meta: str | None, messages: list[tuple]) -> str | None:
    """The state hash of `conv` for its `state_hash` column (`meta`: its `meta` as its JSON column; `messages`: what
    the hash covers of each message, `hashed_message_rows`); None where it cannot be computed (the stage that reads
    it back fails it)."""
    try:
        return hash_of_message_rows(conv, meta, messages)
    except (ValueError, OverflowError):
        return None


def message_rows(conv: Conversation) -> Iterator[dict[str, Any]]:
    for m in conv.messages:
        yield {
            **{name: getattr(m, name) for name in _MESSAGE_FIELDS},
            **{column: [item.model_dump() for item in getattr(m, column)] for column, _ in _MESSAGE_LISTS},
            "conversation_key": conv.key,
            "source": conv.source.value,
            "platform": conv.platform,
            "conversation_id": conv.conversation_id,
            "on_active_branch": m.on_active_branch,
            "role": m.role.value,
            "kind": m.kind.value,
            "text": m.text,
            "extra": source_fields_json(m.extra),
        }


_CONVERSATION_COLUMNS = CONVERSATIONS_SCHEMA.names
_MESSAGE_COLUMNS = MESSAGES_SCHEMA.names


# message columns read from the model's own field dicts by TableBatch (values as they are), then
# the ones it converts: their order in one message's row of `_MESSAGE_ROW`
_MESSAGE_DIRECT = (
    "message_id", "parent_id", "seq", "branch_index", "on_active_branch", "created_at", "model", "author_name",
    "recipient", "content_type", "reasoning",
    "text", "role", "kind",  # (role and kind are StrEnum members: Arrow reads them as their str values)
)
_MESSAGE_ITEM_COLUMNS = tuple(name for name, _ in _MESSAGE_LISTS)
_MESSAGE_ROW = itemgetter(*_MESSAGE_DIRECT, *_MESSAGE_ITEM_COLUMNS, "extra")
_SEQ, _MODEL, _TEXT = (_MESSAGE_DIRECT.index(name) for name in ("seq", "model", "text"))
_HASHED_COLUMNS = itemgetter(*(_MESSAGE_DIRECT.index(name) for name in HASHED_MESSAGE_FIELDS))  # of the transposed columns
_ITEMS = len(_MESSAGE_DIRECT)
_EXTRA = _ITEMS + len(_MESSAGE_ITEM_COLUMNS)
_CONVERSATION_ROW = itemgetter(*_CONVERSATION_FIELDS)
_EMPTY = ()  # one empty list value for every message without tool calls, citations ...: nothing allocated per row


class TableBatch:
    """One batch of rows of both tables: one Python list per column, turned into Arrow one column
    at a time (`pa.array`) every CHUNK_BYTES, the batch's tables being those chunks. What a
    TableWriter builds before writing, and what the two-core path's workers build and send back as
    Arrow tables (chatetl.normalize.pool).

    Why chunks: rows held as Python objects take several times their size in the heap (small
    objects, freed in pieces the allocator keeps), Arrow's buffers only theirs; a 4 MB batch held
    as Python lists to the end peaked about 5 MB higher than in 1 MB chunks (peak RSS, measured on
    a 20 MB bench/chatgpt_shaped.py file)."""

    CHUNK_BYTES = 1024 * 1024

    def __init__(self) -> None:
        self._chunks: list[tuple[pa.Table, pa.Table | None]] = []
        self._clear()
        self.rows = 0  # messages and conversations in the batch
        self.bytes = 0  # about the batch's size: its text, and 200 bytes a message besides

    def _clear(self) -> None:
        self._cc: dict[str, list[Any]] = {name: [] for name in _CONVERSATION_COLUMNS}
        self._mc: dict[str, list[Any]] = {name: [] for name in _MESSAGE_COLUMNS}
        self._listed = 0  # bytes of the rows still in the lists

    def add(self, conv: Conversation, upload_key: str | None = None) -> None:
        key, source, platform, cid = conv.key, conv.source.value, conv.platform, conv.conversation_id
        msgs = conv.messages
        n = len(msgs)
        # each message's fields in one C call (itemgetter over its own field dict), then transposed
        columns = list(zip(*map(_MESSAGE_ROW, [m.__dict__ for m in msgs]))) if n else [()] * (_EXTRA + 1)
        cc = self._cc
        cc["conversation_key"].append(key)
        cc["source"].append(source)
        for name, value in zip(_CONVERSATION_FIELDS, _CONVERSATION_ROW(conv.__dict__)):
            cc[name].append(value)
        cc["message_count"].append(n - columns[_SEQ].count(None))
        cc["total_messages"].append(n)
        models = set(columns[_MODEL])
        models.discard(None)
        models.discard("")
        cc["models_used"].append(sorted(models))
        cc["upload_key"].append(upload_key)
        meta = source_fields_json(conv.meta)
        cc["meta"].append(meta)
        mc = self._mc
        for name, value in (("conversation_key", key), ("source", source), ("platform", platform), ("conversation_id", cid)):
            mc[name].extend([value] * n)
        for name, column in zip(_MESSAGE_DIRECT, columns):
            mc[name].extend(column)
        items_columns = [
            [[item.__dict__ for item in items] if items else _EMPTY for items in column] if any(column) else [_EMPTY] * n
            for column in columns[_ITEMS:_EXTRA]
        ]
        for name, items_column in zip(_MESSAGE_ITEM_COLUMNS, items_columns):
            mc[name].extend(items_column)
        extras = columns[_EXTRA]
        extra_json = [source_fields_json(x) if x else None for x in extras] if any(extras) else [None] * n
        mc["extra"].extend(extra_json)
        # the state hash from these columns, zipped back into hashed_message_rows' rows (built in C)
        hashed = list(zip(zip(*_HASHED_COLUMNS(columns)), *items_columns, extra_json)) if n else []
        cc["state_hash"].append(stored_state_hash(conv, meta, hashed))
        size = sum(map(len, columns[_TEXT])) + 200 * n
        self.rows += n + 1
        self.bytes += size
        self._listed += size
        if self._listed >= self.CHUNK_BYTES:
            self._chunk()

    def _chunk(self) -> None:
        if self._cc["conversation_key"]:
            msgs = _table(self._mc, MESSAGES_SCHEMA) if self._mc["message_id"] else None
            self._chunks.append((_table(self._cc, CONVERSATIONS_SCHEMA), msgs))
            self._clear()

    def tables(self) -> tuple[pa.Table, pa.Table | None] | None:
        """The batch as Arrow tables (conversations, messages or None when it has none), and the
        batch emptied; None when it holds nothing."""
        self._chunk()
        chunks, self._chunks = self._chunks, []
        self.rows = self.bytes = 0
        if not chunks:
            return None
        msgs = [m for _, m in chunks if m is not None]
        convs = chunks[0][0] if len(chunks) == 1 else pa.concat_tables([c for c, _ in chunks])
        return convs, (msgs[0] if len(msgs) == 1 else pa.concat_tables(msgs)) if msgs else None


class TableWriter:
    """Writes both tables to local Parquet files in bounded batches.

    Rows go into a TableBatch (one Python list per column, turned into Arrow one column at a
    time), flushed when its text passes `batch_bytes` (one Parquet row group of about that size)
    or its rows pass `batch_messages`; `write_tables` takes batches built elsewhere. The Parquet encoding and
    compression of a batch run in a thread (pyarrow releases the GIL) while the next batch is
    built; at most one batch is in flight. `columnar=False` keeps the former row-dict writer
    (`Table.from_pylist`), the reference the columnar one is tested against: both write equal tables.

    One file per table keeps every row group's metadata in memory until it is closed (pyarrow's
    ParquetWriter: about 40 KB a row group of both tables); `PartsWriter` writes folders of part files
    instead, so its memory does not grow with the input.
    """

    def __init__(
        self,
        conversations_path: str | Path,
        messages_path: str | Path,
        batch_messages: int = 20_000,
        batch_bytes: int = 2 * 1024 * 1024,  # (4 MB: 10 MB more peak RSS, 1% smaller files)
        columnar: bool = True,
    ) -> None:
        self.batch_messages = batch_messages
        self.batch_bytes = batch_bytes
        self.columnar = columnar
        self._row_groups = 0  # batches written to the files open now
        self._open(conversations_path, messages_path)
        self._convs: list[dict[str, Any]] = []
        self._msgs: list[dict[str, Any]] = []
        self._batch = TableBatch()
        self._pool: Any = None
        self._pending: Any = None
        self.conversations = 0
        self.messages = 0

    def _open(self, conversations_path: str | Path, messages_path: str | Path) -> None:
        self._conv_writer = pq.ParquetWriter(str(conversations_path), CONVERSATIONS_SCHEMA, compression="zstd", use_dictionary=_REPEATING)
        self._msg_writer = pq.ParquetWriter(str(messages_path), MESSAGES_SCHEMA, compression="zstd", use_dictionary=_REPEATING)

    def add(self, conv: Conversation, upload_key: str | None = None) -> None:
        self.conversations += 1
        self.messages += len(conv.messages)
        if not self.columnar:
            self._convs.append(conversation_row(conv, upload_key))
            self._msgs.extend(message_rows(conv))
            if len(self._msgs) >= self.batch_messages or len(self._convs) >= self.batch_messages:
                self.flush()
            return
        batch = self._batch
        batch.add(conv, upload_key)
        if batch.bytes >= self.batch_bytes or batch.rows >= self.batch_messages:
            self.flush()

    def flush(self) -> None:
        if not self.columnar:
            if self._convs or self._msgs:
                convs = pa.Table.from_pylist(self._convs, schema=CONVERSATIONS_SCHEMA) if self._convs else None
                msgs = pa.Table.from_pylist(self._msgs, schema=MESSAGES_SCHEMA) if self._msgs else None
                self._convs, self._msgs = [], []
                self._write(convs, msgs)
            return
        built = self._batch.tables()
        if built is not None:
            self._write_in_thread(*built)

    def write_tables(self, convs: pa.Table, msgs: pa.Table | None) -> None:
        """Arrow tables of a batch built elsewhere (a worker's TableBatch) into the files, after
        what `add` holds, counted like added conversations."""
        self.flush()
        self.conversations += convs.num_rows
        self.messages += msgs.num_rows if msgs is not None else 0
        self._write_in_thread(convs, msgs)

    def _write_in_thread(self, convs: pa.Table, msgs: pa.Table | None) -> None:
        self._wait()
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="parquet")
        self._pending = self._pool.submit(self._write, convs, msgs)

    def _write(self, convs: pa.Table | None, msgs: pa.Table | None) -> None:
        if convs is not None:
            self._conv_writer.write_table(convs)
        if msgs is not None:
            self._msg_writer.write_table(msgs)
        self._row_groups += 1

    def _wait(self) -> None:
        if self._pending is not None:
            pending, self._pending = self._pending, None
            pending.result()

    def close(self) -> None:
        try:
            self.flush()
            self._wait()
        finally:
            if self._pool is not None:
                self._pool.shutdown()
            self._conv_writer.close()
            self._msg_writer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PartsWriter(TableWriter):
    """Both tables as folders of part files: `part-00000.parquet`, `part-00001.parquet` ... in each folder (a
    `pyarrow.dataset` of either folder reads its table, in order), a part of `row_groups` (PART_ROW_GROUPS)
    batches at most, the messages of a part's conversations in the same part of the messages folder. Its
    memory does not grow with the input: both part files are closed as they fill. A part written elsewhere
    (at `spare_paths`, by another process) takes its place among them by `adopt`: renamed, not encoded again.
    The part files the folders held (a run before, of more parts) are removed first; the first part is
    written even when nothing is. `options` are TableWriter's."""

    PART_ROW_GROUPS = 64  # batches (row groups) in one part file: about 130 MB of text, 2.5 MB of metadata held

    def __init__(self, conversations_folder: str | Path, messages_folder: str | Path, row_groups: int | None = None,
                 **options: Any) -> None:
        self._folders = (Path(conversations_folder), Path(messages_folder))
        for folder in self._folders:
            for old in [*folder.glob("part-*.parquet"), *folder.glob(".spare-*.parquet")]:
                old.unlink()
        self._part_row_groups = row_groups or self.PART_ROW_GROUPS
        self._part = 0
        super().__init__(*self._part_paths(0), **options)

    def _part_paths(self, n: int) -> tuple[Path, Path]:
        conversations, messages = self._folders
        return conversations / f"part-{n:05d}.parquet", messages / f"part-{n:05d}.parquet"

    def spare_paths(self, name: str) -> tuple[Path, Path]:
        """Paths in the part folders for a part written elsewhere, read as a part only once `adopt` has named it."""
        conversations, messages = self._folders
        return conversations / f".spare-{name}.parquet", messages / f".spare-{name}.parquet"

    def adopt(self, conversations_path: str | Path, messages_path: str | Path, conversations: int, messages: int) -> None:
        """A part written elsewhere (at `spare_paths`), of `conversations` and `messages` rows, put after what
        this writer holds: the part open now is closed (its number reused when it holds nothing), the files
        renamed to the next part, and a new part opened for what comes after."""
        self.flush()
        self._wait()
        self._conv_writer.close()
        self._msg_writer.close()
        if self._row_groups:
            self._part += 1
        for path, new in zip((conversations_path, messages_path), self._part_paths(self._part), strict=True):
            os.replace(path, new)
        self._part += 1
        self._open(*self._part_paths(self._part))
        self._row_groups = 0
        self.conversations += conversations
        self.messages += messages

    def _write(self, convs: pa.Table | None, msgs: pa.Table | None) -> None:
        if self._row_groups == self._part_row_groups:  # the part is full: the next one
            self._conv_writer.close()
            self._msg_writer.close()
            self._part += 1
            self._open(*self._part_paths(self._part))
            self._row_groups = 0
        super()._write(convs, msgs)

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self._part and not self._row_groups:  # after adopted parts: nothing
                for path in self._part_paths(self._part):
                    path.unlink(missing_ok=True)


# Columns whose values repeat (keys, a conversation's ids on each of its messages, enumerations)
# are dictionary-encoded; on the others (ids of one message, text, JSON) Parquet would try a
# dictionary and give it up: 10% of the encoding's time (measured on bench/chatgpt_shaped.py files).
_REPEATING = [
    "conversation_key", "source", "platform", "conversation_id", "model", "models_used.list.element", "timezone", "source_file",
    "upload_key", "role", "kind", "author_name", "recipient", "content_type",
]


def _table(columns: dict[str, list[Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema], schema=schema)


# ---- reading the tables back into the model (for the stages after normalization) ----


def _source_fields_of(value: str | None) -> dict[str, Any]:
    """A `meta` / `extra` column's text back as its dict ({} where the column is null): source_fields_json undone."""
    return json.loads(value) if value else {}


# a message's fields in the model's order: each one a column of its own name
_MESSAGE_BACK = tuple(Message.model_fields)
_ROLES = {role.value: role for role in Role}
_KINDS = {kind.value: kind for kind in MessageKind}
_ITEM_BACK = tuple((cls.of_fields, tuple(cls.model_fields)) for _, cls in _MESSAGE_LISTS)
_of_fields = Message.of_fields


def _messages_of(part: pa.Table | pa.RecordBatch) -> list[Message]:
    """The messages of rows of the messages table, column by column: values the table's schema typed, built as
    `Message(**row)` builds them without validating them again (the fast constructors; times made UTC; a role or
    kind the model does not know is a ValueError). Python's cyclic garbage collector is paused while they are built:
    they hold no cycles, and its passes over each part's new objects took about a third of the read-back's time
    (`iter_conversations` of the 100k messages of a bench/graph_load.py partition, median of 5: 2.3 s before the
    pause, 1.6-1.8 s with it)."""
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
    """A timestamp column's values as aware UTC datetimes (from its microseconds: 4x faster than Arrow's own
    conversion, which looks up the column's zone for every value)."""
    micros = column.cast(TS).cast(pa.int64()).to_pylist()
    return [None if v is None else _EPOCH + timedelta(microseconds=v) for v in micros]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _conversation_from_row(row: dict[str, Any]) -> Conversation:
    return Conversation(
        **{name: row[name] for name in _CONVERSATION_FIELDS},
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
    (a first load selects every conversation: 100k messages of bench/graph_load.py were built a conversation at a
    time, a table slice and its columns each, in 2.5 s of the load's 6 s under cProfile)."""
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


# what decides, without its messages, whether a state is already in the graph (chatetl.graph.load)
STATE_COLUMNS = ["conversation_key", "source", "created_at", "updated_at", "source_file", "total_messages", "state_hash"]


def table_states(conversations_file: BinaryIOLike, messages_file: BinaryIOLike) -> list[dict[str, Any]] | None:
    """Each conversation's state as the tables hold it, in table order, without building it: STATE_COLUMNS and its
    `state_version` (the messages' `created_at` read only for a conversation without an update time). None for a
    file written before the `state_hash` column (its states must be read whole to be hashed)."""
    source = pq.ParquetFile(conversations_file)
    if "state_hash" not in source.schema_arrow.names:
        return None
    states = source.read(columns=STATE_COLUMNS).to_pylist()
    times = None
    start = 0
    for state in states:
        total = state["total_messages"] or 0
        if state["updated_at"] is None:
            if times is None:
                times = pq.read_table(messages_file, columns=["created_at"]).column("created_at")
            created = [t for t in times.slice(start, total).to_pylist() if t is not None]
            state["state_version"] = state_version(SimpleNamespace(  # type: ignore[arg-type]
                updated_at=None, created_at=state["created_at"], messages=[SimpleNamespace(created_at=t) for t in created]))
        else:
            state["state_version"] = state["updated_at"].timestamp()
        start += total
    return states


BinaryIOLike = Any


def read_rows(source: BinaryIOLike, columns: list[str] | None = None, batch_size: int = 2048) -> Iterator[dict[str, Any]]:
    """A normalized file's rows as dicts, streamed a batch at a time (only `columns`, if given)."""
    for batch in pq.ParquetFile(source).iter_batches(batch_size=batch_size, columns=columns):
        yield from batch.to_pylist()


def partition_table_pairs(store: ObjectStore, day: str) -> list[tuple[str, str]]:
    """(conversations key, messages key) of every upload normalized into a partition."""
    conv_prefix = table_prefix("conversations", day)
    pairs = []
    for info in store.list(conv_prefix):
        uid = info.key[len(conv_prefix):].removesuffix(".parquet")
        msg_key = table_key("messages", day, uid)
        pairs.append((info.key, msg_key))
    return pairs


def iter_partition(store: ObjectStore, day: str) -> Iterator[tuple[str, Iterator[tuple[Conversation, str | None]]]]:
    """For each upload of a partition: (upload id, stream of its normalized conversations)."""
    for uid, c_path, m_path in iter_partition_files(store, day):
        yield uid, iter_conversations(c_path, m_path)


def iter_partition_files(store: ObjectStore, day: str) -> Iterator[tuple[str, Path, Path]]:
    """For each upload of a partition: (upload id, its conversations file, its messages file), downloaded into a
    folder that is deleted when the next upload's are asked for."""
    for conv_key, msg_key in partition_table_pairs(store, day):
        uid = conv_key.rsplit("/", 1)[-1].removesuffix(".parquet")
        with tempfile.TemporaryDirectory() as tmp:
            yield uid, store.download(conv_key, Path(tmp, "c.parquet")), store.download(msg_key, Path(tmp, "m.parquet"))


def download_table(store: ObjectStore, key: str, folder: str) -> Path:
    """A normalized file fetched into `folder` (under a name no other key of the partition takes)."""
    return store.download(key, Path(folder, key.rsplit("/", 1)[-1] + f".{abs(hash(key))}"))


@dataclass
class ConversationState:
    key: str
    version: float
    messages: int
    source: str


def partition_states(store: ObjectStore, day: str) -> dict[str, ConversationState]:
    """The newest state of each conversation in a day's normalized tables (later files win ties,
    as they do when the graph loads them in the same order)."""
    states: dict[str, ConversationState] = {}
    for conv_key, msg_key in partition_table_pairs(store, day):
        with tempfile.TemporaryDirectory() as tmp:
            conv_path, msg_path = download_table(store, conv_key, tmp), download_table(store, msg_key, tmp)
            messages = read_rows(msg_path, ["conversation_key", "created_at"])
            for conv in read_rows(conv_path, ["conversation_key", "source", "created_at", "updated_at", "total_messages"]):
                total = conv["total_messages"] or 0
                times = [next(messages, {"created_at": None})["created_at"] for _ in range(total)]
                version = state_version(
                    SimpleNamespace(
                        updated_at=conv["updated_at"],
                        created_at=conv["created_at"],
                        messages=[SimpleNamespace(created_at=t) for t in times if t is not None],
                    )
                )
                old = states.get(conv["conversation_key"])
                if old is None or version >= old.version:
                    states[conv["conversation_key"]] = ConversationState(conv["conversation_key"], version, total, conv["source"])
    return states
