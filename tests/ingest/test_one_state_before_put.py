"""The ingest stage settles one state per conversation on local files: it puts each table of an upload once and
never reads back what it has just put, also when the upload holds one conversation twice and when an older
version of it is put over a newer one."""

from __future__ import annotations

import copy
import json
import os
from datetime import datetime
from pathlib import Path

from chatetl.ingest.partition import ingest_partition
from chatetl.layout import NORMALIZED_PREFIX, table_key, upload_id
from chatetl.samples import chatgpt_conversations
from chatetl.storage import LocalObjectStore
from chatetl.tables import iter_partition

DAY = "2026-03-01"
QUESTION = "3c0033df-6984-5457-8be7-11c35b664f83"  # the first user turn of the sample's first chat


class RecordingStore(LocalObjectStore):
    """A local bucket that records every object put and every object read, in order."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.events: list[tuple[str, str]] = []

    def put_file(self, key, path, content_type=None):
        self.events.append(("put", key))
        return super().put_file(key, path, content_type)

    def open(self, key):
        self.events.append(("read", key))
        return super().open(key)


def _chat(cid: str, text: str, update: float) -> dict:
    chat = copy.deepcopy(chatgpt_conversations()[0])
    chat["id"] = chat["conversation_id"] = cid
    chat["update_time"] = update
    chat["mapping"][QUESTION]["message"]["content"]["parts"] = [text]
    return chat


def _ingest(store: RecordingStore, key: str, chats: list[dict], warnings: list[str]):
    store.put_bytes(key, json.dumps(chats).encode())
    when = datetime.fromisoformat(f"{DAY}T12:00:00+00:00").timestamp()
    os.utime(store.root / key, (when, when))  # an upload of DAY
    store.events.clear()
    info = store.head(key)
    return ingest_partition(store, DAY, [info], warn=warnings.append)


def _tables_put_once_and_never_read_back(events: list[tuple[str, str]], puts: int) -> None:
    tables = [key for what, key in events if what == "put" and key.startswith(NORMALIZED_PREFIX)]
    assert len(tables) == len(set(tables)) == puts, tables
    for i, (what, key) in enumerate(events):
        if what == "put" and key.startswith(NORMALIZED_PREFIX):
            assert ("read", key) not in events[i:], key


def _states(store) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for _uid, convs in iter_partition(store, DAY):
        for conv, _ in convs:
            out.setdefault(conv.key, []).append(next(m.text for m in conv.messages if m.message_id == QUESTION))
    return out


def test_one_state_per_conversation_is_settled_before_the_tables_are_put(tmp_path):
    store = RecordingStore(tmp_path / "bucket")
    key = f"raw/{DAY}/chats.json"
    base = chatgpt_conversations()[0]["update_time"]
    warnings: list[str] = []

    # the same id twice: the newer state stays, with a warning
    out = _ingest(store, key, [_chat("twice", "older", base), _chat("twice", "newer", base + 10), _chat("once", "only", base)], warnings)
    _tables_put_once_and_never_read_back(store.events, puts=2)
    assert out.duplicates == [f"{key}: chatgpt:twice"] and len(warnings) == 1 and "2 states of conversation chatgpt:twice" in warnings[0]
    assert _states(store) == {"chatgpt:twice": ["newer"], "chatgpt:once": ["only"]}
    assert out.sources["chatgpt"].conversations == 2 and out.sources["chatgpt"].new == 2

    # an older version put over it: the earlier version's newer state is kept (read from the tables it left)
    out = _ingest(store, key, [_chat("twice", "oldest", base - 10), _chat("once", "only", base)], warnings)
    _tables_put_once_and_never_read_back(store.events, puts=0)  # the tables it settles on are the ones in the bucket
    previous = table_key("conversations", DAY, upload_id(key))
    assert next(k for what, k in store.events if what == "read" and k.startswith(NORMALIZED_PREFIX)) == previous
    assert out.kept_newer == [f"{key}: chatgpt:twice"]
    assert _states(store) == {"chatgpt:twice": ["newer"], "chatgpt:once": ["only"]}
    assert out.sources["chatgpt"].unchanged == 2
