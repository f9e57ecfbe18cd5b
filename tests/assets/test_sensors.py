"""upload_sensor against the real S3 server (SeaweedFS), evaluated as the daemon evaluates it:
a new upload gives one run request, the same upload none, a replaced upload one again, the
same bytes uploaded again on a later day a run key of their own, and a backlog larger than
the per-tick cap drains over several ticks with a correct cursor."""

from __future__ import annotations

import json
import tempfile
from contextlib import nullcontext
from datetime import UTC, datetime, timedelta

import pytest
from dagster import build_sensor_context, instance_for_test

from assets.sensors import upload_sensor
from chatetl.ingest.index import indexed_uploads, partition_of, read_coverage
from chatetl.samples import chatgpt_export
from resources.object_store import S3ObjectStoreResource

pytestmark = pytest.mark.integration




@pytest.fixture
def resource(definitions):
    res = definitions.resources["object_store"]
    assert isinstance(res, S3ObjectStoreResource)
    return res


def tick(resource, cursor: str | None, instance=None):
    """One evaluation of the sensor as the daemon runs it: (run requests, new cursor, skip message)."""
    import assets.definitions

    defs = assets.definitions.build_definitions()
    # a context manager, as the daemon opens it: the S3 resource initializes its nested S3Resource
    with (nullcontext(instance) if instance else instance_for_test()) as daemon_instance, build_sensor_context(
        cursor=cursor, definitions=defs, resources={"object_store": resource}, sensor_name="upload_sensor", instance=daemon_instance,
        instance_ref=daemon_instance.get_ref(),  # (the partitions it adds are checked against the instance's)
    ) as context:
        data = upload_sensor.evaluate_tick(context)
        for added in data.dynamic_partitions_requests or []:  # as the daemon applies them, before the runs
            daemon_instance.add_dynamic_partitions(added.partitions_def_name, list(added.partition_keys))
    return data.run_requests or [], data.cursor, data.skip_message


def test_new_same_and_replaced_upload(resource):
    store = resource.store
    data = chatgpt_export()
    info = store.put_bytes("raw/alice/chatgpt-export.zip", data)
    today = partition_of(info)
    assert today == datetime.now(UTC).date().isoformat()

    requests, cursor, _ = tick(resource, None)
    assert len(requests) == 1
    request = requests[0]
    assert request.partition_key == f"{today}/alice"  # the partition of alice's uploads of the day
    assert request.run_key == f"raw/alice/chatgpt-export.zip@{info.etag}"
    assert request.tags["chatetl/uploads"] == "1" and request.tags["chatetl/upload"] == info.key
    assert request.tags["dagster/priority"] == "1"  # a fresh upload's run goes before backfills in the queue
    # the run will find its upload in the index, without listing raw/
    batch = json.loads(store.get_bytes(request.tags["chatetl/index_batch"]))
    assert [u["key"] for u in batch["uploads"]] == [info.key]
    assert [u.key for u in indexed_uploads(store, today)] == [info.key]

    # the same upload on the next tick: nothing to run
    requests, cursor2, skip = tick(resource, cursor)
    assert requests == [] and "no new or replaced uploads" in skip

    # the same bytes uploaded again: the same version, still nothing
    assert store.put_bytes("raw/alice/chatgpt-export.zip", data).etag == info.etag
    requests, cursor3, _ = tick(resource, cursor2)
    assert requests == []

    # replaced by other bytes: one run, keyed by the new ETag
    replaced = store.put_bytes("raw/alice/chatgpt-export.zip", chatgpt_export(shards=1))
    assert replaced.etag != info.etag
    requests, cursor4, _ = tick(resource, cursor3)
    assert [(r.run_key, r.partition_key) for r in requests] == [(f"raw/alice/chatgpt-export.zip@{replaced.etag}", f"{today}/alice")]
    assert tick(resource, cursor4)[0] == []


def test_same_bytes_uploaded_again_on_a_later_day_get_a_run_key_of_their_own(resource):
    # Dagster skips a run key it has already seen, so `key@etag` alone would leave the move
    # to the next day's schedule
    from dagster import DagsterRunStatus, instance_for_test
    from dagster._core.test_utils import create_run_for_test

    store = resource.store
    info = store.put_bytes("raw/carol/chatgpt-export.zip", chatgpt_export())
    today = partition_of(info)
    yesterday = (info.last_modified - timedelta(days=1)).date().isoformat()
    plain = f"{info.key}@{info.etag}"
    with instance_for_test() as instance:
        # nothing ran yet: the documented key@etag
        assert [r.run_key for r in tick(resource, None, instance)[0]] == [plain]
        # that key already ran for today: the same key (Dagster skips it: the same version)
        create_run_for_test(instance, job_name="ingest_job", status=DagsterRunStatus.SUCCESS, tags={"dagster/partition": f"{today}/carol", "dagster/sensor_name": "upload_sensor", "dagster/run_key": plain})
        assert [r.run_key for r in tick(resource, None, instance)[0]] == [plain]
    with instance_for_test() as instance:
        # the same bytes ran yesterday: today's upload of them is another version, with its own key
        create_run_for_test(instance, job_name="ingest_job", status=DagsterRunStatus.SUCCESS, tags={"dagster/partition": f"{yesterday}/carol", "dagster/sensor_name": "upload_sensor", "dagster/run_key": plain})
        requests, _, _ = tick(resource, None, instance)
        assert [(r.run_key, r.partition_key) for r in requests] == [(f"{plain}@date={today}", f"{today}/carol")]


def test_a_new_key_sorting_before_the_others_is_found_next_tick(resource):
    store = resource.store
    store.put_bytes("raw/zed/export.zip", b"zip-ish bytes")
    _, cursor, _ = tick(resource, None)
    early = store.put_bytes("raw/aaron/export.json", b"[]")
    requests, _, _ = tick(resource, cursor)
    assert [r.run_key for r in requests] == [f"raw/aaron/export.json@{early.etag}"]


def test_a_backlog_drains_over_several_ticks(resource, monkeypatch):
    monkeypatch.setenv("CHATETL_SENSOR_MAX_KEYS", "10")
    store = resource.store
    keys = [f"raw/study/participant-{i:03d}.json" for i in range(25)]
    for i, key in enumerate(keys):
        store.put_bytes(key, json.dumps([{"n": i}]).encode())
    cursor = None
    requested: list[str] = []
    highs = []
    for _ in range(3):
        requests, cursor, _ = tick(resource, cursor)
        assert len(requests) == 1  # one day, one batched run request per tick
        batch = json.loads(store.get_bytes(requests[0].tags["chatetl/index_batch"]))
        requested += [u["key"] for u in batch["uploads"]]
        assert requests[0].tags["chatetl/uploads"] == str(len(batch["uploads"]))
        highs.append(json.loads(cursor)["high"])
    assert highs == [keys[9], keys[19], keys[24]]
    assert requested == keys  # every upload exactly once, in key order
    # then the re-scan walks the 25 keys, 10 per tick, finding nothing new, and completes a cycle
    quiet_ticks = 0
    while read_coverage(store) is None:
        requests, cursor, skip = tick(resource, cursor)
        assert requests == [] and "no new or replaced" in skip
        quiet_ticks += 1
        assert quiet_ticks <= 4
    assert quiet_ticks >= 2  # bounded: one tick could not re-scan 25 keys under a cap of 10
    assert json.loads(cursor)["cycles"] >= 1
    assert [u.key for u in indexed_uploads(store, partition_of(store.head(keys[0])))] == keys


def test_uploads_join_a_run_still_waiting_in_the_queue(resource):
    from dagster import DagsterRunStatus, instance_for_test
    from dagster._core.test_utils import create_run_for_test

    store = resource.store
    with instance_for_test() as instance:
        first = store.put_bytes("raw/burst/001.json", b"[1]")
        day = partition_of(first)
        requests, cursor, _ = tick(resource, None, instance)
        assert len(requests) == 1
        # the daemon turned it into a run that has not started yet (NOT_STARTED here; QUEUED,
        # the same query, needs a code location origin that a unit test does not have)
        queued = create_run_for_test(
            instance,
            job_name="ingest_job",
            status=DagsterRunStatus.NOT_STARTED,
            tags={"dagster/partition": f"{day}/burst", "dagster/sensor_name": "upload_sensor", "dagster/run_key": requests[0].run_key},
        )
        store.put_bytes("raw/burst/002.json", b"[2]")
        requests, cursor, skip = tick(resource, cursor, instance)
        assert requests == [] and f"1 upload(s) of {day}/burst joined queued run {queued.run_id}" in skip
        # the waiting run will find both in the index when it starts
        assert [u.key for u in indexed_uploads(store, day)] == ["raw/burst/001.json", "raw/burst/002.json"]
        # once it has left the queue, the next upload gets a run of its own
        instance.delete_run(queued.run_id)
        third = store.put_bytes("raw/burst/003.json", b"[3]")
        requests, cursor, _ = tick(resource, cursor, instance)
        assert [r.run_key for r in requests] == [f"{third.key}@{third.etag}"]


def test_a_deleted_upload_is_retracted_by_the_run_of_the_next_tick(resource, definitions, clean_graph):
    from dagster import DagsterInstance

    store = resource.store
    grok = {"schema": "chat-export/1", "platform": "grok", "title": "Tide tables", "chat_id": "grok-gone",
            "exported_at": "2026-01-02T08:00:00Z",
            "messages": [{"role": "user", "text": "When is high tide?"}, {"role": "assistant", "text": "At 14:05."}]}
    kept = store.put_bytes("raw/alice/chatgpt-export.zip", chatgpt_export())
    info = store.put_bytes("raw/bob/grok.json", json.dumps(grok).encode())
    day = partition_of(info)
    job = definitions.resolve_job_def("ingest_job")
    instance = DagsterInstance.local_temp(tempfile.mkdtemp(prefix="chatetl-sensor-"))

    requests, cursor, _ = tick(resource, None, instance)
    # alice's and bob's uploads of the day: a partition each, whose runs may go on at the same time
    assert [r.partition_key for r in requests] == [f"{day}/alice", f"{day}/bob"]
    for request in requests:
        assert job.execute_in_process(partition_key=request.partition_key, instance=instance).success

    def in_graph() -> int:
        return clean_graph.execute_query("MATCH (n {key: 'grok:grok-gone'}) RETURN count(n) AS n").records[0]["n"]

    def exported() -> list[str]:
        return [o.key for o in store.list("exports/") if "grok" in o.key.split("/")[-1] and "sharegpt-" not in o.key]

    assert in_graph() == 2 and exported()  # its Conversation and Document, its files
    requests, cursor, skip = tick(resource, cursor, instance)
    assert requests == [] and "0 deleted" in skip

    store.delete(info.key)
    requests, cursor, _ = tick(resource, cursor, instance)
    assert [(r.partition_key, r.run_key, r.tags["chatetl/deleted"], r.tags["dagster/priority"]) for r in requests] == [
        (f"{day}/bob", f"deleted:{info.key}@{info.etag}@date={day}", info.key, "1")]
    assert job.execute_in_process(partition_key=requests[0].partition_key, instance=instance, tags=requests[0].tags).success
    assert in_graph() == 0 and exported() == []
    assert clean_graph.execute_query("MATCH (c:Conversation) RETURN count(c) AS n").records[0]["n"] == 3  # the zip's stay
    assert store.head(kept.key) is not None
    # retracted: the next ticks request nothing
    requests, cursor, skip = tick(resource, cursor)
    assert requests == [] and "0 deleted" in skip


def test_deletions_are_found_a_page_at_a_time_when_raw_is_too_big_for_a_tick(resource):
    from chatetl.ingest.deletions import gone_uploads
    from chatetl.ingest.ledger import Ledger, LedgerEntry, write_location
    from chatetl.layout import upload_id

    store = resource.store
    infos = [store.put_bytes(f"raw/many/{i:03}.json", b"[]") for i in range(5)]
    day = partition_of(infos[0])
    ledger = Ledger.load(store, day)
    for info in infos:
        write_location(store, upload_id(info.key), info.key, day, info.etag)
        ledger.record(LedgerEntry(key=info.key, etag=info.etag, size=2, upload_id=upload_id(info.key), parser="p",
                                  conversations=0, messages=0, errors=0, outputs={}))
    ledger.save(store)
    store.delete(infos[3].key)
    found, pos, pages = [], "", 0
    while True:
        gone, pos = gone_uploads(store, None, pos, page=2)
        found += gone
        pages += 1
        if not pos:
            break
    assert pages == 3 and [(g.key, g.day) for g in found] == [(infos[3].key, day)]
    listed = [i.key for i in infos if i is not infos[3]]
    assert [g.key for g in gone_uploads(store, listed)[0]] == [infos[3].key]
