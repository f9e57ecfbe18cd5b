"""Idempotency and resyncs against the real Neo4j: twice-run equality, newer states replacing
older ones, out-of-order backfills, one node per conversation across sources (in any order),
interrupted loads, concurrent loads, and logs free of server notifications."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from graph_faults import RETRACT_CONVERSATION, run_while_deleting
from graph_inputs import (
    T0,
    conversation,
    generated,
    graph_dump,
    read,
    rex_record,
    wipe,
    write_inputs,
)

from chatetl.graph.documents import load_documents
from chatetl.graph.load import load_conversations
from chatetl.model import Source
from chatetl.rag.documents import document_for
from chatetl.samples import ChatGPTBuilder

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
TESTS = Path(__file__).resolve().parents[1]  # where graph_inputs.py is


def q(driver, cypher: str, **params):
    records, _, _ = driver.execute_query(cypher, params, database_=DB)
    return [dict(r) for r in records]


def conversation_state(driver, key: str) -> dict:
    """What a person would check: the node, its messages, the thread NEXT walks, orphans."""
    [row] = q(driver, """
        MATCH (c:Conversation {key: $key})
        CALL (c) { MATCH (c)-[:HAS_MESSAGE]->(m:Message) RETURN count(m) AS messages }
        CALL (c) { MATCH (m:Message {conversation_id: c.conversation_id}) WHERE m.platform = c.platform RETURN count(m) AS by_id }
        CALL (c) {
          MATCH (c)-[:HAS_MESSAGE]->(first:Message) WHERE NOT ()-[:NEXT]->(first) AND (first)-[:NEXT]->()
          MATCH path = (first)-[:NEXT*]->(last:Message) WHERE NOT (last)-[:NEXT]->()
          RETURN collect([n IN nodes(path) | n.content]) AS threads
        }
        RETURN c.message_count AS message_count, c.total_messages AS total, c.sources AS sources,
               c.source_files AS source_files, c.state_source AS state_source, c.name AS name,
               messages, by_id, threads
        """, key=key)
    return row


# ----------------------------------------------------------------------------- twice-run equality


def test_loading_every_source_twice_changes_nothing(clean_graph, tmp_path):
    paths = write_inputs(tmp_path)
    convs = [c for p in paths.values() for c in read(p)]

    def run():
        return load_conversations(clean_graph, convs, database=DB, deep=True,
                                  on_batch=lambda b: load_documents(clean_graph, [document_for(c) for c in b], database=DB))

    first = run()
    assert first.conversations_created == len(convs)
    dump = graph_dump(clean_graph, DB)
    second = run()
    assert second.to_dict() == {**{k: 0 for k in second.to_dict()}, "conversations_unchanged": len(convs)}
    assert graph_dump(clean_graph, DB) == dump  # same nodes, relationships and property values


# ----------------------------------------------------------------------------- resyncs


V1 = {"turns": ["q0", "a0", "q1", "a1", "q2", "a2"], "branch_after": 2, "tool_after": 1, "updated": T0 + timedelta(days=1)}
V2 = {"turns": ["q0", "a0", "q1 edited", "a1'", "q2'", "a2'", "q3'"], "ids": ["m0", "m1", "n2", "n3", "n4", "n5", "n6"],
      "updated": T0 + timedelta(days=2)}


def test_a_newer_state_replaces_the_older_one(clean_graph):
    v1 = conversation(conv_id="chat", source_file="export.json", **V1)
    v2 = conversation(conv_id="chat", source_file="export.json", **V2)
    load_conversations(clean_graph, [v2], database=DB)
    only_v2 = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)

    load_conversations(clean_graph, [v1], database=DB)
    before = conversation_state(clean_graph, "chatgpt:chat")
    assert before["messages"] == before["total"] == 9 and before["message_count"] == 6
    summary = load_conversations(clean_graph, [v2], database=DB)
    gone = {m.message_id for m in v1.messages} - {m.message_id for m in v2.messages}
    assert summary.conversations_updated == 1 and summary.messages_removed == len(gone) == 7
    after = conversation_state(clean_graph, "chatgpt:chat")
    assert after["messages"] == after["by_id"] == after["total"] == 7 and after["message_count"] == 7
    assert after["threads"] == [["q0", "a0", "q1 edited", "a1'", "q2'", "a2'", "q3'"]]  # NEXT rebuilt: one thread
    assert graph_dump(clean_graph, DB) == only_v2  # exactly the graph of the newest state alone


def test_an_older_state_loaded_later_never_regresses_but_is_recorded(clean_graph):
    v1 = conversation(conv_id="chat", source_file="old-upload.json", **V1)
    v2 = conversation(conv_id="chat", source_file="new-upload.json", **V2)
    load_conversations(clean_graph, [v2], database=DB)
    only_v2 = graph_dump(clean_graph, DB, ignore=("source_files",))
    summary = load_conversations(clean_graph, [v1], database=DB)
    assert summary.conversations_skipped == 1 and summary.messages_written == 0
    state = conversation_state(clean_graph, "chatgpt:chat")
    assert state["source_files"] == ["new-upload.json", "old-upload.json"]
    assert graph_dump(clean_graph, DB, ignore=("source_files",)) == only_v2
    # and an older state from another format: recorded as a source, nothing else changes
    rex_old = conversation(conv_id="chat", source=Source.REX, source_file="rex.json", **V1)
    assert load_conversations(clean_graph, [rex_old], database=DB).conversations_skipped == 1
    state = conversation_state(clean_graph, "chatgpt:chat")
    assert state["sources"] == ["chatgpt", "rex"] and state["state_source"] == "chatgpt"
    assert state["threads"] == [["q0", "a0", "q1 edited", "a1'", "q2'", "a2'", "q3'"]]


def test_states_of_one_conversation_in_one_load_keep_the_newest(clean_graph):
    v1 = conversation(conv_id="chat", source_file="export.json", **V1)
    v2 = conversation(conv_id="chat", source_file="export.json", **V2)
    summary = load_conversations(clean_graph, [v2, v1, v2], database=DB)
    assert (summary.conversations_created, summary.conversations_skipped, summary.conversations_unchanged) == (1, 1, 1)
    assert conversation_state(clean_graph, "chatgpt:chat")["message_count"] == 7


@pytest.mark.parametrize("parallel", [True, False])
def test_states_of_one_conversation_batches_apart_keep_the_newest(clean_graph, parallel):
    """The next batch's states are read while a batch is written (read ahead): a state of a conversation whose other
    state is in the batch before, or in the one in flight on the second session, is read after that one is written."""
    v1 = conversation(conv_id="chat", source_file="export.json", **V1)
    v2 = conversation(conv_id="chat", source_file="export.json", **V2)
    others = generated(9, 3)
    stream = [others[0], v2, v1, others[1], others[2], v2, others[3], v1, v1, *others[4:]]
    summary = load_conversations(clean_graph, stream, database=DB, batch_messages=4, parallel=parallel)
    assert (summary.conversations_created, summary.conversations_skipped, summary.conversations_unchanged,
            summary.conversations_updated) == (10, 3, 1, 0)
    assert conversation_state(clean_graph, "chatgpt:chat")["message_count"] == 7
    again = load_conversations(clean_graph, [v1, *others, v2], database=DB, batch_messages=4, parallel=parallel)
    assert (again.conversations_created, again.conversations_skipped, again.conversations_unchanged) == (0, 1, 10)
    assert again.graph_updates == 0


# ----------------------------------------------------------------------------- one conversation, one node


def _bake_off_inputs(folder: Path) -> dict[str, Path]:
    """One ChatGPT chat from three sources: a REX record (oldest), the account export, a chat-export file (newest)."""
    b = ChatGPTBuilder("bake-off", "Bake-off notes", 1777593600.0)  # 2026-05-01
    b.text("user", "Which cake wins a bake-off?")
    b.text("assistant", "A lemon drizzle, usually.")
    b.text("user", "And bread?")
    b.text("assistant", "A sourdough.")
    conv_id = b.conv_id
    account = folder / "chatgpt" / "conversations.json"
    account.parent.mkdir(parents=True)
    account.write_text(json.dumps([b.build()]))
    chat_export = folder / "chatgpt-bake-off.json"
    chat_export.write_text(json.dumps({
        "schema": "chat-export/1", "platform": "chatgpt", "url": f"https://chatgpt.com/c/{conv_id}",
        "title": "Bake-off notes, continued", "exported_at": "2026-06-01T00:00:00.000Z", "chat_id": conv_id,
        "updated_at": "2026-06-01T00:00:00.000Z",
        "messages": [
            {"role": "user", "role_tag": "user", "text": "Which cake wins a bake-off?"},
            {"role": "assistant", "role_tag": "chatgpt", "text": "A lemon drizzle, usually."},
            {"role": "user", "role_tag": "user", "text": "And bread?"},
            {"role": "assistant", "role_tag": "chatgpt", "text": "A sourdough."},
            {"role": "user", "role_tag": "user", "text": "And pie?"},
            {"role": "assistant", "role_tag": "chatgpt", "text": "An apple pie."},
        ],
    }))
    rex = folder / "rex.json"
    rex.write_text(json.dumps([rex_record(ident=conv_id, title="Bake-off notes", turns=[
        ("rx-1", "user", "Which cake wins a bake-off?"), ("rx-2", "assistant", "A lemon drizzle, usually.")])]))  # 2026-04-15
    return {"chatgpt": account, "chat-export": chat_export, "rex": rex, "id": conv_id}


ORDERS = [["chatgpt", "chat-export", "rex"], ["rex", "chat-export", "chatgpt"], ["chat-export", "rex", "chatgpt"], ["rex", "chatgpt", "chat-export"]]


def test_one_chat_from_three_sources_is_one_node_whatever_the_order(clean_graph, tmp_path):
    inputs = _bake_off_inputs(tmp_path)
    states = {source: read(inputs[source]) for source in ORDERS[0]}
    assert {c.key for convs in states.values() for c in convs} == {f"chatgpt:{inputs['id']}"}  # the same key from all three
    dumps = []
    for order in ORDERS:
        wipe(clean_graph, DB)
        for source in order:
            load_conversations(clean_graph, states[source], database=DB, deep=True,
                               on_batch=lambda b: load_documents(clean_graph, [document_for(c) for c in b], database=DB))
        [n] = q(clean_graph, "MATCH (c:Conversation) RETURN count(c) AS n")
        assert n["n"] == 1
        state = conversation_state(clean_graph, f"chatgpt:{inputs['id']}")
        assert state["sources"] == ["chat-export", "chatgpt", "rex"] and state["state_source"] == "chat-export"
        assert state["source_files"] == sorted(c.source_file for convs in states.values() for c in convs)
        assert state["name"] == "Bake-off notes, continued"
        # the chat-export file has no message ids ({conversation_id}:{n}): the other sources' messages are gone
        assert state["messages"] == state["by_id"] == state["total"] == state["message_count"] == 6
        assert state["threads"] == [["Which cake wins a bake-off?", "A lemon drizzle, usually.", "And bread?", "A sourdough.",
                                     "And pie?", "An apple pie."]]
        [doc] = q(clean_graph, "MATCH (:Conversation)-[:HAS_DOCUMENT]->(d:Document) RETURN d.arrived_via AS via, d.content AS content, d.title AS title")
        assert doc["via"] == "chat-export" and "An apple pie." in doc["content"] and doc["title"] == "ChatGPT: Bake-off notes, continued"
        dumps.append(graph_dump(clean_graph, DB))
    assert all(d == dumps[0] for d in dumps)  # every order ends in the same graph


def test_the_account_export_replaces_an_older_rex_record_of_the_same_chat(clean_graph, tmp_path):
    inputs = _bake_off_inputs(tmp_path)
    rex, account = read(inputs["rex"]), read(inputs["chatgpt"])
    assert load_conversations(clean_graph, rex, database=DB).conversations_created == 1
    summary = load_conversations(clean_graph, account, database=DB)
    assert summary.conversations_updated == 1 and summary.messages_removed == 2  # the REX turns' ids are not the export's
    state = conversation_state(clean_graph, f"chatgpt:{inputs['id']}")
    assert state["sources"] == ["chatgpt", "rex"] and state["state_source"] == "chatgpt"
    assert state["messages"] == state["by_id"] == state["total"] and state["message_count"] == 4
    assert state["threads"] == [["Which cake wins a bake-off?", "A lemon drizzle, usually.", "And bread?", "A sourdough."]]


@pytest.mark.parametrize("reverse", [False, True])
def test_same_update_time_the_richer_source_wins_in_any_order(clean_graph, reverse):
    same = T0 + timedelta(days=3)
    account = conversation(["q", "a", "q2", "a2"], conv_id="tie", source=Source.CHATGPT, updated=same, source_file="export.json")
    rex = conversation(["q", "a"], conv_id="tie", source=Source.REX, updated=same, ids=["r0", "r1"], source_file="rex.json")
    states = [rex, account] if reverse else [account, rex]
    for s in states:
        load_conversations(clean_graph, [s], database=DB)
    state = conversation_state(clean_graph, "chatgpt:tie")
    assert state["state_source"] == "chatgpt" and state["messages"] == state["by_id"] == 4
    assert state["sources"] == ["chatgpt", "rex"]


def test_same_update_time_same_format_other_files_ends_the_same_in_any_order(clean_graph):
    same = T0 + timedelta(days=3)
    a = conversation(["q", "a"], conv_id="tie", updated=same, source_file="a.json")
    b = conversation(["q", "a different answer"], conv_id="tie", updated=same, source_file="b.json")
    load_conversations(clean_graph, [a], database=DB)
    load_conversations(clean_graph, [b], database=DB)
    ab = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    load_conversations(clean_graph, [b], database=DB)
    load_conversations(clean_graph, [a], database=DB)
    assert graph_dump(clean_graph, DB) == ab


def test_rereading_the_same_file_with_other_content_updates(clean_graph):
    """Same file, same update time, other content (e.g. a reader fix): the new reading replaces."""
    same = T0 + timedelta(days=3)
    load_conversations(clean_graph, [conversation(["q", "a"], conv_id="fix", updated=same)], database=DB)
    summary = load_conversations(clean_graph, [conversation(["q", "a, read better"], conv_id="fix", updated=same)], database=DB)
    assert summary.conversations_updated == 1
    assert conversation_state(clean_graph, "chatgpt:fix")["threads"] == [["q", "a, read better"]]


def test_the_same_id_on_two_platforms_never_collides(clean_graph):
    a = conversation(["hello", "hi"], conv_id="shared-id", platform="grok")
    b = conversation(["bonjour", "salut", "ça va?", "oui"], conv_id="shared-id", platform="claude-ai")
    load_conversations(clean_graph, [a, b], database=DB)
    rows = q(clean_graph, """
        MATCH (c:Conversation {conversation_id: 'shared-id'})
        RETURN c.key AS key, c.source AS source, c.message_count AS n, COUNT { (c)-[:HAS_MESSAGE]->() } AS messages
        ORDER BY key
        """)
    assert rows == [{"key": "claude-ai:shared-id", "source": "claude-ai", "n": 4, "messages": 4},
                    {"key": "grok:shared-id", "source": "grok", "n": 2, "messages": 2}]


def test_documents_follow_the_winning_state_and_attach_in_any_order(clean_graph):
    v1 = conversation(conv_id="doc", source_file="a.json", **V1)
    v2 = conversation(conv_id="doc", source_file="b.json", **V2)
    assert load_documents(clean_graph, [document_for(v2)], database=DB) == 1  # before its conversation exists
    load_conversations(clean_graph, [v2], database=DB)
    assert load_documents(clean_graph, [document_for(v1)], database=DB) == 0  # an older state's document never wins
    assert load_documents(clean_graph, [document_for(v2)], database=DB) == 0  # unchanged: nothing written
    [row] = q(clean_graph, "MATCH (c:Conversation)-[:HAS_DOCUMENT]->(d:Document) RETURN c.key AS key, d.content AS content")
    assert row["key"] == "chatgpt:doc" and "q3'" in row["content"]


def test_nodes_that_outlived_their_conversation_are_written_over(clean_graph):
    conv = conversation(["q", "a", "q2", "a2"], conv_id="orphaned", tool_after=1)
    load_conversations(clean_graph, [conv], database=DB, deep=True)
    expected = graph_dump(clean_graph, DB)
    clean_graph.execute_query("MATCH (c:Conversation) DETACH DELETE c", database_=DB)  # by hand: messages and trace left behind
    summary = load_conversations(clean_graph, [conv], database=DB, deep=True)
    assert summary.conversations_created == 1
    assert graph_dump(clean_graph, DB) == expected


# ----------------------------------------------------------------------------- interrupted loads


KILL_CONVERSATIONS, KILL_TURNS = 400, 12
_LOADER = """
import sys
sys.path.insert(0, {tests!r})
from graph_inputs import generated
from chatetl.graph.connection import open_driver
from chatetl.graph.load import load_conversations
driver = open_driver()
load_conversations(driver, generated({n}, {turns}), database={db!r}, batch_messages=100, deep=True)
print("finished")
"""


def _uninterrupted(driver, convs) -> dict:
    wipe(driver, DB)
    load_conversations(driver, convs, database=DB, batch_messages=100, deep=True)
    return graph_dump(driver, DB)


def _whole_conversations_only(driver) -> int:
    rows = q(driver, "MATCH (c:Conversation) RETURN c.total_messages AS total, COUNT { (c)-[:HAS_MESSAGE]->() } AS n")
    assert all(r["total"] == r["n"] for r in rows)  # a batch commits whole: no half-written conversation
    return len(rows)


def test_a_load_killed_halfway_and_rerun_ends_in_the_same_graph(clean_graph):
    convs = generated(KILL_CONVERSATIONS, KILL_TURNS)
    code = _LOADER.format(tests=str(TESTS), n=KILL_CONVERSATIONS, turns=KILL_TURNS, db=DB)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ))
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            [row] = q(clean_graph, "MATCH (c:Conversation) RETURN count(c) AS n")
            if row["n"] >= KILL_CONVERSATIONS // 4:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the load ended before it could be killed: {proc.communicate()}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    loaded = _whole_conversations_only(clean_graph)
    assert 0 < loaded < KILL_CONVERSATIONS

    summary = load_conversations(clean_graph, convs, database=DB, batch_messages=100, deep=True)
    assert summary.conversations_unchanged == loaded and summary.conversations_created == KILL_CONVERSATIONS - loaded
    rerun = graph_dump(clean_graph, DB)
    assert rerun == _uninterrupted(clean_graph, convs)


def test_a_load_failing_after_some_batches_and_rerun_ends_in_the_same_graph(clean_graph):
    convs = generated(120, 10)

    def failing():
        for i, c in enumerate(convs):
            if i == 75:
                raise ConnectionError("the source went away")
            yield c

    with pytest.raises(ConnectionError):
        load_conversations(clean_graph, failing(), database=DB, batch_messages=100, deep=True)
    loaded = _whole_conversations_only(clean_graph)
    assert 0 < loaded < 75
    load_conversations(clean_graph, convs, database=DB, batch_messages=100, deep=True)
    assert graph_dump(clean_graph, DB) == _uninterrupted(clean_graph, convs)


# ----------------------------------------------------------------------------- concurrent loads


def test_two_loads_writing_the_same_conversations_at_once_keep_the_newest(clean_graph):
    old, new = generated(80, 4), generated(80, 4, version=1)
    errors: list[BaseException] = []

    def run(convs):
        try:
            load_conversations(clean_graph, convs, database=DB, batch_messages=1)  # one conversation per transaction: most interleaving
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,)) for c in (old, new, list(reversed(old)), list(reversed(new)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    # every load ended (one still running would write on into the tests after this one: a failed transaction's
    # rollback once probed a connection another load was reading, which then waited for its socket's 120 s timeout;
    # chatetl.graph.connection.GraphSession, tests/graph/test_released_connection.py)
    assert not any(t.is_alive() for t in threads)
    assert not errors
    both = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    load_conversations(clean_graph, new, database=DB)
    assert both == graph_dump(clean_graph, DB)


# ----------------------------------------------------------------------------- quiet logs


def test_loads_leave_no_server_notifications_in_the_logs(clean_graph, tmp_path, caplog):
    paths = write_inputs(tmp_path)
    convs = [c for p in paths.values() for c in read(p)]
    clean_graph.execute_query("DROP CONSTRAINT conversation_key IF EXISTS", database_=DB)  # the load creates it again
    with caplog.at_level(logging.DEBUG, logger="neo4j.notifications"):
        for deep in (True, False, True):
            load_conversations(clean_graph, convs, database=DB, deep=deep,
                               on_batch=lambda b: load_documents(clean_graph, [document_for(c) for c in b], database=DB))
        v1 = conversation(conv_id="chat", **V1)
        v2 = conversation(conv_id="chat", **V2)
        load_conversations(clean_graph, [v1], database=DB, deep=True)
        load_conversations(clean_graph, [v2], database=DB, deep=True)
    notes = [r.getMessage() for r in caplog.records if r.name == "neo4j.notifications"]
    assert notes == []


def test_a_conversation_retracted_while_its_upsert_waits_for_its_lock_is_written_anew(clean_graph):
    """A newer state's upsert MERGE matches the Conversation while a retraction's transaction deletes it; once the
    delete commits the node reads as nulls and its messages cannot link to it (the whole conversation failed, with
    'node is missing'; in a batch of several, only splitting the batch wrote it again). The batch is written again, the
    Conversation made anew: the graph of a clean load of it."""
    v1, v2 = generated(1, 6), generated(1, 6, version=1)
    load_conversations(clean_graph, v1, database=DB)
    summary = run_while_deleting(clean_graph, RETRACT_CONVERSATION, {"key": v1[0].key}, "MERGE (c:Conversation",
                                 lambda: load_conversations(clean_graph, v2, database=DB))
    assert summary.conversations_failed == 0 and summary.failures == []
    assert summary.conversations_created == 1 and summary.messages_written == len(v2[0].messages)
    expected = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    load_conversations(clean_graph, v2, database=DB)
    assert graph_dump(clean_graph, DB) == expected
