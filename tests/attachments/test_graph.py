"""The graph says what the tables say of attachments: on the Message, their names, the files stored and
how many the export did not contain."""

from __future__ import annotations

import os

import pytest
from attachments.layouts import chatgpt_zip, conversations, ingested, png

from chatetl.graph.load import load_conversations
from chatetl.storage import LocalObjectStore

DB = os.environ.get("NEO4J_DATABASE")


@pytest.mark.integration
def test_message_nodes_carry_attachment_names_files_and_missing(clean_graph, tmp_path):
    import hashlib

    store = LocalObjectStore(tmp_path)
    (conv,) = conversations(store, ingested(store, "raw/chatgpt.zip", chatgpt_zip()))
    load_conversations(clean_graph, [conv], database=DB)
    rows, _, _ = clean_graph.execute_query(
        "MATCH (m:Message) WHERE m.attachment_names IS NOT NULL "
        "RETURN m.role AS role, m.kind AS kind, m.attachment_names AS names, m.attachment_files AS files, m.attachments_missing AS missing",
        database_=DB)
    user = next(r for r in rows if r["role"] == "user")
    assert user["names"] == ["photo.png", "Screenshot.png", "lost.png"] and user["missing"] == 1
    assert user["files"] == [hashlib.sha256(png(1)).hexdigest(), hashlib.sha256(png(2)).hexdigest()]
    reply = [r for r in rows if r["role"] == "assistant" and r["kind"] == "turn"]
    assert [r["files"] for r in reply] == [[hashlib.sha256(png(3)).hexdigest()]]
    plain, _, _ = clean_graph.execute_query("MATCH (m:Message) WHERE m.attachment_names IS NULL RETURN count(m) AS n", database_=DB)
    assert plain[0]["n"] > 0  # (no property at all on a message without attachments)
