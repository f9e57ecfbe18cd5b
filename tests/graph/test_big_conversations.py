"""Conversations too big for one transaction, and conversations the server refuses, against the real Neo4j.

A conversation of 50,000 messages was written in one transaction and exhausted Neo4j's
transaction memory; the graph step retried for minutes and failed, so nothing else of its day
reached the graph (issue 14, item 1). Here: the same conversation loads in bounded transactions
(the server's own estimate of each transaction's memory, chatetl.graph.connection.write_measured),
a load killed in any of its transactions and run again ends in the same graph as a clean load
(and no reader ever sees a half-written state that is not marked as being swapped in), and one
conversation the server refuses fails alone: the rest of its batch and its day load, the failure
is reported, and a rerun tries only it again.
"""

from __future__ import annotations

import os
import threading
import time
from datetime import timedelta

import pytest
from graph_faults import RETRACT_CONVERSATION, DyingDriver, Killed, run_while_deleting
from graph_inputs import T0, conversation, generated, graph_dump, wipe

from chatetl.graph.connection import TransactionTooBig, write_measured, write_session
from chatetl.graph.load import load_conversations
from chatetl.graph.retract import retract_conversations
from chatetl.model import (
    Conversation,
    Message,
    MessageKind,
    Role,
    Source,
    ToolCall,
    ToolResult,
)
from chatetl.readers.tree import resolve_branches

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
MiB = 1 << 20


def q(driver, cypher: str, **params):
    records, _, _ = driver.execute_query(cypher, params, database_=DB)
    return [dict(r) for r in records]


def big_conversation(messages: int, *, version: int = 0, conv_id: str = "huge", text: int = 400, tools_every: int = 0,
                     branch: bool = True) -> Conversation:
    """One long chat: alternating turns of about `text` characters (the last reworded in a newer `version`, which
    also has one more turn), a tool call and its result every `tools_every` turns, and an abandoned answer."""
    msgs: list[Message] = []
    parent = None
    filler = "lorem ipsum dolor sit amet " * (text // 27 + 1)
    for i in range(messages + version):
        mid = f"m{i}"
        words = f"turn {i} of {conv_id}" + (f", reworded in v{version}" if version and i >= messages - 1 else "")
        if tools_every and i % tools_every == 1:
            call, result = f"{mid}-call", f"{mid}-result"
            msgs.append(Message(message_id=call, parent_id=parent, role=Role.ASSISTANT, kind=MessageKind.TOOL_CALL, text="2+2",
                                tool_calls=[ToolCall(id=call, name="python", input="2+2")], created_at=T0 + timedelta(seconds=i)))
            msgs.append(Message(message_id=result, parent_id=call, role=Role.TOOL, kind=MessageKind.TOOL_RESULT, text="4",
                                tool_results=[ToolResult(tool_call_id=call, name="python", output="4")], created_at=T0 + timedelta(seconds=i)))
            parent = result
        msgs.append(Message(message_id=mid, parent_id=parent, role=Role.USER if i % 2 == 0 else Role.ASSISTANT,
                            text=f"{words}: {filler}"[:text], created_at=T0 + timedelta(seconds=i)))
        parent = mid
    if branch:
        msgs.append(Message(message_id="m2-alt", parent_id="m1", role=Role.USER, text="An abandoned question.", created_at=T0))
    conv = Conversation(source=Source.CHATGPT, platform="chatgpt", conversation_id=conv_id, title=f"Big chat {conv_id}", created_at=T0,
                        updated_at=T0 + timedelta(days=1 + version), messages=msgs, source_file="big.json", current_node=parent)
    resolve_branches(conv)
    return conv


def leftovers(driver) -> dict:
    """What only a load in progress leaves: staged messages, stages, conversations marked as being swapped in."""
    [row] = q(driver, """
        RETURN COUNT { (:StagedMessage) } AS staged, COUNT { (:LoadStage) } AS stages,
               COUNT { (c:Conversation) WHERE c.swapping_in IS NOT NULL } AS swapping
        """)
    return row


NOTHING_LEFT = {"staged": 0, "stages": 0, "swapping": 0}


def half_states(driver) -> list[str]:
    """Conversations a reader would take for complete whose messages are not all there: none, ever (one being
    swapped in, in steps, says so: `swapping_in`)."""
    rows = q(driver, """
        MATCH (c:Conversation) WHERE c.swapping_in IS NULL AND COUNT { (c)-[:HAS_MESSAGE]->(:Message) } <> c.total_messages
        RETURN c.key AS key
        """)
    return [r["key"] for r in rows]


# ----------------------------------------------------------------------------- 50,000 messages


@pytest.mark.slow
def test_a_conversation_of_50000_messages_is_written_in_bounded_transactions(clean_graph):
    """Before: every message in one transaction (what `stage_messages` above the conversation's size still does: here
    for the first state, as the baseline); after: a newer state of it in steps of 5,000, swapped in 20,000 a step."""
    v1, v2 = big_conversation(50_000), big_conversation(50_000, version=1)  # v2: one more turn, the last two reworded
    one = load_conversations(clean_graph, [v1], database=DB, stage_messages=10**9)
    assert (one.conversations_created, one.conversations_staged, one.messages_written) == (1, 0, 50_001)
    started = time.monotonic()
    staged = load_conversations(clean_graph, [v2], database=DB)
    took = time.monotonic() - started
    assert (staged.conversations_updated, staged.conversations_staged, staged.messages_written, staged.messages_removed) == (1, 1, 50_002, 0)
    [state] = q(clean_graph, """
        MATCH (c:Conversation {key: 'chatgpt:huge'})
        RETURN c.total_messages AS total, COUNT { (c)-[:HAS_MESSAGE]->(:Message) } AS attached,
               COUNT { (:Message {conversation_id: 'huge'}) } AS by_id,
               COUNT { (c)-[:HAS_MESSAGE]->(:Message)-[:NEXT]->(:Message) } AS next,
               COUNT { (c)-[:HAS_MESSAGE]->(:Message)-[:REPLIES_TO]->(:Message) } AS replies,
               [(c)-[:HAS_MESSAGE]->(m:Message {message_id: 'm50000'}) | m.content STARTS WITH 'turn 50000 of huge, reworded in v1'] AS last
        """)
    assert state == {"total": 50_002, "attached": 50_002, "by_id": 50_002, "next": 50_000, "replies": 50_001, "last": [True]}
    assert leftovers(clean_graph) == NOTHING_LEFT
    assert load_conversations(clean_graph, [v2], database=DB).conversations_unchanged == 1

    # what the largest transaction held, by the server's own estimate
    before, after = one.largest_transaction_bytes, staged.largest_transaction_bytes
    assert 0 < after <= 128 * MiB and after * 3 < before, f"one transaction {before / MiB:.0f} MiB, staged {after / MiB:.0f} MiB"
    print(f"\n50,000 messages: one transaction {before / MiB:.0f} MiB; a newer state staged in {took:.1f} s, "
          f"largest transaction {after / MiB:.0f} MiB")


# ----------------------------------------------------------------------------- a kill in any transaction


KILL = {"batch_messages": 40, "stage_messages": 60, "swap_messages": 150, "deep": True}


def _inputs(version: int = 0) -> list[Conversation]:
    """Small conversations around one big one with tool calls (staged in 60s, swapped in 150s)."""
    small = generated(6, 8, version=version)
    return small[:3] + [big_conversation(300, version=version, text=120, tools_every=25)] + small[3:]


@pytest.mark.parametrize("scenario", ["first load", "replacing an older state"])
def test_a_load_killed_in_any_transaction_and_rerun_ends_in_the_same_graph(clean_graph, scenario):
    before = _inputs() if scenario == "replacing an older state" else []
    states = _inputs(version=1)

    def setup():
        wipe(clean_graph, DB)
        if before:
            load_conversations(clean_graph, before, database=DB, **KILL)

    setup()
    counting = DyingDriver(clean_graph, after=10**9)
    load_conversations(counting, states, database=DB, **KILL)
    expected, writes = graph_dump(clean_graph, DB), counting.writes
    assert writes > 10  # stage steps, swap steps, batches, the clean-up
    setup()
    load_conversations(clean_graph, states, database=DB, deep=True)  # the defaults: nothing staged, one transaction a batch
    assert graph_dump(clean_graph, DB) == expected  # however it was cut in transactions, the same graph

    for after in range(writes):
        setup()
        with pytest.raises(Killed):
            load_conversations(DyingDriver(clean_graph, after), states, database=DB, **KILL)
        assert half_states(clean_graph) == [], f"killed in write {after + 1}"
        load_conversations(clean_graph, states, database=DB, **KILL)  # the rerun
        assert graph_dump(clean_graph, DB) == expected, f"killed in write {after + 1} of {writes}"
        assert leftovers(clean_graph) == NOTHING_LEFT


def test_a_swap_in_steps_marks_the_conversation_until_it_is_over(clean_graph):
    v1, v2 = big_conversation(200, text=50), big_conversation(200, version=1, text=50)
    load_conversations(clean_graph, [v1], database=DB, stage_messages=50)
    with pytest.raises(Killed):  # 5 stage steps (202 messages), the swap's first transaction, then killed in its second
        load_conversations(DyingDriver(clean_graph, after=6), [v2], database=DB, stage_messages=50, swap_messages=150)
    [row] = q(clean_graph, "MATCH (c:Conversation) RETURN c.swapping_in AS swapping, c.state_hash AS hash, c.total_messages AS total")
    assert row["swapping"] and row["swapping"].endswith("@" + row["hash"]) and row["total"] == 202  # the winner, marked
    assert half_states(clean_graph) == []
    # any load that meets it (here one of an older state, which does not win) finishes the swap first
    summary = load_conversations(clean_graph, [v1], database=DB, stage_messages=50)
    assert summary.conversations_skipped == 1
    expected_messages = {m.message_id for m in v2.messages}
    rows = q(clean_graph, "MATCH (:Conversation {key: 'chatgpt:huge'})-[:HAS_MESSAGE]->(m:Message) RETURN m.message_id AS id")
    assert {r["id"] for r in rows} == expected_messages
    assert leftovers(clean_graph) == NOTHING_LEFT


def test_a_stage_left_by_a_state_that_lost_is_discarded(clean_graph):
    v1, v2 = big_conversation(200, text=50), big_conversation(200, version=1, text=50)
    with pytest.raises(Killed):  # killed while staging v2 (nothing of it visible)
        load_conversations(DyingDriver(clean_graph, after=2), [v2], database=DB, stage_messages=50)
    assert q(clean_graph, "MATCH (c:Conversation) RETURN count(c) AS n") == [{"n": 0}]
    assert leftovers(clean_graph)["staged"] == 100
    load_conversations(clean_graph, [v1], database=DB, stage_messages=50)  # another state of it: v2's stage goes
    assert leftovers(clean_graph) == NOTHING_LEFT
    expected = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    load_conversations(clean_graph, [v1], database=DB)
    assert graph_dump(clean_graph, DB) == expected


def test_loads_staging_the_same_conversations_at_once_keep_the_newest(clean_graph):
    """Two runs of one day at once (and an older run beside them): stages, swaps in steps and discards interleave;
    the graph ends as the newest states alone make it."""
    old = [big_conversation(180, conv_id="a", text=60), big_conversation(180, conv_id="b", text=60)] + generated(6, 6)
    new = [big_conversation(180, version=1, conv_id="a", text=60), big_conversation(180, version=1, conv_id="b", text=60)]
    new += generated(6, 6, version=1)
    errors: list[BaseException] = []

    def run(convs):
        try:
            load_conversations(clean_graph, convs, database=DB, batch_messages=20, stage_messages=40, swap_messages=70)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,)) for c in (new, old, list(reversed(new)), new)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    assert half_states(clean_graph) == [] and leftovers(clean_graph) == NOTHING_LEFT
    both = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    load_conversations(clean_graph, new, database=DB)
    assert both == graph_dump(clean_graph, DB)


def test_a_stage_deleted_while_a_step_waits_for_its_lock_is_staged_again(clean_graph):
    """A step's MERGE matches the stage, waits for its lock while another load's transaction deletes it, and reads
    nulls once the delete commits (the race behind a flaky run of the test above). The step is run again: the stage
    is made anew, staged from the first message, and the load ends in the graph of a clean load."""
    v2 = big_conversation(200, version=1, text=50)
    with pytest.raises(Killed):  # two steps staged, then killed: the stage is there for the rerun to go on with
        load_conversations(DyingDriver(clean_graph, after=2), [v2], database=DB, stage_messages=50)
    [stage] = q(clean_graph, "MATCH (s:LoadStage) RETURN s.key AS key, s.staged AS staged, s.token AS token")
    assert stage["staged"] == 100
    summary = run_while_deleting(  # another load discarding the stage
        clean_graph, "MATCH (s:LoadStage {key: $key}) DELETE s", {"key": stage["key"]}, "MERGE (s:LoadStage",
        lambda: load_conversations(clean_graph, [v2], database=DB, stage_messages=50))
    assert summary.conversations_created == 1 and summary.conversations_failed == 0
    [again] = q(clean_graph, "MATCH (c:Conversation) RETURN c.total_messages AS total")
    assert again["total"] == len(v2.messages)
    assert half_states(clean_graph) == [] and leftovers(clean_graph) == NOTHING_LEFT  # the deleted stage's messages too
    expected = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    load_conversations(clean_graph, [v2], database=DB)
    assert graph_dump(clean_graph, DB) == expected


def test_a_complete_stage_deleted_while_the_swap_waits_for_its_lock_is_not_complete(clean_graph):
    """The swap's check of its stage meets the same race: a stage deleted while the check waits reads as not there
    (the swap is rolled back and the state staged again), never as a stage to swap in."""
    from chatetl.graph.staging import complete_stage, stage_key

    key = stage_key("chatgpt:raced", "h")
    q(clean_graph, "CREATE (:LoadStage {key: $key, token: 't', conversation_key: 'chatgpt:raced', messages: 3, staged: 3})", key=key)
    with clean_graph.session(database=DB) as mine:
        assert mine.execute_write(lambda tx: complete_stage(lambda c, **p: tx.run(c, **p).data(), key)) == "t"

    def check():
        with clean_graph.session(database=DB) as mine:
            return mine.execute_write(lambda tx: complete_stage(lambda c, **p: tx.run(c, **p).data(), key))

    assert run_while_deleting(clean_graph, "MATCH (s:LoadStage {key: $key}) DELETE s", {"key": key},
                              "MATCH (s:LoadStage {key: $key})", check) is None


def test_a_conversation_retracted_while_its_staged_swap_waits_for_its_lock_is_swapped_in_anew(clean_graph):
    """A newer state is staged; the swap's MERGE matches the old Conversation while a retraction deletes it, and reads
    nulls once the delete commits. The swap is written again: the Conversation made anew, the staged state in it."""
    v1, v2 = big_conversation(200, text=50), big_conversation(200, version=1, text=50)
    load_conversations(clean_graph, [v1], database=DB)
    summary = run_while_deleting(  # a retraction's last step (the stage steps take no lock it holds)
        clean_graph, RETRACT_CONVERSATION, {"key": v1.key}, "MERGE (c:Conversation",
        lambda: load_conversations(clean_graph, [v2], database=DB, stage_messages=50))
    assert summary.conversations_created == 1 and summary.conversations_failed == 0 and summary.conversations_staged == 1
    assert half_states(clean_graph) == [] and leftovers(clean_graph) == NOTHING_LEFT
    expected = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    load_conversations(clean_graph, [v2], database=DB)
    assert graph_dump(clean_graph, DB) == expected


@pytest.mark.parametrize("killed", ["while staging", "while swapping in"])
def test_a_retracted_conversation_takes_the_stages_a_killed_load_left_with_it(clean_graph, killed):
    """Before: a load killed while staging a big conversation (or swapping it in) left its LoadStage and
    StagedMessages; once the conversation was retracted (its upload deleted), no load named it again to
    discard them, and the retraction left them in the graph for ever. Now they go with the conversation;
    another conversation's stage stays."""
    v1, v2 = big_conversation(200, text=50), big_conversation(200, version=1, text=50)
    other = big_conversation(200, conv_id="other", text=50)
    if killed == "while swapping in":
        load_conversations(clean_graph, [v1], database=DB, stage_messages=50)
    with pytest.raises(Killed):  # 2 steps of 50 staged; or all 5 staged, the swap begun and killed in its second step
        load_conversations(DyingDriver(clean_graph, after=2 if killed == "while staging" else 6), [v2], database=DB,
                           stage_messages=50, swap_messages=150)
    with pytest.raises(Killed):
        load_conversations(DyingDriver(clean_graph, after=1), [other], database=DB, stage_messages=50)
    left = leftovers(clean_graph)
    assert left["stages"] == 2 and left["staged"] >= 100 and left["swapping"] == (killed == "while swapping in")

    summary = retract_conversations(clean_graph, ["chatgpt:huge"], database=DB, batch=60)  # (bounded steps: 60 nodes)
    rows = q(clean_graph, """
        MATCH (s:LoadStage) RETURN s.conversation_key AS key,
              COUNT { (m:StagedMessage) WHERE m.stage = s.token } AS staged
        """)
    assert rows == [{"key": "chatgpt:other", "staged": 50}]  # the other conversation's stage is not touched
    assert q(clean_graph, "MATCH (m) WHERE m:StagedMessage OR m:Message OR m:Conversation RETURN count(m) AS n") == [{"n": 50}]
    assert summary.stages == 1 and summary.staged_messages == left["staged"] - 50
    load_conversations(clean_graph, [other], database=DB, stage_messages=50)  # (its rerun finishes it)
    assert leftovers(clean_graph) == NOTHING_LEFT
    assert retract_conversations(clean_graph, ["chatgpt:huge"], database=DB).stages == 0  # again: nothing to do


# ----------------------------------------------------------------------------- one conversation failing alone


def test_one_conversation_the_server_refuses_fails_alone_and_is_tried_again_alone(clean_graph):
    convs = generated(30, 6)
    # an id over the index key size limit: Neo4j refuses the node (a DatabaseError, in a batch of 50 messages)
    hostile = conversation(["a chat whose id no index can hold", "indeed"], conv_id="x" * 10_000)
    # a staged conversation whose 121st message id is as long: refused in its second step, after the first committed
    broken = big_conversation(150, conv_id="broken", text=40)
    broken.messages[120] = broken.messages[120].model_copy(update={"message_id": "z" * 10_000})
    # a text that cannot be encoded at all (a lone surrogate): refused before any transaction
    unsendable = conversation(["a lone surrogate \ud800 here", "no driver sends it"], conv_id="unsendable")
    day = convs[:12] + [hostile] + convs[12:20] + [broken] + convs[20:25] + [unsendable] + convs[25:]
    started = time.monotonic()
    summary = load_conversations(clean_graph, day, database=DB, batch_messages=50, stage_messages=100)
    assert time.monotonic() - started < 60  # failed at once, not after minutes of retries
    assert (summary.conversations_created, summary.conversations_failed) == (30, 3)
    by_key = {f.split(" ", 1)[0][:12]: f for f in summary.failures}
    assert set(by_key) == {"chatgpt:xxxx", "chatgpt:brok", "chatgpt:unse"}
    assert "too large to index" in by_key["chatgpt:xxxx"] and "(10008 characters)" in by_key["chatgpt:xxxx"]
    assert "too large to index" in by_key["chatgpt:brok"] and "big.json, 151 messages" in by_key["chatgpt:brok"]
    assert "surrogates not allowed" in by_key["chatgpt:unse"]
    assert summary.to_dict()["conversations_failed"] == 3 and "failures" not in summary.to_dict()
    assert leftovers(clean_graph) == NOTHING_LEFT  # the first step's went too
    loaded = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    load_conversations(clean_graph, convs, database=DB)
    assert graph_dump(clean_graph, DB) == loaded  # everything else, exactly

    again = load_conversations(clean_graph, day, database=DB, batch_messages=50, stage_messages=100)  # the rerun
    assert (again.conversations_unchanged, again.conversations_failed, again.conversations_created) == (30, 3, 0)
    assert graph_dump(clean_graph, DB) == loaded


def test_failures_on_the_second_session_are_reported_too(clean_graph):
    bad = [conversation(["q", "a"], conv_id=f"{i}-" + "y" * 9000) for i in range(3)]
    parallel = load_conversations(clean_graph, generated(8, 4) + bad, database=DB, batch_messages=10)  # batches of new ones: two sessions
    assert parallel.conversations_failed == 3 and len(parallel.failures) == 3
    assert parallel.conversations_created == 8


def test_a_transaction_too_big_for_the_server_is_not_retried(clean_graph):
    """Neo4j reports running out of transaction memory as a transient error, which a managed transaction retries
    for 30 s, each try failing the same way; the load's transactions stop at the first."""
    from neo4j.exceptions import Neo4jError

    tries = []

    def refused(tx):
        tries.append(1)
        tx.run("CREATE (:Probe)").consume()
        raise Neo4jError._hydrate_neo4j(code="Neo.TransientError.General.MemoryPoolOutOfMemoryError",
                                        message="The allocation of an extra 2.0 MiB would use more than the limit 1.4 GiB.")

    started = time.monotonic()
    with write_session(clean_graph, DB) as session, pytest.raises(TransactionTooBig):
        write_measured(session, refused)
    assert tries == [1] and time.monotonic() - started < 10
    assert q(clean_graph, "MATCH (p:Probe) RETURN count(p) AS n") == [{"n": 0}]  # rolled back
    with write_session(clean_graph, DB) as session:
        _, held = write_measured(session, lambda tx: tx.run("UNWIND range(1, 1000) AS i CREATE (:Probe {i: i})").consume())
    assert held > 0  # the server's own estimate of the transaction's memory
    q(clean_graph, "MATCH (p:Probe) DELETE p")
