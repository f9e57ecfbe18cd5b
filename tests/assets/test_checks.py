"""The blocking asset checks: contract columns, unique message ids, gapless seq on normalized;
graph counts matching the tables (with newest-wins accounted for). Bad tables are made by
rewriting good ones; a failing check stops the graph of the same run."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster import AssetCheckKey, DagsterInstance
from upload_partitions import partition_for

from chatetl.graph.checks import check_graph_partition
from chatetl.graph.load import load_graph_partition
from chatetl.ingest.checks import check_normalized_partition, schema_problems
from chatetl.ingest.index import partition_of
from chatetl.ingest.partition import ingest_partition
from chatetl.layout import table_key, upload_id
from chatetl.samples import chatgpt_conversations, continued
from chatetl.storage import LocalObjectStore
from chatetl.tables import MESSAGES_SCHEMA

DAY1 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC).timestamp()
DAY2 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def store(tmp_path):
    return LocalObjectStore(tmp_path / "bucket")


def upload(store, key, convs, when):
    store.put_bytes(key, json.dumps(convs).encode())
    os.utime(store.root / key, (when, when))
    info = store.head(key)
    day = partition_of(info)
    ingest_partition(store, day, [info])
    return info, day


def rewrite_messages(store, info, day, change, schema=MESSAGES_SCHEMA):
    path = store.root / table_key("messages", day, upload_id(info.key))
    rows = pq.read_table(path).to_pylist()
    rows = change(rows)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path)


def failures(reports):
    return {name: r.problems for name, r in reports.items() if not r.passed}


def test_good_tables_pass(store):
    _info, day = upload(store, "raw/a.json", chatgpt_conversations(), DAY1)
    reports = check_normalized_partition(store, day)
    assert failures(reports) == {}
    assert reports["columns"].counts["files"] == 2
    assert reports["unique"].counts["messages"] == 17 and reports["gapless"].counts["visible_turns"] == 8


def test_a_duplicate_message_id_fails(store):
    info, day = upload(store, "raw/a.json", chatgpt_conversations(), DAY1)

    def dup(rows):
        rows[2]["message_id"] = rows[1]["message_id"]
        return rows

    rewrite_messages(store, info, day, dup)
    found = failures(check_normalized_partition(store, day))
    assert list(found) == ["unique"] and "duplicate message ids" in found["unique"][0]


def test_a_gap_in_seq_fails(store):
    info, day = upload(store, "raw/a.json", chatgpt_conversations(), DAY1)

    def gap(rows):
        last = max((r for r in rows if r["seq"] is not None), key=lambda r: (r["conversation_key"], r["seq"]))
        last["seq"] += 1
        return rows

    rewrite_messages(store, info, day, gap)
    found = failures(check_normalized_partition(store, day))
    assert list(found) == ["gapless"] and "seq is not 0.." in found["gapless"][0]


def test_seq_off_the_active_branch_fails(store):
    info, day = upload(store, "raw/a.json", chatgpt_conversations(), DAY1)

    def off_branch(rows):
        row = next(r for r in rows if r["seq"] is not None and r["seq"] > 0)
        row["on_active_branch"] = False
        return rows

    rewrite_messages(store, info, day, off_branch)
    assert "off the active branch" in " ".join(failures(check_normalized_partition(store, day))["gapless"])


def test_a_missing_or_retyped_column_fails_and_stops_the_other_checks(store):
    info, day = upload(store, "raw/a.json", chatgpt_conversations(), DAY1)
    narrower = pa.schema([f if f.name != "seq" else pa.field("seq", pa.string()) for f in MESSAGES_SCHEMA if f.name != "role"])

    def drop(rows):
        return [{k: (str(v) if k == "seq" and v is not None else v) for k, v in r.items() if k != "role"} for r in rows]

    rewrite_messages(store, info, day, drop, schema=narrower)
    found = failures(check_normalized_partition(store, day))
    assert set(found) == {"columns", "unique", "gapless"}
    assert any("missing column 'role'" in p for p in found["columns"])
    assert any("column 'seq' is string, the contract says int32" in p for p in found["columns"])
    assert "not checked" in found["unique"][0]


def test_schema_problems_lists_extra_columns():
    extra = MESSAGES_SCHEMA.append(pa.field("surprise", pa.string()))
    assert schema_problems(extra, MESSAGES_SCHEMA) == ["unexpected column 'surprise'"]


# ---------------------------------------------------------------- against Neo4j


def _two_states():
    """One conversation as exported on day 1, and its continued state exported on day 2."""
    old = chatgpt_conversations()[0]
    return old, continued(old, prefix="late")


@pytest.mark.integration
def test_the_graph_check_follows_newest_wins(store, clean_graph):
    database = os.environ["NEO4J_DATABASE"]
    old, new = _two_states()
    _, day1 = upload(store, "raw/day1.json", [old], DAY1)
    _, day2 = upload(store, "raw/day2.json", [new], DAY2)
    # the newer day first, then a re-run of the older one: the graph keeps the newer state
    load_graph_partition(store, clean_graph, day2, database)
    load_graph_partition(store, clean_graph, day1, database)
    second = check_graph_partition(store, clean_graph, day2, database)
    first = check_graph_partition(store, clean_graph, day1, database)
    assert second.passed and second.counts["matched"] == 1
    assert first.passed and first.counts["replaced_by_newer_state"] == 1 and first.counts["matched"] == 0

    # a message lost from the graph, or a conversation missing, fails the check
    clean_graph.execute_query("MATCH (m:Message) WHERE m.message_id = 'late-1' DETACH DELETE m", database_=database)
    short = check_graph_partition(store, clean_graph, day2, database)
    assert not short.passed and "messages in the graph" in short.problems[0]
    clean_graph.execute_query("MATCH (c:Conversation) DETACH DELETE c", database_=database)
    missing = check_graph_partition(store, clean_graph, day1, database)
    assert not missing.passed and missing.counts["missing"] == 1


@pytest.mark.integration
def test_a_failing_blocking_check_stops_the_graph(tmp_path, monkeypatch, services, clean_graph):
    monkeypatch.setenv("CHATETL_STORE", "local")
    monkeypatch.setenv("CHATETL_LOCAL_STORE_ROOT", str(tmp_path / "bucket"))
    import assets.definitions
    from assets.ingest import normalized, raw_uploads

    defs = assets.definitions.build_definitions()
    graph = defs.resolve_assets_def("graph")
    store = defs.resources["object_store"].store
    info = store.put_bytes("raw/a.json", json.dumps(chatgpt_conversations()).encode())
    day = partition_of(info)
    everything = defs.resolve_implicit_global_asset_job_def()
    instance = DagsterInstance.ephemeral()
    partition = partition_for(instance, info)
    assert everything.get_subset(asset_selection={raw_uploads.key, normalized.key}).execute_in_process(partition_key=partition, instance=instance).success

    def dup(rows):
        rows[1]["message_id"] = rows[0]["message_id"]
        return rows

    rewrite_messages(store, info, day, dup)
    checks = {AssetCheckKey(normalized.key, n) for n in ("columns_match_contract", "unique_message_ids", "gapless_active_branch_seq")}
    run = everything.get_subset(asset_selection={graph.key}, asset_check_selection=checks).execute_in_process(
        partition_key=partition, instance=instance, raise_on_error=False
    )
    assert not run.success
    evaluations = {e.check_name: e.passed for e in run.get_asset_check_evaluations()}
    assert evaluations == {"columns_match_contract": True, "unique_message_ids": False, "gapless_active_branch_seq": True}
    assert run.get_asset_materialization_events() == []  # the graph never loaded the bad table
    assert clean_graph.execute_query("MATCH (c:Conversation) RETURN count(c) AS n").records[0]["n"] == 0


def test_text_from_uploads_is_inert_in_markdown_metadata():
    from assets.metadata import md_list, md_table

    hostile = "raw/<img src=x onerror=alert(1)>|`x`[link](javascript:y)\nnext"
    rendered = md_list([hostile]).value
    assert "<img" not in rendered and "&lt;img" in rendered and "\n" not in rendered.removeprefix("- ")
    assert "\\|" in rendered and "\\`" in rendered and "\\[link\\]" in rendered
    table = md_table(["upload", "why"], [(hostile, "x")]).value
    assert table.splitlines()[2].count(" | ") == 1  # the pipe in the key did not open a column
