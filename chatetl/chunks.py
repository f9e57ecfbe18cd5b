"""Chunks for retrieval: a Document's content cut into overlapping pieces on natural boundaries.

Cutting: the content is split into pieces that never cross a turn; a turn is split into
paragraphs (blank lines outside fenced code blocks), a paragraph longer than a chunk into
lines, a line into words, and only a single word longer than a chunk is cut mid-word.
Pieces are packed greedily up to `max_chars`; among the possible ends, a turn boundary
wins over a paragraph, a paragraph over a line, a line over a word, as long as the chunk
stays at least half full. The next chunk starts with the last pieces of the previous one
that fit in `overlap_chars` (whole paragraphs where they fit, else the last words).

Every chunk is an exact slice of its Document's content: `text == content[char_start:char_end]`,
and `message_ids` names the messages whose text it holds.

In Neo4j: `(:Document)-[:HAS_CHUNK]->(:Chunk)`, `(:Chunk)-[:NEXT]->(:Chunk)` in order, a
full-text index `chunk_text` on `Chunk.text` (`search_chunks`), and (optional) a vector
index `chunk_embedding` on `Chunk.embedding` when an embedder is configured (see
`load_embedder`): nothing is ever downloaded, the pipeline never needs a network.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib
import json
import math
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from chatetl.documents import Document, Span

FULLTEXT_INDEX = "chunk_text"
VECTOR_INDEX = "chunk_embedding"

# boundary strength before a piece
TURN, PARAGRAPH, LINE, WORD, NONE = 4, 3, 2, 1, 0


class ChunkOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    max_chars: int = Field(2000, ge=20)
    overlap_chars: int = Field(200, ge=0)
    min_fill: float = Field(0.5, gt=0, le=1)  # prefer a stronger boundary only while the chunk stays this full

    @model_validator(mode="after")
    def _overlap_below_max(self) -> "ChunkOptions":
        if self.overlap_chars * 2 > self.max_chars:
            raise ValueError(f"overlap_chars ({self.overlap_chars}) must be at most half of max_chars ({self.max_chars})")
        return self

    @classmethod
    def from_env(cls) -> "ChunkOptions":
        values: dict[str, Any] = {}
        for name, env in (("max_chars", "CHATETL_CHUNK_MAX_CHARS"), ("overlap_chars", "CHATETL_CHUNK_OVERLAP_CHARS")):
            raw = os.environ.get(env, "").strip()
            if raw:
                values[name] = int(raw)
        return cls(**values)


class Chunk(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str  # `{document key}#{position}`
    document_key: str
    conversation_id: str
    source: str  # the platform, as on Document
    title: str
    position: int  # 0-based order within the document
    char_start: int
    char_end: int
    text: str
    message_ids: list[str]
    state_version: float
    embedding: list[float] | None = None

    def graph_row(self) -> dict[str, Any]:
        row = self.model_dump(exclude={"title"})
        if row["embedding"] is None:
            del row["embedding"]
        return row


@dataclass(frozen=True)
class _Piece:
    start: int
    end: int
    strength: int  # boundary strength before this piece


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_WORD = re.compile(r"\S+")


def _lines(text: str, base: int) -> list[tuple[int, int]]:
    """(start, end) of each line (without its newline), absolute."""
    out = []
    pos = 0
    for line in text.split("\n"):
        out.append((base + pos, base + pos + len(line)))
        pos += len(line) + 1
    return out


def _paragraphs(content: str, start: int, end: int) -> list[tuple[int, int]]:
    """Runs of non-blank lines; blank lines inside a fenced code block do not end a paragraph."""
    paras: list[tuple[int, int]] = []
    cur: tuple[int, int] | None = None
    fence: tuple[str, int] | None = None
    for s, e in _lines(content[start:end], start):
        line = content[s:e]
        blank = not line.strip()
        if fence is not None:
            stripped = line.strip()
            if stripped and set(stripped) == {fence[0]} and len(stripped) >= fence[1]:
                fence = None
        else:
            m = _FENCE.match(line)
            if m:
                fence = (m.group(1)[0], len(m.group(1)))
        if blank and fence is None:
            if cur is not None:
                paras.append(cur)
                cur = None
            continue
        if blank:
            continue  # a blank line inside a fence: the paragraph goes on
        cur = (cur[0], e) if cur is not None else (s, e)
    if cur is not None:
        paras.append(cur)
    return paras


def _split_long(content: str, start: int, end: int, limit: int, first_strength: int) -> list[_Piece]:
    """A paragraph longer than `limit`: lines, then words, then (a single huge word) hard cuts."""
    pieces: list[_Piece] = []
    strength = first_strength
    for ls, le in _lines(content[start:end], start):
        if not content[ls:le].strip():
            continue
        if le - ls <= limit:
            pieces.append(_Piece(ls, le, strength))
        else:
            word_strength = strength
            for w in _WORD.finditer(content, ls, le):
                ws, we = w.start(), w.end()
                while we - ws > limit:
                    pieces.append(_Piece(ws, ws + limit, word_strength))
                    ws += limit
                    word_strength = NONE
                pieces.append(_Piece(ws, we, word_strength))
                word_strength = WORD
        strength = LINE
    return pieces


def _pieces(content: str, spans: Sequence[Span], limit: int) -> list[_Piece]:
    pieces: list[_Piece] = []
    for span in spans:
        strength = TURN
        for ps, pe in _paragraphs(content, span.start, span.end):
            if pe - ps <= limit:
                pieces.append(_Piece(ps, pe, strength))
            else:
                pieces.extend(_split_long(content, ps, pe, limit, strength))
            strength = PARAGRAPH
    return pieces


def chunk_spans(content: str, spans: Sequence[Span], options: ChunkOptions) -> list[tuple[int, int]]:
    """[start, end) of each chunk of `content` (see the module doc for the rules)."""
    pieces = _pieces(content, spans, options.max_chars)
    if not pieces:
        return []
    out: list[tuple[int, int]] = []
    start = pieces[0].start
    i = 0  # first piece that ends after `start`
    n = len(pieces)
    prev_end = -1
    while i < n:
        # candidate ends: ends of pieces i.. that keep the chunk within max_chars (and go past the previous chunk)
        j = i
        while j < n and pieces[j].end - start <= options.max_chars:
            j += 1
        last = max(j - 1, i)
        best_j = last
        if last + 1 < n:  # not the end of the document: choose the strongest boundary that keeps the chunk full enough
            floor = start + options.min_fill * options.max_chars
            best_strength = -1
            for k in range(last, i - 1, -1):
                if (pieces[k].end < floor and k != last) or pieces[k].end <= prev_end:
                    break
                strength = pieces[k + 1].strength
                if strength > best_strength:
                    best_strength, best_j = strength, k
        end = pieces[best_j].end
        out.append((start, end))
        prev_end = end
        if best_j + 1 >= n:
            break
        # overlap: the next chunk starts inside this one, as far back as overlap_chars allows
        # and no further than lets it still take the next piece whole
        following = pieces[best_j + 1]
        nxt = following.start
        lower = max(start + 1, end - options.overlap_chars, following.end - options.max_chars)
        if options.overlap_chars and lower < end:
            whole = next((p.start for p in pieces[i:best_j + 1] if p.start >= lower), None)
            if whole is not None:
                nxt = whole
            else:  # no whole piece fits: the last lines that do, else the last words
                line = content.find("\n", lower - 1, end)
                while line != -1 and line + 1 < end and content[line + 1] == "\n":
                    line += 1
                if line != -1 and line + 1 < end and content[line + 1:end].strip():
                    nxt = line + 1
                else:
                    for w in _WORD.finditer(content, lower, end):
                        if content[w.start() - 1].isspace():
                            nxt = w.start()
                            break
        start = nxt
        while pieces[i].end <= start:
            i += 1
    return out


def _message_ids(spans: Sequence[Span], ends: list[int], start: int, end: int) -> list[str]:
    """The messages whose text overlaps [start, end) (spans are in order and do not overlap)."""
    ids: list[str] = []
    for k in range(bisect.bisect_right(ends, start), len(spans)):
        span = spans[k]
        if span.start >= end:
            break
        if span.message_id is not None and span.message_id not in ids:
            ids.append(span.message_id)
    return ids


def chunk_document(doc: Document, options: ChunkOptions | None = None) -> list[Chunk]:
    options = options or ChunkOptions()
    content = doc.content
    props = doc.props
    ends = [span.end for span in doc.spans]
    chunks = []
    for position, (start, end) in enumerate(chunk_spans(content, doc.spans, options)):
        chunks.append(
            Chunk(
                id=f"{props['key']}#{position}",
                document_key=props["key"],
                conversation_id=props["conversation_id"],
                source=props["source"],
                title=props["title"],
                position=position,
                char_start=start,
                char_end=end,
                text=content[start:end],
                message_ids=_message_ids(doc.spans, ends, start, end),
                state_version=props["state_version"],
            )
        )
    return chunks


def chunks_jsonl(chunks: Iterable[Chunk]) -> Iterable[bytes]:
    for chunk in chunks:
        row = chunk.model_dump()
        if row["embedding"] is None:
            del row["embedding"]
        yield (json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------
# Embeddings: an optional hook, never a download

Embedder = Callable[[list[str]], Sequence[Sequence[float]]]


def load_embedder(spec: str | None = None) -> Embedder | None:
    """The embedder named by `CHATETL_EMBEDDER` (`package.module:callable`), or None.

    The callable takes a list of texts and returns one vector per text. It must run a model
    that is already on the machine (e.g. a sentence-transformers model loaded from a local
    folder); chatetl itself never downloads weights. Unset (the default): no embeddings, no
    vector index, and nothing else changes.
    """
    spec = (spec if spec is not None else os.environ.get("CHATETL_EMBEDDER", "")).strip()
    if not spec:
        return None
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ValueError(f"CHATETL_EMBEDDER={spec!r}: expected 'package.module:callable'")
    target: Any = importlib.import_module(module)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"CHATETL_EMBEDDER={spec!r} is not callable")
    return target


def embed_chunks(chunks: list[Chunk], embedder: Embedder, batch: int = 64) -> None:
    for i in range(0, len(chunks), batch):
        part = chunks[i:i + batch]
        vectors = embedder([c.text for c in part])
        if len(vectors) != len(part):
            raise ValueError(f"the embedder returned {len(vectors)} vectors for {len(part)} texts")
        for chunk, vec in zip(part, vectors):
            values = [float(x) for x in vec]
            if not values or not all(math.isfinite(x) for x in values):
                raise ValueError("the embedder returned an empty or non-finite vector")
            chunk.embedding = values


# ---------------------------------------------------------------------------------------------
# Neo4j

SCHEMA = (
    "CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE",
    f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX} IF NOT EXISTS FOR (c:Chunk) ON EACH [c.text]",
)


def ensure_chunk_schema(driver: Any, database: str | None = None, dimensions: int | None = None) -> None:
    """The Chunk constraint and full-text index (and the vector index once vectors exist), online before use."""
    records = _read(driver, database, "SHOW INDEXES YIELD name RETURN collect(name) AS names")
    existing = set(records[0]["names"]) if records else set()
    wanted = {"chunk_id": SCHEMA[0], FULLTEXT_INDEX: SCHEMA[1]}
    if dimensions:
        dims = int(dimensions)
        wanted[VECTOR_INDEX] = (
            f"CREATE VECTOR INDEX {VECTOR_INDEX} IF NOT EXISTS FOR (c:Chunk) ON c.embedding "
            f"OPTIONS {{indexConfig: {{`vector.dimensions`: {dims}, `vector.similarity_function`: 'cosine'}}}}"
        )
    missing = [stmt for name, stmt in wanted.items() if name not in existing]
    from chatetl.graph.connection import write_session

    if missing:
        with write_session(driver, database) as session:
            for stmt in missing:
                session.run(stmt).consume()
            session.run("CALL db.awaitIndexes(300)").consume()


def _run(driver: Any, database: str | None, cypher: str, **params: Any) -> list[dict[str, Any]]:
    """One write transaction (retried on transient errors) in a session with chatetl's notification policy."""
    from chatetl.graph.connection import write_session

    with write_session(driver, database) as session:
        return session.execute_write(lambda tx: tx.run(cypher, params).data())


def _read(driver: Any, database: str | None, cypher: str, **params: Any) -> list[dict[str, Any]]:
    from chatetl.graph.connection import write_session

    with write_session(driver, database) as session:
        return session.execute_read(lambda tx: tx.run(cypher, params).data())


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
class ChunkLoadSummary:
    documents: int = 0  # documents whose chunks were written
    chunks: int = 0
    deleted: int = 0  # stale chunks removed (the document's newer state has fewer or other chunks)
    skipped_other_state: int = 0  # the Document in the graph holds another state's text (newer, or the winning source's): left alone
    unchanged: int = 0  # documents whose chunks in the graph are exactly these: nothing written

    def add(self, other: "ChunkLoadSummary") -> None:
        self.documents += other.documents
        self.chunks += other.chunks
        self.deleted += other.deleted
        self.skipped_other_state += other.skipped_other_state
        self.unchanged += other.unchanged


def chunks_digest(chunks: list[Chunk]) -> str:
    """What a Document's chunks are, in one value: a rerun with the same chunks writes nothing."""
    h = hashlib.sha256()
    for c in chunks:
        h.update(json.dumps(c.graph_row(), sort_keys=True, ensure_ascii=False).encode("utf-8", "replace"))
        h.update(b"\n")
    return h.hexdigest()


def load_chunks(driver: Any, chunks_by_doc: dict[str, list[Chunk]], content_digests: dict[str, str], database: str | None = None, batch: int = 1000) -> ChunkLoadSummary:
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
        records = _run(driver, database, _CURRENT_DOCUMENTS, docs=docs[i:i + batch])
        current.update(r["key"] for r in records)
        same.update(r["key"] for r in records if r["same"])
    summary.skipped_other_state = len(docs) - len(current)
    summary.unchanged = len(same)
    keys = [k for k in chunks_by_doc if k in current and k not in same]
    for i in range(0, len(keys), batch):
        part = keys[i:i + batch]
        doc_rows = [{"key": k, "ids": [c.id for c in chunks_by_doc[k]]} for k in part]
        records = _run(driver, database, _DELETE_STALE, docs=doc_rows)
        summary.deleted += records[0]["deleted"] if records else 0
        _run(driver, database, _RELINK, docs=doc_rows)
    rows: list[dict[str, Any]] = []
    pairs: list[list[str]] = []

    def flush() -> None:
        nonlocal rows, pairs
        if rows:
            records = _run(driver, database, _UPSERT_CHUNKS, rows=rows)
            summary.chunks += records[0]["written"] if records else 0
        if pairs:
            _run(driver, database, _LINK, pairs=pairs)
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
        _run(driver, database, _MARK_DONE, docs=done[i:i + batch])
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
    return _read(driver, database, _SEARCH, query=q, limit=int(limit))


_VECTOR_SEARCH = f"""
CALL db.index.vector.queryNodes('{VECTOR_INDEX}', $k, $vector) YIELD node, score
MATCH (d:Document)-[:HAS_CHUNK]->(node)
RETURN node.id AS chunk_id, node.text AS text, score, d.key AS document_key, d.title AS title
ORDER BY score DESC, chunk_id
"""


def similar_chunks(driver: Any, text: str, embedder: Embedder, k: int = 5, database: str | None = None) -> list[dict[str, Any]]:
    """Nearest chunks to a text through the vector index (only where an embedder is configured)."""
    vector = [float(x) for x in embedder([text])[0]]
    return _read(driver, database, _VECTOR_SEARCH, k=int(k), vector=vector)
