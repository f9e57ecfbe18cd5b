"""The ledger that makes reruns and backfills cheap and safe (chatetl.ingest.partition), on a
local folder store: an unchanged upload is skipped, a replaced one, a parser change or a
missing output makes it run again; a replaced upload that moved to a later day leaves the
earlier one; a deleted upload's outputs are retracted."""

from __future__ import annotations

import copy
import json
import os
from datetime import UTC, datetime

import pytest

from chatetl.ingest import ledger as ledger_module
from chatetl.ingest import partition as partition_ingest
from chatetl.ingest.index import partition_of
from chatetl.ingest.ledger import Ledger, read_location
from chatetl.ingest.partition import ingest_partition
from chatetl.layout import table_key, upload_id
from chatetl.samples import ChatGPTBuilder, chatgpt_conversations
from chatetl.storage import LocalObjectStore

DAY1 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC).timestamp()
DAY2 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def store(tmp_path):
    return LocalObjectStore(tmp_path / "bucket")


def put(store, key, convs, when):
    store.put_bytes(key, json.dumps(convs).encode())
    os.utime(store.root / key, (when, when))
    return store.head(key)


def etags(store, prefix=""):
    return {o.key: o.etag for o in store.list(prefix)}


def test_a_rerun_skips_unchanged_uploads_and_writes_nothing(store):
    info = put(store, "raw/a/conversations.json", chatgpt_conversations(), DAY1)
    first = ingest_partition(store, "2026-03-01", [info])
    assert first.processed == [info.key] and first.conversations == 3 and first.messages == 17
    assert first.sources["chatgpt"].new == 3 and first.rows_written["messages"] == 17
    before = etags(store)
    second = ingest_partition(store, "2026-03-01", [info])
    assert second.skipped == [info.key] and second.processed == []
    assert second.conversations == 0 and second.conversations_in_skipped == 3 and second.useful
    assert second.sources["chatgpt"].skipped == 3 and second.sources["chatgpt"].uploads_skipped == 1
    assert len(second.preview) == 3  # a rerun still previews the day
    assert etags(store) == before
    entry = Ledger.load(store, "2026-03-01", "a").entries[info.key]  # (the ledger of the group of uploader `a`: raw/a/)
    assert (entry.etag, entry.conversations, entry.messages, entry.sources) == (info.etag, 3, 17, {"chatgpt": 3})


def test_a_replaced_upload_is_compared_with_its_previous_version(store):
    convs = chatgpt_conversations()
    info = put(store, "raw/a/conversations.json", convs, DAY1)
    ingest_partition(store, "2026-03-01", [info])
    # the user exported again: one chat continued, one deleted, one as it was
    b = ChatGPTBuilder("extra", "A new chat", DAY1)
    b.text("user", "Hello?")
    b.text("assistant", "Hi.")
    changed = copy.deepcopy(convs[0])
    changed["update_time"] += 1000
    changed["title"] = "Planning a rail trip (cont.)"
    replaced = put(store, "raw/a/conversations.json", [changed, convs[1], b.build()], DAY1 + 60)
    result = ingest_partition(store, "2026-03-01", [replaced])
    counts = result.sources["chatgpt"]
    assert result.processed == [replaced.key]
    assert (counts.new, counts.updated, counts.unchanged, counts.removed) == (1, 1, 1, 1)
    assert Ledger.load(store, "2026-03-01", "a").entries[replaced.key].etag == replaced.etag


def test_parser_change_missing_output_or_reprocess_tag_run_it_again(store, monkeypatch):
    info = put(store, "raw/a/conversations.json", chatgpt_conversations(), DAY1)
    ingest_partition(store, "2026-03-01", [info])
    assert ingest_partition(store, "2026-03-01", [info]).skipped == [info.key]
    assert ingest_partition(store, "2026-03-01", [info], reprocess=True).processed == [info.key]

    store.delete(table_key("messages", "2026-03-01", upload_id(info.key)))
    again = ingest_partition(store, "2026-03-01", [info])
    assert again.processed == [info.key]
    assert store.head(table_key("messages", "2026-03-01", upload_id(info.key))) is not None

    monkeypatch.setattr(ledger_module, "parser_fingerprint", lambda: "a-newer-parser")
    monkeypatch.setattr(partition_ingest, "parser_fingerprint", lambda: "a-newer-parser")
    upgraded = ingest_partition(store, "2026-03-01", [info])
    assert upgraded.processed == [info.key]
    assert Ledger.load(store, "2026-03-01", "a").entries[info.key].parser == "a-newer-parser"


def test_an_upload_replaced_on_a_later_day_moves_there(store):
    uid = upload_id("raw/a/conversations.json")
    old = put(store, "raw/a/conversations.json", chatgpt_conversations(), DAY1)
    ingest_partition(store, "2026-03-01", [old])
    assert store.head(table_key("conversations", "2026-03-01", uid)) is not None

    new = put(store, "raw/a/conversations.json", chatgpt_conversations()[:2], DAY2)
    day2 = ingest_partition(store, "2026-03-02", [new])
    assert day2.processed == [new.key] and "moved here from partition 2026-03-01" in day2.retracted[new.key]
    assert store.head(table_key("conversations", "2026-03-01", uid)) is None
    assert store.head(table_key("conversations", "2026-03-02", uid)) is not None
    assert read_location(store, uid)["day"] == "2026-03-02"

    # the earlier day's rerun drops the upload from its ledger (its manifest no longer lists it)
    day1 = ingest_partition(store, "2026-03-01", [])
    assert day1.uploads == 0 and "now in partition 2026-03-02" in day1.retracted[new.key]
    assert new.key not in Ledger.load(store, "2026-03-01", "a").entries
    assert store.head(table_key("conversations", "2026-03-02", uid)) is not None


def test_a_deleted_upload_is_retracted_from_its_day(store):
    keep = put(store, "raw/keep.json", chatgpt_conversations()[:1], DAY1)
    gone = put(store, "raw/gone.json", chatgpt_conversations()[1:], DAY1)
    ingest_partition(store, "2026-03-01", [keep, gone])
    store.delete(gone.key)
    result = ingest_partition(store, "2026-03-01", [keep])
    assert result.retracted == {gone.key: "deleted from raw/"}
    assert [o.key for o in store.list("normalized/conversations/")] == [table_key("conversations", "2026-03-01", upload_id(keep.key))]


def test_an_upload_the_manifest_missed_is_still_processed(store):
    """The ledger's keys are checked against the bucket, so nothing it knows slips away."""
    a = put(store, "raw/a.json", chatgpt_conversations()[:1], DAY1)
    b = put(store, "raw/b.json", chatgpt_conversations()[1:], DAY1)
    ingest_partition(store, "2026-03-01", [a, b])
    b2 = put(store, "raw/b.json", chatgpt_conversations()[2:], DAY1 + 60)
    result = ingest_partition(store, "2026-03-01", [a])  # a stale list without b
    assert result.processed == [b2.key] and result.skipped == [a.key]


def test_a_day_of_nothing_readable_is_not_useful(store):
    info = store.put_bytes("raw/empty.json", b"")
    result = ingest_partition(store, partition_of(info), [info])
    assert not result.useful and result.failed_uploads == [info.key]
    # and a rerun, although it skips the upload, is still not useful
    assert not ingest_partition(store, partition_of(info), [info]).useful
