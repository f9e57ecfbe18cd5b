"""Searching the chunks: the full-text index `chunk_text` (`search_chunks`), the vector index
`chunk_embedding` (`similar_chunks`), and `chunk_matches`, the retrieval half of hybrid search
(chatetl.search): the nearest chunks of one index, filtered by platform, dates, role and model,
with their Document and Conversation. Which indexes exist is `chunk_indexes`' answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from chatetl.graph.chunks import FULLTEXT_INDEX, VECTOR_INDEX
from chatetl.graph.connection import run_read

if TYPE_CHECKING:
    from neo4j import Driver

# a text embedder: texts in, one vector per text out (chatetl.rag.embeddings.Embedder)
TextEmbedder = Callable[[list[str]], Sequence[Sequence[float]]]


def chunk_indexes(driver: Driver, database: str | None = None) -> dict[str, Any]:
    """What search can use: `fulltext` (the full-text index exists) and `vector_dimensions` (the
    vector index's size; None when there is none, e.g. no embeddings loaded yet)."""
    records = run_read(driver, database, "SHOW INDEXES YIELD name, options WHERE name IN $names RETURN name, options",
                       names=[FULLTEXT_INDEX, VECTOR_INDEX])
    found = {r["name"]: r["options"] or {} for r in records}
    dims = found.get(VECTOR_INDEX, {}).get("indexConfig", {}).get("vector.dimensions") if VECTOR_INDEX in found else None
    return {"fulltext": FULLTEXT_INDEX in found, "vector_dimensions": dims}


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


def search_chunks(driver: Driver, query: str, limit: int = 10, database: str | None = None, raw_lucene: bool = False) -> list[dict[str, Any]]:
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


def similar_chunks(driver: Driver, text: str, embedder: TextEmbedder, k: int = 5, database: str | None = None) -> list[dict[str, Any]]:
    """Nearest chunks to a text through the vector index (only where an embedder is configured)."""
    vector = [float(x) for x in embedder([text])[0]]
    return run_read(driver, database, _VECTOR_SEARCH, k=int(k), vector=vector)


# The filters of chunk_matches, applied to the candidates an index returns (Neo4j 5.26's
# indexes cannot filter inside the index): a chunk's messages are its Document key + ':' + id.
_CANDIDATES = """
MATCH (d:Document)-[:HAS_CHUNK]->(node{label})
OPTIONAL MATCH (c:Conversation)-[:HAS_DOCUMENT]->(d)
WITH node, {score}d, c, [id IN node.message_ids | d.key + ':' + id] AS message_keys
WHERE ($platform IS NULL OR d.source = $platform)
  AND ($since IS NULL OR coalesce(d.updated_at, d.created_at) >= $since)
  AND ($until IS NULL OR d.created_at < $until)
  AND ($role IS NULL OR EXISTS {{ MATCH (m:Message) WHERE m.key IN message_keys AND m.role = $role }})
  AND ($model IS NULL OR toLower(coalesce(c.model_slug, '')) STARTS WITH $model
       OR EXISTS {{ MATCH (m:Message) WHERE m.key IN message_keys AND toLower(m.model_slug) STARTS WITH $model }})
"""
_ROWS = """
RETURN node.id AS chunk_id, node.text AS text, node.position AS position, node.char_start AS char_start,
       node.char_end AS char_end, node.message_ids AS message_ids,
       node.created_at AS said_from, node.updated_at AS said_until, score,
       d.key AS document_key, d.title AS title, d.source AS platform, d.created_at AS created_at,
       d.updated_at AS updated_at, d.message_count AS message_count,
       c.conversation_id AS conversation_id, c.name AS conversation, c.url AS url, c.model_slug AS model,
       d.kind AS kind, d.name AS name, d.project AS project, d.filename AS filename
ORDER BY score DESC, chunk_id
LIMIT $limit
"""
_FILTERED = _CANDIDATES.format(label="", score="score, ") + _ROWS

_TEXT_MATCHES = f"CALL db.index.fulltext.queryNodes('{FULLTEXT_INDEX}', $query, {{limit: $pool}}) YIELD node, score" + _FILTERED
_VECTOR_MATCHES = f"CALL db.index.vector.queryNodes('{VECTOR_INDEX}', $pool, $vector) YIELD node, score" + _FILTERED
# With a filter, when the index's nearest `pool` hold fewer than `limit` chunks that pass it: every
# hit of the words (the full-text index without a limit), or the cosine of every chunk that passes
# (the vector index's own score, (1 + cos) / 2), so a filter finds what is there however far down.
_TEXT_EVERY_MATCH = f"CALL db.index.fulltext.queryNodes('{FULLTEXT_INDEX}', $query) YIELD node, score" + _FILTERED
_VECTOR_EVERY_MATCH = (
    _CANDIDATES.format(label=":Chunk", score="")
    + "  AND node.embedding IS NOT NULL\nWITH node, d, c, vector.similarity.cosine(node.embedding, $vector) AS score"
    + _ROWS
)
FILTERS = ("platform", "since", "until", "role", "model")
WIDEN = 10  # a filtered query's second pool: this many times the first, before every match


class FullTextQueryError(ValueError):
    """The full-text index could not take a query (Lucene's parser, its clause limit): the cause, on one line."""


def _text_rows(driver: Driver, database: str | None, statement: str, **params: Any) -> list[dict[str, Any]]:
    """A full-text statement's rows; Lucene's refusal (a Java stack trace in Neo4j's message) as one line."""
    from neo4j.exceptions import ClientError

    try:
        return run_read(driver, database, statement, **params)
    except ClientError as exc:
        message = exc.message or ""
        if "org.apache.lucene" not in message:
            raise
        cause = message.split("Caused by: ", 1)[-1].splitlines()[0].strip()  # "org.apache...ParseException: Encountered ..."
        name, sep, detail = cause.partition(": ")
        raise FullTextQueryError(f"the full-text index cannot take this query: {name.rsplit('.', 1)[-1]}{sep}{detail}") from None


def chunk_matches(
    driver: Driver,
    *,
    query: str | None = None,
    vector: Sequence[float] | None = None,
    limit: int = 10,
    pool: int = 100,
    filters: dict[str, Any] | None = None,
    database: str | None = None,
) -> list[dict[str, Any]]:
    """The best chunks of one index: the full-text index for `query` (Lucene syntax: a user's words
    as chatetl.search.text_query gives them), or the vector index for `vector`. The `pool` nearest are
    filtered (`filters`: platform, since and until as ISO dates or times (until exclusive), role,
    model as a lower-case prefix; None: any) and the first `limit` returned, best first, each with
    its Document and Conversation. With a filter, a pool that holds fewer than `limit` chunks that
    pass is widened (`WIDEN` times, then every match), so a filter finds what is there however far
    down the index ranks it. The index must exist (`chunk_indexes` says which do). A query the
    full-text index cannot parse raises FullTextQueryError. A keepsake's chunk (a project's document, a
    memory, a canvas) has no Conversation: its Document's `kind`, `name`, `project` and `filename` say
    what it is."""
    if (query is None) == (vector is None):
        raise ValueError("chunk_matches: give either a query or a vector")
    params = {name: None for name in FILTERS}
    for name, value in (filters or {}).items():
        if name not in params:
            raise ValueError(f"unknown filter {name!r}: expected one of {', '.join(FILTERS)}")
        params[name] = value
    filtered = any(v is not None for v in params.values())
    if query is not None:
        rows = _text_rows(driver, database, _TEXT_MATCHES, query=query, pool=int(pool), limit=int(limit), **params)
        if filtered and len(rows) < limit:
            rows = _text_rows(driver, database, _TEXT_MATCHES, query=query, pool=int(pool) * WIDEN, limit=int(limit), **params)
        if filtered and len(rows) < limit:
            rows = _text_rows(driver, database, _TEXT_EVERY_MATCH, query=query, limit=int(limit), **params)
        return rows
    values = [float(x) for x in vector or ()]
    rows = run_read(driver, database, _VECTOR_MATCHES, vector=values, pool=int(pool), limit=int(limit), **params)
    if filtered and len(rows) < limit:
        rows = run_read(driver, database, _VECTOR_EVERY_MATCH, vector=values, limit=int(limit), **params)
    return rows
