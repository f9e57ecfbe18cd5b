"""The Dagster graph asset: this load, under the `neo4j` pool, its summary as metadata, deep mode from the environment."""

from __future__ import annotations

import pytest
from dagster import DagsterInstance
from upload_partitions import partition_for

from chatetl.samples import chatgpt_export

pytestmark = pytest.mark.integration


@pytest.fixture
def definitions(s3_definitions):
    return s3_definitions(CHATETL_GRAPH_DEEP="1")


def test_graph_asset_reports_the_load_and_runs_in_the_neo4j_pool(definitions, clean_graph):
    graph_asset = definitions.resolve_assets_def("graph")
    assert graph_asset.op.pool == "neo4j"
    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/2026/export.zip", chatgpt_export())
    job = definitions.resolve_job_def("ingest_job")
    instance = DagsterInstance.ephemeral()
    first = job.execute_in_process(partition_key=partition_for(instance, info), instance=instance)
    assert first.success
    [meta] = [e.materialization.metadata for e in first.get_asset_materialization_events() if e.materialization.asset_key.to_user_string() == "graph"]
    assert meta["conversations_created"].value == 3 and meta["messages_written"].value == 17
    assert meta["deep_mode"].value is True and meta["traces_written"].value == 2 and meta["trace_steps_written"].value == 4
    assert "conversations_created" in meta["summary"].value
    records, _, _ = clean_graph.execute_query("MATCH (:Conversation)-[:HAS_TRACE]->(t:DecisionTrace) RETURN count(t) AS n")
    assert records[0]["n"] == 2
    second = job.execute_in_process(partition_key=partition_for(instance, info), instance=instance)
    [meta] = [e.materialization.metadata for e in second.get_asset_materialization_events() if e.materialization.asset_key.to_user_string() == "graph"]
    assert meta["conversations_unchanged"].value == 3 and meta["messages_written"].value == 0
