"""Embedding outside the Neo4j pool: `rag_files` cuts and embeds into rag/ without the pool, `documents` writes
the graph from those files in it. The split gives the graph and the rag/ files that writing both at once gives
(small Documents together, big ones a window at a time, a rerun, a newer state), and an unchanged rerun of the
graph step writes no chunk. (tests/test_pipeline_golden.py runs the split on every golden step.)"""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from export_inputs import chat
from graph_inputs import graph_dump, wipe

from chatetl.rag import graph_load, partition
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import builtin_embedder
from chatetl.rag.graph_load import load_partition_documents
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.storage import LocalObjectStore

DB = os.environ.get("NEO4J_DATABASE") or None
SMALL = ChunkOptions(max_chars=120, overlap_chars=30)
DAY = "2026-02-02"


def test_the_embedding_step_is_outside_the_neo4j_pool_and_the_graph_writer_inside():
    from assets.definitions import defs
    from assets.policies import NEO4J_POOL

    graph = defs.resolve_asset_graph()
    pools = {key.to_user_string(): graph.get(key).pools for key in graph.get_all_asset_keys()}
    # (rag_files has a pool of its own, so two runs of one day never write its files at once)
    assert NEO4J_POOL not in pools["rag_files"] and pools["documents"] == {NEO4J_POOL} and pools["graph"] == {NEO4J_POOL}
    job = defs.resolve_job_def("ingest_job")
    assert {"rag_files", "documents"} <= {n.name for n in job.graph.node_defs}  # every run of a day does both
    documents = defs.resolve_assets_def("documents")
    assert [k.to_user_string() for k in documents.asset_deps[documents.key]] == ["rag_files"]


def _convs(version: int = 0) -> list:
    updated = None if not version else chat([("user", "x")]).updated_at + timedelta(hours=version)
    long = "\n\n".join(f"Paragraph {i}: the ferry leaves at dawn and the last train at {i % 24} o'clock{'!' * version}."
                       for i in range(40))
    convs = [chat([("user", f"Question {i}?"), ("assistant", f"Answer {i}.")], conversation_id=f"small-{i}", updated=updated)
             for i in range(5)]
    convs.insert(2, chat([("user", "The timetable?"), ("assistant", long)], conversation_id="long", updated=updated))
    return convs


def _rag(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.integration
def test_the_split_gives_the_graph_and_files_of_one_step(clean_graph, tmp_path, monkeypatch):
    for module in (partition, graph_load):  # windows of 8 chunks: the long Document goes a window at a time
        monkeypatch.setattr(module, "CHUNK_WINDOW", 8)
    model = builtin_embedder()
    for version in (0, 1):
        wipe(clean_graph, DB)
        one = LocalObjectStore(tmp_path / f"one-{version}")
        write_upload_documents(one, clean_graph, DAY, "up", _convs(version), DocumentsResult(), database=DB, chunking=SMALL, embedder=model)
        together = graph_dump(clean_graph, DB)
        assert '"Chunk"' in str(together["nodes"])

        wipe(clean_graph, DB)
        split = LocalObjectStore(tmp_path / f"split-{version}")
        for convs in (_convs(0), _convs(version)):  # a first run, then this version over it
            files = DocumentsResult()
            write_upload_documents(split, clean_graph, DAY, "up", convs, files, database=DB, chunking=SMALL, embedder=model,
                                   write_graph=False)
            assert files.documents_in_graph == 0 and files.chunks_in_graph.chunks == 0  # the graph only read
            loaded = load_partition_documents(split, clean_graph, DAY, database=DB)
            assert loaded.documents == 6 and loaded.chunks == files.chunks
        assert graph_dump(clean_graph, DB) == together
        assert _rag(tmp_path / f"split-{version}") == _rag(tmp_path / f"one-{version}")

        again = load_partition_documents(split, clean_graph, DAY, database=DB)
        assert again.chunks_in_graph.chunks == 0 and again.chunks_in_graph.deleted == 0 and again.documents_in_graph == 0
        assert again.chunks_in_graph.unchanged == 6
        assert graph_dump(clean_graph, DB) == together
