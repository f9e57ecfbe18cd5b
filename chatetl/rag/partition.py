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
the graph holds (the same text in another upload or day), and embeds only the rest. A day's run
leaves out the uploads whose stamp says their files would come out the same (chatetl.rag.stamps).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from chatetl.graph.chunks import (
    ChunkLoadSummary,
    DocumentChunks,
    chunks_digest,
    documents_holding_chunks,
    failure_line,
    load_chunks,
    stored_embeddings,
)
from chatetl.graph.documents import load_documents, superseded_documents
from chatetl.graph.summary import FAILURES_LISTED
from chatetl.heartbeat import heartbeat
from chatetl.layout import (
    KEEPSAKE_TABLES,
    RAG_CHUNKS_PREFIX,
    RAG_DOCUMENTS_PREFIX,
    RAG_EMBEDDINGS_PREFIX,
    TABLES,
    document_keys,
    table_key,
    table_prefix,
)
from chatetl.model import Conversation, state_batches
from chatetl.rag.chunking import (
    Chunk,
    ChunkOptions,
    chunk_spans,
    chunks_jsonl,
    iter_chunks,
)
from chatetl.rag.documents import Document, build_document, documents_jsonl
from chatetl.rag.embeddings import Embedder, VectorsOf, as_embedder, embed_chunks
from chatetl.rag.keepsake_documents import upload_keepsake_documents
from chatetl.rag.stamps import FilesStamp, drop_stale_stamps, rag_fingerprint, read_files_stamp, write_files_stamp
from chatetl.rag.vectors import PreviousVectors, RunVectors, VectorsWriter
from chatetl.selection import VISIBLE, ContentOptions
from chatetl.storage import ObjectStore, put_if_changed
from chatetl.tables.decode import iter_conversations
from chatetl.tables.partitions import iter_partition, partition_table_pairs
from chatetl.tally import Tally, capped, summed_by

if TYPE_CHECKING:
    from neo4j import Driver

BATCH = 250
# chunks made, embedded, written to rag/ and to the graph at a time: the Documents of a batch up to this many
# chunks together, a Document of more alone, a window of this many at a time (one huge message makes tens of
# thousands of chunks: held and written at once, their vectors would take gigabytes and one transaction)
CHUNK_WINDOW = 1000
STATE_PROPS = ("key", "state_version", "arrived_via", "state_hash")  # what says which state a Document is of
STATES_BATCH = 5000  # Documents' states checked against the graph in one query
PREVIEW_CHARS = 4000  # of the first Document's content kept for the asset's preview (not the whole text)


@dataclass
class DocumentsResult(Tally):
    """What writing Documents did; results add up (`add`: uploads, days), the first document kept as the preview."""

    documents: int = 0
    chunks: int = 0
    empty_documents: int = 0  # conversations with no text to show: a Document without chunks
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    documents_in_graph: int = 0
    documents_failed: int = 0  # Document nodes the server refused, even written alone (their chunks: chunks_in_graph.failed)
    failures: list[str] = summed_by(capped(FAILURES_LISTED), default_factory=list)  # noqa: RUF009 - "key: why" of those
    chunks_in_graph: ChunkLoadSummary = field(default_factory=ChunkLoadSummary)
    embedded: int = 0  # chunks whose vector the model computed in this run
    embeddings_reused: int = 0  # chunks whose unchanged text kept the vector of an earlier run
    embedding_seconds: float = 0.0  # time spent in the model
    embedding_model: str | None = None
    first_document: dict[str, Any] | None = None  # (its content cut to PREVIEW_CHARS)

    @property
    def items(self) -> int:  # what StageResult called it
        return self.documents

    @property
    def graph_written(self) -> int:
        return self.documents_in_graph


def process_documents(
    driver: Driver | None,
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
    overlap: bool = True,
    write_graph: bool = True,
    seen: RunVectors | None = None,
    record: FilesStamp | None = None,
    keepsakes: Iterable[Document] = (),
) -> DocumentsResult:
    """Documents and chunks of these conversations (then of `keepsakes`, Documents of what the upload keeps
    beside its chats: chatetl.rag.keepsake_documents), batch by batch: JSONL lines to the open files given,
    vectors (with an embedder) to `vectors_out`, and (with a driver) Document and Chunk nodes.
    The CLI's graph load and the asset share it. `previous`: the upload's earlier vectors.

    Memory and transactions stay bounded whatever one message's size: a Document's chunk offsets are
    found first (cheap), then its chunks are made, embedded and written `CHUNK_WINDOW` at a time
    (chatetl.graph.chunks.DocumentChunks for a Document of more). A Document (or its chunks) the server
    refuses fails alone: counted (`documents_failed`, `chunks_in_graph.failed`), described (`failures`,
    `chunks_in_graph.failures`), the rest of the batch written, and the next run tries it again.

    `overlap` (on by default): a group's chunks are written to the graph on a thread of their own while the next
    group is chunked and embedded, so the server's index writes run beside the model's CPU. One group is in flight
    at a time (the next waits for it, as do a Document of more than CHUNK_WINDOW chunks and the end), and each
    write checks that its Document still holds the text its chunks were cut from, so the graph is the one
    written in turn (tests/graph/test_chunks_embeddings.py compares them; bench/RESULTS.md, the gain).

    `write_graph=False`: the driver is only read (which states the graph holds, the vectors it has); the
    rag/ files are written and chatetl.rag.graph_load writes the graph from them later, so the model's CPU
    time is spent outside the Neo4j pool. `seen`: the vectors this run computed so far (a text embedded
    earlier in the run, not in the graph yet, is not embedded again). `record`: each Document's state, and those
    left out, noted in it (chatetl.rag.stamps)."""
    writer = _DocumentsWriter(
        driver, result, database=database, chunking=chunking or ChunkOptions(), embedder=embedder,
        doc_out=doc_out, chunk_out=chunk_out, vectors_out=vectors_out, previous=previous, overlap=overlap,
        write_graph=write_graph, seen=seen, record=record,
    )
    try:
        for batch in state_batches(conversations, BATCH):
            writer.batch([build_document(c, content) for c in batch])
        kept = list(keepsakes)
        for i in range(0, len(kept), BATCH):
            writer.batch(kept[i:i + BATCH])
        writer.settle()
    finally:
        writer.close()
    return result


_Group = list[tuple[Document, list[tuple[int, int]]]]  # Documents and their chunks' offsets


class _DocumentsWriter:
    """`process_documents` at work: where Documents, chunks and vectors go, the chunks being written to
    the graph (one group at most in flight), and the Documents the graph refused in this batch."""

    def __init__(self, driver: Driver | None, result: DocumentsResult, *, database: str | None, chunking: ChunkOptions,
                 embedder: Embedder | VectorsOf | None, doc_out: BinaryIO | None, chunk_out: BinaryIO | None,
                 vectors_out: VectorsWriter | None, previous: PreviousVectors | None, overlap: bool,
                 write_graph: bool = True, seen: RunVectors | None = None, record: FilesStamp | None = None) -> None:
        self.driver, self.result, self.database, self.chunking = driver, result, database, chunking
        self.record = record
        self.writes_graph = driver is not None and write_graph
        self.seen = seen
        self.model = as_embedder(embedder) if embedder is not None else None
        if self.model is not None:
            result.embedding_model = result.embedding_model or self.model.name
        self.doc_out, self.chunk_out, self.vectors_out, self.previous = doc_out, chunk_out, vectors_out, previous
        self.writes = ThreadPoolExecutor(1, thread_name_prefix="chatetl-chunks") if self.writes_graph and overlap else None
        self.in_flight: list[Future[ChunkLoadSummary]] = []  # the group's chunks being written (one at most)
        self.refused: set[str] = set()  # Documents the graph refused: their chunks are not written there

    def close(self) -> None:
        if self.writes is not None:
            self.writes.shutdown()  # (waits: after an error here, the write in flight ends before the caller goes on)

    def settle(self) -> None:
        """The chunks in flight written (their summary counted; an error raised here)."""
        while self.in_flight:
            self.result.chunks_in_graph.add(self.in_flight.pop().result())

    def batch(self, docs: list[Document]) -> None:
        if self.driver is not None:  # a state the graph holds a newer one of stays out of rag/ (model.state_order)
            stale = superseded_documents(self.driver, [d.props for d in docs], database=self.database)
            if self.record is not None:
                self.record.states += [[d.props[k] for k in STATE_PROPS] for d in docs]
                self.record.superseded += [d.key for d in docs if d.key in stale]
            docs = [d for d in docs if d.key not in stale]
        offsets = [chunk_spans(doc.content, doc.spans, self.chunking) for doc in docs]  # (offsets only: a few per 2,000 characters)
        self._documented(docs, offsets)
        self._load_documents(docs)
        group: _Group = []
        for doc, spans in zip(docs, offsets, strict=True):
            if len(spans) > CHUNK_WINDOW:
                self.together(group)
                group = []
                self.alone(doc, spans)
                continue
            if group and sum(len(o) for _, o in group) + len(spans) > CHUNK_WINDOW:
                self.together(group)
                group = []
            group.append((doc, spans))
        self.together(group)

    def _documented(self, docs: list[Document], offsets: list[list[tuple[int, int]]]) -> None:
        result = self.result
        for doc, spans in zip(docs, offsets, strict=True):
            doc.props["chunk_count"] = len(spans)
            if self.doc_out is not None:
                self.doc_out.writelines(documents_jsonl([doc.props]))
            result.documents += 1
            result.empty_documents += not spans
            if result.first_document is None:
                result.first_document = _preview(doc.props)
            if self.record is not None and self.record.first_document is None:
                self.record.first_document = _preview(doc.props)

    def _load_documents(self, docs: list[Document]) -> None:
        self.refused = set()
        if self.driver is None or not self.writes_graph:
            return
        failures: list[tuple[str, BaseException]] = []
        self.result.documents_in_graph += load_documents(self.driver, [d.props for d in docs], database=self.database, failures=failures)
        for key, exc in failures:
            self.refused.add(key)
            self.result.failures.append(failure_line(key, exc))
        self.result.documents_failed += len(failures)

    def known(self, hashes: list[str]) -> dict[str, Any]:
        found: dict[str, Any] = self.previous.take(hashes) if self.previous is not None else {}
        missing = [h for h in hashes if h not in found]
        if missing and self.seen is not None and self.model is not None:
            found.update(self.seen.take(self.model.name, missing))
            missing = [h for h in missing if h not in found]
        if missing and self.driver is not None and self.model is not None:
            found.update(stored_embeddings(self.driver, self.model.name, missing, database=self.database))
        return found

    def in_graph(self, hashes: list[str]) -> dict[str, Any]:  # (for chunks made a second time: `previous` is read in step once)
        if self.driver is None or self.model is None:
            return {}
        return stored_embeddings(self.driver, self.model.name, hashes, database=self.database)

    def embed(self, chunks: list[Chunk], counted: bool = True) -> None:
        model = self.model
        if model is None or not chunks:
            return
        seconds = model.seconds
        embedded = embed_chunks(chunks, model, self.known if counted else self.in_graph)
        self.result.embedding_seconds += model.seconds - seconds
        if counted:
            self.result.embedded += embedded
            self.result.embeddings_reused += len(chunks) - embedded
            if self.seen is not None:
                self.seen.add(chunks)

    def written(self, chunks: list[Chunk]) -> None:
        """A window of chunks made and embedded: to the rag/ files."""
        if self.vectors_out is not None and self.model is not None:
            self.vectors_out.write(chunks)
        if self.chunk_out is not None:
            self.chunk_out.writelines(chunks_jsonl(chunks))
        self.result.chunks += len(chunks)

    def together(self, group: _Group) -> None:
        """Documents of CHUNK_WINDOW chunks at most in all: made, embedded and written at once. Where no vectors
        file is written, the Documents whose chunks the graph holds as they are already are found first: their
        chunks are not embedded (nor their vectors read from the graph), and not written."""
        driver, model, database = self.driver, self.model, self.database
        chunked = [list(iter_chunks(doc, self.chunking, offsets)) for doc, offsets in group]
        graph = {doc.key: chunks for (doc, _), chunks in zip(group, chunked, strict=True) if doc.key not in self.refused}
        contents = {doc.key: doc.props["content_sha256"] for doc, _ in group}
        unchanged: set[str] = set()
        if self.writes_graph and driver is not None and model is not None and self.vectors_out is None and graph:
            digests = {key: chunks_digest(chunks, model.name) for key, chunks in graph.items()}
            unchanged = documents_holding_chunks(driver, digests, contents, database)[1]
        self.embed([c for (doc, _), chunks in zip(group, chunked, strict=True) if doc.key not in unchanged for c in chunks])
        for chunks in chunked:
            self.written(chunks)
        if self.writes_graph and driver is not None:
            self.settle()
            if self.writes is None:
                self.result.chunks_in_graph.add(
                    load_chunks(driver, graph, contents, database=database, unchanged=unchanged))
            else:
                self.in_flight.append(
                    self.writes.submit(load_chunks, driver, graph, contents, database=database, unchanged=unchanged))

    def alone(self, doc: Document, offsets: list[tuple[int, int]]) -> None:
        """A Document of more than CHUNK_WINDOW chunks: a window at a time, to the rag/ files and the graph."""
        self.settle()
        graph = None
        if self.writes_graph and self.driver is not None and doc.key not in self.refused:
            graph = DocumentChunks(self.driver, doc.key, doc.props["content_sha256"], len(offsets), database=self.database)
        windows = range(0, len(offsets), CHUNK_WINDOW)
        for lo in windows:
            chunks = list(iter_chunks(doc, self.chunking, offsets[lo:lo + CHUNK_WINDOW], lo))
            self.embed(chunks)
            self.written(chunks)
            if graph is not None:
                graph.add(chunks)

        def again() -> Iterator[list[Chunk]]:
            for lo in windows:
                chunks = list(iter_chunks(doc, self.chunking, offsets[lo:lo + CHUNK_WINDOW], lo))
                self.embed(chunks, counted=False)
                yield chunks

        if graph is not None:
            self.result.chunks_in_graph.add(graph.finish(again))


def write_upload_documents(
    store: ObjectStore,
    driver: Driver | None,
    day: str,
    upload_id: str,
    conversations: Iterable[Conversation],
    result: DocumentsResult,
    stamp: FilesStamp | None = None,
    **options: Any,
) -> None:
    """One upload's rag/documents/, rag/chunks/ and (with an embedder) rag/embeddings/ files (unchanged
    bytes are not rewritten), and the graph. Without an embedder, or without chunks, the upload
    has no embeddings file (one from an earlier run is removed). `stamp`: filled in with what was written.

    `options` are `process_documents`'s: database, content, chunking, embedder, write_graph, seen."""
    doc_key, chunk_key, vectors_key = document_keys(day, upload_id)
    before = (result.documents, result.chunks, result.empty_documents)
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
                              vectors_out=vectors_out if embedder is not None else None, previous=previous, record=stamp, **options)
        outputs = [(doc_key, doc_path), (chunk_key, chunk_path)]
        for key, path in outputs:
            (result.written if put_if_changed(store, key, path, "application/x-ndjson") else result.unchanged).append(key)
        if vectors_out.rows:
            outputs.append((vectors_key, vectors_path))
            (result.written if put_if_changed(store, vectors_key, vectors_path, "application/vnd.apache.parquet") else result.unchanged).append(vectors_key)
        elif store.head(vectors_key) is not None:
            store.delete(vectors_key)
        if stamp is not None:
            stamp.outputs = {key: store.etag_of(path) for key, path in outputs}
            stamp.documents, stamp.chunks, stamp.empty_documents = (
                now - was for now, was in zip((result.documents, result.chunks, result.empty_documents), before, strict=True))
            stamp.vectors = vectors_out.rows if embedder is not None else 0


def _preview(props: dict[str, Any]) -> dict[str, Any]:
    """A Document's properties as a result keeps its first one: the content cut to PREVIEW_CHARS."""
    return {**props, "content": props["content"][:PREVIEW_CHARS]}


def write_partition_documents(
    store: ObjectStore,
    driver: Driver | None,
    day: str,
    uploads: Iterable[tuple[str, Iterator[tuple[Conversation, str | None]]]] | None = None,
    *,
    database: str | None = None,
    content: ContentOptions = VISIBLE,
    chunking: ChunkOptions | None = None,
    embedder: Embedder | VectorsOf | None = None,
    write_graph: bool = True,
    seen: RunVectors | None = None,
    progress: Callable[[str], None] | None = None,
) -> DocumentsResult:
    """Documents and chunks of every upload of the partition (`uploads`: its normalized uploads, all written;
    when not given, the bucket's, each skipped while its stamp says writing it again would change nothing,
    `_unchanged`): rag/documents/, rag/chunks/, rag/embeddings/ and (with a driver and `write_graph`) Neo4j.
    `progress` is told one line per upload done (a long step says how far it got)."""
    result = DocumentsResult()
    options: dict[str, Any] = {"database": database, "content": content, "chunking": chunking, "embedder": embedder,
                               "write_graph": write_graph, "seen": seen}
    if uploads is not None or (driver is not None and write_graph):  # (a graph written here is not stamped)
        for number, (uid, convs) in enumerate(iter_partition(store, day) if uploads is None else uploads, start=1):
            before = result.documents, result.chunks
            documents = heartbeat((c for c, _ in convs), progress, f"rag files {day}: upload {number}, conversations read")
            write_upload_documents(store, driver, day, uid, documents, result, keepsakes=upload_keepsake_documents(store, day, uid),
                                   **options)
            upload_done(progress, f"rag files {day}: upload {number}", result, before, "written")
        return result
    model = as_embedder(embedder) if embedder is not None else None
    options["embedder"] = model
    base = {"content": content.model_dump(mode="json"), "chunking": (chunking or ChunkOptions()).model_dump(mode="json"),
            "embedder": model.name if model is not None else None, "graph": driver is not None,
            "code": rag_fingerprint()}
    tables = {o.key: o.etag for t in (*TABLES, *KEEPSAKE_TABLES) for o in store.list(table_prefix(t, day))}
    files = {o.key: o.etag for prefix in (RAG_DOCUMENTS_PREFIX, RAG_CHUNKS_PREFIX, RAG_EMBEDDINGS_PREFIX) for o in store.list(f"{prefix}date={day}/")}
    uids = []
    pairs = partition_table_pairs(store, day)
    for number, (conv_key, msg_key) in enumerate(pairs, start=1):
        uid = conv_key.rsplit("/", 1)[-1].removesuffix(".parquet")
        uids.append(uid)
        stamp = FilesStamp({**base, "tables": [tables.get(conv_key), tables.get(msg_key)],
                            "keepsakes": [tables.get(table_key(t, day, uid)) for t in KEEPSAKE_TABLES]}, {})
        old = read_files_stamp(store, day, uid)
        before = result.documents, result.chunks
        if old is not None and _unchanged(old, stamp, files, document_keys(day, uid), driver, database):
            _take(old, result, document_keys(day, uid))
            upload_done(progress, f"rag files {day}: upload {number}/{len(pairs)}", result, before, "unchanged")
            continue
        # (the listing says which keepsake tables the upload has: none is asked for when it has none)
        kept = upload_keepsake_documents(store, day, uid) if any(stamp.inputs["keepsakes"]) else []
        with tempfile.TemporaryDirectory(prefix="chatetl-rag-tables-") as tmp:
            convs = iter_conversations(store.download(conv_key, Path(tmp, "c.parquet")), store.download(msg_key, Path(tmp, "m.parquet")))
            documents = heartbeat((c for c, _ in convs), progress, f"rag files {day}: upload {number}/{len(pairs)}, conversations read")
            write_upload_documents(store, driver, day, uid, documents, result, stamp=stamp, keepsakes=kept, **options)
        write_files_stamp(store, day, uid, stamp)
        upload_done(progress, f"rag files {day}: upload {number}/{len(pairs)}", result, before, "written")
    drop_stale_stamps(store, day, uids)
    return result


def upload_done(progress: Callable[[str], None] | None, upload: str, result: DocumentsResult, before: tuple[int, int],
                how: str) -> None:
    """One progress line for an upload done: its Documents and chunks (those `result` gained since `before`)."""
    if progress is not None:
        progress(f"{upload}, {result.documents - before[0]} documents and {result.chunks - before[1]} chunks {how}")


def _unchanged(old: FilesStamp, new: FilesStamp, files: dict[str, str], keys: tuple[str, ...], driver: Driver | None,
               database: str | None) -> bool:
    """Whether writing the upload's rag/ files again would give the ones its stamp says are there: the same inputs,
    the same files, and (the graph read) the same Documents left out for another state the graph holds."""
    if old.inputs != new.inputs or {k: files.get(k) for k in keys} != {k: old.outputs.get(k) for k in keys}:
        return False
    if not old.states or driver is None:
        return True
    stale: set[str] = set()
    for i in range(0, len(old.states), STATES_BATCH):
        rows = [dict(zip(STATE_PROPS, s, strict=True)) for s in old.states[i:i + STATES_BATCH]]
        stale |= superseded_documents(driver, rows, database=database)
    return sorted(stale) == sorted(old.superseded)


def _take(old: FilesStamp, result: DocumentsResult, keys: tuple[str, ...]) -> None:
    """An unchanged upload counted as writing its files again would count it (each vector taken from its file)."""
    result.documents += old.documents
    result.chunks += old.chunks
    result.empty_documents += old.empty_documents
    result.embeddings_reused += old.vectors
    result.embedding_model = result.embedding_model or old.inputs.get("embedder")
    result.unchanged += [k for k in keys if k in old.outputs]
    if result.first_document is None:
        result.first_document = old.first_document
