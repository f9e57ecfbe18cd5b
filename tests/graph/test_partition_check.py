"""The graph's partition check checks the state the graph keeps: of two states of one conversation with the same
update time in one day's uploads, the one model.state_order picks, whatever file holds it."""

from __future__ import annotations

import copy
import json
import os
from datetime import datetime

import pytest

from chatetl.graph.checks import check_graph_partition
from chatetl.graph.load import load_graph_partition
from chatetl.ingest.partition import ingest_partition
from chatetl.model import state_order
from chatetl.readers import ReadReport, read_path
from chatetl.samples import chatgpt_conversations
from chatetl.storage import LocalObjectStore

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
DAY = "2026-03-01"
QUESTION = "3c0033df-6984-5457-8be7-11c35b664f83"  # the first user turn of the sample's first chat


def _chat(text: str, extra_turn: bool) -> dict:
    """The sample's first chat, its question worded `text`; with `extra_turn`, one message more (same update time)."""
    chat = copy.deepcopy(chatgpt_conversations()[0])
    chat["mapping"][QUESTION]["message"]["content"]["parts"] = [text]
    if extra_turn:
        leaf = next(k for k, n in chat["mapping"].items() if not n["children"])
        chat["mapping"][leaf]["children"] = ["extra-turn"]
        chat["mapping"]["extra-turn"] = {"id": "extra-turn", "parent": leaf, "children": [], "message": {
            "id": "extra-turn", "author": {"role": "user"}, "create_time": chat["update_time"],
            "content": {"content_type": "text", "parts": ["and one more thing"]}, "metadata": {}}}
        chat["current_node"] = "extra-turn"
    return chat


def test_the_check_follows_the_state_the_graph_keeps_among_states_of_one_time(clean_graph, tmp_path):
    chats = [_chat("Which is faster, train or bus?", False), _chat("Train or bus: which is faster?", True)]
    for i, chat in enumerate(chats):  # which of the two wins, by its content
        (tmp_path / f"{i}.json").write_text(json.dumps([chat]))
    read = [next(read_path(tmp_path / f"{i}.json", ReadReport())) for i in range(2)]
    assert read[0].updated_at == read[1].updated_at and len(read[0].messages) != len(read[1].messages)
    winner, loser = sorted(range(2), key=lambda i: state_order(read[i]), reverse=True)
    store = LocalObjectStore(tmp_path / "bucket")
    when = datetime.fromisoformat(f"{DAY}T12:00:00+00:00").timestamp()
    for name, i in (("raw/a.json", winner), ("raw/b.json", loser)):  # the losing state in the later file
        store.put_bytes(name, json.dumps([chats[i]]).encode())
        os.utime(store.root / name, (when, when))
    ingest_partition(store, DAY, list(store.list("raw/")))
    load_graph_partition(store, clean_graph, DAY, DB)
    report = check_graph_partition(store, clean_graph, DAY, DB)
    assert report.passed, report
    assert report.counts["matched"] == 1 and report.counts["messages"] == len(read[winner].messages)
