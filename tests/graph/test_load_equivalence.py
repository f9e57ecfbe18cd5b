"""The bulk loader writes the same graph as the loader it replaced (issue 11), against the real Neo4j.

tests/graph/legacy_load.py is the loader as it was (22-key maps, links made by key lookups,
`next_key` / `parent_key` and other bookkeeping stored on every Message); the same sequence of
loads - a generated corpus with every source format, a 10% resync, the older states replayed,
deep mode switched on, an unchanged rerun, a deep resync, deep mode off for some - runs through
both, and after every step the graph dumps and the summaries are equal, but for the properties
that moved off the Message node (MOVED_OFF_MESSAGE, listed here, taken off Message nodes only):
every other node, property and relationship is compared, the new graph's Messages have none of
them and the old one's had each. The new path's unchanged rerun reports 0 updates.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
from graph_inputs import generated, graph_dump, read, wipe, write_inputs

from chatetl.graph import writer as graph_load
from chatetl.graph.load import load_conversations
from chatetl.graph.properties import MOVED_OFF_MESSAGE as DOCUMENTED_MOVED

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
MOVED_OFF_MESSAGE = ("next_key", "parent_key", "conversation_key", "author_name", "branch_index", "visible")


def _message_props_moved(dump: dict) -> tuple[dict, set[str]]:
    """The dump with MOVED_OFF_MESSAGE taken off Message nodes (every other label keeps them), and
    the moved properties that were there."""
    nodes, seen = [], set()
    for text in dump["nodes"]:
        labels, props = json.loads(text)
        if labels == ["Message"]:
            seen |= set(props) & set(MOVED_OFF_MESSAGE)
            props = {k: v for k, v in props.items() if k not in MOVED_OFF_MESSAGE}
        nodes.append(json.dumps([labels, props], sort_keys=True, default=str))
    return {"nodes": sorted(nodes), "relationships": dump["relationships"]}, seen


def _legacy():
    spec = importlib.util.spec_from_file_location("legacy_load", Path(__file__).with_name("legacy_load.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("legacy_load", module)  # dataclasses look their module up
    spec.loader.exec_module(sys.modules["legacy_load"])  # type: ignore[union-attr]
    return sys.modules["legacy_load"]


def _steps(tmp_path: Path) -> list[tuple[str, list, bool]]:
    every_source = [c for p in write_inputs(tmp_path).values() for c in read(p)]
    v0, v1, v2, v3 = (generated(60, 8, version=v) for v in range(4))
    newest = [v1[i] if i % 10 == 0 else c for i, c in enumerate(v0)]
    return [
        ("first load", v0 + every_source, False),
        ("10% resync: newer states replace older", [c for i, c in enumerate(v1) if i % 10 == 0], False),
        ("older states replayed: nothing changes", v0[::10], False),
        ("deep mode on", newest + every_source, True),
        ("unchanged rerun", newest + every_source, True),
        ("deep resync", [c for i, c in enumerate(v2) if i % 4 == 0], True),
        ("deep mode off for some", v2[::8], False),
        # batches that mix states written and states that write nothing (older, or the same)
        ("every conversation again, 1 in 5 newer", [v3[i] if i % 5 == 0 else c for i, c in enumerate(newest)] + every_source, True),
    ]


def _run(driver, load, steps) -> list[tuple[dict, dict]]:
    wipe(driver, DB)
    out = []
    for _name, convs, deep in steps:
        summary = load(driver, convs, database=DB, batch_messages=100, deep=deep).to_dict()
        for own in ("graph_updates", "largest_transaction_bytes", "conversations_failed", "conversations_staged"):
            summary.pop(own, None)  # what only the new loader reports
        out.append((summary, graph_dump(driver, DB)))
    return out


def test_the_new_path_writes_the_graph_the_old_one_wrote(clean_graph, tmp_path, monkeypatch):
    steps = _steps(tmp_path)
    expected = _run(clean_graph, _legacy().load_conversations, steps)  # computed here by the old loader, never stored
    actual = _run(clean_graph, load_conversations, steps)
    # batches of new conversations on two sessions at once: the same summaries and the same graph at every step
    assert _run(clean_graph, functools.partial(load_conversations, parallel=True), steps) == actual
    # the states that replace others written a few conversations a transaction (chatetl.graph.load._write_in_parts)
    monkeypatch.setattr(graph_load, "REPLACE_MESSAGES", 20)
    assert _run(clean_graph, load_conversations, steps) == actual
    assert set(MOVED_OFF_MESSAGE) == set(DOCUMENTED_MOVED)  # the list the README and properties.py document
    legacy_had: set[str] = set()
    for (name, _, _), (want_summary, want_full), (got_summary, got_full) in zip(steps, expected, actual):
        want_dump, had = _message_props_moved(want_full)
        got_dump, kept = _message_props_moved(got_full)
        legacy_had |= had
        assert not kept, (name, kept)  # off the new graph's Messages
        assert got_summary == want_summary, name
        assert got_dump["relationships"] == want_dump["relationships"], name
        assert got_dump["nodes"] == want_dump["nodes"], (name, set(got_dump["nodes"]) ^ set(want_dump["nodes"]))
    # the steps did what they say
    assert expected[1][0]["conversations_updated"] == 6 and expected[2][0]["conversations_skipped"] == 6
    assert expected[3][0]["traces_written"] > 0 and expected[6][0]["traces_removed"] > 0
    assert expected[7][0]["conversations_updated"] == 12 and expected[7][0]["conversations_unchanged"] > 0
    assert expected[7][0]["conversations_skipped"] > 0
    assert actual[-1][1] != actual[0][1]
    assert legacy_had == set(MOVED_OFF_MESSAGE)  # each moved property was on the old graph's Messages


def test_an_unchanged_rerun_reports_no_updates(clean_graph, tmp_path):
    convs = [c for p in write_inputs(tmp_path).values() for c in read(p)] + generated(30, 6)
    first = load_conversations(clean_graph, convs, database=DB, deep=True)
    assert first.conversations_created == len(convs) and first.graph_updates > 0
    dump = graph_dump(clean_graph, DB)
    again = load_conversations(clean_graph, convs, database=DB, deep=True)
    assert again.conversations_unchanged == len(convs) and again.graph_updates == 0  # not even the lock or the sources
    assert graph_dump(clean_graph, DB) == dump
    # a new file of the same state is recorded (an update), and only that
    moved = [c.model_copy(update={"source_file": "elsewhere.json"}) for c in convs[:3]]
    third = load_conversations(clean_graph, moved, database=DB, deep=True)
    assert third.conversations_unchanged == 3 and third.graph_updates > 0
    assert third.messages_written == 0
