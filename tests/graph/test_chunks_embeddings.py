"""Chunk vectors in the real Neo4j: written with the chunks by the load, indexed (`chunk_embedding`, cosine,
the model's size), found by a vector query, reused by text hash (an unchanged rerun embeds nothing, with
or without the bucket's Parquet), and the index rebuilt when the model's size changes."""

from __future__ import annotations

import dataclasses
import logging
import os
from datetime import UTC, datetime, timedelta

import pytest
from export_inputs import chat, sample_conversations
from graph_inputs import graph_dump, wipe

from chatetl.graph.chunk_search import chunk_indexes, chunk_matches
from chatetl.graph.chunks import VECTOR_INDEX, stored_embeddings
from chatetl.graph.load import load_conversations
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import (
    BUILTIN_DIMENSIONS,
    BUILTIN_MODEL,
    Embedder,
    builtin_embedder,
)
from chatetl.rag.partition import (
    DocumentsResult,
    process_documents,
    write_upload_documents,
)
from chatetl.storage import LocalObjectStore

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE")
SMALL = ChunkOptions(max_chars=120, overlap_chars=30)


class Counting(Embedder):
    """The built-in model, counting its calls."""

    def __init__(self) -> None:
        inner = builtin_embedder()
        super().__init__(name=inner.name, vectors_of=inner.vectors_of, dimensions=inner.dimensions)


def _q(driver, cypher: str, **params) -> list[dict]:
    return [dict(r) for r in driver.execute_query(cypher, params, database_=DB).records]


def _documents(driver, store, convs, embedder, upload="up-1") -> DocumentsResult:
    result = DocumentsResult()
    write_upload_documents(store, driver, "2026-01-01", upload, convs, result, database=DB, chunking=SMALL, embedder=embedder)
    return result


@pytest.fixture
def no_vector_index(clean_graph):
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    yield clean_graph
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)


def test_the_load_writes_and_indexes_the_vectors_and_a_rerun_embeds_nothing(no_vector_index, tmp_path, caplog):
    driver = no_vector_index
    convs = sample_conversations()
    load_conversations(driver, convs, database=DB)
    model = Counting()
    with caplog.at_level(logging.DEBUG, logger="neo4j.notifications"):
        first = _documents(driver, LocalObjectStore(tmp_path / "a"), convs, model)
    assert [r.getMessage() for r in caplog.records if r.name == "neo4j.notifications"] == []  # no warning from any chunk query
    assert first.embedded == first.chunks_in_graph.chunks == first.chunks > 3

    [index] = _q(driver, "SHOW VECTOR INDEXES YIELD name, state, labelsOrTypes, properties, options WHERE name = $n RETURN *", n=VECTOR_INDEX)
    config = index["options"]["indexConfig"]
    assert index["state"] == "ONLINE" and index["labelsOrTypes"] == ["Chunk"] and index["properties"] == ["embedding"]
    assert config["vector.dimensions"] == BUILTIN_DIMENSIONS and config["vector.similarity_function"] == "COSINE"
    rows = _q(driver, "MATCH (c:Chunk) RETURN c.embedding AS e, c.embedding_model AS m, c.text_sha256 AS h, c.text AS text")
    assert len(rows) == first.chunks and all(len(r["e"]) == BUILTIN_DIMENSIONS and r["m"] == BUILTIN_MODEL and len(r["h"]) == 64 for r in rows)
    assert chunk_indexes(driver, DB) == {"fulltext": True, "vector_dimensions": BUILTIN_DIMENSIONS}

    # the index answers a query by meaning: no word of it is in the chunk it finds
    query = builtin_embedder()(["a rail journey with space for my legs and somewhere to eat"])[0]
    [hit] = chunk_matches(driver, vector=query, limit=1, database=DB)
    assert hit["title"] == "ChatGPT: Planning a rail trip" and "legroom" in hit["text"] and hit["message_ids"]

    # an unchanged rerun: every vector comes from the bucket's Parquet, nothing is embedded or written
    calls = model.calls
    again = _documents(driver, LocalObjectStore(tmp_path / "a"), convs, model)
    assert model.calls == calls and again.embedded == 0 and again.embeddings_reused == again.chunks
    assert again.chunks_in_graph.unchanged == 3 and again.chunks_in_graph.chunks == 0

    # the same chats in a new upload (a new bucket, no Parquet to read): the graph has the vectors
    moved = _documents(driver, LocalObjectStore(tmp_path / "b"), convs, model, upload="up-2")
    assert model.calls == calls and moved.embedded == 0 and moved.chunks_in_graph.unchanged == 3
    assert (tmp_path / "b" / "rag" / "embeddings").exists()  # ... and its own Parquet is written from them

    # the CLI's path (no bucket at all) reuses them too
    cli = DocumentsResult()
    process_documents(driver, convs, cli, database=DB, chunking=SMALL, embedder=model)
    assert model.calls == calls and cli.embedded == 0

    hashes = [r["h"] for r in rows]
    assert set(stored_embeddings(driver, BUILTIN_MODEL, hashes, DB)) == set(hashes)
    assert stored_embeddings(driver, "another-model", hashes, DB) == {}  # another model's vectors are never reused


def test_a_changed_chat_embeds_only_its_new_chunks(no_vector_index, tmp_path):
    driver = no_vector_index
    long = "\n\n".join(f"Step {i}: the ferry to the island leaves at dawn and returns by dusk." for i in range(8))
    conv = chat([("user", "Plan the crossing"), ("assistant", long)], title="Crossing")
    load_conversations(driver, [conv], database=DB)
    model = Counting()
    store = LocalObjectStore(tmp_path)
    first = _documents(driver, store, [conv], model)
    newer = chat([("user", "Plan the crossing"), ("assistant", long), ("user", "And if the sea is rough?"), ("assistant", "Then take the bridge.")],
                 title="Crossing", updated=conv.updated_at + timedelta(hours=1))
    load_conversations(driver, [newer], database=DB)
    second = _documents(driver, store, [newer], model)
    assert 0 < second.embedded < second.chunks and second.embedded + second.embeddings_reused == second.chunks
    assert second.embeddings_reused >= first.chunks - 1  # the unchanged start of the chat keeps its vectors
    [row] = _q(driver, "MATCH (c:Chunk) WHERE c.embedding IS NULL RETURN count(c) AS n")
    assert row["n"] == 0


def test_without_a_vectors_file_an_unchanged_rerun_neither_embeds_nor_reads_a_vector_and_a_changed_chat_gets_all(
        no_vector_index, monkeypatch):
    """The CLI's path (no bucket: no vectors file to write): the Documents whose chunks the graph holds as they are
    are found before anything is embedded, so the rerun calls neither the model nor the graph's stored vectors, and
    writes nothing; a changed chat's chunks all get their vectors (the new ones embedded, the others reused); each
    graph is the one a clean load of the same chats makes."""
    from chatetl.rag import partition

    driver = no_vector_index
    long = "\n\n".join(f"Step {i}: the ferry to the island leaves at dawn and returns by dusk." for i in range(8))
    conv = chat([("user", "Plan the crossing"), ("assistant", long)], title="Crossing")
    convs = [conv, *sample_conversations()]
    load_conversations(driver, convs, database=DB)
    model = Counting()
    first = DocumentsResult()
    process_documents(driver, convs, first, database=DB, chunking=SMALL, embedder=model)
    assert first.embedded == first.chunks_in_graph.chunks == first.chunks > 3
    loaded = graph_dump(driver, DB)

    looked_up: list[int] = []
    real_lookup = partition.stored_embeddings
    monkeypatch.setattr(partition, "stored_embeddings", lambda *a, **k: looked_up.append(1) or real_lookup(*a, **k))
    calls = model.calls
    again = DocumentsResult()
    process_documents(driver, convs, again, database=DB, chunking=SMALL, embedder=model)
    assert (model.calls, looked_up, again.embedded, again.embeddings_reused) == (calls, [], 0, 0)
    assert again.chunks_in_graph.unchanged == len(convs) and again.chunks_in_graph.chunks == 0
    assert again.chunks == first.chunks and graph_dump(driver, DB) == loaded

    newer = chat([("user", "Plan the crossing"), ("assistant", long), ("user", "And if the sea is rough?"), ("assistant", "Then take the bridge.")],
                 title="Crossing", updated=conv.updated_at + timedelta(hours=1))
    load_conversations(driver, [newer], database=DB)
    changed = DocumentsResult()
    process_documents(driver, [newer, *convs[1:]], changed, database=DB, chunking=SMALL, embedder=model)
    assert 0 < changed.embedded < changed.chunks_in_graph.chunks and changed.chunks_in_graph.unchanged == len(convs) - 1
    assert _q(driver, "MATCH (c:Chunk) WHERE c.embedding IS NULL RETURN count(c) AS n") == [{"n": 0}]
    got = graph_dump(driver, DB)
    wipe(driver, DB)
    load_conversations(driver, [newer, *convs[1:]], database=DB)
    process_documents(driver, [newer, *convs[1:]], DocumentsResult(), database=DB, chunking=SMALL, embedder=model)
    assert graph_dump(driver, DB) == got


def vectors_of_64(texts: list[str]) -> list[list[float]]:
    """A bigger local model's stand-in with another size (64): hashed letter counts."""
    out = []
    for t in texts:
        vec = [1.0] * 64
        for ch in t.lower():
            vec[ord(ch) % 64] += 1.0
        out.append(vec)
    return out


def test_a_model_of_another_size_rebuilds_the_vector_index(no_vector_index, tmp_path):
    driver = no_vector_index
    convs = sample_conversations()
    load_conversations(driver, convs, database=DB)
    _documents(driver, LocalObjectStore(tmp_path), convs, builtin_embedder())
    assert chunk_indexes(driver, DB)["vector_dimensions"] == BUILTIN_DIMENSIONS
    other = Embedder(name="tests:vectors_of_64", vectors_of=vectors_of_64)
    result = _documents(driver, LocalObjectStore(tmp_path), convs, other)
    assert result.embedded == result.chunks  # nothing of the other model is reused
    assert chunk_indexes(driver, DB)["vector_dimensions"] == 64
    assert _q(driver, "MATCH (c:Chunk) RETURN collect(DISTINCT c.embedding_model) AS m")[0]["m"] == ["tests:vectors_of_64"]
    hits = chunk_matches(driver, vector=vectors_of_64(["legroom dining car"])[0], limit=3, database=DB)
    assert len(hits) == 3


def test_chunks_written_beside_the_next_groups_embedding_make_the_graph_written_in_turn(clean_graph, monkeypatch):
    """`process_documents` writes a group's chunks on a thread while the next group is chunked and embedded
    (`overlap`, the default): the graph and the counts are those of writing each group in its turn, with many
    groups (a small CHUNK_WINDOW), Documents of more chunks than a window (written alone) between them, several
    batches, a conversation's older state among the newer ones, and a rerun that changes one chat."""
    from chatetl.rag import partition

    monkeypatch.setattr(partition, "CHUNK_WINDOW", 12)
    monkeypatch.setattr(partition, "BATCH", 7)
    driver = clean_graph
    model = Counting()

    def convs(version: int = 0) -> list:
        out = []
        for i in range(30):
            steps = 40 if i % 9 == 4 else 1 + i % 5  # every ninth from the fifth: more chunks than a window
            text = "\n\n".join(f"Chat {i} step {s}: the ferry to island {s} leaves at dawn and returns by dusk." for s in range(steps))
            turns = [("user", f"Plan crossing {i}"), ("assistant", text)]
            if version and i % 10 == 3:
                turns += [("user", "And if the sea is rough?"), ("assistant", f"Then take bridge {i}.")]
            updated = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=i + (100 if version and i % 10 == 3 else 0))
            out.append(chat(turns, title=f"Crossing {i}", conversation_id=f"conv-{i}", updated=updated))
        return out

    first, second = convs(), convs(1)
    older = first[13]  # an older state of a chat the second run changes, read among the newer ones

    def run(overlap: bool) -> tuple[dict, list]:
        wipe(driver, DB)
        counts = []
        for items in (first, [*second[:5], older, *second[5:]]):
            load_conversations(driver, items, database=DB)
            result = DocumentsResult()
            process_documents(driver, items, result, database=DB, chunking=SMALL, embedder=model, overlap=overlap)
            counts.append((result.documents, result.chunks, result.documents_in_graph, dataclasses.asdict(result.chunks_in_graph)))
        return graph_dump(driver, DB), counts

    in_turn, overlapped = run(overlap=False), run(overlap=True)
    assert overlapped[1] == in_turn[1]
    assert overlapped[0] == in_turn[0]
    chunks = in_turn[1][0][3]
    assert chunks["chunks"] > 8 * 12 and in_turn[1][1][3]["unchanged"] > 20  # many groups; the rerun kept most
