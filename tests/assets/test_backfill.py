"""A backfill over several daily partitions, in process, against the real Neo4j: runs split as the
job's backfill policy splits them (a range of days per run), every partition gets its own
outputs and passes its checks; re-running an old partition afterwards (even forcing a
reprocess, as after a parser upgrade) never regresses the graph: the newest state wins;
re-running the whole range skips every upload."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pyarrow.dataset as ds
import pytest
from dagster import DagsterInstance
from upload_partitions import added

from assets.policies import REPROCESS_TAG
from chatetl.ingest.groups import UploadGroup
from chatetl.layout import ledger_key, table_key, upload_id
from chatetl.samples import chatgpt_conversations, claude_export, continued

pytestmark = pytest.mark.integration

DAYS = ["2026-03-01", "2026-03-02", "2026-03-03"]
RANGE_START = "dagster/asset_partition_range_start"
RANGE_END = "dagster/asset_partition_range_end"


def at(day: str, hour: int = 10) -> float:
    return datetime.fromisoformat(day).replace(hour=hour, tzinfo=UTC).timestamp()


@pytest.fixture
def definitions(tmp_path, monkeypatch, services):
    monkeypatch.setenv("CHATETL_STORE", "local")
    monkeypatch.setenv("CHATETL_LOCAL_STORE_ROOT", str(tmp_path / "bucket"))
    import assets.definitions

    return assets.definitions.build_definitions()


def put(store, key: str, data: bytes, day: str):
    store.put_bytes(key, data)
    os.utime(store.root / key, (at(day), at(day)))


def run_backfill(job, partitions, instance, tags=None):
    """The runs a backfill of `partitions` launches: ranges of at most the policy's size, oldest first."""
    size = job.backfill_policy.max_partitions_per_run or len(partitions)
    results = []
    for i in range(0, len(partitions), size):
        chunk = partitions[i : i + size]
        if len(chunk) == 1:
            result = job.execute_in_process(partition_key=chunk[0], instance=instance, tags=tags)
        else:
            result = job.execute_in_process(instance=instance, tags={**(tags or {}), RANGE_START: chunk[0], RANGE_END: chunk[-1]})
        assert result.success
        results.append(result)
    return results


def materialized(results):
    out: dict[str, set[str]] = {}
    for r in results:
        for e in r.get_asset_materialization_events():
            out.setdefault(e.materialization.asset_key.to_user_string(), set()).add(e.materialization.partition)
    return out


def checks(results):
    return [(e.check_name, e.passed, {k: v.value for k, v in e.metadata.items() if isinstance(v.value, int)}) for r in results for e in r.get_asset_check_evaluations()]


def graph_state(driver, key):
    rec = driver.execute_query(
        "MATCH (c:Conversation {key: $key}) RETURN c.message_count AS turns, COUNT { (c)-[:HAS_MESSAGE]->() } AS messages",
        key=key,
        database_=os.environ["NEO4J_DATABASE"],
    ).records
    return (rec[0]["turns"], rec[0]["messages"]) if rec else None


def test_a_backfill_over_three_days_then_reruns(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    trip, stats, tram = chatgpt_conversations()
    put(store, "raw/p1/monday.json", json.dumps([trip, stats]).encode(), DAYS[0])
    put(store, "raw/p1/tuesday.json", json.dumps([continued(trip)]).encode(), DAYS[1])
    put(store, "raw/p2/claude.zip", claude_export(), DAYS[2])
    put(store, "raw/p3/wednesday.json", json.dumps([tram]).encode(), DAYS[2])
    job = definitions.resolve_job_def("ingest_job")
    instance = DagsterInstance.ephemeral()
    # a partition per uploader and day: p1's two days, p2's and p3's uploads of the third day
    parts = [f"{DAYS[0]}/p1", f"{DAYS[1]}/p1", f"{DAYS[2]}/p2", f"{DAYS[2]}/p3"]
    added(instance, *parts)

    results = run_backfill(job, parts, instance)
    assert len(results) == -(-len(parts) // (job.backfill_policy.max_partitions_per_run or len(parts)))
    per_asset = materialized(results)
    assert set(per_asset) >= {"raw_uploads", "normalized", "graph", "documents"}
    assert all(found == set(parts) for found in per_asset.values()), per_asset
    assert all(passed for _, passed, _ in checks(results)), checks(results)

    # each partition has its own normalized rows, readable as one hive-partitioned dataset
    table = ds.dataset(store.root / "normalized" / "conversations", partitioning="hive").to_table().to_pylist()
    per_day = {}
    for row in table:
        per_day.setdefault(str(row["date"]), set()).add(row["conversation_key"])
    assert {d: len(v) for d, v in per_day.items()} == {DAYS[0]: 2, DAYS[1]: 1, DAYS[2]: 2}
    assert all(store.head(ledger_key(UploadGroup.parse(p).day, UploadGroup.parse(p).uploader)) is not None for p in parts)

    trip_key = next(iter(per_day[DAYS[1]]))
    newest = graph_state(clean_graph, trip_key)
    assert newest is not None and newest[0] == 6  # the continued chat: 4 turns + 2

    # re-running the old partition, even forcing a reprocess (as after a parser upgrade): newest still wins
    rerun = job.execute_in_process(partition_key=parts[0], instance=instance, tags={REPROCESS_TAG: "true"})
    assert rerun.success
    mats = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in rerun.get_asset_materialization_events()}
    assert mats["normalized"]["uploads_normalized"].value == 1
    assert graph_state(clean_graph, trip_key) == newest
    graph_check = next(c for c in checks([rerun]) if c[0] == "graph_matches_normalized")
    assert graph_check[1] and graph_check[2]["replaced_by_newer_state"] == 1

    # re-running the whole range: every upload skipped, the graph unchanged
    nodes = clean_graph.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"]
    again = run_backfill(job, parts, instance)
    normalized_meta = [e.materialization.metadata for r in again for e in r.get_asset_materialization_events() if e.materialization.asset_key.to_user_string() == "normalized"]
    assert normalized_meta and all(m["uploads_normalized"].value == 0 and m["uploads_skipped_unchanged"].value >= 1 for m in normalized_meta)
    assert clean_graph.execute_query("MATCH (n) RETURN count(n) AS n").records[0]["n"] == nodes
    assert graph_state(clean_graph, trip_key) == newest


def test_one_run_covers_a_range_of_days(definitions):
    """The range-aware assets (backfill policy: several days per run) materialize every day of a
    range in one run, each day processed on its own."""
    from assets.ingest import normalized, raw_uploads

    assert raw_uploads.backfill_policy.max_partitions_per_run >= 3 and normalized.backfill_policy == raw_uploads.backfill_policy
    store = definitions.resources["object_store"].store
    trip, stats, tram = chatgpt_conversations()
    for day, conv in zip(DAYS, (trip, stats, tram)):
        put(store, f"raw/{day}.json", json.dumps([conv]).encode(), day)
    job = definitions.resolve_implicit_global_asset_job_def().get_subset(asset_selection={raw_uploads.key, normalized.key})
    result = job.execute_in_process(instance=(instance := DagsterInstance.ephemeral()), tags={RANGE_START: added(instance, *DAYS), RANGE_END: DAYS[-1]})
    assert result.success
    assert materialized([result]) == {"raw_uploads": set(DAYS), "normalized": set(DAYS)}
    meta = next(e.materialization.metadata for e in result.get_asset_materialization_events() if e.materialization.asset_key == normalized.key)
    assert meta["conversations"].value == 3 and meta["uploads_normalized"].value == 3
    for day in DAYS:
        assert f"| {day} | 1 | 1 | 0 | 1 |" in meta["per_day"].value
        assert [o.key for o in store.list(f"normalized/conversations/date={day}/")] == [table_key("conversations", day, upload_id(f"raw/{day}.json"))]
    assert [c[:2] for c in checks([result])] == [
        ("columns_match_contract", True), ("unique_message_ids", True), ("gapless_active_branch_seq", True),
        ("uploads_read_cleanly", True),
    ]


def test_an_unreadable_day_does_not_hold_back_the_rest_of_a_backfill_range(definitions, clean_graph):
    store = definitions.resources["object_store"].store
    trip, _stats, tram = chatgpt_conversations()
    put(store, "raw/r/first.json", json.dumps([trip]).encode(), DAYS[0])
    put(store, "raw/r/garbage.bin", bytes(range(256)) * 8, DAYS[1])
    put(store, "raw/r/third.json", json.dumps([tram]).encode(), DAYS[2])
    job = definitions.resolve_job_def("ingest_job")
    parts = [f"{day}/r" for day in DAYS]
    result = job.execute_in_process(instance=(instance := DagsterInstance.ephemeral()), tags={RANGE_START: added(instance, *parts), RANGE_END: parts[2]})
    assert result.success
    mats = {e.materialization.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()}
    normalized = mats["normalized"]
    assert normalized["conversations"].value == 2 and normalized["errors"].value == 1
    assert parts[1] in normalized["days_with_nothing_readable"].value
    assert normalized["summary"].value.startswith(f"NOTHING READABLE on {parts[1]}")
    assert graph_state(clean_graph, f"chatgpt:{trip['id']}") is not None and graph_state(clean_graph, f"chatgpt:{tram['id']}") is not None
    # a range in which nothing at all is readable still fails loudly
    put(store, "raw/r/first.json", b"\x00garbage", DAYS[0])
    put(store, "raw/r/third.json", b"\x00garbage", DAYS[2])
    failed = job.execute_in_process(instance=instance, tags={RANGE_START: parts[0], RANGE_END: parts[2]}, raise_on_error=False)
    assert not failed.success
