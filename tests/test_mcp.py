"""`chatetl mcp` through the MCP SDK's own stdio client, against the real Neo4j: the server process is
started as an MCP client starts it, lists its tools, searches with filters, fetches a conversation
as the person saw it (the active branch's visible turns, with times), lists recent conversations
and platforms, and answers a graph it cannot reach with one line naming the setting."""

from __future__ import annotations

import json
import os
import sys
from datetime import timedelta
from typing import Any

import anyio
import pytest
from export_inputs import chat
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from chatetl.graph.chunks import VECTOR_INDEX
from chatetl.graph.load import load_conversations
from chatetl.model import Source
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.embeddings import builtin_embedder
from chatetl.rag.partition import DocumentsResult, write_upload_documents
from chatetl.storage import LocalObjectStore

DB = os.environ.get("NEO4J_DATABASE")


def _server(**env: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "chatetl.cli", "mcp"],
                                 env={**os.environ, **env})


def _call(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    """The server's tool names and each call's result (its structured content, or the error text)."""

    async def session() -> tuple[list[str], list[Any]]:
        async with Client(params, read_timeout_seconds=60) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            results = []
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                if result.is_error:
                    results.append("error: " + " ".join(c.text for c in result.content if hasattr(c, "text")))
                else:
                    results.append(result.structured_content)
            return tools, results

    return anyio.run(session)


@pytest.fixture
def history(clean_graph, tmp_path):
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)
    tram = chat([("user", "Is tram 28 through Alfama worth the queue in Lisbon?"),
                 ("assistant", "Ride it early in the morning from Martim Moniz.")],
                title="Lisbon weekend", conversation_id="lisbon", branch=True, extras=True)
    bread = chat([("user", "My sourdough starter smells like nail polish remover."),
                  ("assistant", "Feed it twice a day with equal weights of flour and water.")],
                 title="Sourdough starter", platform="claude-ai", source=Source.CLAUDE_AI, conversation_id="bread",
                 model="claude-3-opus", updated=tram.updated_at + timedelta(days=3))
    convs = [tram, bread]
    load_conversations(clean_graph, convs, database=DB)
    write_upload_documents(LocalObjectStore(tmp_path / "bucket"), clean_graph, "2025-01-01", "up-1", convs, DocumentsResult(),
                           database=DB, chunking=ChunkOptions(max_chars=120, overlap_chars=0), embedder=builtin_embedder())
    yield {c.conversation_id: c for c in convs}
    clean_graph.execute_query(f"DROP INDEX {VECTOR_INDEX} IF EXISTS", database_=DB)


@pytest.mark.integration
def test_the_mcp_server_searches_fetches_and_lists_through_the_sdk_client(history):
    tram = history["lisbon"]
    tools, (found, filtered, dated, fetched, recent, platforms, missing) = _call(_server(), [
        ("search", {"query": "tram through Alfama", "k": 3}),
        ("search", {"query": "tram through Alfama", "platform": "claude"}),
        ("search", {"query": "sourdough", "mode": "text", "since": "2099-01-01"}),
        ("fetch_conversation", {"key": tram.key}),
        ("recent_conversations", {"limit": 5}),
        ("platforms", {}),
        ("fetch_conversation", {"conversation_id": "no-such-chat"}),
    ])
    assert set(tools) == {"search", "fetch_conversation", "recent_conversations", "platforms"}
    top = found["hits"][0]
    assert top["conversation"]["key"] == tram.key and top["conversation"]["title"] == "Lisbon weekend"
    assert "Alfama" in top["text"] and top["message_ids"] and 0 < top["score"] <= 1
    assert [h["conversation"]["conversation_id"] for h in filtered["hits"]] == ["bread"]  # claude is claude-ai
    assert dated["hits"] == []
    # the branch the person saw: visible turns in order, with times; no abandoned branch, no hidden context
    shown = [m for m in tram.messages if m.on_active_branch and m.kind.value == "turn"]
    assert [t["message_id"] for t in fetched["turns"]] == [m.message_id for m in shown]
    assert [t["text"] for t in fetched["turns"]] == [m.text for m in shown]
    assert all(t["created_at"] for t in fetched["turns"]) and fetched["title"] == "Lisbon weekend"
    assert "ABANDONED-BRANCH" not in json.dumps(fetched) and "HIDDEN-CONTEXT" not in json.dumps(fetched)
    assert [c["conversation_id"] for c in recent["conversations"]] == ["bread", "lisbon"]  # newest first
    assert {p["platform"]: p["conversations"] for p in platforms["platforms"]} == {"chatgpt": 1, "claude-ai": 1}
    assert missing.startswith("error: ") and missing.endswith(": no conversation 'no-such-chat'")


@pytest.mark.integration
def test_the_mcp_server_says_in_one_line_which_setting_to_check(services):
    _, (down, refused) = _call(_server(NEO4J_URI="bolt://127.0.0.1:9"), [("platforms", {}), ("search", {"query": "x"})])
    assert down.endswith(": no Neo4j answers at bolt://127.0.0.1:9: check NEO4J_URI and that Neo4j is running") and "\n" not in down
    assert refused.endswith(down.split(": ", 2)[-1])
    _, (wrong,) = _call(_server(NEO4J_PASSWORD="not-the-password"), [("platforms", {})])
    assert ": Neo4j at " in wrong and wrong.endswith("check NEO4J_USER and NEO4J_PASSWORD") and "\n" not in wrong
