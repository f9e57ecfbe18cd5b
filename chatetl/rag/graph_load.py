"""A day's rag/ files into Neo4j: Document and Chunk nodes from what the embedding step stored.

chatetl.rag.partition cuts and embeds (the model's CPU time) and writes rag/documents/, rag/chunks/ and
rag/embeddings/; this step only reads them back, in their order, and writes the graph, so the time a
step holds the Neo4j pool is the graph's. The files hold what a combined load would have written
(the Documents' properties, the chunks without `title`'s twin, their vectors): the graph comes out
the same. Memory stays bounded: a batch of Documents, a window of chunks at a time; a Document of
more chunks than a window is written a window at a time (chatetl.graph.chunks.DocumentChunks).
A Document whose chunks the graph holds already costs a digest, not a vector's conversion.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from chatetl.graph.chunks import (
    DocumentChunks,
    chunks_digest,
    documents_holding_chunks,
    ensure_chunk_schema,
    failure_line,
    load_chunks,
)
from chatetl.graph.documents import load_documents
from chatetl.layout import RAG_CHUNKS_PREFIX, RAG_DOCUMENTS_PREFIX, RAG_EMBEDDINGS_PREFIX, document_keys
from chatetl.rag.chunking import Chunk
from chatetl.rag.partition import BATCH, CHUNK_WINDOW, PREVIEW_CHARS, DocumentsResult, upload_done
from chatetl.rag.stamps import GraphStamp, read_graph_stamp, write_graph_stamp
from chatetl.rag.vectors import StoredVectors
from chatetl.storage import ObjectStore

if TYPE_CHECKING:
    from neo4j import Driver


def stored_uploads(store: ObjectStore, day: str) -> list[str]:
    """The upload ids whose Documents the day's rag/ holds, in key order (the order they were written in)."""
    prefix = f"{RAG_DOCUMENTS_PREFIX}date={day}/"
    return sorted(o.key[len(prefix):].removesuffix(".jsonl") for o in store.list(prefix) if o.key.endswith(".jsonl"))


def load_partition_documents(store: ObjectStore, driver: Driver, day: str, database: str | None = None,
                             progress: Callable[[str], None] | None = None) -> DocumentsResult:
    """Every upload of the day's rag/ files into the graph; an upload whose files the graph took as they are, and
    whose Documents still hold the text and chunks they gave (chatetl.rag.stamps), is only counted. `progress`
    is told one line per upload done."""
    result = DocumentsResult()
    files = {o.key: o.etag for prefix in (RAG_DOCUMENTS_PREFIX, RAG_CHUNKS_PREFIX, RAG_EMBEDDINGS_PREFIX) for o in store.list(f"{prefix}date={day}/")}
    uids = stored_uploads(store, day)
    for number, uid in enumerate(uids, start=1):
        loaded = {k: files[k] for k in document_keys(day, uid) if k in files}
        old = read_graph_stamp(store, day, uid)
        before = result.documents, result.chunks
        upload = f"documents {day}: upload {number}/{len(uids)}"
        if old is not None and old.files == loaded and _held(driver, old, database):
            _take(old, result)
            upload_done(progress, upload, result, before, "held unchanged")
            continue
        stamp = load_upload_documents(store, driver, day, uid, result, database=database)
        if stamp is not None:
            stamp.files = loaded
            write_graph_stamp(store, day, uid, stamp)
        upload_done(progress, upload, result, before, "loaded")
    return result


def _held(driver: Driver, stamp: GraphStamp, database: str | None) -> bool:
    """Whether every Document of the stamp holds the text and the chunks it names in the graph."""
    if not stamp.digests:
        return True
    digests = {key: chunks for key, (_, chunks) in stamp.digests.items()}
    contents = {key: content for key, (content, _) in stamp.digests.items()}
    return documents_holding_chunks(driver, digests, contents, database)[1] == set(digests)


def _take(stamp: GraphStamp, result: DocumentsResult) -> None:
    """An upload the graph holds as it is, counted as loading it again would count it (its chunks unchanged)."""
    result.documents += len(stamp.digests)
    result.chunks += stamp.chunks
    result.empty_documents += stamp.empty_documents
    result.chunks_in_graph.unchanged += len(stamp.digests)
    if result.first_document is None:
        result.first_document = stamp.first_document


def load_upload_documents(store: ObjectStore, driver: Driver, day: str, uid: str, result: DocumentsResult,
                          database: str | None = None) -> GraphStamp | None:
    """One upload's rag/ files into the graph (counted in `result`: Documents and chunks read, and written); its
    stamp, when every Document went in whole (none refused, none written a window at a time)."""
    doc_key, chunk_key, vectors_key = document_keys(day, uid)
    failed = result.documents_failed + result.chunks_in_graph.failed
    with tempfile.TemporaryDirectory(prefix="chatetl-rag-load-") as tmp:
        doc_path = store.download(doc_key, Path(tmp, "documents.jsonl"))
        chunk_path = store.download(chunk_key, Path(tmp, "chunks.jsonl"))
        vectors_path = store.download(vectors_key, Path(tmp, "vectors.parquet")) if store.head(vectors_key) is not None else None
        with open(doc_path, "rb") as docs, open(chunk_path, "rb") as chunks:
            writer = _GraphWriter(driver, result, database, chunks, vectors_path)
            batch: list[dict[str, Any]] = []
            for line in docs:
                batch.append(json.loads(line))
                if len(batch) >= BATCH:
                    writer.batch(batch)
                    batch = []
            writer.batch(batch)
    if writer.alone_seen or result.documents_failed + result.chunks_in_graph.failed != failed:
        return None
    return writer.stamp


_Group = dict[str, tuple[str, list[Chunk], list[Any]]]  # Document key -> (its content_sha256, its chunks, their vector rows)


class _GraphWriter:
    """`load_upload_documents` at work: the chunk lines and vector rows read in step with the Documents."""

    def __init__(self, driver: Driver, result: DocumentsResult, database: str | None, chunks: IO[bytes], vectors_path: Path | None) -> None:
        self.driver, self.result, self.database, self.chunks = driver, result, database, chunks
        self.vectors_path = vectors_path
        self.vectors = StoredVectors(vectors_path) if vectors_path is not None else None
        self.model = self.vectors.model if self.vectors is not None else None
        self.schema_ready = False
        self.refused: set[str] = set()
        self.stamp = GraphStamp({})  # the Documents' digests as written
        self.alone_seen = False

    def take(self, key: str, count: int, source: IO[bytes] | None = None, vectors: StoredVectors | None = None) -> tuple[list[Chunk], list[Any]]:
        """The next `count` chunks of Document `key` and their vector rows (none without a vectors file)."""
        source = source or self.chunks
        lines = [source.readline() for _ in range(count)]
        chunks = [Chunk(**json.loads(line)) for line in lines if line]
        if len(chunks) != count or any(c.document_key != key for c in chunks):
            raise ValueError(f"rag/chunks/ does not follow rag/documents/ at Document {key}: written by another run? rematerialize rag_files")
        vectors = vectors or self.vectors
        rows = vectors.take([c.id for c in chunks]) if vectors is not None else []
        return chunks, rows

    def attach(self, chunks: list[Chunk], rows: list[Any], vectors: bool = True) -> None:
        """The chunks' model (what their digest holds) and, with `vectors`, their vectors."""
        for chunk, row in zip(chunks, rows, strict=True):
            chunk.embedding_model = self.model
            if vectors:
                chunk.embedding = StoredVectors.vector(row)

    def batch(self, docs: list[dict[str, Any]]) -> None:
        if not docs:
            return
        result = self.result
        stamp = self.stamp
        for doc in docs:
            result.documents += 1
            result.chunks += doc["chunk_count"]
            result.empty_documents += not doc["chunk_count"]
            stamp.chunks += doc["chunk_count"]
            stamp.empty_documents += not doc["chunk_count"]
            if result.first_document is None:
                result.first_document = {**doc, "content": doc["content"][:PREVIEW_CHARS]}
            if stamp.first_document is None:
                stamp.first_document = {**doc, "content": doc["content"][:PREVIEW_CHARS]}
        failures: list[tuple[str, BaseException]] = []
        result.documents_in_graph += load_documents(self.driver, docs, database=self.database, failures=failures)
        self.refused = {key for key, _ in failures}
        result.failures.extend(failure_line(key, exc) for key, exc in failures)
        result.documents_failed += len(failures)
        group: _Group = {}
        held = 0
        for doc in docs:
            key, count = doc["key"], doc["chunk_count"]
            if count > CHUNK_WINDOW:
                self.together(group)
                group, held = {}, 0
                self.alone(doc)
                continue
            if group and held + count > CHUNK_WINDOW:
                self.together(group)
                group, held = {}, 0
            chunks, rows = self.take(key, count)
            group[key] = (doc["content_sha256"], chunks, rows)
            held += count
        self.together(group)

    def together(self, group: _Group) -> None:
        """Documents of CHUNK_WINDOW chunks at most in all: those whose chunks the graph holds already found by
        digest (no vector converted for them), the others written with their vectors."""
        graph = {key: chunks for key, (_, chunks, _) in group.items() if key not in self.refused}
        if not graph:
            return
        contents = {key: content for key, (content, _, _) in group.items()}
        unchanged: set[str] = set()
        digests = {key: chunks_digest(chunks, self.model) for key, chunks in graph.items()}
        self.stamp.digests.update({key: [contents[key], digest] for key, digest in digests.items()})
        if self.model is not None:
            self.ensure_schema(group)
            unchanged = documents_holding_chunks(self.driver, digests, contents, self.database)[1]
        for key, (_, chunks, rows) in group.items():
            if key in graph and key not in unchanged:
                self.attach(chunks, rows)
        self.result.chunks_in_graph.add(load_chunks(self.driver, graph, contents, database=self.database, unchanged=unchanged))

    def ensure_schema(self, group: _Group) -> None:
        """The vector index of the file's size, once (load_chunks makes it from the vectors it writes, and a
        rerun that writes none still wants it there)."""
        if self.schema_ready:
            return
        row = next((rows[0] for _, _, rows in group.values() if rows), None)
        if row is not None:
            ensure_chunk_schema(self.driver, self.database, len(row))
            self.schema_ready = True

    def alone(self, doc: dict[str, Any]) -> None:
        """A Document of more than CHUNK_WINDOW chunks: a window at a time (`DocumentChunks`), read again from the
        files when its chunks turn out to differ only at the end."""
        self.alone_seen = True
        key, count = doc["key"], doc["chunk_count"]
        start, first_row = self.chunks.tell(), self.vectors.position if self.vectors is not None else 0
        graph = None if key in self.refused else DocumentChunks(self.driver, key, doc["content_sha256"], count, database=self.database)
        windows = range(0, count, CHUNK_WINDOW)
        for lo in windows:
            chunks, rows = self.take(key, min(CHUNK_WINDOW, count - lo))
            if graph is not None:
                self.attach(chunks, rows, vectors=graph.writing)
                graph.add(chunks)

        def again() -> Iterator[list[Chunk]]:
            with open(self.chunks.name, "rb") as source:
                source.seek(start)
                vectors = StoredVectors(self.vectors_path, skip=first_row) if self.vectors_path is not None else None
                for lo in windows:
                    chunks, rows = self.take(key, min(CHUNK_WINDOW, count - lo), source, vectors)
                    self.attach(chunks, rows)
                    yield chunks

        if graph is not None:
            self.result.chunks_in_graph.add(graph.finish(again))
