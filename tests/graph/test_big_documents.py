"""Huge messages in Documents and chunks, and Documents the server refuses, against the real Neo4j (issue 14, item 1).

Before: one 100 MB message was one Document of ~65,000 chunks, all made, embedded (256 Python floats a
chunk) and sent to Neo4j in one transaction with the rest of its batch: 2.4 GB of client memory, and the
transaction failed (the connection timed out), so no chunk of any Document of the batch reached the graph.
Here: a Document of more than CHUNK_WINDOW chunks is made, embedded and written a window at a time
(chatetl.graph.chunks.DocumentChunks), giving the graph that writing it whole gives, an unchanged rerun
writes nothing, a run killed in any of its transactions and run again ends in the same graph; and a
Document whose node or chunks the server refuses fails alone: the rest of its batch is written, the
failure counted and described, and the next run tries it again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from export_inputs import chat
from graph_faults import DyingDriver, DyingSession, Killed
from graph_inputs import graph_dump, wipe

from chatetl.rag import partition
from chatetl.rag.chunking import ChunkOptions
from chatetl.rag.partition import DocumentsResult, process_documents

pytestmark = pytest.mark.integration

DB = os.environ.get("NEO4J_DATABASE") or None
SMALL = ChunkOptions(max_chars=120, overlap_chars=30)
REPO = Path(__file__).resolve().parents[2]


def _q(driver, cypher: str, **params) -> list[dict]:
    return [dict(r) for r in driver.execute_query(cypher, params, database_=DB).records]


def _long_text(paragraphs: int, tag: str = "") -> str:
    return "\n\n".join(f"Paragraph {i}{tag}: the ferry leaves at dawn, the bus at noon, and the last train at {i % 24} o'clock."
                       for i in range(paragraphs))


def _convs(version: int = 0, bad_key: bool = False) -> list:
    """Small chats around two long ones (dozens of chunks of SMALL each); `version` 1 rewords one and lengthens the other."""
    updated = None if not version else chat([("user", "x")]).updated_at + timedelta(hours=version)
    convs = [chat([("user", f"Question {i}?"), ("assistant", f"Answer {i}.")], conversation_id=f"small-{i}", updated=updated)
             for i in range(4)]
    convs.insert(1, chat([("user", "Tell me the timetable"), ("assistant", _long_text(60, "v1" if version else ""))],
                         conversation_id="long-a", updated=updated))
    convs.insert(3, chat([("user", "And the ferries?"), ("assistant", _long_text(45 + 10 * version))], conversation_id="long-b",
                         updated=updated))
    if bad_key:  # an id over the index key size limit: Neo4j refuses the Document node
        convs.insert(2, chat([("user", "a chat whose id no index can hold"), ("assistant", "indeed")], conversation_id="x" * 10_000))
    return convs


def _process(driver, convs, window: int, monkeypatch) -> DocumentsResult:
    monkeypatch.setattr(partition, "CHUNK_WINDOW", window)
    result = DocumentsResult()
    process_documents(driver, convs, result, database=DB, chunking=SMALL)
    return result


def _chunks_of(driver, key: str) -> list[dict]:
    return _q(driver, """
        MATCH (:Document {key: $key})-[:HAS_CHUNK]->(c:Chunk)
        RETURN c.position AS position, c.char_start AS start, c.char_end AS end, c.text AS text,
               COUNT { (c)-[:NEXT]->(:Chunk) } AS next
        ORDER BY c.position
        """, key=key)


def test_a_document_written_a_window_at_a_time_is_the_document_written_whole(clean_graph, monkeypatch):
    whole = _process(clean_graph, _convs(), 10**6, monkeypatch)  # every Document's chunks at once, as before
    assert whole.chunks_in_graph.documents == 6 and whole.chunks > 60
    expected = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    windows = _process(clean_graph, _convs(), 7, monkeypatch)  # the long ones (and the small ones together) 7 chunks at a time
    assert graph_dump(clean_graph, DB) == expected
    assert (windows.chunks, windows.chunks_in_graph.chunks, windows.chunks_in_graph.documents) == (whole.chunks, whole.chunks, 6)

    again = _process(clean_graph, _convs(), 7, monkeypatch)  # an unchanged rerun writes nothing
    assert (again.chunks_in_graph.chunks, again.chunks_in_graph.unchanged, again.chunks_in_graph.deleted) == (0, 6, 0)
    assert graph_dump(clean_graph, DB) == expected

    # a newer state: long-a reworded (as many chunks, other texts: found by digest once its windows are seen, then
    # written), long-b longer (written as its windows come); the graph is what writing them whole gives
    newer = _process(clean_graph, _convs(version=1), 7, monkeypatch)
    assert newer.chunks_in_graph.documents == 6 and newer.chunks_in_graph.unchanged == 0
    got = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    _process(clean_graph, _convs(version=1), 10**6, monkeypatch)
    assert got == graph_dump(clean_graph, DB)
    texts = _chunks_of(clean_graph, "chatgpt:long-a")
    assert all("v1" in t["text"] or "Paragraph" not in t["text"] for t in texts)
    assert [t["next"] for t in texts] == [1] * (len(texts) - 1) + [0]  # one NEXT chain, in order


def test_fewer_chunks_than_before_leave_no_stale_ones(clean_graph, monkeypatch):
    _process(clean_graph, _convs(version=1), 7, monkeypatch)  # long-b: 55 paragraphs
    newer = _convs(version=2)
    newer[3] = chat([("user", "And the ferries?"), ("assistant", _long_text(20))], conversation_id="long-b",
                    updated=newer[3].updated_at)  # a newer state of 20 paragraphs
    result = _process(clean_graph, newer, 7, monkeypatch)
    assert result.chunks_in_graph.deleted > 0
    rows = _chunks_of(clean_graph, "chatgpt:long-b")
    [doc] = _q(clean_graph, "MATCH (d:Document {key: 'chatgpt:long-b'}) RETURN d.chunk_count AS n, d.content AS content")
    assert [r["position"] for r in rows] == list(range(doc["n"])) and all(doc["content"][r["start"]:r["end"]] == r["text"] for r in rows)


def test_a_run_killed_in_any_transaction_and_rerun_ends_in_the_same_graph(clean_graph, monkeypatch):
    convs = [c for c in _convs(version=1) if c.conversation_id in ("long-a", "long-b", "small-0")]
    before = [c for c in _convs() if c.conversation_id in ("long-a", "long-b", "small-0")]
    _process(clean_graph, before, 20, monkeypatch)
    counting = DyingDriver(clean_graph, after=10**9)
    _process(counting, convs, 20, monkeypatch)
    expected, writes = graph_dump(clean_graph, DB), counting.writes
    assert writes > 10  # Documents, windows, stale chunks, digests
    for after in range(writes):
        wipe(clean_graph, DB)
        _process(clean_graph, before, 20, monkeypatch)
        with pytest.raises(Killed):
            _process(DyingDriver(clean_graph, after), convs, 20, monkeypatch)
        _process(clean_graph, convs, 20, monkeypatch)  # the rerun
        assert graph_dump(clean_graph, DB) == expected, f"killed in write {after + 1} of {writes}"


# ----------------------------------------------------------------------------- one Document failing alone


def test_a_document_the_server_refuses_fails_alone_and_is_tried_again(clean_graph, monkeypatch):
    result = _process(clean_graph, _convs(bad_key=True), 7, monkeypatch)
    assert result.documents == 7 and result.documents_failed == 1 and result.documents_in_graph == 6
    [line] = result.failures
    assert line.startswith("chatgpt:xxxx") and "(10008 characters)" in line and "too large to index" in line
    assert result.chunks_in_graph.documents == 6 and result.chunks_in_graph.failed == 0  # the rest of the batch
    loaded = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    _process(clean_graph, _convs(), 7, monkeypatch)
    assert graph_dump(clean_graph, DB) == loaded  # everything else, exactly

    again = _process(clean_graph, _convs(bad_key=True), 7, monkeypatch)  # the rerun tries it again, the others unchanged
    assert again.documents_failed == 1 and again.chunks_in_graph.unchanged == 6 and again.chunks_in_graph.chunks == 0


class RefusingDriver:
    """The real driver, whose write transactions fail as the server refuses a value (a ClientError) whenever
    they carry a chunk of the Document `key`."""

    def __init__(self, driver, key: str):
        self.driver, self.key, self.refused = driver, key, 0

    def session(self, **config):
        return _RefusingSession(self.driver.session(**config), self)

    def __getattr__(self, name):
        return getattr(self.driver, name)


class _RefusingSession(DyingSession):
    def execute_write(self, work, *args, **kwargs):
        owner = self.owner

        def refusing(tx, *a, **k):
            return work(_RefusingTx(tx, owner), *a, **k)

        refusing.metadata = getattr(work, "metadata", None)
        return self.session.execute_write(refusing, *args, **kwargs)


class _RefusingTx:
    def __init__(self, tx, owner: RefusingDriver):
        self.tx, self.owner = tx, owner

    def run(self, query, parameters=None, **kwargs):
        from neo4j.exceptions import Neo4jError

        rows = (parameters or {}).get("rows", kwargs.get("rows")) or []
        if any(isinstance(r, dict) and r.get("props", {}).get("document_key") == self.owner.key for r in rows):
            self.owner.refused += 1
            raise Neo4jError._hydrate_neo4j(code="Neo.ClientError.Statement.ArgumentError", message="a value the server refuses")
        return self.tx.run(query, parameters, **kwargs)

    def __getattr__(self, name):
        return getattr(self.tx, name)


@pytest.mark.parametrize("refused", ["chatgpt:small-2", "chatgpt:long-a"])  # among others in a transaction; a window at a time
def test_a_documents_chunks_the_server_refuses_fail_alone_and_are_written_by_the_next_run(clean_graph, monkeypatch, refused):
    refusing = RefusingDriver(clean_graph, refused)
    result = _process(refusing, _convs(), 20, monkeypatch)
    assert refusing.refused >= 1
    summary = result.chunks_in_graph
    assert (summary.documents, summary.failed, result.documents_in_graph) == (5, 1, 6)
    [line] = summary.failures
    assert line.startswith(f"{refused}: ") and "a value the server refuses" in line
    for conv in _convs():
        if conv.key != refused:
            assert len(_chunks_of(clean_graph, conv.key)) > 0
    [mark] = _q(clean_graph, "MATCH (d:Document {key: $k}) RETURN d.chunks_digest AS digest", k=refused)
    assert mark["digest"] is None  # not marked done: the next run writes its chunks

    again = _process(clean_graph, _convs(), 20, monkeypatch)
    assert (again.chunks_in_graph.documents, again.chunks_in_graph.unchanged, again.chunks_in_graph.failed) == (1, 5, 0)
    got = graph_dump(clean_graph, DB)
    wipe(clean_graph, DB)
    _process(clean_graph, _convs(), 20, monkeypatch)
    assert got == graph_dump(clean_graph, DB)


# ----------------------------------------------------------------------------- one huge message


_MEASURE = r"""
import json, os, random, sys, time
def peak_kb():  # this process's own peak RSS: ru_maxrss would start at pytest's, inherited across fork and exec
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
from export_inputs import chat
from neo4j import GraphDatabase
from chatetl.rag.embeddings import builtin_embedder
from chatetl.rag.partition import DocumentsResult, process_documents
mb = int(sys.argv[1])
rng = random.Random(14)
words = [f"w{i}" for i in range(5000)]
paragraphs = ["\n".join(" ".join(rng.choices(words, k=14)) for _ in range(5)) for _ in range(300)]
n = mb * 2**20 // (len(paragraphs[0]) + 8) + 1
huge = "\n\n".join(f"{paragraphs[i % 300]} p{i}" for i in range(n))  # one message of `mb` MB
convs = [chat([("user", f"question {i}"), ("assistant", f"answer {i}")], conversation_id=f"s{i}") for i in range(4)]
convs.insert(2, chat([("user", "the huge one"), ("assistant", huge)], conversation_id="huge"))
del huge
driver = GraphDatabase.driver(os.environ["NEO4J_URI"], auth=(os.environ["NEO4J_USER"], os.environ["NEO4J_PASSWORD"]))
model = builtin_embedder()
model(["warm up"])
base = peak_kb()
started = time.monotonic()
result = DocumentsResult()
process_documents(driver, convs, result, database=os.environ.get("NEO4J_DATABASE") or None, embedder=model)
took = time.monotonic() - started
peak = peak_kb()
print(json.dumps({"base_kb": base, "peak_kb": peak, "seconds": took, "chunks": result.chunks,
                  "in_graph": result.chunks_in_graph.chunks, "failed": result.chunks_in_graph.failed + result.documents_failed,
                  "text_chars": len(convs[2].messages[1].text)}))
"""


@pytest.mark.slow
def test_a_message_of_30_mb_is_chunked_and_written_in_bounded_memory(clean_graph, services):
    """Before (the same input at 100 MB, embeddings on): 402 s, the client's peak RSS 2.4 GB above its start (~24
    times the message), no chunk of the batch in the graph. Now (100 MB: 326 s, +353 MB) every chunk is there, the
    chunks stitch back into the Document's text, and the client's growth stays within a few copies of the message
    (its Document's text, that text as one JSON line, the bytes sent for the Document node) plus a window's work."""
    mb = 30
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'tests'}"}
    run = subprocess.run([sys.executable, "-c", _MEASURE, str(mb)], capture_output=True, text=True, timeout=900, env=env, cwd=REPO)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    growth_mib = (got["peak_kb"] - got["base_kb"]) / 1024
    print(f"\n{mb} MB message: {got['chunks']} chunks in {got['seconds']:.0f} s, client peak RSS +{growth_mib:.0f} MiB")
    assert got["failed"] == 0 and got["in_graph"] == got["chunks"] > 15_000
    assert growth_mib < 3 * mb + 120, f"client peak RSS grew by {growth_mib:.0f} MiB"

    [doc] = _q(clean_graph, "MATCH (d:Document {key: 'chatgpt:huge'}) RETURN d.content AS content, d.chunk_count AS n")
    content = doc["content"]
    rows = _chunks_of(clean_graph, "chatgpt:huge")
    assert len(rows) == doc["n"] == got["chunks"] - 4 and [r["position"] for r in rows] == list(range(doc["n"]))
    assert sum(r["next"] for r in rows) == len(rows) - 1
    stitched, end = [], 0
    for r in rows:  # each chunk is its slice of the text; what lies between two (past the overlap) is blank
        assert r["text"] == content[r["start"]:r["end"]]
        assert r["start"] <= end or not content[end:r["start"]].strip()
        stitched.append(content[end:r["start"]] + r["text"][max(0, end - r["start"]):])
        end = max(end, r["end"])
    assert "".join(stitched) == content[:end] and not content[end:].strip() and end > got["text_chars"]
