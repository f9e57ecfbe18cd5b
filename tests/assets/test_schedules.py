"""daily_ingest_schedule: at 01:00 UTC it runs the previous day's partitions (one per uploader of that
day, not today's), and skips a day the upload index shows was empty."""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime

from dagster import DagsterInstance, build_schedule_context

from assets.schedules import daily_schedule
from chatetl.ingest.index import batches_by_day, publish_coverage, record_batches
from resources.object_store import LocalObjectStoreResource


def evaluate(resource, when: datetime):
    from assets.definitions import defs

    context = build_schedule_context(scheduled_execution_time=when, resources={"object_store": resource}, repository_def=defs.get_repository_def(),
                                     instance=DagsterInstance.local_temp(tempfile.mkdtemp(prefix="chatetl-schedule-")))
    return daily_schedule.evaluate_tick(context)


def uploaded(store, key: str, when: datetime):
    info = store.put_bytes(key, b"[]")
    os.utime(store.root / key, (when.timestamp(), when.timestamp()))
    return info


def test_the_schedule_runs_the_previous_day(tmp_path):
    assert daily_schedule.cron_schedule == "0 1 * * *" and daily_schedule.execution_timezone == "UTC"
    resource = LocalObjectStoreResource(root=str(tmp_path))
    for key, when in (("raw/x.json", datetime(2026, 3, 1, 12, tzinfo=UTC)), ("raw/alice/y.json", datetime(2026, 3, 1, 13, tzinfo=UTC)),
                      ("raw/z.json", datetime(2025, 12, 31, 12, tzinfo=UTC)), ("raw/today.json", datetime(2026, 3, 2, 0, 30, tzinfo=UTC))):
        uploaded(resource.store, key, when)
    data = evaluate(resource, datetime(2026, 3, 2, 1, 0, tzinfo=UTC))
    # (the index does not cover the day: raw/ is listed, each uploader of the day is a partition)
    assert [(r.partition_key, r.run_key) for r in data.run_requests] == [("2026-03-01", "daily:2026-03-01"),
                                                                          ("2026-03-01/alice", "daily:2026-03-01/alice")]
    assert data.run_requests[0].tags["chatetl/trigger"] == "daily_ingest_schedule"
    # the first of a month and of a year roll back correctly
    assert evaluate(resource, datetime(2026, 1, 1, 1, 0, tzinfo=UTC)).run_requests[0].partition_key == "2025-12-31"


def test_a_day_the_index_shows_empty_is_skipped_a_day_with_uploads_runs(tmp_path):
    resource = LocalObjectStoreResource(root=str(tmp_path))
    store = resource.store
    when = datetime(2026, 3, 2, 1, 0, tzinfo=UTC)
    # the index covers 2026-03-01 entirely and holds nothing for it
    publish_coverage(store, datetime(2026, 3, 2, 0, 30, tzinfo=UTC).timestamp())
    data = evaluate(resource, when)
    assert data.run_requests == [] and "no uploads on 2026-03-01" in data.skip_message

    info = store.put_bytes("raw/x.json", b"[]")
    t = datetime(2026, 3, 1, 15, 0, tzinfo=UTC).timestamp()
    os.utime(store.root / "raw/x.json", (t, t))
    record_batches(store, batches_by_day([store.head(info.key)]))
    assert [r.partition_key for r in evaluate(resource, when).run_requests] == ["2026-03-01"]


def test_before_the_first_partition_nothing_runs(tmp_path):
    resource = LocalObjectStoreResource(root=str(tmp_path))
    data = evaluate(resource, datetime(2020, 1, 2, 1, 0, tzinfo=UTC))
    assert data.run_requests == [] and "before the first partition" in data.skip_message
