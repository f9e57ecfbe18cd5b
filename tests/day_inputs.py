"""A day's normalized uploads written straight into a bucket, for the tests of runs that redo only what changed."""

from __future__ import annotations

import tempfile
from pathlib import Path

from export_inputs import chat, sample_conversations
from graph_inputs import generated

from chatetl.layout import table_key
from chatetl.model import Conversation
from chatetl.storage import ObjectStore
from chatetl.tables import TableWriter

DAY = "2026-04-01"


def put_upload(store: ObjectStore, uid: str, convs: list[Conversation], day: str = DAY) -> None:
    """An upload's normalized tables, as ingest leaves them."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = Path(tmp, "c.parquet"), Path(tmp, "m.parquet")
        with TableWriter(*paths) as writer:
            for conv in convs:
                writer.add(conv, upload_key=f"raw/{uid}.json")
        store.put_file(table_key("conversations", day, uid), paths[0])
        store.put_file(table_key("messages", day, uid), paths[1])


def first_upload() -> list[Conversation]:
    return sample_conversations() + generated(6, 4, version=1)


def second_upload() -> list[Conversation]:
    """Newer states of two chats of the first upload, an older state of a third, and a new chat."""
    return [*generated(2, 4, version=2), generated(4, 4, version=0)[3], chat([("user", "a new question"), ("assistant", "its answer")],
                                                                            conversation_id="new-1", title="A new chat")]
