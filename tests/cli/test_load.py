"""`chatetl load INPUT...` against the real Neo4j (and the real S3 server for s3:// inputs)."""

from __future__ import annotations

import json
import os
import re

import pytest
from click.testing import CliRunner
from graph_inputs import EXPECTED, write_inputs

from chatetl.cli import main
from chatetl.samples import chatgpt_export

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
CONVERSATIONS = sum(len(v) for v in EXPECTED.values())
WITH_TOOLS = sum(1 for v in EXPECTED.values() for c in v if c.get("tools"))


def run(*args: str, **env: str):
    result = CliRunner().invoke(main, ["load", *args], env=env or None)
    summary = json.loads(result.stdout.strip().splitlines()[-1]) if result.stdout.strip() else None
    return result, summary


def q(driver, cypher: str, **params):
    records, _, _ = driver.execute_query(cypher, params, database_=DB)
    return [dict(r) for r in records]


def test_load_every_source_with_documents_and_report_a_bad_input(clean_graph, tmp_path):
    write_inputs(tmp_path / "in")
    bad = tmp_path / "broken.json"
    bad.write_text('{"not": "a chat"')
    result, summary = run(str(tmp_path / "in"), str(bad), CHATETL_GRAPH_DEEP="")
    assert result.exit_code == 1  # an input had errors ...
    assert "broken.json" in result.stderr
    assert summary["conversations_created"] == summary["conversations_read"] == CONVERSATIONS  # ... the good ones still loaded
    assert summary["documents_written"] == CONVERSATIONS and summary["errors"] == 1 and summary["deep"] is False
    assert summary["traces_written"] == 0 and summary["messages_written"] > 0
    [row] = q(clean_graph, "MATCH (c:Conversation) RETURN count(c) AS n, COUNT { (:Conversation)-[:HAS_DOCUMENT]->(:Document) } AS docs")
    assert row == {"n": CONVERSATIONS, "docs": CONVERSATIONS}

    # deep mode from the environment: the same states again, now with their traces
    result, summary = run(str(tmp_path / "in"), CHATETL_GRAPH_DEEP="1")
    assert result.exit_code == 0, result.stderr
    assert summary["deep"] is True and summary["conversations_updated"] == CONVERSATIONS
    assert summary["traces_written"] == WITH_TOOLS and summary["documents_written"] == 0 and summary["messages_removed"] == 0

    result, summary = run(str(tmp_path / "in"), "--deep")
    assert result.exit_code == 0
    assert summary["conversations_unchanged"] == CONVERSATIONS
    assert {k: v for k, v in summary.items() if k.startswith(("messages_", "trace", "documents_"))} == {
        "messages_written": 0, "messages_removed": 0, "traces_written": 0, "trace_steps_written": 0, "traces_removed": 0,
        "documents_written": 0, "documents_failed": 0}
    assert summary["chunks_written"] == 0
    [row] = q(clean_graph, "MATCH (t:DecisionTrace) RETURN count(t) AS n")
    assert row["n"] == WITH_TOOLS


def test_load_from_the_bucket(clean_graph, s3_store, s3_bucket):
    s3_store.put_bytes("raw/2026/export.zip", chatgpt_export())
    result, summary = run(f"s3://{s3_bucket}/raw/")
    assert result.exit_code == 0, result.stderr
    assert summary["files"] == 2 and summary["conversations_created"] == 3 and summary["documents_written"] == 3
    assert summary["chunks_written"] >= 3
    # the chunks are searchable through the full-text index, as after the Dagster documents asset
    hits = q(clean_graph, "CALL db.index.fulltext.queryNodes('chunk_text', 'legroom') YIELD node "
                          "MATCH (d:Document)-[:HAS_CHUNK]->(node) RETURN d.title AS title")
    assert [h["title"] for h in hits] == ["ChatGPT: Planning a rail trip"]


def test_an_unreachable_graph_fails_clearly_without_leaking_the_password(tmp_path):
    write_inputs(tmp_path)
    result, summary = run(str(tmp_path / "rex.json"), NEO4J_URI="bolt://127.0.0.1:9", NEO4J_PASSWORD="s3cret-test-value")
    assert result.exit_code == 2 and summary is None
    assert "bolt://127.0.0.1:9" in result.stderr and "s3cret-test-value" not in result.stderr + result.stdout


def test_load_shows_progress_on_request_and_its_summary_is_the_same(clean_graph, tmp_path):
    write_inputs(tmp_path / "in")
    result, summary = run(str(tmp_path / "in"), "--progress", CHATETL_GRAPH_DEEP="")
    assert result.exit_code == 0, result.stderr
    assert summary["conversations_created"] == CONVERSATIONS
    # the bar's last state on stderr: every conversation read, the bytes, the time
    assert re.search(rf"load .* kB {CONVERSATIONS} conversations [\d,]+/s \d+:\d\d:\d\d", result.stderr), result.stderr
    again, unchanged = run(str(tmp_path / "in"), CHATETL_GRAPH_DEEP="")  # no terminal: nothing on stderr
    assert again.exit_code == 0 and again.stderr == "" and unchanged["conversations_unchanged"] == CONVERSATIONS


def test_load_keeps_what_an_export_holds_beside_its_chats_linked_only_where_it_says(clean_graph, tmp_path):
    import io
    import zipfile

    from chatetl.samples import claude_export

    project = "p0000000-0000-4000-8000-000000000001"
    linked = {"uuid": "c-linked", "name": "In a project", "project_uuid": project, "created_at": "2026-03-01T10:00:00Z",
              "updated_at": "2026-03-01T10:00:05Z", "chat_messages": [
                  {"uuid": "h", "sender": "human", "text": "Hi", "content": [{"type": "text", "text": "Hi"}], "created_at": "2026-03-01T10:00:00Z"},
                  {"uuid": "a", "sender": "assistant", "text": "Hello", "content": [{"type": "text", "text": "Hello"}],
                   "parent_message_uuid": "h", "created_at": "2026-03-01T10:00:05Z"}]}
    (tmp_path / "claude.zip").write_bytes(claude_export())  # a project and memories; its conversation names no project
    (tmp_path / "linked.json").write_text(json.dumps(linked))  # an API-shaped conversation naming one
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("projects.json", json.dumps([{"uuid": project, "name": "Named", "is_private": False, "docs": []}]))
    (tmp_path / "projects.zip").write_bytes(buf.getvalue())
    result, summary = run(str(tmp_path / "claude.zip"), str(tmp_path / "linked.json"), str(tmp_path / "projects.zip"), "--no-documents")
    assert result.exit_code == 0, result.stderr
    assert summary["kept"] == {"IN_PROJECT": 1, "Memory": 2, "Project": 2, "ProjectDoc": 1}
    assert q(clean_graph, "MATCH (c:Conversation)-[:IN_PROJECT]->(p:Project) RETURN c.conversation_id AS c, p.name AS p") == [
        {"c": "c-linked", "p": "Named"}]
    assert q(clean_graph, "MATCH (p:Project)-[:HAS_DOC]->(d:ProjectDoc) RETURN p.name AS p, d.filename AS f") == [
        {"p": "Baking", "f": "hydration.md"}]


def test_of_two_loads_of_one_keepsake_the_later_read_wins(clean_graph, tmp_path):
    """A keepsake with no time of its own, loaded from two exports by `chatetl load`: the state the
    later load read is kept, whichever of the two it is (not the one whose hash sorts higher)."""
    import io
    import zipfile

    project = "p0000000-0000-4000-8000-000000000002"

    def projects_zip(name: str) -> str:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("projects.json", json.dumps([{"uuid": project, "name": name, "is_private": False, "docs": []}]))
        path = tmp_path / f"{name}.zip"
        path.write_bytes(buf.getvalue())
        return str(path)

    first, second = projects_zip("First"), projects_zip("Second")
    for earlier, later, kept in ((first, second, "Second"), (second, first, "First")):
        for path in (earlier, later):
            result, _ = run(path, "--no-documents")
            assert result.exit_code == 0, result.stderr
        assert q(clean_graph, "MATCH (p:Project {project_id: $id}) RETURN p.name AS name", id=project) == [{"name": kept}]
