"""`chatetl mcp`'s search finds a project's document beside the chats, through the SDK's own client against the
real Neo4j: the hit says what it is and names its project and file; fetch_conversation says such a key is no
conversation, in one line."""

from __future__ import annotations

import os

import pytest
from test_mcp import _call, _server

from chatetl.graph.chunks import VECTOR_INDEX
from chatetl.graph.keepsakes import load_keepsakes
from chatetl.keepsakes import Project, ProjectDoc
from chatetl.rag.embeddings import builtin_embedder
from chatetl.rag.keepsake_documents import keepsake_documents
from chatetl.rag.partition import DocumentsResult, process_documents
from chatetl.tables.keepsakes import keepsake_rows

DB = os.environ.get("NEO4J_DATABASE")


@pytest.mark.integration
def test_the_mcp_search_shows_a_project_document_as_what_it_is(clean_graph):
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    rows = keepsake_rows([Project("claude-ai", "p-garden", "Garden", docs=(
        ProjectDoc("d-1", "planting.md", "Plant the marigolds beside the tomatoes to keep whiteflies away."),))])
    load_keepsakes(clean_graph, rows, database=DB)
    process_documents(clean_graph, (), DocumentsResult(), database=DB, embedder=builtin_embedder(), keepsakes=keepsake_documents(rows))
    _, (found, opened) = _call(_server(), [
        ("search", {"query": "marigolds and whiteflies", "k": 3}),
        ("fetch_conversation", {"key": "project_doc:claude-ai:p-garden:d-1"}),
    ])
    [hit] = found["hits"]
    assert hit["kind"] == "project_doc" and hit["kept"] == {"name": "Garden / planting.md", "project": "Garden", "filename": "planting.md"}
    assert hit["conversation"]["title"] == "Garden / planting.md" and hit["conversation"]["conversation_id"] is None
    assert hit["conversation"]["url"] is None and hit["exports"] is None and "marigolds" in hit["text"]
    assert opened.startswith("error: ") and "\n" not in opened
    assert opened.endswith(": 'project_doc:claude-ai:p-garden:d-1' is a project document, not a conversation: its text is in the search hits")
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
