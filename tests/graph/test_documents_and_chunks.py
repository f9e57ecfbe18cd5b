"""Documents and chunks in the real Neo4j: HAS_DOCUMENT, HAS_CHUNK, NEXT, keyword search through the
`chunk_text` full-text index, newest state wins on resync, reruns change nothing, the embedding hook."""

from __future__ import annotations

import hashlib
import math
import os
import re
from datetime import timedelta

import pytest
from export_inputs import T0, chat, sample_conversations

from chatetl.graph.chunk_search import search_chunks, similar_chunks
from chatetl.graph.chunks import FULLTEXT_ANALYZER, FULLTEXT_INDEX, VECTOR_INDEX, ensure_chunk_schema
from chatetl.graph.load import load_conversations
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.storage import LocalObjectStore

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE")
SMALL = ChunkOptions(max_chars=120, overlap_chars=30)


def _load(driver, tmp_path, convs, chunking=SMALL, embedder=None, upload="up-1") -> DocumentsResult:
    load_conversations(driver, convs, database=DB)
    result = DocumentsResult()
    write_upload_documents(LocalObjectStore(tmp_path), driver, "2026-01-01", upload, convs, result,
                           database=DB, chunking=chunking, embedder=embedder)
    return result


def _chunks(driver, key: str) -> list[dict]:
    records, _, _ = driver.execute_query(
        "MATCH (:Document {key: $key})-[:HAS_CHUNK]->(c:Chunk) RETURN c ORDER BY c.position", key=key, database_=DB)
    return [dict(r["c"]) for r in records]


def _counts(driver) -> dict:
    records, _, _ = driver.execute_query(
        """
        CALL () { MATCH (c:Chunk) RETURN count(c) AS chunks }
        CALL () { MATCH (:Chunk)-[r:NEXT]->(:Chunk) RETURN count(r) AS next }
        CALL () { MATCH (:Document)-[r:HAS_CHUNK]->() RETURN count(r) AS has_chunk }
        CALL () { MATCH (d:Document) RETURN count(d) AS documents }
        CALL () { MATCH (:Conversation)-[r:HAS_DOCUMENT]->() RETURN count(r) AS has_document }
        RETURN chunks, next, has_chunk, documents, has_document
        """, database_=DB)
    return dict(records[0])


def test_keyword_search_returns_the_chunk_and_its_conversation(clean_graph, tmp_path):
    result = _load(clean_graph, tmp_path, sample_conversations())
    assert result.documents_in_graph == 3 and result.chunks_in_graph.chunks == result.chunks > 3
    hits = search_chunks(clean_graph, "legroom", database=DB)
    assert len(hits) == 1
    hit = hits[0]
    assert "legroom" in hit["text"] and hit["conversation"] == "Planning a rail trip"
    assert hit["title"] == "ChatGPT: Planning a rail trip" and hit["source"] == "chatgpt"
    assert hit["conversation_id"] and hit["message_ids"] and hit["score"] > 0
    # the same through the raw procedure, as a user would write it
    records, _, _ = clean_graph.execute_query(
        f"CALL db.index.fulltext.queryNodes('{FULLTEXT_INDEX}', 'legroom') YIELD node "
        "MATCH (c:Conversation)-[:HAS_DOCUMENT]->(:Document)-[:HAS_CHUNK]->(node) RETURN c.name AS name", database_=DB)
    assert [r["name"] for r in records] == ["Planning a rail trip"]
    # words with Lucene syntax in them are searched literally, never a syntax error
    assert search_chunks(clean_graph, 'sum([3, 5, 10]) / 3 AND "(', database=DB)
    assert search_chunks(clean_graph, "xylophonics", database=DB) == []
    # what stayed out of the text is not found: the abandoned regeneration, the hidden custom instructions
    assert search_chunks(clean_graph, "Regenerated", database=DB) == []
    assert search_chunks(clean_graph, "statistics", database=DB) == []


def _fulltext_index(driver) -> dict:
    records, _, _ = driver.execute_query("SHOW FULLTEXT INDEXES YIELD name, id, state, options WHERE name = $name RETURN *",
                                         name=FULLTEXT_INDEX, database_=DB)
    [index] = [dict(r) for r in records]
    return index


def test_a_full_text_index_of_another_analyzer_is_rebuilt_and_finds_other_forms(clean_graph, tmp_path):
    sold = chat([("user", "I decided to sell the tandem bicycles before the move."), ("assistant", "Good call.")], conversation_id="tandem")
    _load(clean_graph, tmp_path, [sold])
    assert _fulltext_index(clean_graph)["options"]["indexConfig"]["fulltext.analyzer"] == FULLTEXT_ANALYZER == "english"
    assert [h["conversation_id"] for h in search_chunks(clean_graph, "decide selling bicycle", database=DB)] == ["tandem"]
    # a graph loaded before: the index as it was then (the default analyzer, no stemming)
    clean_graph.execute_query(f"DROP INDEX {FULLTEXT_INDEX}", database_=DB)
    clean_graph.execute_query(f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX} FOR (c:Chunk) ON EACH [c.text]", database_=DB)
    clean_graph.execute_query("CALL db.awaitIndexes(300)", database_=DB)
    assert search_chunks(clean_graph, "decide", database=DB) == []
    ensure_chunk_schema(clean_graph, DB)  # what the next load does first
    rebuilt = _fulltext_index(clean_graph)
    assert rebuilt["options"]["indexConfig"]["fulltext.analyzer"] == "english" and rebuilt["state"] == "ONLINE"
    assert [h["conversation_id"] for h in search_chunks(clean_graph, "decide", database=DB)] == ["tandem"]  # the chunks already there
    ensure_chunk_schema(clean_graph, DB)
    assert _fulltext_index(clean_graph)["id"] == rebuilt["id"]  # once rebuilt, left alone


def test_chunks_are_linked_in_order_to_their_document(clean_graph, tmp_path):
    long_answer = "\n\n".join(f"Point {i}: " + "the ferry leaves at dawn " * 4 for i in range(12))
    conv = chat([("user", "Plan the crossing"), ("assistant", long_answer)], title="Crossing")
    _load(clean_graph, tmp_path, [conv])
    chunks = _chunks(clean_graph, conv.key)
    assert len(chunks) > 5 and [c["position"] for c in chunks] == list(range(len(chunks)))
    records, _, _ = clean_graph.execute_query(
        """
        MATCH (d:Document {key: $key})-[:HAS_CHUNK]->(first:Chunk) WHERE NOT ()-[:NEXT]->(first)
        MATCH path = (first)-[:NEXT*0..]->(last:Chunk) WHERE NOT (last)-[:NEXT]->()
        RETURN [n IN nodes(path) | n.position] AS order
        """, key=conv.key, database_=DB)
    assert [r["order"] for r in records] == [list(range(len(chunks)))]
    content = clean_graph.execute_query("MATCH (d:Document {key: $key}) RETURN d.content AS c", key=conv.key, database_=DB).records[0]["c"]
    assert content.endswith(long_answer)  # never truncated in the graph either
    for c in chunks:
        assert content[c["char_start"]:c["char_end"]] == c["text"]


def test_resync_replaces_chunks_newest_wins_and_reruns_change_nothing(clean_graph, tmp_path):
    words = "\n\n".join(f"Paragraph {i} about lighthouses and tides." for i in range(20))
    old = chat([("user", "Tell me about lighthouses"), ("assistant", words)], title="Lighthouses")
    new = chat([("user", "Tell me about lighthouses"), ("assistant", "Short now: only the keeper remains.")],
               title="Lighthouses", updated=T0 + timedelta(days=2))
    _load(clean_graph, tmp_path, [old])
    before = _counts(clean_graph)
    assert before["chunks"] > 3 and before["next"] == before["chunks"] - 1
    _load(clean_graph, tmp_path, [old])  # a rerun
    assert _counts(clean_graph) == before

    result = _load(clean_graph, tmp_path, [new], upload="up-2")
    after = _counts(clean_graph)
    assert after["chunks"] == len(_chunks(clean_graph, new.key)) == 1
    assert result.chunks_in_graph.deleted == before["chunks"] - 1 and after["next"] == 0
    assert search_chunks(clean_graph, "keeper", database=DB)[0]["conversation"] == "Lighthouses"
    assert search_chunks(clean_graph, "tides", database=DB) == []  # no stale chunk is found

    late = _load(clean_graph, tmp_path, [old], upload="up-1")  # the older upload processed again, later
    # the graph holds a newer state: the older one is left out of rag/ and the graph before it is chunked
    assert late.documents == 0 and late.chunks_in_graph.chunks == 0
    assert _counts(clean_graph) == after
    assert search_chunks(clean_graph, "tides", database=DB) == []


def _words_embedder(texts: list[str]) -> list[list[float]]:
    """A deterministic bag-of-words hashing embedder: stands in for a local model to exercise the hook."""
    out = []
    for text in texts:
        vec = [0.0] * 256
        for word in re.findall(r"\w+", text.lower()):
            vec[int(hashlib.sha256(word.encode()).hexdigest(), 16) % 256] += 1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        out.append([v / norm for v in vec])
    return out


def test_the_embedding_hook_fills_a_vector_index(clean_graph, tmp_path):
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    try:
        result = _load(clean_graph, tmp_path, sample_conversations(), embedder=_words_embedder)
        assert result.embedded == result.chunks
        names = clean_graph.execute_query("SHOW VECTOR INDEXES YIELD name RETURN collect(name) AS n", database_=DB).records[0]["n"]
        assert VECTOR_INDEX in names
        hits = similar_chunks(clean_graph, "legroom dining car walk around", _words_embedder, k=1, database=DB)
        assert hits[0]["title"] == "ChatGPT: Planning a rail trip" and "legroom" in hits[0]["text"]
    finally:
        clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
