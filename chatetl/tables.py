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
from operator import itemgetter
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


_CONVERSATION_COLUMNS = CONVERSATIONS_SCHEMA.names
_MESSAGE_COLUMNS = MESSAGES_SCHEMA.names


# message columns read from the model's own field dicts by TableWriter (values as they are)
_MESSAGE_DIRECT = tuple(
    (name, itemgetter(name))
    for name in (
        "message_id", "parent_id", "seq", "branch_index", "on_active_branch", "created_at", "model", "author_name",
        "recipient", "content_type", "reasoning",
    )
)
_MESSAGE_ITEMS = tuple((name, itemgetter(name)) for name, _ in _MESSAGE_LISTS)
_GET_TEXT, _GET_ROLE, _GET_KIND, _GET_EXTRA = itemgetter("text"), itemgetter("role"), itemgetter("kind"), itemgetter("extra")


class TableWriter:
    """Writes both tables to local Parquet files in bounded batches.

    Rows go into one Python list per column, a batch is turned into Arrow one column at a time
    (`pa.array`), and a batch is flushed when its text passes `batch_bytes` (one Parquet row
    group of about that size) or its rows pass `batch_messages`. The Parquet encoding and
    compression of a batch run in a thread (pyarrow releases the GIL) while the next batch is
    built; at most one batch is in flight. `columnar=False` keeps the former row-dict writer
    (`Table.from_pylist`), the reference the columnar one is tested against: both write equal tables.
    """

    def __init__(
        self,
        conversations_path: str | Path,
        messages_path: str | Path,
        batch_messages: int = 20_000,
        batch_bytes: int = 4 * 1024 * 1024,
        columnar: bool = True,
    ) -> None:
        self.batch_messages = batch_messages
        self.batch_bytes = batch_bytes
        self.columnar = columnar
        _system_memory_pool()
        self._conv_writer = pq.ParquetWriter(str(conversations_path), CONVERSATIONS_SCHEMA, compression="zstd")
        self._msg_writer = pq.ParquetWriter(str(messages_path), MESSAGES_SCHEMA, compression="zstd")
        self._convs: list[dict[str, Any]] = []
        self._msgs: list[dict[str, Any]] = []
        self._cc: dict[str, list[Any]] = {name: [] for name in _CONVERSATION_COLUMNS}
        self._mc: dict[str, list[Any]] = {name: [] for name in _MESSAGE_COLUMNS}
        self._rows = 0  # messages (and conversations) in the batch being built
        self._bytes = 0  # text in the batch being built
        self._pool: Any = None
        self._pending: Any = None
        self.conversations = 0
        self.messages = 0

    def add(self, conv: Conversation, upload_key: str | None = None) -> None:
        self.conversations += 1
        self.messages += len(conv.messages)
        if not self.columnar:
            self._convs.append(conversation_row(conv, upload_key))
            self._msgs.extend(message_rows(conv))
            if len(self._msgs) >= self.batch_messages or len(self._convs) >= self.batch_messages:
                self.flush()
            return
        key, source, platform, cid = conv.key, conv.source.value, conv.platform, conv.conversation_id
        msgs = conv.messages
        cc = self._cc
        cc["conversation_key"].append(key)
        cc["source"].append(source)
        for name in _CONVERSATION_FIELDS:
            cc[name].append(getattr(conv, name))
        cc["message_count"].append(sum(1 for m in msgs if m.seq is not None))
        cc["total_messages"].append(len(msgs))
        cc["models_used"].append(sorted({m.model for m in msgs if m.model}))
        cc["upload_key"].append(upload_key)
        cc["meta"].append(_json(conv.meta))
        n = len(msgs)
        mc = self._mc
        for name, value in (("conversation_key", key), ("source", source), ("platform", platform), ("conversation_id", cid)):
            mc[name].extend([value] * n)
        # one column at a time over the messages' own field dicts (map and itemgetter run in C)
        fields = [m.__dict__ for m in msgs]
        for name, get in _MESSAGE_DIRECT:
            mc[name].extend(map(get, fields))
        texts = list(map(_GET_TEXT, fields))
        mc["text"].extend(texts)
        mc["role"].extend(map(_GET_ROLE, fields))  # StrEnum members: Arrow reads them as their str values
        mc["kind"].extend(map(_GET_KIND, fields))
        for name, get in _MESSAGE_ITEMS:
            mc[name].extend([[item.__dict__ for item in items] if items else [] for items in map(get, fields)])
        mc["extra"].extend([_json(x) if x else None for x in map(_GET_EXTRA, fields)])
        size = sum(map(len, texts))
        self._rows += n + 1
        self._bytes += size + 200 * n
        if self._bytes >= self.batch_bytes or self._rows >= self.batch_messages:
            self.flush()

    def flush(self) -> None:
        if not self.columnar:
            if self._convs:
                self._conv_writer.write_table(pa.Table.from_pylist(self._convs, schema=CONVERSATIONS_SCHEMA))
                self._convs = []
            if self._msgs:
                self._msg_writer.write_table(pa.Table.from_pylist(self._msgs, schema=MESSAGES_SCHEMA))
                self._msgs = []
            return
        if not self._cc["conversation_key"]:
            return
        convs = _table(self._cc, CONVERSATIONS_SCHEMA)
        msgs = _table(self._mc, MESSAGES_SCHEMA) if self._mc["message_id"] else None
        self._cc = {name: [] for name in _CONVERSATION_COLUMNS}
        self._mc = {name: [] for name in _MESSAGE_COLUMNS}
        self._rows = self._bytes = 0
        self._wait()
        if self._pool is None:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(1, thread_name_prefix="parquet")
        self._pending = self._pool.submit(self._write, convs, msgs)

    def _write(self, convs: pa.Table, msgs: pa.Table | None) -> None:
        self._conv_writer.write_table(convs)
        if msgs is not None:
            self._msg_writer.write_table(msgs)

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

    def __enter__(self) -> "TableWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _system_memory_pool() -> None:
    """Arrow's memory from the system allocator: the bundled mimalloc keeps freed batches mapped,
    ~35 MB more peak RSS over a long upload (measured with bench/normalize_throughput.py)."""
    global _POOL_SET
    if not _POOL_SET:
        _POOL_SET = True
        if pa.default_memory_pool().backend_name != "system":
            pa.set_memory_pool(pa.system_memory_pool())


_POOL_SET = False


def _table(columns: dict[str, list[Any]], schema: pa.Schema) -> pa.Table:
    return pa.Table.from_arrays([pa.array(columns[f.name], type=f.type) for f in schema], schema=schema)


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
