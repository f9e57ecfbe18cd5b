"""Chunks in Neo4j: `(:Document)-[:HAS_CHUNK]->(:Chunk)`, `(:Chunk)-[:NEXT]->(:Chunk)` in order,
a full-text index `chunk_text` on `Chunk.text` (`search_chunks`), and (optional) a vector index
`chunk_embedding` on `Chunk.embedding` once embeddings exist (`similar_chunks`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from chatetl.graph.connection import run_read, run_write, write_session
from chatetl.tally import Tally


class ChunkRow(Protocol):
    """What the loader needs of a chunk (chatetl.rag.chunking.Chunk is one): the graph takes
    chunks as they come and knows nothing of how they were cut."""

    id: str
    embedding: list[float] | None

    def graph_row(self) -> dict[str, Any]: ...


# a text embedder: texts in, one vector per text out (chatetl.rag.embeddings.Embedder)
TextEmbedder = Callable[[list[str]], Sequence[Sequence[float]]]

FULLTEXT_INDEX = "chunk_text"
VECTOR_INDEX = "chunk_embedding"


SCHEMA = (
    "CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE",
    f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX} IF NOT EXISTS FOR (c:Chunk) ON EACH [c.text]",
)


def ensure_chunk_schema(driver: Any, database: str | None = None, dimensions: int | None = None) -> None:
    """The Chunk constraint and full-text index (and the vector index once vectors exist), online before use."""
    records = run_read(driver, database, "SHOW INDEXES YIELD name RETURN collect(name) AS names")
    existing = set(records[0]["names"]) if records else set()
    wanted = {"chunk_id": SCHEMA[0], FULLTEXT_INDEX: SCHEMA[1]}
    if dimensions:
        dims = int(dimensions)
        wanted[VECTOR_INDEX] = (
            f"CREATE VECTOR INDEX {VECTOR_INDEX} IF NOT EXISTS FOR (c:Chunk) ON c.embedding "
            f"OPTIONS {{indexConfig: {{`vector.dimensions`: {dims}, `vector.similarity_function`: 'cosine'}}}}"
        )
    missing = [stmt for name, stmt in wanted.items() if name not in existing]
    if missing:
        with write_session(driver, database) as session:
            for stmt in missing:
                session.run(stmt).consume()
            session.run("CALL db.awaitIndexes(300)").consume()


_CURRENT_DOCUMENTS = """
UNWIND $docs AS doc
MATCH (d:Document {key: doc.key})
WHERE d.content_sha256 = doc.content_sha256
RETURN doc.key AS key, coalesce(d.chunks_digest = doc.digest, false) AS same
"""

_MARK_DONE = """
UNWIND $docs AS doc
MATCH (d:Document {key: doc.key})
SET d.chunks_digest = doc.digest, d.chunk_count = doc.count
"""

_DELETE_STALE = """
UNWIND $docs AS doc
MATCH (:Document {key: doc.key})-[:HAS_CHUNK]->(c:Chunk)
WHERE NOT c.id IN doc.ids
DETACH DELETE c
RETURN count(*) AS deleted
"""

_UPSERT_CHUNKS = """
UNWIND $rows AS row
MATCH (d:Document {key: row.document_key})
MERGE (c:Chunk {id: row.id})
SET c = row
MERGE (d)-[:HAS_CHUNK]->(c)
RETURN count(c) AS written
"""

_RELINK = """
UNWIND $docs AS doc
MATCH (:Document {key: doc.key})-[:HAS_CHUNK]->(:Chunk)-[r:NEXT]->(:Chunk)
DELETE r
"""

_LINK = """
UNWIND $pairs AS p
MATCH (a:Chunk {id: p[0]}), (b:Chunk {id: p[1]})
MERGE (a)-[:NEXT]->(b)
"""


@dataclass
class ChunkLoadSummary(Tally):
    documents: int = 0  # documents whose chunks were written
    chunks: int = 0
    deleted: int = 0  # stale chunks removed (the document's newer state has fewer or other chunks)
    skipped_other_state: int = 0  # the Document in the graph holds another state's text (newer, or the winning source's): left alone
    unchanged: int = 0  # documents whose chunks in the graph are exactly these: nothing written


def chunks_digest(chunks: list[ChunkRow]) -> str:
    """What a Document's chunks are, in one value: a rerun with the same chunks writes nothing."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(json.dumps(c.graph_row(), sort_keys=True, ensure_ascii=False).encode("utf-8", "replace"))
        h.update(b"\n")
    return h.hexdigest()


def load_chunks(driver: Any, chunks_by_doc: dict[str, list[ChunkRow]], content_digests: dict[str, str], database: str | None = None, batch: int = 1000) -> ChunkLoadSummary:
    """Replace each Document's chunks with these, where the Document in the graph holds the text they were cut from.

    Run after `load_documents`, which decides which state of a conversation its Document holds
    (newest wins). `content_digests` maps each document key to the `content_sha256` of the text
    chunked: where the graph's Document holds other text (a newer state, an older upload loaded
    later), its chunks are left alone; otherwise chunks no longer there are removed, the others
    upserted and NEXT rebuilt; a Document whose chunks are exactly these is not touched, so a
    rerun writes nothing.
    """
    summary = ChunkLoadSummary()
    if not chunks_by_doc:
        return summary
    dims = {len(c.embedding) for cs in chunks_by_doc.values() for c in cs if c.embedding is not None}
    if len(dims) > 1:
        raise ValueError(f"embeddings of different sizes: {sorted(dims)}")
    ensure_chunk_schema(driver, database, dims.pop() if dims else None)
    digests = {k: chunks_digest(cs) for k, cs in chunks_by_doc.items()}
    docs = [{"key": k, "content_sha256": content_digests[k], "digest": digests[k]} for k in chunks_by_doc]
    current: set[str] = set()
    same: set[str] = set()
    for i in range(0, len(docs), batch):
        records = run_write(driver, database, _CURRENT_DOCUMENTS, docs=docs[i:i + batch])
        current.update(r["key"] for r in records)
        same.update(r["key"] for r in records if r["same"])
    summary.skipped_other_state = len(docs) - len(current)
    summary.unchanged = len(same)
    keys = [k for k in chunks_by_doc if k in current and k not in same]
    for i in range(0, len(keys), batch):
        part = keys[i:i + batch]
        doc_rows = [{"key": k, "ids": [c.id for c in chunks_by_doc[k]]} for k in part]
        records = run_write(driver, database, _DELETE_STALE, docs=doc_rows)
        summary.deleted += records[0]["deleted"] if records else 0
        run_write(driver, database, _RELINK, docs=doc_rows)
    rows: list[dict[str, Any]] = []
    pairs: list[list[str]] = []

    def flush() -> None:
        nonlocal rows, pairs
        if rows:
            records = run_write(driver, database, _UPSERT_CHUNKS, rows=rows)
            summary.chunks += records[0]["written"] if records else 0
        if pairs:
            run_write(driver, database, _LINK, pairs=pairs)
        rows, pairs = [], []

    for k in keys:
        chunks = chunks_by_doc[k]
        rows.extend(c.graph_row() for c in chunks)
        pairs.extend([a.id, b.id] for a, b in zip(chunks, chunks[1:]))
        summary.documents += 1
        if len(rows) >= batch:
            flush()
    flush()
    done = [{"key": k, "digest": digests[k], "count": len(chunks_by_doc[k])} for k in keys]
    for i in range(0, len(done), batch):
        run_write(driver, database, _MARK_DONE, docs=done[i:i + batch])
    return summary


_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')


def lucene_escape(text: str) -> str:
    """A user's words as a literal Lucene query (no operators, no syntax errors)."""
    return _LUCENE_SPECIAL.sub(r"\\\1", text)


_SEARCH = f"""
CALL db.index.fulltext.queryNodes('{FULLTEXT_INDEX}', $query, {{limit: $limit}}) YIELD node, score
MATCH (d:Document)-[:HAS_CHUNK]->(node)
OPTIONAL MATCH (c:Conversation)-[:HAS_DOCUMENT]->(d)
RETURN node.id AS chunk_id, node.text AS text, node.position AS position, node.message_ids AS message_ids,
       score, d.key AS document_key, d.title AS title, d.source AS source,
       c.conversation_id AS conversation_id, c.name AS conversation
ORDER BY score DESC, chunk_id
"""


def search_chunks(driver: Any, query: str, limit: int = 10, database: str | None = None, raw_lucene: bool = False) -> list[dict[str, Any]]:
    """Keyword search through the full-text index: each hit with its chunk, Document and Conversation.

    The words are searched literally unless `raw_lucene` (then Lucene syntax applies: AND, "phrases", prefix*).
    """
    q = query if raw_lucene else lucene_escape(query)
    return run_read(driver, database, _SEARCH, query=q, limit=int(limit))


_VECTOR_SEARCH = f"""
CALL db.index.vector.queryNodes('{VECTOR_INDEX}', $k, $vector) YIELD node, score
MATCH (d:Document)-[:HAS_CHUNK]->(node)
RETURN node.id AS chunk_id, node.text AS text, score, d.key AS document_key, d.title AS title
ORDER BY score DESC, chunk_id
"""


def similar_chunks(driver: Any, text: str, embedder: TextEmbedder, k: int = 5, database: str | None = None) -> list[dict[str, Any]]:
    """Nearest chunks to a text through the vector index (only where an embedder is configured)."""
    vector = [float(x) for x in embedder([text])[0]]
    return run_read(driver, database, _VECTOR_SEARCH, k=int(k), vector=vector)
