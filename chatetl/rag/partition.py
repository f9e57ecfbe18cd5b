"""The RAG stage of a partition: Documents and their chunks, in the bucket and in Neo4j.

For each upload of the partition (as normalized):

    rag/documents/date=D/<upload-id>.jsonl   one Document per conversation (the Document node's properties)
    rag/chunks/date=D/<upload-id>.jsonl      its chunks: text, position, char offsets, message ids

and, with a driver, Document nodes (newest state wins, HAS_DOCUMENT from the Conversation)
and Chunk nodes (HAS_CHUNK, NEXT, full-text index `chunk_text`; a newer state's chunks
replace the older's). Conversations are processed in batches, so memory does not grow with
the size of an upload. Keys derive from the upload, and unchanged bytes are not rewritten:
a rerun changes nothing.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Iterator

from chatetl.graph.chunks import ChunkLoadSummary, load_chunks
from chatetl.graph.documents import load_documents
from chatetl.layout import document_keys
from chatetl.model import Conversation, state_batches
from chatetl.rag.chunking import Chunk, ChunkOptions, chunk_document, chunks_jsonl
from chatetl.rag.documents import build_document, documents_jsonl
from chatetl.rag.embeddings import Embedder, embed_chunks
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
    embedded: int = 0
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
    embedder: Embedder | None = None,
    doc_out: BinaryIO | None = None,
    chunk_out: BinaryIO | None = None,
) -> DocumentsResult:
    """Documents and chunks of these conversations, batch by batch: JSONL lines to the open files given,
    and (with a driver) Document and Chunk nodes. The CLI's graph load and the asset share it."""
    chunking = chunking or ChunkOptions()
    for batch in state_batches(conversations, BATCH):
        docs = [build_document(c, content) for c in batch]
        chunks_by_doc: dict[str, list[Chunk]] = {}
        digests: dict[str, str] = {}
        for doc in docs:
            chunks = chunk_document(doc, chunking)
            if embedder is not None and chunks:
                embed_chunks(chunks, embedder)
                result.embedded += len(chunks)
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
    """One upload's rag/documents/ and rag/chunks/ files (unchanged bytes are not rewritten), and the graph.

    `options` are `process_documents`'s: database, content, chunking, embedder."""
    doc_key, chunk_key = document_keys(day, upload_id)
    with tempfile.TemporaryDirectory(prefix="chatetl-rag-") as tmp:
        doc_path, chunk_path = Path(tmp, "documents.jsonl"), Path(tmp, "chunks.jsonl")
        with open(doc_path, "wb") as doc_out, open(chunk_path, "wb") as chunk_out:
            process_documents(driver, conversations, result, doc_out=doc_out, chunk_out=chunk_out, **options)
        for key, path in ((doc_key, doc_path), (chunk_key, chunk_path)):
            (result.written if put_if_changed(store, key, path, "application/x-ndjson") else result.unchanged).append(key)


def write_partition_documents(
    store: ObjectStore,
    driver: Any | None,
    day: str,
    uploads: Iterable[tuple[str, Iterator[tuple[Conversation, str | None]]]] | None = None,
    *,
    database: str | None = None,
    content: ContentOptions = VISIBLE,
    chunking: ChunkOptions | None = None,
    embedder: Embedder | None = None,
) -> DocumentsResult:
    """Documents and chunks of every upload of the partition (`uploads`: its normalized uploads,
    read from the bucket when not given): rag/documents/, rag/chunks/ and (with a driver) Neo4j."""
    result = DocumentsResult()
    if uploads is None:
        uploads = iter_partition(store, day)
    for uid, convs in uploads:
        write_upload_documents(
            store, driver, day, uid, (c for c, _ in convs), result,
            database=database, content=content, chunking=chunking, embedder=embedder,
        )
    return result
