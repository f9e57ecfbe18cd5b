"""The embedding step outside the Neo4j pool, on the real services: while another run's step holds the pool's
only slot, `rag_files` cuts and embeds the day into rag/; `documents` waits for the slot, then writes the graph
from those files."""

from __future__ import annotations

import json
import threading
import time

import pytest
from dagster import AssetKey, instance_for_test
from upload_partitions import partition_for

pytestmark = pytest.mark.integration

GROK = {
    "schema": "chat-export/1", "platform": "grok", "title": "Tide tables", "chat_id": "grok-pool",
    "exported_at": "2026-01-02T08:00:00Z",
    "messages": [{"role": "user", "text": "When is high tide in Brest?"}, {"role": "assistant", "text": "High tide is at 14:05."}],
}


def _documents(driver) -> int:
    return driver.execute_query("MATCH (d:Document) RETURN count(d) AS n").records[0]["n"]


def test_rag_files_runs_while_another_step_holds_the_neo4j_slot(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/bob/grok.json", json.dumps(GROK).encode())
    job = definitions.resolve_job_def("ingest_job")
    before = [AssetKey(k) for k in ("raw_uploads", "normalized", "graph")]
    with instance_for_test(overrides={"concurrency": {"pools": {"granularity": "op", "default_limit": 1}}}) as instance:
        storage = instance.event_log_storage
        day = partition_for(instance, info)
        assert job.execute_in_process(partition_key=day, instance=instance, asset_selection=before).success
        assert storage.get_concurrency_info("neo4j").slot_count == 1
        assert storage.claim_concurrency_slot("neo4j", "another-run", "graph").is_claimed  # another run's graph load

        files = job.execute_in_process(partition_key=day, instance=instance, asset_selection=[AssetKey("rag_files")])
        assert files.success
        assert [o.key.split("/")[1] for o in store.list("rag/")] == ["chunks", "documents", "embeddings"]
        assert [(s.run_id, s.step_key) for s in storage.get_concurrency_info("neo4j").claimed_slots] == [("another-run", "graph")]
        assert _documents(clean_graph) == 0

        done = {}
        writer = threading.Thread(target=lambda: done.setdefault("run", job.execute_in_process(
            partition_key=day, instance=instance, asset_selection=[AssetKey("documents")])))
        writer.start()
        time.sleep(5)
        assert writer.is_alive() and _documents(clean_graph) == 0  # documents waits for the slot
        storage.free_concurrency_slot_for_step("another-run", "graph")
        writer.join(120)
        assert not writer.is_alive() and done["run"].success
        assert _documents(clean_graph) == 1
        assert storage.get_concurrency_info("neo4j").claimed_slots == []
