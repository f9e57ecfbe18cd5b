"""A deleted upload leaves nothing behind; every output follows "newest state wins" (issue 14, items 3 and 5).

On the real services (S3 and Neo4j), through the Dagster job in process: two generated ChatGPT
exports share one conversation in two states, and one holds a conversation of its own. Every
output (graph nodes and relationships, rag/, per-conversation files and manifests, the day's zip,
training file and archive rows) holds the shared conversation once, in its newest state; deleting
the newer upload and rerunning the day leaves nothing of its own conversation anywhere and makes
the older upload's state the winner everywhere. A file holding one id twice with one update time
gives a warning and the same pick everywhere.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from dagster import DagsterInstance
from upload_partitions import run_day as day_runs

from chatetl.exports.bucket import read_manifest
from chatetl.ingest.index import partition_of
from chatetl.layout import bundle_key, training_key
from chatetl.model import state_order
from chatetl.tables import iter_partition

pytestmark = pytest.mark.integration

T = 1_767_000_000  # seconds, the generated chats' clock


def chatgpt_conversation(cid: str, title: str, updated: float, answer: str) -> dict:
    """One ChatGPT-shaped conversation (root, a question, an answer)."""
    def node(nid, parent, children, role=None, text=None, when=None):
        msg = None if role is None else {
            "id": nid, "author": {"role": role}, "create_time": when, "content": {"content_type": "text", "parts": [text]},
            "status": "finished_successfully", "metadata": {},
        }
        return {"id": nid, "parent": parent, "children": children, "message": msg}
    return {
        "id": cid, "conversation_id": cid, "title": title, "create_time": T, "update_time": updated, "current_node": f"{cid}-a",
        "mapping": {
            f"{cid}-root": node(f"{cid}-root", None, [f"{cid}-q"]),
            f"{cid}-q": node(f"{cid}-q", f"{cid}-root", [f"{cid}-a"], "user", f"question of {title}", T + 1),
            f"{cid}-a": node(f"{cid}-a", f"{cid}-q", [], "assistant", answer, updated),
        },
    }


def run_day(definitions, day):
    """A run of each partition of the day, one after another (each uploader's uploads); the last one."""
    runs = day_runs(definitions.resolve_job_def("ingest_job"), DagsterInstance.ephemeral(), definitions.resources["object_store"].store, day)
    assert runs and all(run.success for run in runs)
    return runs[-1]


def graph_titles(driver, key):
    with driver.session() as s:
        return s.run("MATCH (c:Conversation {key: $k}) RETURN c.title AS t", k=key).value()


def graph_leftovers(driver, key):
    """Nodes still tied to a conversation key: the Conversation, its Messages, its Document and Chunks."""
    with driver.session() as s:
        return s.run(
            """
            OPTIONAL MATCH (c:Conversation {key: $k}) WITH count(c) AS convs
            OPTIONAL MATCH (:Conversation {key: $k})-[:HAS_MESSAGE]->(m) WITH convs, count(m) AS msgs
            OPTIONAL MATCH (d:Document {key: $k}) WITH convs, msgs, count(d) AS docs
            OPTIONAL MATCH (:Document {key: $k})-[:HAS_CHUNK]->(ch) WITH convs, msgs, docs, count(ch) AS chunks
            OPTIONAL MATCH (m:Message) WHERE m.key STARTS WITH $k + ':' OR m.conversation_key = $k
            RETURN convs, msgs, docs, chunks, count(m) AS loose
            """,
            k=key,
        ).single().data()


def everything_under(store, prefix):
    """Every object's text under `prefix` (zip members and their bodies included)."""
    out = {}
    for o in store.list(prefix):
        data = store.get_bytes(o.key)
        if o.key.endswith(".zip"):
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                for name in zf.namelist():
                    out[f"{o.key}!{name}"] = name + "\n" + zf.read(name).decode("utf-8", "replace")
        elif not o.key.endswith(".parquet"):
            out[o.key] = data.decode("utf-8", "replace")
    return out


def holding(texts, needle):
    return sorted(k for k, v in texts.items() if needle in v)


def test_deleted_upload_leaves_nothing_and_the_other_upload_takes_over(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    driver = clean_graph
    newer = [chatgpt_conversation("shared-1", "Shared NEWER", T + 500, "answer NEWER"),
             chatgpt_conversation("lonely-1", "Lonely ONLY-A", T + 100, "answer ONLY-A")]
    older = [chatgpt_conversation("shared-1", "Shared OLDER", T + 200, "answer OLDER")]
    store.put_bytes("raw/a/conversations.json", json.dumps(newer).encode())
    info = store.put_bytes("raw/b/conversations.json", json.dumps(older).encode())
    day = partition_of(info)
    run_day(definitions, day)

    # item 5: the older state is nowhere but in its own normalized table
    assert graph_titles(driver, "chatgpt:shared-1") == ["Shared NEWER"]
    outputs = everything_under(store, "exports/") | everything_under(store, "rag/")
    assert holding(outputs, "answer OLDER") == []
    assert holding(outputs, "answer NEWER")
    zipped = [k for k in holding(outputs, "answer NEWER") if "!" in k]
    assert zipped, "the day's zip holds the newer state"
    training = store.get_bytes(training_key(day, "sharegpt-jsonl")).decode()
    assert "answer NEWER" in training and "answer OLDER" not in training and training.count("answer NEWER") == 1
    assert graph_leftovers(driver, "chatgpt:lonely-1")["convs"] == 1

    # item 3: delete the newer upload, rerun the day
    store.delete("raw/a/conversations.json")
    run_day(definitions, day)
    left = graph_leftovers(driver, "chatgpt:lonely-1")
    assert left == {"convs": 0, "msgs": 0, "docs": 0, "chunks": 0, "loose": 0}, left
    outputs = everything_under(store, "exports/") | everything_under(store, "rag/")
    assert holding(outputs, "ONLY-A") == [], holding(outputs, "ONLY-A")
    assert holding(outputs, "answer NEWER") == []
    assert read_manifest(store, "chatgpt:lonely-1") is None
    # the older upload's state is the winner everywhere
    assert graph_titles(driver, "chatgpt:shared-1") == ["Shared OLDER"]
    with driver.session() as s:
        doc = s.run("MATCH (:Conversation {key: 'chatgpt:shared-1'})-[:HAS_DOCUMENT]->(d:Document)-[:HAS_CHUNK]->(c:Chunk) "
                    "RETURN d.title AS title, collect(c.text) AS texts").single()
    assert doc is not None and any("answer OLDER" in t for t in doc["texts"])
    assert holding(outputs, "answer OLDER")
    assert any("!" in k for k in holding(outputs, "answer OLDER")), "the day's zip holds the remaining state"
    assert "answer OLDER" in store.get_bytes(training_key(day, "sharegpt-jsonl")).decode()
    manifest = read_manifest(store, "chatgpt:shared-1")
    assert manifest is not None and manifest["state_version"] == T + 200
    assert not list(store.list("state/retractions/")), "every stage applied the retraction"

    # a rerun changes nothing
    before = {o.key: o.etag for o in store.list("exports/")} | {o.key: o.etag for o in store.list("rag/")}
    run_day(definitions, day)
    after = {o.key: o.etag for o in store.list("exports/")} | {o.key: o.etag for o in store.list("rag/")}
    assert after == before


def test_one_id_twice_with_one_update_time_warns_and_picks_the_same_state_everywhere(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    driver = clean_graph
    twins = [chatgpt_conversation("twin-1", "Twin", T + 300, "answer FIRST"),
             chatgpt_conversation("twin-1", "Twin", T + 300, "answer SECOND")]
    info = store.put_bytes("raw/c/conversations.json", json.dumps(twins).encode())
    day = partition_of(info)
    run = run_day(definitions, day)
    mats = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in run.get_asset_materialization_events()}
    assert "raw/c/conversations.json: chatgpt:twin-1" in mats["normalized"]["duplicate_states"].value

    states = [c for _, convs in iter_partition(store, day) for c, _ in convs if c.key == "chatgpt:twin-1"]
    assert len(states) == 1, "the tables keep one state"
    kept = states[0]
    winner_text = next(m.text for m in kept.messages if m.role.value == "assistant")
    loser_text = ({"answer FIRST", "answer SECOND"} - {winner_text}).pop()
    # the pick is model.state_order: the larger of the two states
    assert state_order(kept)[:2] == (T + 300, 3)
    with driver.session() as s:
        texts = s.run("MATCH (:Conversation {key: 'chatgpt:twin-1'})-[:HAS_MESSAGE]->(m:Message) RETURN m.content AS t").value()
    assert any(winner_text in (t or "") for t in texts) and not any(loser_text in (t or "") for t in texts)
    outputs = everything_under(store, "exports/") | everything_under(store, "rag/")
    assert holding(outputs, loser_text) == []
    assert any("!" in k for k in holding(outputs, winner_text))
    assert winner_text in store.get_bytes(training_key(day, "sharegpt-jsonl")).decode()
    assert store.head(bundle_key(day)) is not None


def test_an_older_version_uploaded_over_a_newer_one_at_the_same_key_rolls_nothing_back(definitions, clean_graph):
    """Replaying an older export over the same object key (the bucket keeps only the older bytes):
    every output keeps the state it had, the newest one, as with an older upload under another key."""
    store = definitions.resources["object_store"].store
    driver = clean_graph
    key = "raw/same/conversations.json"
    info = store.put_bytes(key, json.dumps([chatgpt_conversation("same-1", "Same NEWER", T + 500, "answer NEWER")]).encode())
    day = partition_of(info)
    run_day(definitions, day)
    assert graph_titles(driver, "chatgpt:same-1") == ["Same NEWER"]

    store.put_bytes(key, json.dumps([chatgpt_conversation("same-1", "Same OLDER", T + 200, "answer OLDER")]).encode())
    run = run_day(definitions, day)
    assert graph_titles(driver, "chatgpt:same-1") == ["Same NEWER"]
    outputs = everything_under(store, "exports/") | everything_under(store, "rag/")
    assert holding(outputs, "answer OLDER") == [], holding(outputs, "answer OLDER")
    newer_in = holding(outputs, "answer NEWER")
    assert any("!" in k for k in newer_in), "the day's zip keeps the newer state"
    assert any(k.startswith("rag/") for k in newer_in), "so do the Documents' texts"
    assert any(k.startswith("exports/_archive/") for k in holding(outputs, "Same NEWER")), "and the archive's rows"
    assert holding(outputs, "Same OLDER") == []
    training = store.get_bytes(training_key(day, "sharegpt-jsonl")).decode()
    assert "answer NEWER" in training and "answer OLDER" not in training
    manifest = read_manifest(store, "chatgpt:same-1")
    assert manifest is not None and manifest["state_version"] == T + 500
    mats = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in run.get_asset_materialization_events()}
    assert f"{key}: chatgpt:same-1" in mats["normalized"]["kept_newer_states"].value
    with driver.session() as s:
        texts = s.run("MATCH (:Conversation {key: 'chatgpt:same-1'})-[:HAS_DOCUMENT]->(:Document)-[:HAS_CHUNK]->(c) RETURN c.text").value()
    assert texts and any("answer NEWER" in t for t in texts) and not any("answer OLDER" in t for t in texts)
