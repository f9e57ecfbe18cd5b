"""A day's rag/ files and graph Documents redone only for the uploads that changed: the result of redoing them all."""

from __future__ import annotations

import dataclasses
import os
import re

import pytest
from day_inputs import DAY, first_upload, put_upload, second_upload
from graph_inputs import graph_dump, wipe

from chatetl.graph.load import load_graph_partition
from chatetl.layout import CACHE_PREFIX, RAG_CHUNKS_PREFIX, RAG_DOCUMENTS_PREFIX, RAG_EMBEDDINGS_PREFIX
from chatetl.rag import partition
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import builtin_embedder
from chatetl.rag.partition import DocumentsResult
from chatetl.rag.retract import load_day_files, write_day_files
from chatetl.storage import LocalObjectStore

DB = os.environ.get("NEO4J_DATABASE") or None
SMALL = ChunkOptions(max_chars=200, overlap_chars=40)

pytestmark = pytest.mark.integration


def run(store: LocalObjectStore, driver, monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[DocumentsResult, DocumentsResult, list[str]]:
    """The day's graph, rag/ files and Documents, as a run's steps do them; their results and the Documents built."""
    built: list[str] = []
    if monkeypatch is not None:
        build = partition.build_document

        def spy(conv, *args, **kwargs):  # type: ignore[no-untyped-def]
            built.append(conv.key)
            return build(conv, *args, **kwargs)

        monkeypatch.setattr(partition, "build_document", spy)
    load_graph_partition(store, driver, DAY, DB)
    files = write_day_files(store, driver, DAY, database=DB, chunking=SMALL, embedder=builtin_embedder())
    loaded = load_day_files(store, driver, DAY, database=DB)
    if monkeypatch is not None:
        monkeypatch.undo()
    return files, loaded, built


def rag_files(store: LocalObjectStore) -> dict[str, bytes]:
    return {o.key: store.get_bytes(o.key) for p in (RAG_DOCUMENTS_PREFIX, RAG_CHUNKS_PREFIX, RAG_EMBEDDINGS_PREFIX) for o in store.list(p)}


def without_time(result: DocumentsResult) -> DocumentsResult:
    return dataclasses.replace(result, embedding_seconds=0.0)


@pytest.mark.parametrize("second", [second_upload()[-1:], second_upload()], ids=["a new chat", "newer and older states"])
def test_a_second_upload_redoes_what_it_changes_with_the_result_of_redoing_all(clean_graph, tmp_path, monkeypatch, second):
    outcomes = []
    for incremental in (False, True):
        wipe(clean_graph, DB)
        store = LocalObjectStore(tmp_path / str(incremental))
        put_upload(store, "u1", first_upload())
        run(store, clean_graph)
        put_upload(store, "u2", second)
        if not incremental:
            store.delete_prefix(CACHE_PREFIX)  # as the code before stamps: every upload done again
        files, loaded, built = run(store, clean_graph, monkeypatch)
        again_files, again_loaded, built_again = run(store, clean_graph, monkeypatch)  # nothing new
        outcomes.append((rag_files(store), graph_dump(clean_graph, DB), without_time(files), loaded, without_time(again_files), again_loaded))
        if incremental:
            assert set(built) >= {c.key for c in second} and built_again == []
            if len(second) == 1:
                assert built == [second[0].key]  # the first upload's Documents were not built again
            assert again_loaded.chunks_in_graph.chunks == 0 and again_loaded.documents_in_graph == 0
    assert outcomes[0] == outcomes[1]


def test_progress_names_each_upload_of_both_steps(clean_graph, tmp_path):
    wipe(clean_graph, DB)
    store = LocalObjectStore(tmp_path / "bucket")
    put_upload(store, "u1", first_upload())
    put_upload(store, "u2", second_upload())
    load_graph_partition(store, clean_graph, DAY, DB)
    for how_files, how_graph in (("written", "loaded"), ("unchanged", "held unchanged")):  # then a run with nothing new
        files_said: list[str] = []
        graph_said: list[str] = []
        files = write_day_files(store, clean_graph, DAY, database=DB, chunking=SMALL, embedder=builtin_embedder(), progress=files_said.append)
        loaded = load_day_files(store, clean_graph, DAY, database=DB, progress=graph_said.append)
        for said, step, how, result in ((files_said, "rag files", how_files, files), (graph_said, "documents", how_graph, loaded)):
            counts = [re.fullmatch(rf"{step} {DAY}: upload {n}/2, (\d+) documents and (\d+) chunks {how}", line) for n, line in enumerate(said, 1)]
            assert len(said) == 2 and all(counts), said
            assert sum(int(m[1]) for m in counts if m) == result.documents > 0
            assert sum(int(m[2]) for m in counts if m) == result.chunks > 0
