"""The winner rule is written twice, in Python (chatetl.graph.decide, what the load decides without a lock) and in
the upsert statement's CASE (what it decides again under the node's lock): one table of cases runs through both,
against the real Neo4j, and the two must give the same answer for every case."""

from __future__ import annotations

import itertools
import os

import pytest

from chatetl.graph.connection import write_session
from chatetl.graph.decide import decide
from chatetl.graph.statements import UPSERT_CONVERSATIONS
from chatetl.graph.upsert import read_state
from chatetl.model import SOURCE_FIDELITY

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
SMALLER, STORED_HASH, LARGER = "4" * 32, "5" * 32, "6" * 32

# what is stored: its time, its hash, its format (a rich one, a poorer one, one the ranks do not know), its file
STORED = [
    {"state_version": 100.0, "state_hash": STORED_HASH, "state_source": source, "state_file": file, "deep": deep}
    for source in ("chatgpt", "rex", "someday-format")
    for file in ("a.json", None)
    for deep in (False, True)
]
# what arrives: an older, the same, a newer time; a smaller, the same, a larger hash; a richer, the same, a poorer
# format; the stored state's file, another file, no file; either mode
NEW = [
    {"state_version": version, "state_hash": digest, "arrived_via": source, "source_file": file, "deep": deep}
    for version in (99.0, 100.0, 101.0)
    for digest in (SMALLER, STORED_HASH, LARGER)
    for source in ("claude-ai", "rex", "chat-export", "someday-format")
    for file in ("a.json", "b.json", None)
    for deep in (False, True)
]
TABLE = [(None, new) for new in NEW[:6]] + list(itertools.product(STORED, NEW))


def _row(key: str, new: dict) -> dict:
    return {**new, "key": key, "state_rank": SOURCE_FIDELITY.get(new["arrived_via"], 0), "props": {}}


def test_the_upserts_case_and_decide_give_the_same_outcome_for_every_case(clean_graph):
    rows, stored_nodes = [], []
    for i, (stored, new) in enumerate(TABLE):
        key = f"case:{i}"
        rows.append(_row(key, new))
        if stored is not None:
            stored_nodes.append({**stored, "key": key})
    with write_session(clean_graph, DB) as session:
        session.execute_write(lambda tx: tx.run(
            "UNWIND $nodes AS n CREATE (c:Conversation) SET c = n, c.sources = [n.state_source], "
            "c.source_files = CASE WHEN n.state_file IS NULL THEN [] ELSE [n.state_file] END",
            nodes=stored_nodes).consume())
        stored = session.execute_read(read_state, [row["key"] for row in rows])  # the load's own check
        in_python = {row["key"]: decide(row, stored.get(row["key"])) for row in rows}
        in_cypher = session.execute_write(lambda tx: {
            r["key"]: r["outcome"] for r in tx.run(UPSERT_CONVERSATIONS, rows=rows, fidelity=SOURCE_FIDELITY)})
    assert len(stored) == len(stored_nodes) and len(in_cypher) == len(TABLE)
    assert {k: (in_python[k], in_cypher[k]) for k in in_python if in_python[k] != in_cypher[k]} == {}
    assert set(in_python.values()) == {"created", "updated", "unchanged", "skipped"}  # the table reaches every outcome


def _stored(**fields) -> dict:
    base = {"key": "k", "version": 100.0, "hash": STORED_HASH, "state_source": "chatgpt", "state_file": "a.json",
            "deep": False, "sources": ["chatgpt"], "source_files": ["a.json"], "swapping_in": None}
    return base | fields


def _new(**fields) -> dict:
    return _row("k", {"state_version": 100.0, "state_hash": STORED_HASH, "arrived_via": "chatgpt",
                      "source_file": "a.json", "deep": False} | fields)


@pytest.mark.parametrize(("new", "stored", "outcome"), [
    (_new(), None, "created"),
    (_new(), _stored(), "unchanged"),
    (_new(deep=True), _stored(), "updated"),  # the same state, now with its trace
    (_new(state_version=101.0, state_hash=SMALLER), _stored(), "updated"),  # newer wins whatever its hash
    (_new(state_version=99.0, state_hash=LARGER), _stored(), "skipped"),  # older never wins
    # the same time from another file: the richer format, then the larger hash (the same pick as model.state_order)
    (_new(source_file="b.json", state_hash=LARGER), _stored(), "updated"),
    (_new(source_file="b.json", state_hash=SMALLER), _stored(), "skipped"),
    (_new(source_file="b.json", state_hash=SMALLER, arrived_via="claude-ai"), _stored(state_source="rex"), "updated"),
    (_new(source_file="b.json", state_hash=LARGER, arrived_via="chat-export"), _stored(), "skipped"),
    # the same time re-read from the same file with other content (a reader changed): the file's newest reading
    (_new(state_hash=SMALLER), _stored(), "updated"),
])
def test_decide_keeps_the_newest_state(new, stored, outcome):
    assert decide(new, stored) == outcome
