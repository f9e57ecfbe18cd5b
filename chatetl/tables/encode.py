"""Conversations into rows of both tables: one Python list per column, turned into Arrow a column at a time."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import pyarrow as pa

from chatetl.model import (
    HASHED_MESSAGE_FIELDS,
    Conversation,
    hash_of_message_rows,
    source_fields_json,
)
from chatetl.tables.schema import (
    CONVERSATION_FIELDS,
    CONVERSATIONS_SCHEMA,
    MESSAGE_LISTS,
    MESSAGES_SCHEMA,
)


def stored_state_hash(conv: Conversation, meta: str | None, messages: list[tuple[Any, ...]]) -> str | None:
    """The state hash of `conv` for its `state_hash` column (`meta`: its `meta` as its JSON column; `messages`: what
    the hash covers of each message, `hashed_message_rows`); None where it cannot be computed (the stage that reads
    it back fails it)."""
    try:
        return hash_of_message_rows(conv, meta, messages)
    except (ValueError, OverflowError):
        return None


_CONVERSATION_COLUMNS = CONVERSATIONS_SCHEMA.names
_MESSAGE_COLUMNS = MESSAGES_SCHEMA.names


# message columns read from the model's own field dicts by TableBatch (values as they are), then
# the ones it converts: their order in one message's row of `_MESSAGE_ROW`
_MESSAGE_DIRECT = (
    "message_id", "parent_id", "seq", "branch_index", "on_active_branch", "created_at", "model", "author_name",
    "recipient", "content_type", "reasoning",
    "text", "role", "kind",  # (role and kind are StrEnum members: Arrow reads them as their str values)
)
_MESSAGE_ITEM_COLUMNS = tuple(name for name, _ in MESSAGE_LISTS)
_MESSAGE_ROW = itemgetter(*_MESSAGE_DIRECT, *_MESSAGE_ITEM_COLUMNS, "extra")
_SEQ, _MODEL, _TEXT = (_MESSAGE_DIRECT.index(name) for name in ("seq", "model", "text"))
_HASHED_COLUMNS = itemgetter(*(_MESSAGE_DIRECT.index(name) for name in HASHED_MESSAGE_FIELDS))  # of the transposed columns
_ITEMS = len(_MESSAGE_DIRECT)
_EXTRA = _ITEMS + len(_MESSAGE_ITEM_COLUMNS)
_CONVERSATION_ROW = itemgetter(*CONVERSATION_FIELDS)
_EMPTY = ()  # one empty list value for every message without tool calls, citations ...: nothing allocated per row


class TableBatch:
    """One batch of rows of both tables: one Python list per column, turned into Arrow one column
    at a time (`pa.array`) every CHUNK_BYTES, the batch's tables being those chunks. What a
    TableWriter builds before writing, and what the two-core path's workers build and send back as
    Arrow tables (chatetl.normalize.pool).

    Why chunks: rows held as Python objects take several times their size in the heap (small
    objects, freed in pieces the allocator keeps), Arrow's buffers only theirs; a 4 MB batch held
    as Python lists to the end peaked higher than in chunks."""

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
        for name, value in zip(CONVERSATION_FIELDS, _CONVERSATION_ROW(conv.__dict__)):
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


def _table(columns: dict[str, list[Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema], schema=schema)
