"""The walking skeleton end to end, in process, against the real S3 server and the real Neo4j.

An upload in the bucket flows through every asset: normalized Parquet, the graph,
Documents and Markdown exports; a second run changes no graph counts and no output bytes.
"""

from __future__ import annotations

import io
import os
import zipfile

import pyarrow.dataset as ds
import pyarrow.fs
import pytest
from dagster import DagsterInstance
from upload_partitions import partition_for

from chatetl.samples import chatgpt_export

pytestmark = pytest.mark.integration




def _graph_counts(driver) -> dict[str, int]:
    records, _, _ = driver.execute_query(
        """
        CALL () { MATCH (n) RETURN count(n) AS nodes }
        CALL () { MATCH ()-[r]->() RETURN count(r) AS rels }
        CALL () { MATCH (:Message)-[r:NEXT]->() RETURN count(r) AS next }
        CALL () { MATCH (:Conversation)-[r:HAS_MESSAGE]->() RETURN count(r) AS has_message }
        CALL () { MATCH (d:Document) RETURN count(d) AS documents }
        RETURN nodes, rels, next, has_message, documents
        """,
        database_=os.environ["NEO4J_DATABASE"],
    )
    return dict(records[0])


def _etags(store) -> dict[str, str]:
    return {o.key: o.etag for o in store.list("") if not o.key.startswith("raw/")}


def test_upload_flows_end_to_end_and_reruns_change_nothing(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/2026/alice/chatgpt-export.zip", chatgpt_export())
    job = definitions.resolve_job_def("ingest_job")
    instance = DagsterInstance.ephemeral()
    partition = partition_for(instance, info)

    first = job.execute_in_process(partition_key=partition, instance=instance)
    assert first.success
    mats = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in first.get_asset_materialization_events()}
    assert set(mats) == {"raw_uploads", "normalized", "graph", "rag_files", "documents", "exports"}
    assert mats["normalized"]["conversations"].value == 3
    assert mats["normalized"]["errors"].value == 0
    assert mats["graph"]["conversations_created"].value == 3

    # Parquet readable by pyarrow.dataset straight from the bucket
    s3fs = pyarrow.fs.S3FileSystem(
        endpoint_override=os.environ["CHATETL_S3_ENDPOINT_URL"],
        scheme="http",
        access_key=os.environ["AWS_ACCESS_KEY_ID"],
        secret_key=os.environ["AWS_SECRET_ACCESS_KEY"],
        region="us-east-1",
    )
    bucket = definitions.resources["object_store"].store.bucket  # the resource field is an EnvVar (CHATETL_S3_BUCKET)
    messages = ds.dataset(f"{bucket}/normalized/messages", filesystem=s3fs, partitioning="hive").to_table()
    conversations = ds.dataset(f"{bucket}/normalized/conversations", filesystem=s3fs, partitioning="hive").to_table()
    assert conversations.num_rows == 3 and messages.num_rows == 17
    assert {"source", "conversation_id", "message_id", "parent_id", "seq", "role", "text", "created_at", "model"} <= set(messages.column_names)

    # the graph answers the seed's example queries
    records, _, _ = clean_graph.execute_query(
        "MATCH (c:Conversation) WHERE c.source = 'chatgpt' RETURN c.name AS name, c.message_count AS n, c.created_at AS created ORDER BY c.created_at DESC"
    )
    assert [(r["name"], r["n"]) for r in records] == [
        ("Untitled", 2),
        ("Mean of a list", 2),
        ("Planning a rail trip", 4),
    ]
    trip_id = next(r for r in clean_graph.execute_query("MATCH (c:Conversation {name: 'Planning a rail trip'}) RETURN c.conversation_id AS id").records)["id"]
    threads, _, _ = clean_graph.execute_query(
        """
        MATCH path = (first:Message)-[:NEXT*]->(last:Message)
        WHERE first.conversation_id = $conv_id AND NOT ()-[:NEXT]->(first)
        RETURN [n IN nodes(path) | {role: n.role, content: left(n.content, 200)}] AS thread
        ORDER BY length(path) DESC LIMIT 1
        """,
        conv_id=trip_id,
    )
    thread = threads[0]["thread"]
    assert [t["role"] for t in thread] == ["user", "assistant", "user", "assistant"]
    assert thread[-1]["content"].startswith("The train")
    search, _, _ = clean_graph.execute_query(
        "MATCH (d:Document) WHERE d.template_id = 'chat-import' AND d.content CONTAINS $search_term RETURN d.title AS title, d.source AS source",
        search_term="legroom",
    )
    assert [(r["title"], r["source"]) for r in search] == [("ChatGPT: Planning a rail trip", "chatgpt")]
    attached, _, _ = clean_graph.execute_query("MATCH (c:Conversation)-[:HAS_DOCUMENT]->(d:Document) RETURN count(d) AS n")
    assert attached[0]["n"] == 3

    md = [o.key for o in store.list("exports/chat-export-md/")]  # (the fenced layout, which `md` named before)
    assert len(md) == 3
    trip_md = store.get_bytes(next(k for k in md if "Planning-a-rail-trip" in k)).decode()
    assert "```md\nuser:\n```\n\nWhich is faster" in trip_md and "Regenerated" not in trip_md

    counts, etags = _graph_counts(clean_graph), _etags(store)
    second = job.execute_in_process(partition_key=partition, instance=instance)
    assert second.success
    assert _graph_counts(clean_graph) == counts
    assert _etags(store) == etags
    mats2 = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in second.get_asset_materialization_events()}
    assert mats2["graph"]["conversations_unchanged"].value == 3
    assert mats2["graph"]["conversations_created"].value == 0


def _zip_without_a_chat() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("readme.txt", "not a chat")
        zf.writestr("photo.png", b"\x89PNG\r\n\x1a\n")
    return buf.getvalue()


@pytest.mark.parametrize("name, data", [("garbage.bin", bytes(range(256)) * 10), ("no-chat.zip", _zip_without_a_chat())])
def test_unreadable_upload_is_quarantined_and_the_good_one_still_loads(definitions, clean_graph, name, data):
    """Item 8 of issue 14: an upload holding no chat file (a zip of other files) is an error naming it, kept whole."""
    store = definitions.resources["object_store"].store
    store.put_bytes("raw/good.zip", chatgpt_export())
    info = store.put_bytes(f"raw/{name}", data)
    instance = DagsterInstance.ephemeral()
    result = definitions.resolve_job_def("ingest_job").execute_in_process(partition_key=partition_for(instance, info), instance=instance)
    assert result.success
    mats = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()}
    assert mats["normalized"]["conversations"].value == 3
    assert mats["normalized"]["errors"].value == 1
    assert name in mats["normalized"]["error_list"].value and "unrecognized format" in mats["normalized"]["error_list"].value
    quarantined = [o.key for o in store.list("quarantine/")]
    assert any(k.endswith("/upload") for k in quarantined) and any(k.endswith("errors.json") for k in quarantined)
    kept = next(k for k in quarantined if k.endswith("/upload"))
    assert store.get_bytes(kept) == data


def test_a_day_of_nothing_readable_fails_loudly(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    info = store.put_bytes("raw/empty.json", b"")
    result = definitions.resolve_job_def("ingest_job").execute_in_process(
        partition_key=partition_for(instance := DagsterInstance.ephemeral(), info), instance=instance, raise_on_error=False
    )
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert failure.step_key == "normalized"
    assert "no conversation could be read" in str(failure.event_specific_data.error)
