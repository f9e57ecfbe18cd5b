"""The normalized tables: canonical conversations as Parquet, and back.

`conversations` has one row per conversation, `messages` one row per message (every
branch, every kind). Rows are written in batches as conversations stream by, so
memory stays bounded by the batch size, not the upload. Messages of one
conversation are contiguous, so later stages can stream them back grouped.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from chatetl.layout import table_key, table_prefix
from chatetl.model import Attachment, Citation, Conversation, Message, MessageKind, Role, Source, ToolCall, ToolResult, state_version
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
    ]
)

_TOOL_CALL = pa.struct([("id", pa.string()), ("name", pa.string()), ("input", pa.string())])
_TOOL_RESULT = pa.struct([("tool_call_id", pa.string()), ("name", pa.string()), ("output", pa.string()), ("is_error", pa.bool_())])
_CITATION = pa.struct([("title", pa.string()), ("url", pa.string()), ("snippet", pa.string()), ("source", pa.string())])
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


def _json(value: dict[str, Any]) -> str | None:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str) if value else None


def conversation_row(conv: Conversation, upload_key: str | None = None) -> dict[str, Any]:
    return {
        **{name: getattr(conv, name) for name in _CONVERSATION_FIELDS},
        "conversation_key": conv.key,
        "source": conv.source.value,
        "message_count": conv.message_count,
        "total_messages": len(conv.messages),
        "models_used": sorted({m.model for m in conv.messages if m.model}),
        "upload_key": upload_key,
        "meta": _json(conv.meta),
    }


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
            "extra": _json(m.extra),
        }


class TableWriter:
    """Writes both tables to local Parquet files in bounded batches."""

    def __init__(self, conversations_path: str | Path, messages_path: str | Path, batch_messages: int = 20_000) -> None:
        self.batch_messages = batch_messages
        self._conv_writer = pq.ParquetWriter(str(conversations_path), CONVERSATIONS_SCHEMA, compression="zstd")
        self._msg_writer = pq.ParquetWriter(str(messages_path), MESSAGES_SCHEMA, compression="zstd")
        self._convs: list[dict[str, Any]] = []
        self._msgs: list[dict[str, Any]] = []
        self.conversations = 0
        self.messages = 0

    def add(self, conv: Conversation, upload_key: str | None = None) -> None:
        self._convs.append(conversation_row(conv, upload_key))
        self._msgs.extend(message_rows(conv))
        self.conversations += 1
        self.messages += len(conv.messages)
        if len(self._msgs) >= self.batch_messages or len(self._convs) >= self.batch_messages:
            self.flush()

    def flush(self) -> None:
        if self._convs:
            self._conv_writer.write_table(pa.Table.from_pylist(self._convs, schema=CONVERSATIONS_SCHEMA))
            self._convs = []
        if self._msgs:
            self._msg_writer.write_table(pa.Table.from_pylist(self._msgs, schema=MESSAGES_SCHEMA))
            self._msgs = []

    def close(self) -> None:
        self.flush()
        self._conv_writer.close()
        self._msg_writer.close()

    def __enter__(self) -> "TableWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- reading the tables back into the model (for the stages after normalization) ----


def _none_if_empty(value: str | None) -> dict[str, Any]:
    return json.loads(value) if value else {}


def _message_from_row(row: dict[str, Any]) -> Message:
    return Message(
        **{name: row[name] for name in _MESSAGE_FIELDS},
        **{column: [cls(**item) for item in row[column] or []] for column, cls in _MESSAGE_LISTS},
        role=Role(row["role"]),
        kind=MessageKind(row["kind"]),
        text=row["text"] or "",
        on_active_branch=bool(row["on_active_branch"]),
        extra=_none_if_empty(row["extra"]),
    )


def _conversation_from_row(row: dict[str, Any]) -> Conversation:
    return Conversation(
        **{name: row[name] for name in _CONVERSATION_FIELDS},
        source=Source(row["source"]),
        meta=_none_if_empty(row["meta"]),
    )


def iter_conversations(conversations_file: BinaryIOLike, messages_file: BinaryIOLike) -> Iterator[tuple[Conversation, str | None]]:
    """Stream (conversation with its messages, upload_key) back from one pair of table files.

    Both files list conversations in the same order and messages are contiguous per
    conversation (as TableWriter writes them), so this holds one conversation at a time.
    Each conversation takes its own `total_messages` rows: two states of one chat in a row
    (the same chat exported twice) keep their own messages.
    """
    conv_rows = read_rows(conversations_file)
    msg_rows = read_rows(messages_file)
    for crow in conv_rows:
        conv = _conversation_from_row(crow)
        messages = []
        for _ in range(crow["total_messages"] or 0):
            mrow = next(msg_rows, None)
            if mrow is None or mrow["conversation_key"] != crow["conversation_key"]:
                raise ValueError(f"messages table out of step with conversations at {crow['conversation_key']}")
            messages.append(_message_from_row(mrow))
        conv.messages = messages
        yield conv, crow["upload_key"]


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
    for conv_key, msg_key in partition_table_pairs(store, day):
        uid = conv_key.rsplit("/", 1)[-1].removesuffix(".parquet")
        with tempfile.TemporaryDirectory() as tmp:
            c_path = store.download(conv_key, Path(tmp, "c.parquet"))
            m_path = store.download(msg_key, Path(tmp, "m.parquet"))
            yield uid, iter_conversations(c_path, m_path)


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
