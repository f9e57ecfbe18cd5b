"""A Conversation's Document (and its chunks) follow the state that won in the graph,
whatever the load order, also when two states tie on update time and format."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from graph_inputs import T0, conversation, wipe

from chatetl.graph.documents import load_documents
from chatetl.graph.load import load_conversations
from chatetl.model import newest
from chatetl.rag.documents import document_for

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None


def _load(driver, convs):
    for c in convs:
        load_conversations(driver, [c], database=DB, on_batch=lambda b: load_documents(driver, [document_for(x) for x in b], database=DB))


def _state(driver):
    records, _, _ = driver.execute_query(
        "MATCH (c:Conversation)-[:HAS_DOCUMENT]->(d:Document) "
        "MATCH (c)-[:HAS_MESSAGE]->(m:Message {seq: 1}) RETURN m.content AS answer, d.content AS content",
        database_=DB,
    )
    [row] = [dict(r) for r in records]
    return row


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_tied_states_document_matches_the_graph_whatever_the_order(clean_graph, order):
    when = T0 + timedelta(days=1)
    # the same chat from two files of one format, same update time, different text (e.g. .json and .md)
    states = [
        conversation(["q", "answer one"], updated=when, source_file="a.json"),
        conversation(["q", "answer two"], updated=when, source_file="b.md"),
    ]
    _load(clean_graph, [states[i] for i in order])
    row = _state(clean_graph)
    assert row["answer"] in row["content"]  # the Document holds the text of the state that won


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_tied_states_in_one_documents_batch_leave_the_winners_chunks(clean_graph, order):
    from chatetl.rag.partition import DocumentsResult, process_documents

    when = T0 + timedelta(days=1)
    states = [
        conversation(["q", "answer one"], updated=when, source_file="a.json"),
        conversation(["q", "answer two"], updated=when, source_file="b.md"),
    ]
    load_conversations(clean_graph, states, database=DB)  # the graph stage first (as the assets run)
    process_documents(clean_graph, [states[i] for i in order], DocumentsResult(), database=DB)
    records, _, _ = clean_graph.execute_query(
        "MATCH (c:Conversation)-[:HAS_DOCUMENT]->(d:Document) OPTIONAL MATCH (d)-[:HAS_CHUNK]->(k:Chunk) "
        "MATCH (c)-[:HAS_MESSAGE]->(m:Message {seq: 1}) RETURN m.content AS answer, d.content AS content, collect(k.text) AS chunks",
        database_=DB,
    )
    [row] = [dict(r) for r in records]
    assert row["answer"] in row["content"]
    assert row["chunks"] == [row["content"]]  # the Document's own text, chunked


def test_without_a_conversation_the_document_of_the_winning_state_stays_whatever_the_order(clean_graph):
    when = T0 + timedelta(days=1)
    states = [
        conversation(["q", "answer one"], updated=when, source_file="a.json"),
        conversation(["q", "answer two"], updated=when, source_file="b.md"),
    ]
    kept = []
    for order in ((0, 1), (1, 0)):
        wipe(clean_graph, DB)
        for i in order:  # the documents stage without the graph stage: no Conversation to follow
            load_documents(clean_graph, [document_for(states[i])], database=DB)
        records, _, _ = clean_graph.execute_query("MATCH (d:Document) RETURN d.content AS content", database_=DB)
        kept.append([r["content"] for r in records])
    assert kept[0] == kept[1] == [document_for(newest(states))["content"]]
