"""Deep mode against the real Neo4j: one DecisionTrace per conversation with tool use, its
TraceSteps in order, each tool result paired with its own call; resyncs replace the trace."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from graph_inputs import (
    EXPECTED,
    SHAREGPT_CONV_ID,
    T0,
    conversation,
    graph_dump,
    read,
    wipe,
    write_inputs,
)

from chatetl.graph.load import load_conversations
from chatetl.graph.traces import trace_for
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
WITH_TOOLS = [c for source in sorted(EXPECTED) for c in EXPECTED[source] if c.get("tools")]
ACTIONS = {
    "Mean of a list": ["tool_use:python", "tool_result:python"],
    "Weather in Oslo": ["tool_use:web_search", "tool_result:web_search", "tool_use:repl", "tool_result:repl"],
    SHAREGPT_CONV_ID: ["tool_use:convert", "tool_result:convert"] * 2,  # (untitled: by its id)
    "Check that pyproject.toml pins pytest": ["tool_use:Read", "tool_result:Read", "tool_use:Bash", "tool_result:Bash"],
}


def q(driver, cypher: str, **params):
    records, _, _ = driver.execute_query(cypher, params, database_=DB)
    return [dict(r) for r in records]


@pytest.fixture(scope="module")
def deep_graph(neo4j_driver, tmp_path_factory):
    wipe(neo4j_driver, DB)
    paths = write_inputs(tmp_path_factory.mktemp("trace-inputs"))
    convs = [c for path in paths.values() for c in read(path)]
    summary = load_conversations(neo4j_driver, convs, database=DB, deep=True)
    assert summary.traces_written == len(WITH_TOOLS)
    yield neo4j_driver, {c.key: c for c in convs}
    wipe(neo4j_driver, DB)


def _key(conv: dict, driver) -> str:
    if "id" in conv:
        return f"{conv['platform']}:{conv['id']}"
    [row] = q(driver, "MATCH (c:Conversation {name: $name}) RETURN c.key AS key", name=conv["name"])
    return row["key"]


def test_one_trace_per_conversation_with_tool_use(deep_graph):
    driver, convs = deep_graph
    rows = q(driver, """
        MATCH (c:Conversation)-[:HAS_TRACE]->(t:DecisionTrace)
        RETURN c.key AS key, c.name AS name, c.source AS platform, c.conversation_id AS cid, properties(t) AS t
        """)
    assert sorted(r["name"] for r in rows) == sorted(c["name"] for c in WITH_TOOLS)
    for r in rows:
        t = r["t"]
        assert t["id"] == f"{r['platform']}-trace-{r['cid']}"
        assert t["task"] == f"Tool usage in: {r['name']}"
        assert t["source"] == r["platform"] and t["conversation_id"] == r["cid"]
    [untraced] = q(driver, "MATCH (c:Conversation) WHERE NOT (c)-[:HAS_TRACE]->() RETURN count(c) AS n")
    assert untraced["n"] == len(convs) - len(WITH_TOOLS)
    [orphans] = q(driver, "MATCH (s:TraceStep) WHERE NOT ()-[:HAS_STEP]->(s) RETURN count(s) AS n")
    assert orphans["n"] == 0


@pytest.mark.parametrize("conv", WITH_TOOLS, ids=[c["name"][:40] for c in WITH_TOOLS])
def test_steps_in_order_with_each_result_paired_to_its_own_call(deep_graph, conv):
    driver, convs = deep_graph
    key = _key(conv, driver)
    steps = q(driver, """
        MATCH (:Conversation {key: $key})-[:HAS_TRACE]->(t:DecisionTrace)-[:HAS_STEP]->(s:TraceStep)
        OPTIONAL MATCH (s)-[:RESULT_OF]->(call:TraceStep)
        OPTIONAL MATCH (s)-[:FROM_MESSAGE]->(m:Message)
        RETURN properties(s) AS s, call.key AS call, m.message_id AS message, t.outcome AS outcome,
               t.tool_calls AS calls, t.tool_results AS results
        ORDER BY s.index
        """, key=key)
    assert [s["s"]["index"] for s in steps] == list(range(len(steps)))
    actions = [s["s"]["action"] for s in steps]
    tools = conv["tools"]
    assert actions == ACTIONS.get(conv["id"] if conv["name"] == "Untitled" else conv["name"], [f"tool_use:{tools[0]}", f"tool_result:{tools[0]}"])
    # NEXT runs through the steps in order: one chain, starting at step 0
    [chain] = q(driver, """
        MATCH (:Conversation {key: $key})-[:HAS_TRACE]->(:DecisionTrace)-[:HAS_STEP]->(first:TraceStep)
        WHERE NOT ()-[:NEXT]->(first)
        MATCH path = (first)-[:NEXT*0..]->(last:TraceStep) WHERE NOT (last)-[:NEXT]->()
        RETURN [n IN nodes(path) | n.index] AS order
        """, key=key)
    assert chain["order"] == list(range(len(steps)))
    by_key = {s["s"]["key"]: s["s"] for s in steps}
    results = [s for s in steps if s["s"]["kind"] == "tool_result"]
    calls = [s for s in steps if s["s"]["kind"] == "tool_use"]
    assert len(results) == len(calls) == steps[0]["calls"] == steps[0]["results"]
    paired_calls = [r["call"] for r in results]
    assert len(set(paired_calls)) == len(calls) and None not in paired_calls  # every call has its own result
    model = convs[key]
    call_ids = {c.id for m in model.messages for c in m.tool_calls if c.id}
    for r in results:
        call = by_key[r["call"]]
        assert call["kind"] == "tool_use" and call["index"] < r["s"]["index"]
        assert call["tool_name"] == r["s"]["tool_name"]
        assert r["s"].get("tool_call_id") == call.get("tool_call_id")  # the same id on both (None only without ids)
        if call_ids:
            assert call["tool_call_id"] in call_ids
    for s in steps:
        assert len(s["s"]["observation"]) <= 500 and s["s"]["thought"]
        assert s["message"] is not None  # every step hangs off the message that holds it
    names = sorted(set(tools))
    assert all(f"{n} ×" in steps[0]["outcome"] for n in names)
    assert steps[0]["outcome"].startswith(f"{len(calls)} tool call")


def test_thoughts_are_what_triggered_the_call(deep_graph):
    driver, _ = deep_graph
    rows = q(driver, "MATCH (s:TraceStep) RETURN s.action AS action, s.thought AS thought, s.observation AS observation")
    got = {(r["action"], r["observation"]): r["thought"] for r in rows}
    assert got[("tool_use:web_search", '{"query": "Oslo weather now"}')] == "Search first, then convert."  # its reasoning
    assert got[("tool_result:web_search", "Oslo: 4 °C, cloudy")] == "Search first, then convert."
    assert got[("tool_use:Read", '{"file_path": "/w/proj/pyproject.toml"}')] == "Reading the file."  # the text beside it
    assert got[("tool_use:Bash", '{"command": "pytest -q"}')] == "Reading the file."  # the last text before it
    assert got[("tool_use:python", "sum([3, 5, 10]) / 3")].startswith("Compute")  # the reasoning message before it
    assert got[("tool_use:convert", '{"name": "convert", "arguments": {"value": 10, "from": "km", "to": "mi"}}')] == "And 10 km?"


def test_deep_load_twice_changes_nothing(deep_graph):
    driver, convs = deep_graph
    before = graph_dump(driver, DB)
    summary = load_conversations(driver, list(convs.values()), database=DB, deep=True)
    assert summary.conversations_unchanged == len(convs) and summary.traces_written == 0
    assert graph_dump(driver, DB) == before


# ----------------------------------------------------------------------------- pairing, cutting, resyncs (model-built)


def _tool_chat(calls: list[tuple[str | None, str]], results: list[tuple[str | None, str | None, str]], conv_id: str = "tools-1") -> Conversation:
    """user -> one message per call -> one message per result -> assistant answer."""
    msgs = [Message(message_id="u", role=Role.USER, text="Do two things", created_at=T0)]
    parent = "u"
    for i, (cid, name) in enumerate(calls):
        mid = f"call{i}"
        msgs.append(Message(message_id=mid, parent_id=parent, role=Role.ASSISTANT, kind=MessageKind.TOOL_CALL, text=name,
                            tool_calls=[ToolCall(id=cid, name=name, input=f"input of {name}")], created_at=T0 + timedelta(seconds=i + 1)))
        parent = mid
    for i, (cid, name, output) in enumerate(results):
        mid = f"result{i}"
        msgs.append(Message(message_id=mid, parent_id=parent, role=Role.TOOL, kind=MessageKind.TOOL_RESULT, text=output,
                            tool_results=[ToolResult(tool_call_id=cid, name=name, output=output)], created_at=T0 + timedelta(seconds=10 + i)))
        parent = mid
    msgs.append(Message(message_id="a", parent_id=parent, role=Role.ASSISTANT, text="Done.", created_at=T0 + timedelta(seconds=30)))
    conv = Conversation(source=Source.CLAUDE_CODE, platform="claude-code", conversation_id=conv_id, title="Tools", created_at=T0,
                        updated_at=T0 + timedelta(seconds=30), messages=msgs)
    resolve_branches(conv)
    return conv


def _pairs(trace: dict) -> list[tuple[str, str]]:
    steps = {s["key"]: s for s in trace["steps"]}
    return [(steps[s["paired_step"]]["observation"], s["observation"]) for s in trace["steps"] if s["paired_step"]]


def test_results_pair_by_id_even_out_of_order():
    trace = trace_for(_tool_chat([("id-A", "Read"), ("id-B", "Read")], [("id-B", "Read", "out B"), ("id-A", "Read", "out A")]))
    assert _pairs(trace) == [("input of Read", "out B"), ("input of Read", "out A")]
    steps = trace["steps"]
    assert [(s["action"], s["tool_call_id"]) for s in steps] == [
        ("tool_use:Read", "id-A"), ("tool_use:Read", "id-B"), ("tool_result:Read", "id-B"), ("tool_result:Read", "id-A")]
    assert steps[2]["paired_step"] == steps[1]["key"] and steps[3]["paired_step"] == steps[0]["key"]


def test_results_without_ids_pair_by_tool_name_then_in_order():
    trace = trace_for(_tool_chat([(None, "search"), (None, "python")], [(None, "python", "4"), (None, None, "a page")]))
    assert _pairs(trace) == [("input of python", "4"), ("input of search", "a page")]
    assert trace["props"]["outcome"] == "2 tool calls (python ×1, search ×1), 2 results"


def test_observation_is_cut_at_500_and_says_so(clean_graph):
    conv = _tool_chat([("id-1", "Bash")], [("id-1", "Bash", "x" * 1200)])
    load_conversations(clean_graph, [conv], database=DB, deep=True)
    [row] = q(clean_graph, "MATCH (s:TraceStep {kind: 'tool_result'}) RETURN s.observation AS o, s.observation_truncated AS cut, s.observation_length AS n")
    assert row == {"o": "x" * 500, "cut": True, "n": 1200}
    [call] = q(clean_graph, "MATCH (s:TraceStep {kind: 'tool_use'}) RETURN s.observation_truncated AS cut")
    assert call["cut"] is False


def _trace_rows(driver) -> list[dict]:
    return q(driver, """
        MATCH (c:Conversation)-[:HAS_TRACE]->(t:DecisionTrace)-[:HAS_STEP]->(s:TraceStep)-[:FROM_MESSAGE]->(m:Message)
        RETURN t.id AS trace, t.outcome AS outcome, s.index AS index, s.action AS action, m.message_id AS message
        ORDER BY index
        """)


def _trace_counts(driver) -> dict:
    [row] = q(driver, """
        CALL () { MATCH (t:DecisionTrace) RETURN count(t) AS traces }
        CALL () { MATCH (s:TraceStep) RETURN count(s) AS steps }
        CALL () { MATCH (:TraceStep)-[r]->() RETURN count(r) AS step_links }
        RETURN traces, steps, step_links
        """)
    return row


def test_a_resync_replaces_the_trace_and_deep_off_removes_it(clean_graph):
    v1 = conversation(["q1", "a1", "q2", "a2"], conv_id="resync", tool_after=1, updated=T0 + timedelta(hours=1))
    v2 = conversation(["q1", "a1", "q2", "a2", "q3", "a3"], conv_id="resync", tool_after=3, updated=T0 + timedelta(hours=2))
    v3 = conversation(["q1", "a1", "q2", "a2", "q3", "a3", "q4", "a4"], conv_id="resync", updated=T0 + timedelta(hours=3))

    load_conversations(clean_graph, [v1], database=DB, deep=True)
    assert [(r["action"], r["message"]) for r in _trace_rows(clean_graph)] == [("tool_use:python", "m1-call"), ("tool_result:python", "m1-result")]

    summary = load_conversations(clean_graph, [v2], database=DB, deep=True)
    assert summary.conversations_updated == 1 and summary.traces_written == 1 and summary.messages_removed == 2
    assert [(r["action"], r["message"]) for r in _trace_rows(clean_graph)] == [("tool_use:python", "m3-call"), ("tool_result:python", "m3-result")]
    assert _trace_counts(clean_graph) == {"traces": 1, "steps": 2, "step_links": 2 + 1 + 1}  # FROM_MESSAGE ×2, RESULT_OF, NEXT

    summary = load_conversations(clean_graph, [v3], database=DB, deep=True)  # no tool use any more
    assert summary.traces_removed == 1 and _trace_counts(clean_graph) == {"traces": 0, "steps": 0, "step_links": 0}


def test_switching_deep_mode_off_and_on(clean_graph):
    conv = conversation(["q1", "a1", "q2", "a2"], conv_id="switch", tool_after=1)
    load_conversations(clean_graph, [conv], database=DB, deep=True)
    with_trace = graph_dump(clean_graph, DB)
    off = load_conversations(clean_graph, [conv], database=DB, deep=False)
    assert off.conversations_updated == 1 and off.traces_removed == 1
    assert _trace_counts(clean_graph)["traces"] == 0
    on = load_conversations(clean_graph, [conv], database=DB, deep=True)
    assert on.conversations_updated == 1 and on.traces_written == 1
    assert graph_dump(clean_graph, DB) == with_trace
