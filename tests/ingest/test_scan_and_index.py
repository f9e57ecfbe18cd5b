"""The sensor's bounded scan of raw/ (chatetl.ingest.scan.discover) and the upload index, on a local
folder store whose modification times the tests set: backlogs drain under the key and time
caps, every upload version is found exactly once, replaced objects and keys that sort in
the middle are found, coverage is published only when a full cycle vouches for it."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest

from chatetl.ingest.index import (
    COMPACT_AFTER,
    LIVE_SCAN_SECONDS,
    ObjectInfo,
    UploadBatch,
    batches_by_day,
    day_is_covered,
    find_uploads,
    indexed_uploads,
    partition_of,
    publish_coverage,
    read_coverage,
    record_batches,
)
from chatetl.ingest.scan import CLOCK_SKEW_SECONDS, ScanCursor, check_cursor, discover
from chatetl.layout import INDEX_PREFIX, index_prefix, is_upload
from chatetl.storage import LocalObjectStore

NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC).timestamp()


@pytest.fixture
def store(tmp_path):
    return LocalObjectStore(tmp_path / "bucket")


def put(store, key: str, data: bytes, when: float):
    store.put_bytes(key, data)
    os.utime(store.root / key, (when, when))
    return store.head(key)


def run_until_quiet(store, cursor, now, max_keys, max_ticks=50):
    """Ticks until one finds nothing and the fast path is drained; every change and tick."""
    ticks = []
    for _ in range(max_ticks):
        found = discover(store, cursor, now=now, max_keys=max_keys)
        ticks.append(found)
        cursor = found.cursor
        if not found.changes and found.fast_path_drained and not found.stopped_by:
            return cursor, ticks
    raise AssertionError("the scan never went quiet")


def test_a_backlog_drains_over_several_ticks_each_upload_once(store):
    for i in range(23):
        put(store, f"raw/user-{i:03d}/export.zip", f"export {i}".encode(), NOW - 86400 - i)
    store.put_bytes("normalized/elsewhere.parquet", b"not an upload")
    cursor, ticks = run_until_quiet(store, ScanCursor(), NOW, max_keys=10)
    per_tick = [len(t.changes) for t in ticks]
    assert per_tick[:3] == [10, 10, 3]
    assert all(t.listed <= 10 for t in ticks)
    assert [t.stopped_by for t in ticks[:2]] == ["keys", "keys"]
    found = [c.key for t in ticks for c in t.changes]
    assert sorted(found) == sorted(f"raw/user-{i:03d}/export.zip" for i in range(23))
    assert len(found) == len(set(found))
    assert cursor.high == "raw/user-022/export.zip"
    # the same state of the bucket: nothing new, ever again
    again = discover(store, cursor, now=NOW + 30, max_keys=10)
    assert again.changes == []


def test_new_replaced_and_identical_uploads(store):
    put(store, "raw/b/export.zip", b"version 1", NOW - 10)
    first = discover(store, ScanCursor(), now=NOW, max_keys=100)
    assert [c.key for c in first.changes] == ["raw/b/export.zip"]
    assert discover(store, first.cursor, now=NOW + 30, max_keys=100).changes == []

    replaced = put(store, "raw/b/export.zip", b"version 2", NOW + 40)
    second = discover(store, first.cursor, now=NOW + 60, max_keys=100)
    assert [(c.key, c.etag) for c in second.changes] == [("raw/b/export.zip", replaced.etag)]

    # identical bytes uploaded again the same day: the same version, no change
    put(store, "raw/b/export.zip", b"version 2", NOW + 70)
    third = discover(store, second.cursor, now=NOW + 90, max_keys=100)
    assert third.changes == []

    # a new key that sorts before everything seen (not after `high`): found by the re-scan
    put(store, "raw/a/late.json", b"[]", NOW + 100)
    fourth = discover(store, third.cursor, now=NOW + 120, max_keys=100)
    assert [c.key for c in fourth.changes] == ["raw/a/late.json"]


def test_identical_bytes_on_another_day_move_the_upload(store):
    put(store, "raw/c.json", b"same", NOW - 86400)
    first = discover(store, ScanCursor(), now=NOW - 86400 + 60, max_keys=100)
    moved = put(store, "raw/c.json", b"same", NOW)
    later = discover(store, first.cursor, now=NOW + 30, max_keys=100)
    assert [partition_of(c) for c in later.changes] == [partition_of(moved)] == ["2026-03-10"]


def test_the_time_cap_stops_a_tick_and_the_next_resumes(store):
    for i in range(6):
        put(store, f"raw/k{i}", b"x%d" % i, NOW - 1000)
    ticks_of_clock = iter(range(1000))
    found = discover(store, ScanCursor(), now=NOW, max_keys=100, max_seconds=2.5, clock=lambda: next(ticks_of_clock))
    assert found.stopped_by == "seconds" and 1 <= len(found.changes) < 6
    rest = discover(store, found.cursor, now=NOW + 30, max_keys=100)
    assert sorted(c.key for c in found.changes + rest.changes) == [f"raw/k{i}" for i in range(6)]


def test_the_rescan_resumes_its_position_under_the_key_cap(store):
    for i in range(12):
        put(store, f"raw/{i:02d}", b"%d" % i, NOW - 5000)
    cursor, _ = run_until_quiet(store, ScanCursor(), NOW, max_keys=5)
    # replace one near the end: the re-scan walks 5 keys per tick from where it stopped
    put(store, "raw/10", b"new", NOW + 10)
    seen_changes, positions = [], []
    for tick in range(5):
        found = discover(store, cursor, now=NOW + 30 * (tick + 1), max_keys=5)
        positions.append(found.cursor.pos)
        seen_changes += [c.key for c in found.changes]
        cursor = found.cursor
    assert seen_changes == ["raw/10"]
    assert any(p not in ("", "raw/11") for p in positions)  # it stopped mid-way and resumed


def test_coverage_is_published_when_a_cycle_completes(store):
    put(store, "raw/one", b"1", NOW - 100)
    first = discover(store, ScanCursor(), now=NOW, max_keys=100)
    # the fast path drained and the (empty) first re-scan cycle completed in the same tick
    assert first.cycle_completed and first.coverage == NOW - CLOCK_SKEW_SECONDS
    second = discover(store, first.cursor, now=NOW + 30, max_keys=100)
    assert second.coverage == NOW - CLOCK_SKEW_SECONDS  # the cycle that began at NOW
    third = discover(store, second.cursor, now=NOW + 60, max_keys=100)
    assert third.coverage == NOW + 30 - CLOCK_SKEW_SECONDS
    # remembered fingerprints are pruned once older than the window
    far = discover(store, third.cursor, now=NOW + 10_000, max_keys=100)
    far = discover(store, far.cursor, now=NOW + 10_030, max_keys=100)
    assert far.cursor.seen == {}


def test_a_backlog_publishes_no_coverage_until_drained(store):
    for i in range(8):
        put(store, f"raw/{i}", b"%d" % i, NOW - 100)
    first = discover(store, ScanCursor(), now=NOW, max_keys=5)
    assert not first.fast_path_drained and first.coverage is None


def test_cursor_round_trips_and_garbage_restarts():
    c = ScanCursor(high="raw/z", pos="raw/m", cycle_start=5.0, since=1.0, seen={"ab": 2.0}, cycles=3)
    assert ScanCursor.from_json(c.to_json()) == c
    assert ScanCursor.from_json("not json") == ScanCursor()
    assert ScanCursor.from_json('{"v": 99}') == ScanCursor()


def test_folder_markers_and_unsafe_keys_are_not_uploads(store):
    assert not is_upload("raw/folder/")
    assert is_upload("raw/folder/x.zip")
    assert not is_upload("normalized/x")
    # keys no stage may use (AWS accepts them; SeaweedFS normalizes them away) never block a day
    assert not is_upload("raw/../secrets.zip") and not is_upload("raw/win\\path.zip")


def test_batches_group_by_day_with_honest_run_keys(store):
    a = put(store, "raw/a", b"a", NOW)
    b = put(store, "raw/b", b"b", NOW - 86400)
    c = put(store, "raw/c", b"c", NOW)
    batches = batches_by_day([a, b, c])
    assert [(x.day, [u.key for u in x.uploads]) for x in batches] == [("2026-03-09", ["raw/b"]), ("2026-03-10", ["raw/a", "raw/c"])]
    assert batches[0].run_key == f"raw/b@{b.etag}"
    assert batches[1].run_key.startswith("date=2026-03-10:2-uploads:")
    # the same versions give the same key; another version another
    assert UploadBatch("2026-03-10", (c, a)).run_key == batches[1].run_key
    c2 = put(store, "raw/c", b"c2", NOW)
    assert batches_by_day([a, c2])[0].run_key != batches[1].run_key


def test_the_index_finds_a_day_without_listing_raw(store, monkeypatch):
    for i in range(3):
        put(store, f"raw/d{i}", b"%d" % i, NOW - 3600)
    put(store, "raw/other-day", b"o", NOW - 3 * 86400)
    found = discover(store, ScanCursor(), now=NOW + 86400, max_keys=100)
    record_batches(store, batches_by_day(found.changes))
    publish_coverage(store, found.coverage)

    listed_prefixes = []
    real_list = store.list
    monkeypatch.setattr(store, "list", lambda prefix="", **kw: (listed_prefixes.append(prefix), real_list(prefix, **kw))[1])
    soon = NOW + 86400 + 60  # coverage is NOW + 86400 - skew: the scan is alive, inside 2026-03-11
    days, note = find_uploads(store, ["2026-03-10", "2026-03-11"], now=soon)
    assert [u.key for u in days["2026-03-10"].uploads] == ["raw/d0", "raw/d1", "raw/d2"]
    assert days["2026-03-10"].how == days["2026-03-11"].how == "index" and "raw/" not in listed_prefixes
    # a day the scan has not reached, or one it stopped inside long ago: one listing of raw/
    days, note = find_uploads(store, ["2026-03-12"], now=soon)
    assert days["2026-03-12"].how == "listing" and listed_prefixes.count("raw/") == 1 and "upload_sensor" in note
    days, note = find_uploads(store, ["2026-03-11"], now=soon + 2 * LIVE_SCAN_SECONDS)
    assert days["2026-03-11"].how == "listing" and listed_prefixes.count("raw/") == 2


def test_the_index_sees_replacements_and_deletions(store):
    put(store, "raw/x", b"1", NOW - 3600)
    put(store, "raw/y", b"1", NOW - 3600)
    batch = UploadBatch("2026-03-10", (store.head("raw/x"), store.head("raw/y")))
    record_batches(store, [batch])
    publish_coverage(store, NOW + 86400)
    put(store, "raw/x", b"2", NOW + 86400 + 60)  # replaced the next day
    store.delete("raw/y")
    days, _ = find_uploads(store, ["2026-03-10"])
    assert days["2026-03-10"].uploads == []
    assert days["2026-03-10"].moved == {"raw/x": "2026-03-11"} and days["2026-03-10"].gone == ["raw/y"]


def test_many_batch_files_are_compacted_without_loss(store):
    infos = [put(store, f"raw/u{i:02d}", b"%d" % i, NOW) for i in range(COMPACT_AFTER + 5)]
    record_batches(store, [UploadBatch("2026-03-10", (i,)) for i in infos])
    assert len(list(store.list(index_prefix("2026-03-10")))) == len(infos)
    first = indexed_uploads(store, "2026-03-10")
    assert [u.key for u in first] == [i.key for i in infos]
    assert len(list(store.list(index_prefix("2026-03-10")))) == 1
    assert indexed_uploads(store, "2026-03-10") == first


def test_coverage_never_moves_backwards(store):
    publish_coverage(store, NOW)
    publish_coverage(store, NOW - 500)
    assert read_coverage(store) == NOW
    assert day_is_covered("2026-03-09", NOW) and not day_is_covered("2026-03-10", NOW)


def test_a_lost_index_restarts_the_scan(store):
    put(store, "raw/a", b"a", NOW - 10)
    found = discover(store, ScanCursor(), now=NOW, max_keys=100)
    record_batches(store, batches_by_day(found.changes))
    publish_coverage(store, found.coverage)
    assert check_cursor(store, found.cursor) == (found.cursor, False)
    store.delete_prefix(INDEX_PREFIX)  # someone deleted state/
    cursor, reset = check_cursor(store, found.cursor)
    assert reset and cursor == ScanCursor()
    assert [c.key for c in discover(store, cursor, now=NOW + 30, max_keys=100).changes] == ["raw/a"]


def test_unusable_keys_are_reported_not_requested(store):
    """An S3 server may hold keys LocalObjectStore refuses (AWS accepts `raw/a\\b`): the scan
    reports them and goes on."""
    put(store, "raw/good.json", b"[]", NOW - 10)
    real_list = store.list

    def listing_with_a_windows_key(prefix="", start_after=None, limit=None):
        weird = ObjectInfo(key="raw/goo\\d.json", etag="e", size=1, last_modified=datetime.fromtimestamp(NOW - 5, tz=UTC))
        items = sorted([*real_list(prefix), weird] if prefix == "raw/" else list(real_list(prefix)), key=lambda i: i.key)
        items = [i for i in items if start_after is None or i.key > start_after]
        return iter(items[:limit] if limit is not None else items)

    store.list = listing_with_a_windows_key
    found = discover(store, ScanCursor(), now=NOW, max_keys=100)
    assert [c.key for c in found.changes] == ["raw/good.json"] and found.ignored == ["raw/goo\\d.json"]
