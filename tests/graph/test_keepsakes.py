"""An upload's projects, memories and canvases: tables in the bucket, then nodes in the graph, linked to a
conversation only where the export links them (invented data in the public shapes)."""

from __future__ import annotations

import io
import json
import os
import zipfile

import pytest

from chatetl.graph.load import load_graph_partition
from chatetl.graph.retract import apply_graph_retractions
from chatetl.ingest.partition import retract
from chatetl.ingest.upload import normalize_upload
from chatetl.layout import table_key, upload_id
from chatetl.storage import LocalObjectStore
from chatetl.tables.keepsakes import read_keepsakes

DAY = "2026-03-01"
PROJECT = "p0000000-0000-4000-8000-000000000001"


def _conversation(uuid: str, **extra: object) -> dict[str, object]:
    return {"uuid": uuid, "name": f"Chat {uuid}", "created_at": "2026-03-01T10:00:00Z", "updated_at": "2026-03-01T10:00:05Z", **extra,
            "chat_messages": [
                {"uuid": f"{uuid}-h", "sender": "human", "text": "Hi", "content": [{"type": "text", "text": "Hi"}],
                 "created_at": "2026-03-01T10:00:00Z"},
                {"uuid": f"{uuid}-a", "sender": "assistant", "text": "Hello", "content": [{"type": "text", "text": "Hello"}],
                 "parent_message_uuid": f"{uuid}-h", "created_at": "2026-03-01T10:00:05Z"}]}


def _export(docs: list[dict[str, str]]) -> bytes:
    project = {"uuid": PROJECT, "name": "Invented project", "prompt_template": "Answer in French.", "is_private": True, "docs": docs}
    memories = {"conversations_memory": "Tests widgets.", "project_memories": {PROJECT: "Prefers French."}, "account_uuid": "acct-1"}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("conversations.json", json.dumps([_conversation("c-in", project_uuid=PROJECT), _conversation("c-out")]))
        zf.writestr("projects.json", json.dumps([project]))
        zf.writestr("memories.json", json.dumps(memories))
    return buf.getvalue()


def _graph(driver, cypher: str) -> list[dict[str, object]]:
    with driver.session(database=os.environ["NEO4J_DATABASE"]) as session:
        return session.run(cypher).data()


def test_projects_docs_and_memories_reach_the_tables_and_the_graph(tmp_path, clean_graph):
    store = LocalObjectStore(tmp_path / "bucket")
    key = f"raw/{DAY}/claude.zip"
    docs = [{"uuid": "d-1", "filename": "glossary.md", "content": "fold: bend twice"}, {"uuid": "d-2", "filename": "old.md", "content": "x"}]
    normalize_upload(store, store.put_bytes(key, _export(docs)), DAY, workdir=tmp_path)
    uid = upload_id(key)
    [project] = read_keepsakes(store.download(table_key("projects", DAY, uid), tmp_path / "p.parquet"))
    assert (project["project_key"], project["prompt_template"], project["doc_count"]) == (f"claude-ai:{PROJECT}", "Answer in French.", 2)
    assert store.head(table_key("canvases", DAY, uid)) is None  # (a table the upload has no row of is not written)

    load_graph_partition(store, clean_graph, DAY)
    assert _graph(clean_graph, "MATCH (p:Project)-[r:HAS_DOC]->(d:ProjectDoc) RETURN p.name AS p, r.position AS i, d.filename AS f, "
                               "d.text AS t ORDER BY i") == [
        {"p": "Invented project", "i": 0, "f": "glossary.md", "t": "fold: bend twice"}, {"p": "Invented project", "i": 1, "f": "old.md", "t": "x"}]
    assert _graph(clean_graph, "MATCH (c:Conversation)-[:IN_PROJECT]->(p:Project) RETURN c.conversation_id AS c, p.project_id AS p") == [
        {"c": "c-in", "p": PROJECT}]  # c-out names no project: not linked
    assert _graph(clean_graph, "MATCH (m:Memory) OPTIONAL MATCH (p:Project)-[:HAS_MEMORY]->(m) RETURN m.scope AS s, m.text AS t, "
                               "p.project_id AS p ORDER BY s") == [
        {"s": "account", "t": "Tests widgets.", "p": None}, {"s": "project", "t": "Prefers French.", "p": PROJECT}]

    # the upload replaced: a doc the project no longer has leaves the graph; loaded twice, nothing doubles
    normalize_upload(store, store.put_bytes(key, _export(docs[:1])), DAY, workdir=tmp_path)
    load_graph_partition(store, clean_graph, DAY)
    load_graph_partition(store, clean_graph, DAY)
    assert _graph(clean_graph, "MATCH (d:ProjectDoc) RETURN d.filename AS f") == [{"f": "glossary.md"}]
    assert _graph(clean_graph, "MATCH (n) WHERE n:Project OR n:Memory RETURN count(n) AS n") == [{"n": 3}]

    removed = retract(store, DAY, uid)
    assert table_key("projects", DAY, uid) in removed and table_key("memories", DAY, uid) in removed


def _dated_export(when: str, memory: str) -> bytes:
    """An export made at `when` (its chat updated then, its project too) holding `memory` and a canvas-free account."""
    project = {"uuid": PROJECT, "name": f"Project as of {when}", "updated_at": when, "docs": [
        {"uuid": "d-1", "filename": "notes.md", "content": f"notes as of {when}"}]}
    memories = {"conversations_memory": memory, "account_uuid": "acct-1"}
    chat = _conversation("c-in", project_uuid=PROJECT) | {"updated_at": when}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("conversations.json", json.dumps([chat]))
        zf.writestr("projects.json", json.dumps([project]))
        zf.writestr("memories.json", json.dumps(memories))
    return buf.getvalue()


def _keepsakes_now(driver) -> list[dict[str, object]]:
    return _graph(driver, "MATCH (p:Project) OPTIONAL MATCH (p)-[:HAS_DOC]->(d:ProjectDoc) OPTIONAL MATCH (m:Memory) "
                          "RETURN p.name AS project, collect(DISTINCT d.text) AS docs, collect(DISTINCT m.text) AS memories")


OLD, NEW = "2026-03-01T10:00:05Z", "2026-03-01T12:00:00Z"


@pytest.mark.parametrize("order", [("new", "old"), ("old", "new")])
def test_the_newest_keepsakes_win_and_a_deleted_upload_takes_its_own_away(tmp_path, clean_graph, order):
    store = LocalObjectStore(tmp_path / "bucket")
    keys = {"old": f"raw/{DAY}/old.zip", "new": f"raw/{DAY}/new.zip"}
    exports = {"old": _dated_export(OLD, "Likes tea."), "new": _dated_export(NEW, "Likes coffee.")}
    for name in order:  # one upload loaded after the other, in either order
        normalize_upload(store, store.put_bytes(keys[name], exports[name]), DAY, workdir=tmp_path)
        load_graph_partition(store, clean_graph, DAY)
    newer = [{"project": f"Project as of {NEW}", "docs": [f"notes as of {NEW}"], "memories": ["Likes coffee."]}]
    older = [{"project": f"Project as of {OLD}", "docs": [f"notes as of {OLD}"], "memories": ["Likes tea."]}]
    assert _keepsakes_now(clean_graph) == newer
    load_graph_partition(store, clean_graph, DAY)  # a rerun changes nothing
    assert _keepsakes_now(clean_graph) == newer

    # the newer upload deleted: the older one's state takes over; then the older one: nothing is left
    retract(store, DAY, upload_id(keys["new"]))
    apply_graph_retractions(store, clean_graph, DAY)
    assert _keepsakes_now(clean_graph) == older
    assert _graph(clean_graph, "MATCH (n) WHERE n:Project OR n:Memory RETURN n.uploads AS u") == [{"u": [f"{DAY}/{upload_id(keys['old'])}"]}] * 2
    retract(store, DAY, upload_id(keys["old"]))
    apply_graph_retractions(store, clean_graph, DAY)
    assert _graph(clean_graph, "MATCH (n) WHERE n:Project OR n:ProjectDoc OR n:Memory RETURN count(n) AS n") == [{"n": 1}]  # the bare
    [bare] = _graph(clean_graph, "MATCH (c:Conversation)-[:IN_PROJECT]->(p:Project) RETURN keys(p) AS k")  # project its chat names
    assert sorted(bare["k"]) == ["key", "platform", "project_id"]


@pytest.mark.integration
def test_the_dagster_job_keeps_the_newest_keepsakes_and_drops_a_deleted_uploads(definitions, clean_graph):
    """The same through the job on the real S3 server: an upload deleted from raw/ and the day run again."""
    from dagster import DagsterInstance
    from upload_partitions import run_day as run_groups_of_day

    from chatetl.ingest.index import partition_of

    store = definitions.resources["object_store"].store
    store.put_bytes("raw/a/new.zip", _dated_export(NEW, "Likes coffee."))
    day = partition_of(store.put_bytes("raw/b/old.zip", _dated_export(OLD, "Likes tea.")))

    instance = DagsterInstance.ephemeral()

    def run_day() -> None:  # (each uploader's partition of the day, as the sensor runs them)
        job = definitions.resolve_job_def("ingest_job")
        assert all(result.success for result in run_groups_of_day(job, instance, store, day))

    run_day()
    assert _keepsakes_now(clean_graph) == [{"project": f"Project as of {NEW}", "docs": [f"notes as of {NEW}"], "memories": ["Likes coffee."]}]
    store.delete("raw/a/new.zip")
    run_day()
    assert _keepsakes_now(clean_graph) == [{"project": f"Project as of {OLD}", "docs": [f"notes as of {OLD}"], "memories": ["Likes tea."]}]
    store.delete("raw/b/old.zip")
    run_day()
    assert _graph(clean_graph, "MATCH (n) WHERE n:Project OR n:ProjectDoc OR n:Memory OR n:Conversation RETURN count(n) AS n") == [{"n": 0}]
