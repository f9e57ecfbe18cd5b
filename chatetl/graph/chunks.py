"""Chunks in Neo4j: `(:Document)-[:HAS_CHUNK]->(:Chunk)`, `(:Chunk)-[:NEXT]->(:Chunk)` in order,
a full-text index `chunk_text` on `Chunk.text` (English words stemmed: `FULLTEXT_ANALYZER`), and
a vector index `chunk_embedding` on `Chunk.embedding` (cosine, the model's dimensions) once
embeddings exist; searching them is chatetl.graph.chunk_search's.

A chunk's vector is written in the same batch as the chunk, through
`db.create.setNodeVectorProperty` (Neo4j 5.26: a float32 array, half the size of a `SET` list;
the vector index reads both). `Chunk.text_sha256` (range index) and `Chunk.embedding_model`
say what a vector was computed from, so a later load finds an unchanged text's vector
(`stored_embeddings`) instead of computing it again. When the model's dimensions change, the
vector index is rebuilt for the new size.

Bounded writes: chunks go in transactions of about a thousand, stale chunks and links are
deleted `DELETE_STEP` a transaction, and a Document of very many chunks (one long message) is
written a window at a time (`DocumentChunks`). A Document whose chunks the
server refuses for what they hold fails alone (`ChunkLoadSummary.failed`, `failures`): the rest of
the batch is written, and, not marked done, it is tried again by the next run.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from chatetl.graph.connection import quiet, run_read, run_read_values, run_write, value_fault, write_measured, write_session
from chatetl.graph.summary import FAILURES_LISTED, failure_text
from chatetl.tally import Tally, capped, summed_by

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction

log = logging.getLogger(__name__)


class ChunkRow(Protocol):
    """What the loader needs of a chunk (chatetl.rag.chunking.Chunk is one): the graph takes
    chunks as they come and knows nothing of how they were cut."""

    id: str
    embedding: list[float] | None

    def graph_row(self) -> dict[str, Any]: ...


FULLTEXT_INDEX = "chunk_text"
# Lucene's EnglishAnalyzer: a word matches its other forms ("decided" / "decide", "tiles" / "tile";
# Porter's stemmer) and English stop words are not indexed. chatetl.search stems the query's words
# the same way to say where a hit matched.
FULLTEXT_ANALYZER = "english"
VECTOR_INDEX = "chunk_embedding"
TEXT_HASH_INDEX = "chunk_text_sha256"


SCHEMA = (
    "CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE",
    (f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX} IF NOT EXISTS FOR (c:Chunk) ON EACH [c.text] "
     f"OPTIONS {{indexConfig: {{`fulltext.analyzer`: '{FULLTEXT_ANALYZER}'}}}}"),
    f"CREATE INDEX {TEXT_HASH_INDEX} IF NOT EXISTS FOR (c:Chunk) ON (c.text_sha256)",
)


def vector_index_statement(dimensions: int) -> str:
    dims = int(dimensions)
    return (
        f"CREATE VECTOR INDEX {VECTOR_INDEX} IF NOT EXISTS FOR (c:Chunk) ON c.embedding "
        f"OPTIONS {{indexConfig: {{`vector.dimensions`: {dims}, `vector.similarity_function`: 'cosine'}}}}"
    )


def ensure_chunk_schema(driver: Driver, database: str | None = None, dimensions: int | None = None) -> None:
    """The Chunk constraint, full-text and text-hash indexes (and the vector index of `dimensions`
    once vectors exist), online before use. An index built otherwise than wanted is rebuilt: a
    vector index of another size (vectors of another model), a full-text index of another analyzer
    (a graph loaded before `FULLTEXT_ANALYZER`)."""
    records = run_read(driver, database, "SHOW INDEXES YIELD name, options RETURN name, options")
    existing = {r["name"]: (r["options"] or {}).get("indexConfig") or {} for r in records}
    wanted = {"chunk_id": SCHEMA[0], FULLTEXT_INDEX: SCHEMA[1], TEXT_HASH_INDEX: SCHEMA[2]}
    stale = []
    if FULLTEXT_INDEX in existing and existing[FULLTEXT_INDEX].get("fulltext.analyzer") != FULLTEXT_ANALYZER:
        stale.append(FULLTEXT_INDEX)
    if dimensions:
        wanted[VECTOR_INDEX] = vector_index_statement(dimensions)
        if VECTOR_INDEX in existing and existing[VECTOR_INDEX].get("vector.dimensions") != int(dimensions):
            stale.append(VECTOR_INDEX)
    missing = [stmt for name, stmt in wanted.items() if name not in existing or name in stale]
    if missing:
        with write_session(driver, database) as session:
            for name in stale:
                session.run(f"DROP INDEX {name} IF EXISTS").consume()
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

# (both delete at most $limit a transaction: run until they delete fewer, _delete_in_steps)
_DELETE_STALE = """
UNWIND $docs AS doc
MATCH (:Document {key: doc.key})-[:HAS_CHUNK]->(c:Chunk)
WHERE NOT c.id IN doc.ids
WITH c LIMIT $limit
DETACH DELETE c
RETURN count(*) AS deleted
"""

_UPSERT_CHUNKS = """
UNWIND $rows AS row
MATCH (d:Document {key: row.props.document_key})
MERGE (c:Chunk {id: row.props.id})
SET c = row.props
MERGE (d)-[:HAS_CHUNK]->(c)
WITH c, row
CALL (c, row) {
  WITH c, row WHERE row.embedding IS NOT NULL
  CALL db.create.setNodeVectorProperty(c, 'embedding', row.embedding)
}
RETURN count(c) AS written
"""

_RELINK = """
UNWIND $docs AS doc
MATCH (:Document {key: doc.key})-[:HAS_CHUNK]->(:Chunk)-[r:NEXT]->(:Chunk)
WITH r LIMIT $limit
DELETE r
RETURN count(*) AS deleted
"""

# one big Document's chunks in the graph: whether it holds the text they are cut from, their digest and how many
_CHUNK_STATE = """
MATCH (d:Document {key: $key})
RETURN d.content_sha256 = $content_sha256 AS current, d.chunks_digest AS digest, COUNT { (d)-[:HAS_CHUNK]->(:Chunk) } AS count
"""

_LINK = """
UNWIND $pairs AS p
MATCH (a:Chunk {id: p[0]}), (b:Chunk {id: p[1]})
MERGE (a)-[:NEXT]->(b)
"""


DELETE_STEP = 10_000  # chunks (or NEXT links) deleted per transaction


@dataclass
class ChunkLoadSummary(Tally):
    documents: int = 0  # documents whose chunks were written
    chunks: int = 0
    deleted: int = 0  # stale chunks removed (the document's newer state has fewer or other chunks)
    skipped_other_state: int = 0  # the Document in the graph holds another state's text (newer, or the winning source's): left alone
    unchanged: int = 0  # documents whose chunks in the graph are exactly these: nothing written
    failed: int = 0  # documents whose chunks the server (or the driver) refused, even written alone: see `failures`
    failures: list[str] = summed_by(capped(FAILURES_LISTED), default_factory=list)  # noqa: RUF009 - "key: why", the first ones


def failure_line(key: str, exc: BaseException) -> str:
    """A Document (or its chunks) that could not be written, even alone: its key and the server's words."""
    line = failure_text(key, exc)
    log.warning("documents load: %s", line)
    return line


class ChunksDigest:
    """What a Document's chunks are, in one value, given a window of them at a time (`chunks_digest`).

    A chunk's vector is not in it, only the name of the model it comes from (`embedding_model`): a vector is the
    model's for the chunk's text (the text's hash and the model's name are what vectors are reused by,
    chatetl.rag.embeddings), so the digest is known before anything is embedded (`model`: the name the vectors
    will carry, for chunks not embedded yet), and an unchanged rerun neither embeds nor reads a vector.
    Digests of an earlier version held the vectors: such a Document has its chunks written once more (their
    vectors reused)."""

    def __init__(self, model: str | None = None) -> None:
        self._hash = hashlib.sha256()
        self.model = model

    def update(self, chunks: Iterable[ChunkRow]) -> None:
        for c in chunks:
            row = c.graph_row()
            row.pop("embedding", None)
            if self.model is not None:
                row["embedding_model"] = self.model
            self._hash.update(_row_bytes(row))
            self._hash.update(b"\n")

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def _row_bytes(row: dict[str, Any]) -> bytes:
    """A chunk's graph row as JSON with sorted keys (orjson; a text orjson refuses, one with a lone surrogate, as
    json.dumps writes it)."""
    try:
        return orjson.dumps(row, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return json.dumps(row, sort_keys=True, ensure_ascii=False).encode("utf-8", "replace")


def chunks_digest(chunks: Sequence[ChunkRow], model: str | None = None) -> str:
    """What a Document's chunks are, in one value: a rerun with the same chunks writes nothing (`model`: see
    ChunksDigest)."""
    digest = ChunksDigest(model)
    digest.update(chunks)
    return digest.hexdigest()


def documents_holding_chunks(driver: Driver, digests: dict[str, str], content_digests: dict[str, str], database: str | None = None,
                             batch: int = 1000) -> tuple[set[str], set[str]]:
    """Of these Documents (key -> the digest of their chunks), the ones whose node in the graph holds the text they
    were cut from (`content_digests`: key -> content_sha256), and of those the ones whose chunks are exactly these."""
    docs = [{"key": k, "content_sha256": content_digests[k], "digest": d} for k, d in digests.items()]
    current: set[str] = set()
    same: set[str] = set()
    for i in range(0, len(docs), batch):
        records = run_write(driver, database, _CURRENT_DOCUMENTS, docs=docs[i:i + batch])
        current.update(r["key"] for r in records)
        same.update(r["key"] for r in records if r["same"])
    return current, same


def _upsert_row(chunk: ChunkRow) -> dict[str, Any]:
    props = chunk.graph_row()
    return {"props": {k: v for k, v in props.items() if k != "embedding"}, "embedding": props.get("embedding")}


def _write_rows(driver: Driver, database: str | None, rows: list[dict[str, Any]], pairs: list[list[str]]) -> int:
    """Chunks and their NEXT links (pairs of ids) in one transaction, written whole or not at all (one too big for
    the server fails at once: chatetl.graph.connection.write_measured); how many chunks were written."""
    def work(tx: ManagedTransaction) -> int:
        record = tx.run(_UPSERT_CHUNKS, quiet({"rows": rows})).single()
        if pairs:
            tx.run(_LINK, quiet({"pairs": pairs})).consume()
        return record["written"] if record else 0

    with write_session(driver, database) as session:
        return write_measured(session, work)[0]


def _delete_in_steps(driver: Driver, database: str | None, cypher: str, **params: Any) -> int:
    """A deleting statement (at most `DELETE_STEP` a transaction) run until it deletes fewer: how many in all.
    A Document that had 100,000 chunks is cleared in bounded transactions, not in one."""
    total = 0
    while True:
        records = run_write(driver, database, cypher, limit=DELETE_STEP, **params)
        deleted = records[0]["deleted"] if records else 0
        total += deleted
        if deleted < DELETE_STEP:
            return total


def load_chunks(driver: Driver, chunks_by_doc: Mapping[str, Sequence[ChunkRow]], content_digests: dict[str, str], database: str | None = None,
                batch: int = 1000, unchanged: set[str] | frozenset[str] = frozenset()) -> ChunkLoadSummary:
    """Replace each Document's chunks with these, where the Document in the graph holds the text they were cut from.

    Run after `load_documents`, which decides which state of a conversation its Document holds
    (newest wins). `content_digests` maps each document key to the `content_sha256` of the text
    chunked: where the graph's Document holds other text (a newer state, an older upload loaded
    later), its chunks are left alone; otherwise chunks no longer there are removed, the others
    upserted and NEXT rebuilt; a Document whose chunks are exactly these is not touched, so a
    rerun writes nothing. The chunks of about `batch` at a time are written in one transaction; one the
    server refuses for what it holds is written again a Document at a time, and a Document refused alone
    fails alone (`failed`, `failures`: not marked done, so the next run tries it again). A Document of
    very many chunks goes through `DocumentChunks` instead (a window of them at a time). `unchanged`: Documents
    the caller found holding exactly these chunks already (`documents_holding_chunks`, before embedding them):
    counted, not read again, never written (their chunks may carry no vectors).
    """
    summary = ChunkLoadSummary()
    if not chunks_by_doc:
        return summary
    dims = {len(c.embedding) for cs in chunks_by_doc.values() for c in cs if c.embedding is not None}
    if len(dims) > 1:
        raise ValueError(f"embeddings of different sizes: {sorted(dims)}")
    ensure_chunk_schema(driver, database, dims.pop() if dims else None)
    digests = {k: chunks_digest(cs) for k, cs in chunks_by_doc.items() if k not in unchanged}
    current, same = documents_holding_chunks(driver, digests, content_digests, database, batch)
    known = [k for k in chunks_by_doc if k in unchanged]
    current.update(known)
    same.update(known)
    summary.skipped_other_state = len(chunks_by_doc) - len(current)
    summary.unchanged = len(same)
    keys = [k for k in chunks_by_doc if k in current and k not in same]
    for i in range(0, len(keys), batch):
        part = keys[i:i + batch]
        doc_rows = [{"key": k, "ids": [c.id for c in chunks_by_doc[k]]} for k in part]
        summary.deleted += _delete_in_steps(driver, database, _DELETE_STALE, docs=doc_rows)
        _delete_in_steps(driver, database, _RELINK, docs=doc_rows)
    failed: set[str] = set()
    rows: list[dict[str, Any]] = []
    pairs: list[list[str]] = []
    group: list[str] = []  # the Documents whose chunks are in `rows`

    def flush() -> None:
        nonlocal rows, pairs, group
        if rows:
            try:
                summary.chunks += _write_rows(driver, database, rows, pairs)
            except Exception as exc:
                if not value_fault(exc):
                    raise
                refused = {group[0]: exc} if len(group) == 1 else {}
                for k in group if len(group) > 1 else ():  # one at a time: the Document the server refuses fails alone
                    chunks = chunks_by_doc[k]
                    try:
                        summary.chunks += _write_rows(driver, database, [_upsert_row(c) for c in chunks], _pairs(chunks))
                    except Exception as alone:
                        if not value_fault(alone):
                            raise
                        refused[k] = alone
                for k, why in refused.items():
                    failed.add(k)
                    summary.failures.append(failure_line(k, why))
        rows, pairs, group = [], [], []

    for k in keys:
        chunks = chunks_by_doc[k]
        rows.extend(_upsert_row(c) for c in chunks)
        pairs.extend(_pairs(chunks))
        group.append(k)
        if len(rows) >= batch:
            flush()
    flush()
    summary.failed = len(failed)
    summary.documents = len(keys) - len(failed)
    done = [{"key": k, "digest": digests[k], "count": len(chunks_by_doc[k])} for k in keys if k not in failed]
    for i in range(0, len(done), batch):
        run_write(driver, database, _MARK_DONE, docs=done[i:i + batch])
    return summary


def _pairs(chunks: Sequence[ChunkRow], before: str | None = None) -> list[list[str]]:
    """The NEXT links of chunks in order (from `before`, the chunk preceding the first, when given)."""
    ids = ([before] if before is not None else []) + [c.id for c in chunks]
    return [[a, b] for a, b in itertools.pairwise(ids)]


class DocumentChunks:
    """One Document's chunks written a window at a time: what `load_chunks` does for a Document of very many
    chunks (one long message), in transactions that stay bounded whatever its size.

    `count`: how many chunks it has (known from their offsets before any is made). Whether the graph's
    Document holds the text they were cut from, and whether its chunks must be written, is read first: a
    Document with no digest of its chunks, or another number of them, is written as its windows come (`add`),
    its NEXT links first removed; one with as many chunks as these is compared by digest once every window
    is seen (`finish`), and written only if it differs (its windows made again by `again`). The last step
    removes chunks no longer there and marks the digest, so a run stopped midway writes them again next time,
    and an unchanged rerun writes nothing. A window the server refuses for what it holds makes the Document
    fail alone (`failed`): the rest of it is not written, it is not marked done, other Documents go on."""

    def __init__(self, driver: Driver, key: str, content_sha256: str, count: int, database: str | None = None) -> None:
        self.driver, self.key, self.count, self.database = driver, key, count, database
        self.summary = ChunkLoadSummary()
        self.digest = ChunksDigest()
        self.ids: list[str] = []
        self.last: str | None = None  # the last chunk written (the next window links to it)
        rows = run_read(driver, database, _CHUNK_STATE, key=key, content_sha256=content_sha256)
        self.current = bool(rows and rows[0]["current"])
        self.stored = rows[0]["digest"] if self.current else None
        self.writing = self.current and (self.stored is None or rows[0]["count"] != count)
        self.schema_ready = False
        if self.writing:
            self._begin()

    def _begin(self) -> None:
        _delete_in_steps(self.driver, self.database, _RELINK, docs=[{"key": self.key}])

    def add(self, chunks: Sequence[ChunkRow]) -> None:
        """The next window of chunks, in order: taken into the digest, written when the Document is being written."""
        self.digest.update(chunks)
        self.ids.extend(c.id for c in chunks)
        if self.writing:
            self._write(chunks)

    def _write(self, chunks: Sequence[ChunkRow]) -> bool:
        """A window written; False when the server refused it (the Document failed: it writes nothing more)."""
        if not self.schema_ready:
            dims = next((len(c.embedding) for c in chunks if c.embedding is not None), None)
            ensure_chunk_schema(self.driver, self.database, dims)
            self.schema_ready = True
        try:
            self.summary.chunks += _write_rows(self.driver, self.database, [_upsert_row(c) for c in chunks], _pairs(chunks, self.last))
        except Exception as exc:
            if not value_fault(exc):
                raise
            self.writing = False
            self.summary.failed = 1
            self.summary.failures.append(failure_line(self.key, exc))
            return False
        self.last = chunks[-1].id if chunks else self.last
        return True

    def finish(self, again: Callable[[], Iterable[Sequence[ChunkRow]]]) -> ChunkLoadSummary:
        """After the last window: the stale chunks removed and the digest marked (or nothing, for chunks the graph
        holds already). `again()` gives the windows once more, for chunks found to differ only now."""
        summary = self.summary
        if summary.failed:
            return summary
        if not self.current:
            summary.skipped_other_state = 1
            return summary
        digest = self.digest.hexdigest()
        if not self.writing:
            if digest == self.stored:
                summary.unchanged = 1
                return summary
            self.writing, self.last = True, None  # as many chunks as before, but others (another model, other sizes)
            self._begin()
            for chunks in again():
                if not self._write(chunks):
                    return summary
        if self.writing:
            summary.deleted += _delete_in_steps(self.driver, self.database, _DELETE_STALE, docs=[{"key": self.key, "ids": self.ids}])
            run_write(self.driver, self.database, _MARK_DONE, docs=[{"key": self.key, "digest": digest, "count": self.count}])
            summary.documents = 1
        return summary


_STORED_EMBEDDINGS = """
UNWIND $hashes AS h
CALL (h) {
  MATCH (c:Chunk {text_sha256: h})
  WHERE c.embedding_model = $model AND c.embedding IS NOT NULL
  RETURN c.embedding AS embedding
  LIMIT 1
}
RETURN h, embedding
"""


def stored_embeddings(driver: Driver, model: str, hashes: Sequence[str], database: str | None = None, batch: int = 2000) -> dict[str, list[float]]:
    """The vectors the graph already holds for these text hashes, computed by `model`: what a load need not embed again."""
    out: dict[str, list[float]] = {}
    hashes = list(dict.fromkeys(hashes))
    for i in range(0, len(hashes), batch):
        for h, embedding in run_read_values(driver, database, _STORED_EMBEDDINGS, hashes=hashes[i:i + batch], model=model):
            out[h] = embedding
    return out
