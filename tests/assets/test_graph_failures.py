"""The graph asset when one conversation of the day cannot be written: the rest loads, the asset says which failed."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, DagsterInstance
from upload_partitions import partition_for

from chatetl.samples import chatgpt_export

pytestmark = pytest.mark.integration

HOSTILE_ID = "h" * 10_000  # a chat id over Neo4j's index key size limit (the server refuses its node)


def _hostile_chat_export() -> bytes:
    return json.dumps({
        "schema": "chat-export/1", "platform": "grok", "url": "https://grok.com/chat/hostile", "title": "A hostile id",
        "exported_at": "2025-04-01T12:00:00.000Z", "chat_id": HOSTILE_ID,
        "messages": [{"role": "user", "role_tag": "user", "text": "hello"}, {"role": "assistant", "role_tag": "grok", "text": "hi"}],
    }).encode()


def test_one_conversation_the_graph_refuses_leaves_the_rest_of_the_day_loaded_and_is_reported(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/2026/export.zip", chatgpt_export())
    store.put_bytes("raw/2026/grok-hostile.json", _hostile_chat_export())
    job = definitions.resolve_job_def("ingest_job")
    instance = DagsterInstance.ephemeral()
    result = job.execute_in_process(partition_key=partition_for(instance, info), instance=instance, raise_on_error=False,
                                    asset_selection=[AssetKey("raw_uploads"), AssetKey("normalized"), AssetKey("graph")])
    [meta] = [e.materialization.metadata for e in result.get_asset_materialization_events()
              if e.materialization.asset_key.to_user_string() == "graph"]
    assert meta["conversations_created"].value == 3 and meta["conversations_failed"].value == 1
    [line] = meta["failed_conversations"].value.splitlines()
    assert line.startswith("- grok:hhhh") and "(10005 characters)" in line and "too large to index" in line
    records, _, _ = clean_graph.execute_query("MATCH (c:Conversation) RETURN c.source AS source, count(*) AS n")
    assert [dict(r) for r in records] == [{"source": "chatgpt", "n": 3}]
