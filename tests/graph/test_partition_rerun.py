"""A day's load from the normalized tables with their `state_hash` column (issue 11), against the real Neo4j.

`load_graph_partition` reads each upload's key/state columns and the graph's stored states first and builds only
the conversations that are written; the others are counted without being read. The same sequence of loads runs
through it and through the load it replaces (every conversation read back whole from tables without the column,
its hash computed, `load_conversations`): after every step the summaries and the graph dumps are equal, the
unchanged steps build nothing and write nothing (0 updates), and only the states that are written are built.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from graph_inputs import generated, graph_dump, read, wipe, write_inputs

import chatetl.graph.load as graph_load
from chatetl.graph.load import load_conversations, load_graph_partition
from chatetl.layout import table_key
from chatetl.model import computed_state_hash
from chatetl.storage import LocalObjectStore
from chatetl.tables import TableWriter, iter_conversations

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None


def _write_day(store: LocalObjectStore, day: str, convs: list, with_hash: bool = True) -> tuple[Path, Path]:
    c_path, m_path = (store.root / table_key(t, day, "upload-1") for t in ("conversations", "messages"))
    c_path.parent.mkdir(parents=True, exist_ok=True)
    m_path.parent.mkdir(parents=True, exist_ok=True)
    with TableWriter(c_path, m_path) as writer:
        for conv in convs:
            writer.add(conv, upload_key="raw/upload-1.json")
    if not with_hash:  # as a writer before the column wrote it
        pq.write_table(pq.read_table(c_path).drop_columns(["state_hash"]), c_path)
    return c_path, m_path


def _steps(tmp_path: Path) -> list[tuple[str, list, bool, int | None]]:
    """(name, the upload's conversations, deep, how many of them the new path builds)."""
    every_source = [c for p in write_inputs(tmp_path / "inputs").values() for c in read(p)]
    v0, v1, v2 = generated(40, 6), generated(40, 6, version=1), generated(40, 6, version=2)
    for c in (v0[7], v1[7]):
        c.updated_at = None  # its version from its messages' times
    newest = [v1[i] if i % 10 == 0 else c for i, c in enumerate(v0)]
    moved = [c.model_copy(update={"source_file": "elsewhere.json"}) for c in newest[1:4]]
    everything = len(v0) + len(every_source)
    return [
        ("first load", v0 + every_source, False, everything),
        ("unchanged rerun", v0 + every_source, False, 0),
        ("10% resync", newest + every_source, False, 4),
        ("older states replayed", v0[::10], False, 0),
        ("deep mode on", newest + every_source, True, everything),
        ("unchanged deep rerun", newest + every_source, True, 0),
        ("the same states from another file", moved, True, 3),
        ("two states of one chat in the upload", [v1[5], v2[5], newest[6]], True, 2),
    ]


def _summary(summary) -> dict:
    """The counts to compare (the server's own figures apart: `graph_updates` is compared where it must be 0)."""
    out = summary.to_dict()
    for own in ("largest_transaction_bytes", "graph_updates"):
        out.pop(own)
    return out


def test_the_partition_load_writes_the_graph_the_whole_read_wrote(clean_graph, tmp_path, monkeypatch):
    steps = _steps(tmp_path)
    # the load it replaces: each upload read back whole (no stored hash: computed from the conversation)
    old_store = LocalObjectStore(tmp_path / "old")
    wipe(clean_graph, DB)
    expected = []
    for n, (_name, convs, deep, _) in enumerate(steps):
        paths = _write_day(old_store, f"2026-03-{n + 1:02d}", convs, with_hash=False)
        back = [c for c, _ in iter_conversations(*paths)]
        assert all(getattr(c, "_stored_state_hash", None) is None for c in back)
        summary = load_conversations(clean_graph, back, database=DB, deep=deep)
        expected.append((_summary(summary), graph_dump(clean_graph, DB), summary.graph_updates))

    built: list[int | None] = []
    real = graph_load.iter_conversations

    def counting(c_path, m_path, rows=None):
        built.append(None if rows is None else len(rows))
        return real(c_path, m_path, rows)

    monkeypatch.setattr(graph_load, "iter_conversations", counting)
    store = LocalObjectStore(tmp_path / "new")
    wipe(clean_graph, DB)
    for n, (name, convs, deep, builds) in enumerate(steps):
        day = f"2026-03-{n + 1:02d}"
        _write_day(store, day, convs)
        summary = load_graph_partition(store, clean_graph, day, DB, deep=deep)
        want_summary, want_dump, updates = expected[n]
        assert _summary(summary) == want_summary, name
        assert graph_dump(clean_graph, DB) == want_dump, name
        assert built[-1] == builds, name
        if builds == 0:
            assert summary.graph_updates == updates == 0, name
            assert summary.conversations_unchanged + summary.conversations_skipped == len(convs), name
        else:
            assert summary.graph_updates > 0, name
    # the steps did what they say
    assert expected[2][0]["conversations_updated"] == 4 and expected[3][0]["conversations_skipped"] == 4
    assert expected[1][0]["conversations_unchanged"] == len(steps[1][1]) and expected[4][0]["traces_written"] > 0
    assert expected[6][0]["conversations_unchanged"] == 3 and expected[6][2] > 0


def test_tables_written_before_the_column_load_the_same_graph(clean_graph, tmp_path):
    convs = [c for p in write_inputs(tmp_path / "inputs").values() for c in read(p)] + generated(20, 5)
    new_store, old_store = LocalObjectStore(tmp_path / "new"), LocalObjectStore(tmp_path / "old")
    new_paths = _write_day(new_store, "2026-03-01", convs)
    _write_day(old_store, "2026-03-01", convs, with_hash=False)
    first = load_graph_partition(new_store, clean_graph, "2026-03-01", DB)
    dump = graph_dump(clean_graph, DB)
    # the stored hashes are the ones computed from the conversations read back
    hashes, _, _ = clean_graph.execute_query("MATCH (c:Conversation) RETURN c.key AS key, c.state_hash AS hash", database_=DB)
    assert {r["key"]: r["hash"] for r in hashes} == {c.key: computed_state_hash(c) for c, _ in iter_conversations(*new_paths)}
    # an older file of the same states: unchanged, nothing written
    again = load_graph_partition(old_store, clean_graph, "2026-03-01", DB)
    assert again.conversations_unchanged == len(convs) and again.graph_updates == 0
    assert graph_dump(clean_graph, DB) == dump
    wipe(clean_graph, DB)
    old_first = load_graph_partition(old_store, clean_graph, "2026-03-01", DB)
    assert graph_dump(clean_graph, DB) == dump
    assert _summary(old_first) == _summary(first) and first.conversations_created == len(convs)
    rerun = load_graph_partition(new_store, clean_graph, "2026-03-01", DB)
    assert rerun.conversations_unchanged == len(convs) and rerun.graph_updates == 0
