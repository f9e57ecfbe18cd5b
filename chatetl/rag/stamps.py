"""What an upload's rag/ files were written from, and what the graph took of them: a run skips the uploads it would not change.

    cache/rag/date=D/<upload-id>.json         `FilesStamp`: the inputs of its rag/ files, their ETags, what they hold
    cache/rag/date=D/<upload-id>.graph.json   `GraphStamp`: the files the graph was loaded from, each Document's digests

An upload's rag/ files depend on its normalized files, the content, chunking and embedder settings, the RAG
code, and which of its conversations the graph holds another state of (those are left out). While all of
these are as the stamp says, and the files are the ones it wrote, writing them again gives the same bytes.
The graph's Documents and Chunks of an upload are as loading its files again would leave them while every
Document still holds the text and the chunks its stamp names (`documents_holding_chunks`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any, TypeVar

from chatetl.fingerprint import code_fingerprint
from chatetl.layout import rag_stamp_key, rag_stamps_prefix
from chatetl.storage import ObjectStore, put_bytes_if_changed

# the code the rag/ files' bytes depend on (chatetl/<name>: a package or a module)
RAG_CODE = ("rag", "selection.py", "labels.py", "model.py")


@lru_cache(maxsize=1)
def rag_fingerprint() -> str:
    """The code that writes Documents, chunks and vectors: any change to it makes every stamp stale."""
    return code_fingerprint(RAG_CODE)


@dataclass
class FilesStamp:
    """An upload's rag/ files as a run wrote them."""

    inputs: dict[str, Any]  # normalized files' ETags, settings, code
    outputs: dict[str, str]  # rag/ key -> ETag written
    states: list[list[Any]] = field(default_factory=list)  # [key, state_version, arrived_via, state_hash] of every Document built
    superseded: list[str] = field(default_factory=list)  # those left out: the graph held another state
    documents: int = 0
    chunks: int = 0
    empty_documents: int = 0
    vectors: int = 0  # chunks with a vector (a rerun takes each from the file: reused)
    first_document: dict[str, Any] | None = None


@dataclass
class GraphStamp:
    """An upload's rag/ files as the graph took them."""

    files: dict[str, str]  # rag/ key -> ETag loaded
    digests: dict[str, list[str]] = field(default_factory=dict)  # Document key -> [content_sha256, chunks digest]
    chunks: int = 0
    empty_documents: int = 0
    first_document: dict[str, Any] | None = None


_Stamp = TypeVar("_Stamp", FilesStamp, GraphStamp)


def graph_stamp_key(day: str, uid: str) -> str:
    return rag_stamp_key(day, uid).removesuffix(".json") + ".graph.json"


def _read(store: ObjectStore, key: str, kind: type[_Stamp]) -> _Stamp | None:
    """The stamp at `key` (None: none, or damaged: the upload is done again)."""
    fetched = store.fetch(key)
    if fetched is None:
        return None
    try:
        return kind(**json.loads(fetched[0]))
    except (ValueError, UnicodeDecodeError, TypeError):
        return None


def _write(store: ObjectStore, key: str, stamp: FilesStamp | GraphStamp) -> None:
    data = (json.dumps(asdict(stamp), sort_keys=True) + "\n").encode("ascii")
    put_bytes_if_changed(store, key, data, "application/json")


def read_files_stamp(store: ObjectStore, day: str, uid: str) -> FilesStamp | None:
    return _read(store, rag_stamp_key(day, uid), FilesStamp)


def write_files_stamp(store: ObjectStore, day: str, uid: str, stamp: FilesStamp) -> None:
    _write(store, rag_stamp_key(day, uid), stamp)


def read_graph_stamp(store: ObjectStore, day: str, uid: str) -> GraphStamp | None:
    return _read(store, graph_stamp_key(day, uid), GraphStamp)


def write_graph_stamp(store: ObjectStore, day: str, uid: str, stamp: GraphStamp) -> None:
    _write(store, graph_stamp_key(day, uid), stamp)


def drop_stale_stamps(store: ObjectStore, day: str, uids: list[str]) -> None:
    """The stamps of the uploads the day no longer holds deleted."""
    keep = {rag_stamp_key(day, u) for u in uids} | {graph_stamp_key(day, u) for u in uids}
    for info in list(store.list(rag_stamps_prefix(day))):
        if info.key not in keep:
            store.delete(info.key)
