"""What people keep beside their chats is searched like their chats, on the real Neo4j: a project's
document, a memory and a canvas become Documents with chunks (invented data in the public shapes); a rerun
writes nothing, a changed document's old text is no longer found, a deleted upload takes its chunks along,
and of two uploads' states of one project the newest is the one found, whatever the load order."""

from __future__ import annotations

import io
import json
import os
import zipfile

import pytest
from graph_inputs import graph_dump, wipe

from chatetl.graph.load import load_graph_partition
from chatetl.graph.retract import apply_graph_retractions
from chatetl.ingest.partition import retract
from chatetl.ingest.upload import normalize_upload
from chatetl.keepsakes import Canvas, Memory, MemoryScope, Project, ProjectDoc
from chatetl.layout import document_keys, upload_id
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import builtin_embedder
from chatetl.rag.keepsake_documents import keepsake_documents
from chatetl.rag.retract import load_day_files, write_day_files
from chatetl.search import search
from chatetl.storage import LocalObjectStore
from chatetl.tables.keepsakes import keepsake_rows

DB = os.environ.get("NEO4J_DATABASE") or None
DAY = "2026-03-01"
PROJECT = "p0000000-0000-4000-8000-000000000002"
SMALL = ChunkOptions(max_chars=200, overlap_chars=40)

pytestmark = pytest.mark.integration


def _export(doc_text: str, when: str = "2026-03-01T10:00:05Z", memory: str = "Keeps bees on the roof.", blank: bool = True) -> bytes:
    chat = {"uuid": "c-1", "name": "Weekend plans", "created_at": "2026-03-01T10:00:00Z", "updated_at": when,
            "project_uuid": PROJECT, "chat_messages": [
                {"uuid": "c-1-h", "sender": "human", "text": "What should I do this weekend?",
                 "content": [{"type": "text", "text": "What should I do this weekend?"}], "created_at": "2026-03-01T10:00:00Z"}]}
    project = {"uuid": PROJECT, "name": "Garden", "updated_at": when, "docs": [
        {"uuid": "d-1", "filename": "planting.md", "content": doc_text, "created_at": "2026-02-20T09:00:00Z"},
        {"uuid": "d-2", "filename": "empty.md", "content": "   "}][:2 if blank else 1]}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("conversations.json", json.dumps([chat]))
        zf.writestr("projects.json", json.dumps([project]))
        zf.writestr("memories.json", json.dumps({"conversations_memory": memory, "account_uuid": "acct-2"}))
    return buf.getvalue()


def _run(store: LocalObjectStore, driver):  # type: ignore[no-untyped-def]
    """The day's graph, rag/ files and Documents, as a run's steps do them; the documents step's result."""
    apply_graph_retractions(store, driver, DAY)
    load_graph_partition(store, driver, DAY, DB)
    write_day_files(store, driver, DAY, database=DB, chunking=SMALL, embedder=builtin_embedder())
    return load_day_files(store, driver, DAY, database=DB)


def _found(driver, query: str, mode: str = "text") -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    return [(hit.kind, hit.conversation["title"]) for hit in search(driver, query, k=5, mode=mode, database=DB)]


def _chunks_of(driver, kind: str) -> list[str]:  # type: ignore[no-untyped-def]
    records, _, _ = driver.execute_query("MATCH (d:Document {kind: $kind})-[:HAS_CHUNK]->(c:Chunk) RETURN c.text AS text ORDER BY text",
                                         kind=kind, database_=DB)
    return [r["text"] for r in records]


def test_a_project_document_is_found_kept_up_to_date_and_leaves_with_its_upload(clean_graph, tmp_path):
    wipe(clean_graph, DB)
    store = LocalObjectStore(tmp_path / "bucket")
    key = f"raw/{DAY}/claude.zip"
    normalize_upload(store, store.put_bytes(key, _export("Plant the marigolds beside the tomatoes to keep whiteflies away.")), DAY,
                     workdir=tmp_path)
    _run(store, clean_graph)

    # a phrase only the project's document holds: found, named by its project and file, with no conversation
    [hit] = search(clean_graph, "marigolds whiteflies", k=5, mode="text", database=DB)
    assert (hit.kind, hit.conversation["title"], hit.kept) == (
        "project_doc", "Garden / planting.md", {"name": "Garden / planting.md", "project": "Garden", "filename": "planting.md"})
    assert hit.conversation["conversation_id"] is None and hit.conversation["url"] is None and hit.exports is None
    assert hit.text.startswith("planting.md (project Garden): Plant the marigolds")
    assert hit.conversation["document_title"] == "Claude AI project Garden: planting.md"
    assert ("project_doc", "Garden / planting.md") in _found(clean_graph, "marigolds beside the tomatoes", mode="hybrid")
    assert _found(clean_graph, "bees roof") == [("memory", "Account memory")]
    assert _chunks_of(clean_graph, "project_doc") == [("planting.md (project Garden): Plant the marigolds beside the tomatoes to keep "
                                                     "whiteflies away.")]  # (the blank document: no chunk)
    linked, _, _ = clean_graph.execute_query(
        "MATCH (:Project)-[:HAS_DOC]->(:ProjectDoc)-[:HAS_DOCUMENT]->(d:Document) RETURN d.filename AS f ORDER BY f", database_=DB)
    assert [r["f"] for r in linked] == ["empty.md", "planting.md"]

    # a rerun adds nothing
    before = graph_dump(clean_graph, DB)
    again = _run(store, clean_graph)
    assert again.documents_in_graph == 0 and again.chunks_in_graph.chunks == 0 and graph_dump(clean_graph, DB) == before

    # the upload replaced with the document changed (and the blank one gone): its old text is no longer found, the new one is
    changed = _export("Sow the sunflowers along the fence in May.", when="2026-03-01T11:00:00Z", blank=False)
    normalize_upload(store, store.put_bytes(key, changed), DAY, workdir=tmp_path)
    _run(store, clean_graph)
    kept, _, _ = clean_graph.execute_query("MATCH (d:Document {kind: 'project_doc'}) RETURN d.filename AS f", database_=DB)
    assert [r["f"] for r in kept] == ["planting.md"]
    assert search(clean_graph, "marigolds whiteflies", k=5, mode="text", database=DB) == []
    assert _found(clean_graph, "sunflowers fence") == [("project_doc", "Garden / planting.md")]
    assert _chunks_of(clean_graph, "project_doc") == ["planting.md (project Garden): Sow the sunflowers along the fence in May."]

    # the upload deleted: its documents' chunks go with it
    retract(store, DAY, upload_id(key))
    _run(store, clean_graph)
    assert search(clean_graph, "sunflowers fence", k=5, mode="text", database=DB) == []
    assert _found(clean_graph, "bees roof") == []
    gone, _, _ = clean_graph.execute_query("MATCH (d:Document) WHERE d.kind IS NOT NULL RETURN count(d) AS n", database_=DB)
    assert gone[0]["n"] == 0 and _chunks_of(clean_graph, "project_doc") == [] and _chunks_of(clean_graph, "memory") == []


OLD, NEW = "2026-03-01T10:00:05Z", "2026-03-01T12:00:00Z"


@pytest.mark.parametrize("order", [("new", "old"), ("old", "new")])
def test_the_newest_upload_s_document_is_the_one_found_and_the_older_takes_over_when_it_leaves(clean_graph, tmp_path, order):
    wipe(clean_graph, DB)
    store = LocalObjectStore(tmp_path / "bucket")
    keys = {"old": f"raw/{DAY}/old.zip", "new": f"raw/{DAY}/new.zip"}
    exports = {"old": _export("Water the basil every morning.", OLD), "new": _export("Water the basil every evening.", NEW)}
    for name in order:  # one upload documented after the other, in either order
        normalize_upload(store, store.put_bytes(keys[name], exports[name]), DAY, workdir=tmp_path)
        _run(store, clean_graph)
    assert _chunks_of(clean_graph, "project_doc") == ["planting.md (project Garden): Water the basil every evening."]
    older = store.get_bytes(document_keys(DAY, upload_id(keys["old"]))[0]).decode()
    assert "every morning" not in older, older  # (the state the graph does not show stays out of rag/)
    again = _run(store, clean_graph)
    assert again.documents_in_graph == 0 and again.chunks_in_graph.chunks == 0 and again.chunks_in_graph.unchanged == again.documents

    retract(store, DAY, upload_id(keys["new"]))  # the newer upload deleted: the older one's text is the one found
    _run(store, clean_graph)
    assert _chunks_of(clean_graph, "project_doc") == ["planting.md (project Garden): Water the basil every morning."]
    assert _found(clean_graph, "basil morning") == [("project_doc", "Garden / planting.md")]
    assert search(clean_graph, "evening", k=5, mode="text", database=DB) == []


def test_keepsake_documents_say_what_they_are():
    project = Project("claude-ai", "p1", "Garden", docs=(ProjectDoc("d1", "plan.md", "Dig the beds."),))
    kept = [project, Memory("claude-ai", "a1", MemoryScope.PROJECT, "Grows tomatoes.", project_id="p1"),
            Memory("claude-ai", "a1", MemoryScope.FILE, "Notes", path="notes/garden.md"),
            Canvas("chatgpt", "cv1", "Seed list", text="Basil, chard.", conversation_id="c9")]
    docs = keepsake_documents(keepsake_rows(kept))
    assert [(d.props["kind"], d.key, d.props["name"], d.content) for d in docs] == [
        ("project_doc", "project_doc:claude-ai:p1:d1", "Garden / plan.md", "plan.md (project Garden): Dig the beds."),
        ("memory", "memory:claude-ai:a1:project:p1", "Memory of project Garden", "Memory of project Garden: Grows tomatoes."),
        ("memory", "memory:claude-ai:a1:file:notes/garden.md", "Memory file notes/garden.md", "Memory file notes/garden.md: Notes"),
        ("canvas", "canvas:chatgpt:cv1", "Canvas: Seed list", "Canvas Seed list: Basil, chard."),
    ]
    assert [d.props["owner_key"] for d in docs] == ["claude-ai:p1", "claude-ai:a1:project:p1", "claude-ai:a1:file:notes/garden.md",
                                                   "chatgpt:cv1"]
    assert all(len(d.spans) == 1 and d.spans[0].end == len(d.content) for d in docs)


def test_chatetl_load_then_search_finds_a_project_document_by_its_project_and_file(clean_graph, tmp_path):
    from click.testing import CliRunner

    from chatetl.cli import main
    from chatetl.samples import claude_export

    wipe(clean_graph, DB)
    (tmp_path / "claude.zip").write_bytes(claude_export())  # its project "Baking" holds hydration.md
    loads = [CliRunner().invoke(main, ["load", str(tmp_path / "claude.zip")]) for _ in range(2)]
    assert [r.exit_code for r in loads] == [0, 0], loads[0].stderr
    first, second = (json.loads(r.stdout.strip().splitlines()[-1]) for r in loads)
    assert first["documents_written"] == 1 + 3 and second["documents_written"] == second["chunks_written"] == 0  # a rerun: nothing
    result = CliRunner().invoke(main, ["search", "flour weight country loaf", "--mode", "text"], env={"CHATETL_STORE": "local", "CHATETL_LOCAL_STORE_ROOT": str(tmp_path / "bucket")})
    assert result.exit_code == 0, result.output
    head, snippet = result.stdout.splitlines()[:2]
    assert head.startswith(" 1. Baking / hydration.md  ·  Claude AI project document  ·  ") and "file:" not in result.stdout
    assert "**country** **loaf**" in snippet
    hits = CliRunner().invoke(main, ["search", "sourdough at home", "--mode", "text", "--json"], env={"CHATETL_STORE": "local", "CHATETL_LOCAL_STORE_ROOT": str(tmp_path / "bucket")})
    assert [(h["kind"], h["conversation"]["title"]) for h in map(json.loads, hits.stdout.splitlines())][:1] == [("memory", "Account memory")]
