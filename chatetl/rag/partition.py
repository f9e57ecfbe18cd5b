"""The RAG stage of a partition: Documents, their chunks and the chunks' vectors, in the bucket and in Neo4j.

For each upload of the partition (as normalized):

    rag/documents/date=D/<upload-id>.jsonl     one Document per conversation (the Document node's properties)
    rag/chunks/date=D/<upload-id>.jsonl        its chunks: text, position, char offsets, message ids, text hash
    rag/embeddings/date=D/<upload-id>.parquet  the chunks' vectors (chatetl.rag.vectors), with an embedder

and, with a driver, Document nodes (newest state wins, HAS_DOCUMENT from the Conversation)
and Chunk nodes (HAS_CHUNK, NEXT, full-text index `chunk_text`, vectors in `chunk_embedding`;
a newer state's chunks replace the older's). Conversations are processed in batches, so memory
does not grow with the size of an upload. Keys derive from the upload, and unchanged bytes are
not rewritten: a rerun changes nothing.

Embeddings are on by default (chatetl.rag.embeddings.load_embedder: the built-in model). A
chunk's vector is computed once: a batch first takes the vectors the upload's previous
Parquet holds for its texts (read in step, chatetl.rag.vectors.PreviousVectors), then those
the graph holds (the same text in another upload or day), and embeds only the rest.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from chatetl.graph.chunks import ChunkLoadSummary, load_chunks, stored_embeddings
from chatetl.graph.documents import load_documents, superseded_documents
from chatetl.layout import document_keys
from chatetl.model import Conversation, state_batches
from chatetl.rag.chunking import Chunk, ChunkOptions, chunk_document, chunks_jsonl
from chatetl.rag.documents import build_document, documents_jsonl
from chatetl.rag.embeddings import Embedder, VectorsOf, as_embedder, embed_chunks
from chatetl.rag.vectors import PreviousVectors, VectorsWriter
from chatetl.selection import VISIBLE, ContentOptions
from chatetl.storage import ObjectStore, put_if_changed
from chatetl.tables import iter_partition
from chatetl.tally import Tally

BATCH = 250


@dataclass
class DocumentsResult(Tally):
    """What writing Documents did; results add up (`add`: uploads, days), the first document kept as the preview."""

    documents: int = 0
    chunks: int = 0
    empty_documents: int = 0  # conversations with no text to show: a Document without chunks
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    documents_in_graph: int = 0
    chunks_in_graph: ChunkLoadSummary = field(default_factory=ChunkLoadSummary)
    embedded: int = 0  # chunks whose vector the model computed in this run
    embeddings_reused: int = 0  # chunks whose unchanged text kept the vector of an earlier run
    embedding_seconds: float = 0.0  # time spent in the model
    embedding_model: str | None = None
    first_document: dict[str, Any] | None = None

    @property
    def items(self) -> int:  # what StageResult called it
        return self.documents

    @property
    def graph_written(self) -> int:
        return self.documents_in_graph


def process_documents(
    driver: Any | None,
    conversations: Iterable[Conversation],
    result: DocumentsResult,
    *,
    database: str | None = None,
    content: ContentOptions = VISIBLE,
    chunking: ChunkOptions | None = None,
    embedder: Embedder | VectorsOf | None = None,
    doc_out: BinaryIO | None = None,
    chunk_out: BinaryIO | None = None,
    vectors_out: VectorsWriter | None = None,
    previous: PreviousVectors | None = None,
) -> DocumentsResult:
    """Documents and chunks of these conversations, batch by batch: JSONL lines to the open files given,
    vectors (with an embedder) to `vectors_out`, and (with a driver) Document and Chunk nodes.
    The CLI's graph load and the asset share it. `previous`: the upload's earlier vectors."""
    chunking = chunking or ChunkOptions()
    model = as_embedder(embedder) if embedder is not None else None
    if model is not None:
        result.embedding_model = result.embedding_model or model.name

    def known(hashes: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = previous.take(hashes) if previous is not None else {}
        missing = [h for h in hashes if h not in found]
        if missing and driver is not None and model is not None:
            found.update(stored_embeddings(driver, model.name, missing, database=database))
        return found

    for batch in state_batches(conversations, BATCH):
        docs = [build_document(c, content) for c in batch]
        if driver is not None:  # a state the graph holds a newer one of stays out of rag/ (model.state_order)
            stale = superseded_documents(driver, [d.props for d in docs], database=database)
            docs = [d for d in docs if d.key not in stale]
        chunked = [chunk_document(doc, chunking) for doc in docs]
        if model is not None:
            every = [c for chunks in chunked for c in chunks]
            seconds = model.seconds
            embedded = embed_chunks(every, model, known) if every else 0
            result.embedded += embedded
            result.embeddings_reused += len(every) - embedded
            result.embedding_seconds += model.seconds - seconds
            if vectors_out is not None:
                vectors_out.write(every)
        chunks_by_doc: dict[str, list[Chunk]] = {}
        digests: dict[str, str] = {}
        for doc, chunks in zip(docs, chunked, strict=True):
            doc.props["chunk_count"] = len(chunks)
            if doc_out is not None:
                doc_out.writelines(documents_jsonl([doc.props]))
            if chunk_out is not None:
                chunk_out.writelines(chunks_jsonl(chunks))
            result.documents += 1
            result.chunks += len(chunks)
            result.empty_documents += not chunks
            if result.first_document is None:
                result.first_document = doc.props
            digests[doc.key] = doc.props["content_sha256"]
            chunks_by_doc[doc.key] = chunks
        if driver is not None:
            result.documents_in_graph += load_documents(driver, [d.props for d in docs], database=database)
            result.chunks_in_graph.add(load_chunks(driver, chunks_by_doc, digests, database=database))
    return result


def write_upload_documents(
    store: ObjectStore,
    driver: Any | None,
    day: str,
    upload_id: str,
    conversations: Iterable[Conversation],
    result: DocumentsResult,
    **options: Any,
) -> None:
    """One upload's rag/documents/, rag/chunks/ and (with an embedder) rag/embeddings/ files (unchanged
    bytes are not rewritten), and the graph. Without an embedder, or without chunks, the upload
    has no embeddings file (one from an earlier run is removed).

    `options` are `process_documents`'s: database, content, chunking, embedder."""
    doc_key, chunk_key, vectors_key = document_keys(day, upload_id)
    embedder = options.get("embedder")
    if embedder is not None:
        options["embedder"] = embedder = as_embedder(embedder)
    with tempfile.TemporaryDirectory(prefix="chatetl-rag-") as tmp:
        doc_path, chunk_path, vectors_path = Path(tmp, "documents.jsonl"), Path(tmp, "chunks.jsonl"), Path(tmp, "embeddings.parquet")
        previous = None
        if embedder is not None and store.head(vectors_key) is not None:
            previous = PreviousVectors(store.download(vectors_key, Path(tmp, "previous.parquet")), embedder.name)
        with open(doc_path, "wb") as doc_out, open(chunk_path, "wb") as chunk_out, VectorsWriter(vectors_path) as vectors_out:
            process_documents(driver, conversations, result, doc_out=doc_out, chunk_out=chunk_out,
                              vectors_out=vectors_out if embedder is not None else None, previous=previous, **options)
        for key, path in ((doc_key, doc_path), (chunk_key, chunk_path)):
            (result.written if put_if_changed(store, key, path, "application/x-ndjson") else result.unchanged).append(key)
        if vectors_out.rows:
            (result.written if put_if_changed(store, vectors_key, vectors_path, "application/vnd.apache.parquet") else result.unchanged).append(vectors_key)
        elif store.head(vectors_key) is not None:
            store.delete(vectors_key)


def write_partition_documents(
    store: ObjectStore,
    driver: Any | None,
    day: str,
    uploads: Iterable[tuple[str, Iterator[tuple[Conversation, str | None]]]] | None = None,
    *,
    database: str | None = None,
    content: ContentOptions = VISIBLE,
    chunking: ChunkOptions | None = None,
    embedder: Embedder | VectorsOf | None = None,
) -> DocumentsResult:
    """Documents and chunks of every upload of the partition (`uploads`: its normalized uploads,
    read from the bucket when not given): rag/documents/, rag/chunks/, rag/embeddings/ and (with
    a driver) Neo4j."""
    result = DocumentsResult()
    if uploads is None:
        uploads = iter_partition(store, day)
    for uid, convs in uploads:
        write_upload_documents(
            store, driver, day, uid, (c for c, _ in convs), result,
            database=database, content=content, chunking=chunking, embedder=embedder,
        )
    return result
