"""The bulk loader writes the same graph as the loader it replaced (issue 11), against the real Neo4j.

The same sequence of loads - a generated corpus with every source format, a 10% resync, the older
states replayed, deep mode switched on, an unchanged rerun, a deep resync, deep mode off for some -
runs through the loader, and after every step the graph dump and the summary equal the ones recorded
in tests/graph/golden/ (tests/graph_load_golden.py; when written, they equalled the replaced loader's,
tests/graph/legacy_load.py: 22-key maps, links made by key lookups, `next_key` / `parent_key` and other
bookkeeping stored on every Message), but for the properties that moved off the Message node
(MOVED_OFF_MESSAGE, listed there, taken off Message nodes only): every other node, property and
relationship is compared, and the Messages have none of them. The unchanged rerun reports 0 updates.
"""

from __future__ import annotations

import functools
import os

import pytest
from graph_inputs import generated, graph_dump, read, write_inputs
from graph_load_golden import MOVED_OFF_MESSAGE, message_props_moved, run, steps, stored

from chatetl.graph import writer as graph_load
from chatetl.graph.load import load_conversations
from chatetl.graph.properties import MOVED_OFF_MESSAGE as DOCUMENTED_MOVED

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None


def _run(driver, load, loads, folder) -> list[tuple[dict, dict]]:
    return run(driver, load, loads, folder, DB)


def test_the_new_path_writes_the_graph_the_old_one_wrote(clean_graph, tmp_path, monkeypatch):
    loads = steps(tmp_path)
    expected = stored()  # the old loader's graph and summaries, less the moved properties (tests/graph/golden/)
    actual = _run(clean_graph, load_conversations, loads, tmp_path)
    # batches of new conversations on two sessions at once: the same summaries and the same graph at every step
    assert _run(clean_graph, functools.partial(load_conversations, parallel=True), loads, tmp_path) == actual
    # the states that replace others written a few conversations a transaction (chatetl.graph.load._write_in_parts)
    monkeypatch.setattr(graph_load, "REPLACE_MESSAGES", 20)
    assert _run(clean_graph, load_conversations, loads, tmp_path) == actual
    assert set(MOVED_OFF_MESSAGE) == set(DOCUMENTED_MOVED)  # the list docs/graph.md and properties.py document
    for (name, _, _), (want_summary, want_dump), (got_summary, got_full) in zip(loads, expected, actual, strict=True):
        got_dump, kept = message_props_moved(got_full)
        assert not kept, (name, kept)  # off the new graph's Messages
        assert got_summary == want_summary, name
        assert got_dump["relationships"] == want_dump["relationships"], name
        assert got_dump["nodes"] == want_dump["nodes"], (name, set(got_dump["nodes"]) ^ set(want_dump["nodes"]))
    # the steps did what they say
    assert actual[1][0]["conversations_updated"] == 6 and actual[2][0]["conversations_skipped"] == 6
    assert actual[3][0]["traces_written"] > 0 and actual[6][0]["traces_removed"] > 0
    assert actual[7][0]["conversations_updated"] == 12 and actual[7][0]["conversations_unchanged"] > 0
    assert actual[7][0]["conversations_skipped"] > 0
    assert actual[-1][1] != actual[0][1]


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
