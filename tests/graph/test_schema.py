"""The seed schema for every source, against the real Neo4j: the seed's four example queries,
the seed's property names and values, keys, constraints and indexes.

One export per source format (ChatGPT account export, Claude.ai export, a chat-export file of
a Grok chat, a ShareGPT dataset, a REX record of a ChatGPT chat, a Claude Code session) is read
through the real readers and loaded once, with its Documents, in deep mode.
"""

from __future__ import annotations

import os
import re

import pytest
from graph_inputs import EXPECTED, LONG_PASTE, read, wipe, write_inputs

from chatetl.graph.documents import load_documents
from chatetl.graph.load import load_conversations
from chatetl.graph.properties import CONTENT_LIMIT, MOVED_OFF_MESSAGE
from chatetl.graph.schema import CONSTRAINTS, INDEXES, ensure_schema
from chatetl.labels import chat_title
from chatetl.rag.documents import document_for
from chatetl.readers.platform_names import platform_label
from chatetl.readers.timeutil import iso

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
SOURCES = sorted(EXPECTED)
ALL = [dict(conv, arrived_via=source) for source in SOURCES for conv in EXPECTED[source]]


@pytest.fixture(scope="module")
def loaded(neo4j_driver, tmp_path_factory):
    """Every source loaded into an empty graph; the conversations as read, by source."""
    wipe(neo4j_driver, DB)
    paths = write_inputs(tmp_path_factory.mktemp("graph-inputs"))
    read_back = {source: read(path) for source, path in paths.items()}
    convs = [c for source in SOURCES for c in read_back[source]]

    def docs(batch):
        load_documents(neo4j_driver, [document_for(c) for c in batch], database=DB)

    summary = load_conversations(neo4j_driver, convs, database=DB, deep=True, on_batch=docs)
    assert summary.conversations_created == len(convs) == len(ALL)
    yield neo4j_driver, read_back
    wipe(neo4j_driver, DB)


def q(driver, cypher: str, **params):
    records, _, _ = driver.execute_query(cypher, params, database_=DB)
    return [dict(r) for r in records]


def conv_id_of(driver, expected: dict) -> str:
    if "id" in expected:
        return expected["id"]
    [row] = q(driver, "MATCH (c:Conversation {name: $name, source: $platform}) RETURN c.conversation_id AS id", **expected)
    return row["id"]


# ----------------------------------------------------------------------------- the seed's four queries


@pytest.mark.parametrize("source", SOURCES)
def test_seed_query_conversations_of_a_platform(loaded, source):
    driver, read_back = loaded
    for platform in sorted({c["platform"] for c in EXPECTED[source]}):
        rows = q(driver, """
            MATCH (c:Conversation) WHERE c.source = $platform
            RETURN c.name, c.message_count, c.created_at ORDER BY c.created_at DESC
            """, platform=platform)
        # every conversation of that platform, however it arrived (a REX record of a ChatGPT chat is `chatgpt`)
        expected = {(c["name"], len(c["turns"])) for c in ALL if c["platform"] == platform}
        assert {(r["c.name"], r["c.message_count"]) for r in rows} == expected
        assert len(rows) == len(expected)
        created = [r["c.created_at"] for r in rows]
        assert created == sorted(created, reverse=True)
        of_source = {chat_title(c.title): iso(c.created_at) for c in read_back[source] if c.platform == platform}
        assert {r["c.name"]: r["c.created_at"] for r in rows if r["c.name"] in of_source} == of_source


@pytest.mark.parametrize("conv", ALL, ids=[c["name"][:40] for c in ALL])
def test_seed_query_full_message_thread(loaded, conv):
    driver, _ = loaded
    rows = q(driver, """
        MATCH path = (first:Message)-[:NEXT*]->(last:Message)
        WHERE first.conversation_id = $conv_id AND NOT ()-[:NEXT]->(first)
        RETURN [n IN nodes(path) | {role: n.role, content: left(n.content, 200)}] AS thread
        """, conv_id=conv_id_of(driver, conv))
    expected = [{"role": role, "content": text[:200]} for role, text in conv["turns"]]
    threads = sorted((r["thread"] for r in rows), key=len)
    # one thread: the seed's query returns each prefix of it, the longest being the whole thread
    assert threads == [expected[: n + 1] for n in range(1, len(expected))]


def test_seed_query_cross_platform_count(loaded):
    driver, _ = loaded
    rows = q(driver, """
        MATCH (c:Conversation)
        RETURN c.source, count(c) AS conversations, sum(c.message_count) AS total_messages
        """)
    expected: dict[str, tuple[int, int]] = {}
    for c in ALL:
        n, total = expected.get(c["platform"], (0, 0))
        expected[c["platform"]] = (n + 1, total + len(c["turns"]))
    assert {r["c.source"]: (r["conversations"], r["total_messages"]) for r in rows} == expected
    assert set(expected) == {"chatgpt", "claude-ai", "grok", "unknown", "claude-code"}


@pytest.mark.parametrize("conv", ALL, ids=[c["name"][:40] for c in ALL])
def test_seed_query_search_documents(loaded, conv):
    driver, read_back = loaded
    rows = q(driver, """
        MATCH (d:Document) WHERE d.template_id = 'chat-import' AND d.content CONTAINS $search_term
        RETURN d.title, d.source, d.created_at ORDER BY d.created_at DESC
        """, search_term=conv["search"])
    [model] = [c for c in read_back[conv["arrived_via"]] if c.conversation_id == conv_id_of(driver, conv)]
    assert rows == [{"d.title": f"{platform_label(conv['platform'])}: {chat_title(model.title)}", "d.source": conv["platform"],
                     "d.created_at": iso(model.created_at)}]


# ----------------------------------------------------------------------------- properties


@pytest.mark.parametrize("conv", ALL, ids=[c["name"][:40] for c in ALL])
def test_conversation_and_message_properties(loaded, conv):
    driver, read_back = loaded
    cid = conv_id_of(driver, conv)
    [model] = [c for c in read_back[conv["arrived_via"]] if c.conversation_id == cid]
    [c] = q(driver, "MATCH (c:Conversation {key: $key}) RETURN properties(c) AS p", key=f"{conv['platform']}:{cid}")
    p = c["p"]
    assert p["name"] == conv["name"] and p["conversation_id"] == cid and p["source"] == conv["platform"]
    assert p.get("created_at") == iso(model.created_at) and p.get("updated_at") == iso(model.updated_at)
    assert p["message_count"] == len(conv["turns"]) and p["total_messages"] == len(model.messages)
    assert p.get("model_slug") == model.model
    assert p["sources"] == [conv["arrived_via"]] and p["state_source"] == conv["arrived_via"]
    assert p["source_files"] == [model.source_file] and p["source_files"][0]
    assert "_lock" not in p

    messages = q(driver, """
        MATCH (:Conversation {key: $key})-[:HAS_MESSAGE]->(m:Message) RETURN properties(m) AS p
        """, key=p["key"])
    assert len(messages) == len(model.messages)
    by_id = {m.message_id: m for m in model.messages}
    for row in messages:
        mp = row["p"]
        m = by_id[mp["message_id"]]
        assert mp["conversation_id"] == cid and mp["role"] == m.role.value and mp["kind"] == m.kind.value
        assert mp["content"] == m.text[:CONTENT_LIMIT] and mp["content_length"] == len(m.text)
        assert mp["content_truncated"] is (len(m.text) > CONTENT_LIMIT)
        assert mp["has_tool_calls"] is bool(m.tool_calls) and mp["has_tool_results"] is bool(m.tool_results)
        assert mp.get("created_at") == iso(m.created_at) and mp.get("model_slug") == m.model
        assert mp["on_active_branch"] is m.on_active_branch and mp.get("seq") == m.seq
        assert re.fullmatch(r"msg-\S{1,40}", mp["name"])
    names = [row["p"]["name"] for row in messages]
    assert len(set(names)) == len(names)  # derived ids ({conversation_id}:{n}) still get distinct names


def test_message_name_is_msg_and_the_first_12_characters_of_its_id(loaded):
    driver, _ = loaded
    rows = q(driver, "MATCH (m:Message {conversation_id: $cid}) RETURN m.message_id AS id, m.name AS name", cid=EXPECTED["claude-code"][0]["id"])
    assert rows and all(r["name"] == f"msg-{r['id'][:12]}" for r in rows)
    grok = EXPECTED["chat-export"][0]["id"]
    rows = q(driver, "MATCH (m:Message {conversation_id: $cid}) RETURN m.name AS name ORDER BY m.seq", cid=grok)
    assert [r["name"] for r in rows] == [f"msg-{grok[:12]}-{i}" for i in range(4)]


def test_content_is_cut_at_2000_characters_and_says_so(loaded):
    driver, _ = loaded
    [row] = q(driver, "MATCH (m:Message) WHERE m.content_truncated RETURN m.content AS content, m.content_length AS length")
    assert row["content"] == LONG_PASTE[:2000] and row["length"] == len(LONG_PASTE) > 2000
    [doc] = q(driver, "MATCH (:Conversation)-[:HAS_DOCUMENT]->(d:Document) WHERE d.content CONTAINS 'word599' RETURN d.content AS content")
    assert LONG_PASTE in doc["content"]  # nothing lost: the full text is in the Document


def test_abandoned_branch_stays_reachable_but_off_the_thread(loaded):
    driver, read_back = loaded
    [row] = q(driver, """
        MATCH (alt:Message {message_id: 'cw-a0'})-[:REPLIES_TO]->(parent:Message)
        RETURN alt.on_active_branch AS active, alt.seq AS seq, parent.message_id AS parent,
               COUNT { (alt)-[:NEXT]-() } AS next_links
        """)
    assert row == {"active": False, "seq": None, "parent": "cw-h1", "next_links": 0}
    # REPLIES_TO: every message with a parent (in its conversation), on every branch
    counts = q(driver, """
        MATCH (c:Conversation)
        RETURN c.key AS key, COUNT { (c)-[:HAS_MESSAGE]->(:Message)-[:REPLIES_TO]->() } AS replies
        """)
    with_parent = {}
    for conv in (c for convs in read_back.values() for c in convs):
        ids = {m.message_id for m in conv.messages}
        with_parent[conv.key] = sum(1 for m in conv.messages if m.parent_id in ids)
    assert counts and {r["key"]: r["replies"] for r in counts} == with_parent
    assert not q(driver, "MATCH (m:Message) WHERE m.parent_key IS NOT NULL OR m.next_key IS NOT NULL RETURN m.key")  # off the node
    assert not q(driver, "MATCH (m:Message) WHERE any(k IN keys(m) WHERE k IN $moved) RETURN m.key", moved=list(MOVED_OFF_MESSAGE))


def test_every_message_hangs_off_its_conversation_and_documents_attach(loaded):
    driver, read_back = loaded
    [row] = q(driver, """
        CALL () { MATCH (m:Message) RETURN count(m) AS messages }
        CALL () { MATCH (:Conversation)-[:HAS_MESSAGE]->(m:Message) RETURN count(DISTINCT m) AS attached }
        CALL () { MATCH (c:Conversation)-[:HAS_DOCUMENT]->(d:Document) WHERE d.key = c.key RETURN count(d) AS documents }
        RETURN messages, attached, documents
        """)
    assert row["messages"] == row["attached"] == sum(len(c.messages) for convs in read_back.values() for c in convs)
    assert row["documents"] == len(ALL)
    docs = q(driver, "MATCH (d:Document) RETURN d.source AS source, d.template_id AS t, d.template_name AS name")
    assert {(d["source"], d["t"], d["name"]) for d in docs} == {
        (c["platform"], "chat-import", f"{platform_label(c['platform'])} Conversation") for c in ALL}


# ----------------------------------------------------------------------------- keys, constraints, indexes


def test_constraints_and_indexes_exist_and_creating_them_again_is_a_no_op(loaded):
    driver, _ = loaded
    ensure_schema(driver, DB)
    ensure_schema(driver, DB)
    constraints = {r["name"]: (r["labelsOrTypes"], r["properties"], r["type"]) for r in q(driver, "SHOW CONSTRAINTS")}
    assert constraints["conversation_key"] == (["Conversation"], ["key"], "UNIQUENESS")
    assert constraints["message_key"] == (["Message"], ["key"], "UNIQUENESS")
    assert constraints["document_key"] == (["Document"], ["key"], "UNIQUENESS")
    assert constraints["trace_id"] == (["DecisionTrace"], ["id"], "UNIQUENESS")
    assert constraints["trace_step_key"] == (["TraceStep"], ["key"], "UNIQUENESS")
    indexes = {r["name"]: r["state"] for r in q(driver, "SHOW INDEXES")}
    assert set(CONSTRAINTS) | set(INDEXES) <= set(indexes)
    assert all(indexes[name] == "ONLINE" for name in set(CONSTRAINTS) | set(INDEXES))
