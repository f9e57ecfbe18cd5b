"""Each conversation's state as the tables hold it, read without building the conversations."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pyarrow.parquet as pq

from chatetl.model import state_version
from chatetl.storage import ObjectStore
from chatetl.tables.decode import BinaryIOLike, read_rows
from chatetl.tables.partitions import download_table, partition_table_pairs

# what decides, without its messages, whether a state is already in the graph (chatetl.graph.load)
STATE_COLUMNS = ["conversation_key", "source", "created_at", "updated_at", "source_file", "total_messages", "state_hash"]


def table_states(conversations_file: BinaryIOLike, messages_file: BinaryIOLike) -> list[dict[str, Any]] | None:
    """Each conversation's state as the tables hold it, in table order, without building it: STATE_COLUMNS and its
    `state_version` (the messages' `created_at` read only for a conversation without an update time). None for a
    file written before the `state_hash` column (its states must be read whole to be hashed)."""
    source = pq.ParquetFile(conversations_file)
    if "state_hash" not in source.schema_arrow.names:
        return None
    states: list[dict[str, Any]] = source.read(columns=STATE_COLUMNS).to_pylist()
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
                    SimpleNamespace(  # type: ignore[arg-type]  # (what state_version reads of a conversation)
                        updated_at=conv["updated_at"],
                        created_at=conv["created_at"],
                        messages=[SimpleNamespace(created_at=t) for t in times if t is not None],
                    )
                )
                old = states.get(conv["conversation_key"])
                if old is None or version >= old.version:
                    states[conv["conversation_key"]] = ConversationState(conv["conversation_key"], version, total, conv["source"])
    return states
