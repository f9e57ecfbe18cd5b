"""A day's normalized tables in the bucket: its uploads' pairs of files, listed, downloaded, read."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

from chatetl.layout import table_key, table_prefix
from chatetl.model import Conversation
from chatetl.storage import ObjectStore
from chatetl.tables.decode import iter_conversations


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
